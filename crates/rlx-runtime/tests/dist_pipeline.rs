//! Pipeline inference over ranks: a 3-layer MLP split into 3 stages on
//! ranks 1..=3 (rank 0 feeds and collects) equals numpy's float64 forward
//! (`tools/gen_dist_fixtures.py`), on loopback threads and over TCP.
#![cfg(feature = "dist")]

mod dist_common;
use dist_common::*;
use rlx_collectives::ProcessGroup;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Shape};
use rlx_runtime::dist::{
    pipeline_divergence, pipeline_stages, recv_activation, report_backend_divergence,
    resolve_weight_bytes, run_pipeline, send_activation, send_stop, serve_stage, ship_stage,
    uri_resolver, BackendDivergence, DistError, RunDivergence, StageSpec, WeightCache, WeightRef,
};
use std::sync::Arc;
use std::time::Duration;

/// Layer `i` (`w{i}`, `b{i}`) of the fixture MLP as its own graph.
fn layer(i: usize, rows: usize, inp: usize, out: usize, tanh: bool) -> Graph {
    let mut g = Graph::new(format!("layer{i}"));
    let x = g.input("x", Shape::new(&[rows, inp], DType::F32));
    let w = g.param(&format!("w{i}"), Shape::new(&[inp, out], DType::F32));
    let b = g.param(&format!("b{i}"), Shape::new(&[out], DType::F32));
    let h = g.mm(x, w);
    let mut y = g.add(h, b);
    if tanh {
        y = g.tanh(y);
    }
    g.set_outputs(vec![y]);
    g
}

fn stages() -> Vec<StageSpec> {
    let fx = fixture();
    let p = &fx["pipeline"];
    let dims = [(8, 6, true), (6, 5, true), (5, 3, false)];
    dims.iter()
        .enumerate()
        .map(|(k, &(a, b, tanh))| {
            let i = k + 1;
            let weights = ["w", "b"]
                .iter()
                .map(|n| {
                    (
                        format!("{n}{i}"),
                        WeightRef::Inline(tensor(&p[format!("{n}{i}")])),
                    )
                })
                .collect();
            StageSpec::new(&layer(i, 4, a, b, tanh), weights, k, (i + 1) % 4)
        })
        .collect()
}

fn three_layer_pipeline(transport: Transport) {
    let outs = with_deadline(60, move || {
        on_world(
            transport,
            4,
            Duration::from_secs(20),
            |pg: Arc<dyn ProcessGroup>| {
                if pg.rank() != 0 {
                    let cache = Arc::new(WeightCache::new());
                    let n = serve_stage(&*pg, 0, &*uri_resolver(cache))?;
                    return Ok::<_, DistError>((n, None));
                }
                for (k, s) in stages().iter().enumerate() {
                    ship_stage(&*pg, k + 1, s)?;
                }
                let x = tensor(&fixture()["pipeline"]["x"]);
                let mut ys = Vec::new();
                for _ in 0..3 {
                    send_activation(&*pg, 1, std::slice::from_ref(&x))?;
                    ys.push(recv_activation(&*pg, 3)?.expect("an activation"));
                }
                send_stop(&*pg, 1)?;
                assert!(
                    recv_activation(&*pg, 3)?.is_none(),
                    "the stop comes back round"
                );
                Ok((3, Some(ys)))
            },
        )
    });
    let want = values(&fixture()["pipeline"]["y"]);
    for (r, o) in outs.into_iter().enumerate() {
        let (n, ys) = o.unwrap_or_else(|e| panic!("rank {r}: {e}"));
        assert_eq!(n, 3, "rank {r} ran {n} activations");
        for y in ys.into_iter().flatten() {
            let got = y[0].to_vec::<f32>().unwrap();
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                assert!((*g as f64 - w).abs() < 1e-5 * (1.0 + w.abs()), "{g} vs {w}");
            }
        }
    }
}

#[test]
fn mlp_in_three_stages_loopback() {
    three_layer_pipeline(Transport::Loopback);
}

#[test]
fn mlp_in_three_stages_tcp() {
    three_layer_pipeline(Transport::Tcp);
}

#[test]
fn stage_with_missing_weight_is_a_typed_error() {
    let r = with_deadline(30, || {
        on_world(Transport::Loopback, 2, Duration::from_secs(5), |pg| {
            if pg.rank() == 0 {
                let mut s = stages().remove(0);
                s.weights.pop();
                s.next = 0;
                ship_stage(&*pg, 1, &s).map(|_| 0)
            } else {
                serve_stage(&*pg, 0, &*uri_resolver(Arc::new(WeightCache::new())))
            }
        })
    });
    let err = r[1].as_ref().unwrap_err().to_string();
    assert!(err.contains("no weight for param \"b1\""), "{err}");
}

#[test]
fn activation_of_the_wrong_shape_is_a_typed_error() {
    let r = with_deadline(30, || {
        on_world(Transport::Loopback, 2, Duration::from_secs(5), |pg| {
            if pg.rank() == 0 {
                let mut s = stages().remove(0);
                s.prev = 0;
                s.next = 0;
                ship_stage(&*pg, 1, &s)?;
                let bad = HostTensor::zeros(DType::F32, &[4, 7]);
                send_activation(&*pg, 1, &[bad]).map(|_| 0)
            } else {
                serve_stage(&*pg, 0, &*uri_resolver(Arc::new(WeightCache::new())))
            }
        })
    });
    assert!(matches!(r[1], Err(DistError::Graph { .. })), "{:?}", r[1]);
}

// ---- One graph cut with split_pipeline, against the one-process run --------

/// The fixture MLP as one graph; with `skip`, two extra values cross the
/// cuts: `x` is read again by the last stage and `sum(h1)` (made by stage 0)
/// is a second output, so stage 1 passes both through.
fn whole_mlp(skip: bool) -> (Graph, Vec<NodeId>, Vec<(String, WeightRef)>) {
    let mut g = Graph::new("mlp");
    let x = g.input("x", Shape::new(&[4, 8], DType::F32));
    let mut h = x;
    let mut cuts = Vec::new();
    let mut h1 = None;
    for (i, (a, b, tanh)) in [(8, 6, true), (6, 5, true), (5, 3, false)]
        .into_iter()
        .enumerate()
    {
        let w = g.param(&format!("w{}", i + 1), Shape::new(&[a, b], DType::F32));
        if i > 0 {
            cuts.push(w);
        }
        let bias = g.param(&format!("b{}", i + 1), Shape::new(&[b], DType::F32));
        let y = g.mm(h, w);
        h = g.add(y, bias);
        if tanh {
            h = g.tanh(h);
        }
        h1 = h1.or(Some(h));
    }
    let mut outs = vec![h];
    if skip {
        let xs = g.sum(x, &[1], true);
        outs[0] = g.add(h, xs);
        outs.push(g.sum(h1.unwrap(), &[0, 1], false));
    }
    g.set_outputs(outs);
    let p = &fixture()["pipeline"];
    let weights = ["w1", "b1", "w2", "b2", "w3", "b3"]
        .iter()
        .map(|n| (n.to_string(), WeightRef::Inline(tensor(&p[*n]))))
        .collect();
    (g, cuts, weights)
}

/// Rank 0 runs `pipeline_divergence` of `stages`; the others serve a stage.
fn divergence_on_loopback(
    graph: Graph,
    weights: Vec<(String, WeightRef)>,
    stages: Vec<StageSpec>,
) -> RunDivergence {
    let world = stages.len() + 1;
    let x = tensor(&fixture()["pipeline"]["x"]);
    let r = with_deadline(60, move || {
        on_world(
            Transport::Loopback,
            world,
            Duration::from_secs(20),
            move |pg| {
                if pg.rank() != 0 {
                    serve_stage(&*pg, 0, &resolve_weight_bytes)?;
                    return Ok(None);
                }
                let d = pipeline_divergence(
                    &*pg,
                    &graph,
                    &weights,
                    &stages,
                    std::slice::from_ref(&x),
                    &resolve_weight_bytes,
                )?;
                Ok::<_, DistError>(Some(d))
            },
        )
    });
    let mut r = r.into_iter();
    let d = r.next().unwrap().unwrap().unwrap();
    for (k, o) in r.enumerate() {
        o.unwrap_or_else(|e| panic!("rank {}: {e}", k + 1));
    }
    d
}

#[test]
fn split_mlp_in_two_and_three_stages_matches_one_process() {
    for skip in [false, true] {
        let (g, cuts, weights) = whole_mlp(skip);
        for cuts in [&cuts[..1], &cuts[1..], &cuts[..]] {
            let stages = pipeline_stages(&g, &weights, cuts).unwrap();
            assert_eq!(stages.len(), cuts.len() + 1);
            let d = divergence_on_loopback(g.clone(), weights.clone(), stages);
            assert_eq!(d.per_output.len(), 1 + usize::from(skip));
            for (i, &(abs, rel)) in d.per_output.iter().enumerate() {
                assert!(
                    abs <= 1e-6 && rel <= 1e-6,
                    "skip {skip}, cuts {cuts:?}, output {i}: {}",
                    report_backend_divergence(&BackendDivergence {
                        reference: "one process".into(),
                        runs: vec![d.clone()],
                    })
                );
            }
        }
    }
}

/// The pipeline result also equals numpy's float64 forward.
#[test]
fn split_mlp_equals_numpy() {
    let (g, cuts, weights) = whole_mlp(false);
    let stages = pipeline_stages(&g, &weights, &cuts).unwrap();
    let x = tensor(&fixture()["pipeline"]["x"]);
    let r = with_deadline(60, move || {
        on_world(Transport::Loopback, 4, Duration::from_secs(20), move |pg| {
            if pg.rank() != 0 {
                serve_stage(&*pg, 0, &resolve_weight_bytes)?;
                return Ok(None);
            }
            Ok::<_, DistError>(Some(run_pipeline(&*pg, &stages, std::slice::from_ref(&x))?))
        })
    });
    let y = r.into_iter().next().unwrap().unwrap().unwrap();
    let want = values(&fixture()["pipeline"]["y"]);
    for (g, w) in y[0].to_vec::<f32>().unwrap().iter().zip(&want) {
        assert!((*g as f64 - w).abs() < 1e-5 * (1.0 + w.abs()), "{g} vs {w}");
    }
}

/// A stage whose weight was changed after the split: the divergence names
/// the difference (and it is about the size of the change).
#[test]
fn perturbed_stage_is_reported() {
    let (g, cuts, weights) = whole_mlp(false);
    let mut stages = pipeline_stages(&g, &weights, &cuts).unwrap();
    let (_, w) = stages[1]
        .weights
        .iter_mut()
        .find(|(n, _)| n == "b2")
        .unwrap();
    let WeightRef::Inline(t) = w else {
        panic!("inline")
    };
    let (mut v, dims) = (t.to_vec::<f32>().unwrap(), t.dims().to_vec());
    v[0] += 0.05;
    *t = HostTensor::from_vec(v, &dims).unwrap();
    let d = divergence_on_loopback(g, weights, stages);
    let (abs, _) = d.per_output[0];
    assert!(abs > 1e-3 && abs < 0.05 * 10.0, "{d:?}");
    let text = report_backend_divergence(&BackendDivergence {
        reference: "one process".into(),
        runs: vec![d],
    });
    assert!(text.contains("pipeline over 3 ranks"), "{text}");
}

#[test]
fn bad_cuts_are_typed_errors() {
    let (g, cuts, weights) = whole_mlp(false);
    let len = g.len();
    for (bad, why) in [
        (vec![cuts[1], cuts[0]], "increase"),
        (vec![NodeId(len as u32 + 3)], "past the graph"),
        (vec![cuts[0], NodeId(cuts[0].0 + 1)], "no operations"),
    ] {
        let e = pipeline_stages(&g, &weights, &bad).unwrap_err();
        assert!(
            matches!(&e, DistError::InvalidSpec(m) if m.contains(why)),
            "{bad:?}: {e}"
        );
    }
    let e = pipeline_stages(&g, &weights[1..], &cuts).unwrap_err();
    assert!(e.to_string().contains("no weight for param \"w1\""), "{e}");
}
