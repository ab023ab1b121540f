//! Pipeline inference over ranks: a 3-layer MLP split into 3 stages on
//! ranks 1..=3 (rank 0 feeds and collects) equals numpy's float64 forward
//! (`tools/gen_dist_fixtures.py`), on loopback threads and over TCP.
#![cfg(feature = "dist")]

mod dist_common;
use dist_common::*;
use rlx_collectives::ProcessGroup;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
use rlx_runtime::dist::{
    recv_activation, send_activation, send_stop, serve_stage, ship_stage, uri_resolver, DistError,
    StageSpec, WeightCache, WeightRef,
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

fn run_pipeline(transport: Transport) {
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
    run_pipeline(Transport::Loopback);
}

#[test]
fn mlp_in_three_stages_tcp() {
    run_pipeline(Transport::Tcp);
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
