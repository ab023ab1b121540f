//! The in-graph collectives (`collectives.*` custom ops) compiled on the CPU
//! backend and run on loopback worlds of 1-4 ranks (one thread per rank):
//! values against numpy (`tools/gen_graph_collectives_fixtures.py`),
//! reverse and forward derivatives against central finite differences of
//! the whole world's loss, batching against numpy.

use rlx_collectives::graph::{ALL_REDUCE, SEND};
use rlx_collectives::{
    all_gather_op, all_reduce_op_mode, all_to_all_op, bind_groups, broadcast_op, megatron_f,
    megatron_g, ppermute_op, recv_op, reduce_op, reduce_scatter_op, send_op, GroupId,
    GroupRegistry, LoopbackGroup, ProcessGroup, ReduceKind, ReduceMode,
};
use rlx_ir::{DType, Graph, GraphExt, HostTensor, IrError, NodeId, Shape};
use rlx_runtime::{Device, Session};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

const W0: GroupId = GroupId(0);

fn fixture() -> Value {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/graph_ops.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn tensor(v: &Value) -> HostTensor {
    let dims: Vec<usize> = v["dims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let data: Vec<f64> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_f64().unwrap())
        .collect();
    HostTensor::from_vec(data, &dims).unwrap()
}

/// Runs `f(rank)` on every rank of a loopback world, each thread with the
/// world bound for the collective kernels; results in rank order.
fn on_world<R: Send>(world: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let ranks = LoopbackGroup::new_world(world, Duration::from_secs(30)).unwrap();
    std::thread::scope(|s| {
        let handles: Vec<_> = ranks
            .into_iter()
            .map(|pg| {
                let f = &f;
                s.spawn(move || {
                    let rank = pg.rank();
                    let groups = Arc::new(GroupRegistry::new(Arc::new(pg)));
                    let _bound = bind_groups(groups);
                    f(rank)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

type Build = dyn Fn(&mut Graph, NodeId, usize) -> Result<NodeId, IrError> + Sync;

/// One graph `y = op(x)` over an f64 input of `dims`.
fn op_graph(dims: &[usize], world: usize, build: &Build) -> Graph {
    let mut g = Graph::new("op");
    let x = g.input("x", Shape::new(dims, DType::F64));
    let y = build(&mut g, x, world).unwrap();
    g.set_outputs(vec![y]);
    g
}

fn run(g: &Graph, inputs: &[(&str, &HostTensor)]) -> Vec<Vec<f64>> {
    let mut c = Session::new(Device::Cpu).try_compile(g.clone()).unwrap();
    c.try_run_typed(inputs)
        .unwrap()
        .iter()
        .map(|t| t.to_vec::<f64>().unwrap())
        .collect()
}

fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= tol * (1.0 + b.abs()),
            "{what}[{i}]: got {a}, want {b}"
        );
    }
}

fn ops() -> Vec<(&'static str, Box<Build>)> {
    use ReduceKind::*;
    use ReduceMode::*;
    vec![
        (
            "all_reduce_sum",
            Box::new(|g: &mut Graph, x, _| all_reduce_op_mode(g, x, W0, Sum, Ring)),
        ),
        (
            "all_reduce_mean",
            Box::new(|g: &mut Graph, x, _| all_reduce_op_mode(g, x, W0, Mean, Deterministic)),
        ),
        (
            "all_reduce_max",
            Box::new(|g: &mut Graph, x, _| all_reduce_op_mode(g, x, W0, Max, Ring)),
        ),
        (
            "all_reduce_min",
            Box::new(|g: &mut Graph, x, _| all_reduce_op_mode(g, x, W0, Min, Deterministic)),
        ),
        (
            "all_gather_axis0",
            Box::new(|g: &mut Graph, x, w| all_gather_op(g, x, W0, 0, w)),
        ),
        (
            "all_gather_axis1",
            Box::new(|g: &mut Graph, x, w| all_gather_op(g, x, W0, 1, w)),
        ),
        (
            "reduce_scatter_sum_axis1",
            Box::new(|g: &mut Graph, x, w| reduce_scatter_op(g, x, W0, 1, w, Sum, Ring)),
        ),
        (
            "reduce_scatter_mean_axis1",
            Box::new(|g: &mut Graph, x, w| reduce_scatter_op(g, x, W0, 1, w, Mean, Deterministic)),
        ),
        (
            "all_to_all_split1_concat0",
            Box::new(|g: &mut Graph, x, w| all_to_all_op(g, x, W0, 1, 0, w)),
        ),
        (
            "broadcast_root_last",
            Box::new(|g: &mut Graph, x, w| broadcast_op(g, x, W0, w - 1)),
        ),
        (
            "reduce_sum_root0",
            Box::new(|g: &mut Graph, x, _| reduce_op(g, x, W0, 0, Sum, Ring)),
        ),
        (
            "ppermute_shift",
            Box::new(|g: &mut Graph, x, w| {
                let perm: Vec<_> = (0..w).map(|s| (s, (s + 1) % w)).collect();
                ppermute_op(g, x, W0, &perm)
            }),
        ),
    ]
}

#[test]
fn every_collective_matches_numpy_on_1_to_4_ranks() {
    let fx = fixture();
    for case in fx["cases"].as_array().unwrap() {
        let world = case["world"].as_u64().unwrap() as usize;
        for (name, build) in ops() {
            let outs = on_world(world, |r| {
                let x = tensor(&case["x"][r]);
                let g = op_graph(x.dims(), world, build.as_ref());
                run(&g, &[("x", &x)]).remove(0)
            });
            for (r, got) in outs.iter().enumerate() {
                let want = tensor(&case["expected"][r][name]).to_vec::<f64>().unwrap();
                assert_close(got, &want, 1e-12, &format!("{name} world {world} rank {r}"));
            }
        }
    }
}

#[test]
fn send_and_recv_in_graphs_match_numpy() {
    let fx = fixture();
    for case in fx["cases"].as_array().unwrap().iter().skip(1) {
        let world = case["world"].as_u64().unwrap() as usize;
        let outs = on_world(world, |r| {
            let x = tensor(&case["x"][r]);
            let mut g = Graph::new("ring");
            let xi = g.input("x", x.shape());
            let sent = send_op(&mut g, xi, W0, (r + 1) % world, 7).unwrap();
            let got =
                recv_op(&mut g, W0, (r + world - 1) % world, 7, x.dims(), DType::F64).unwrap();
            g.set_outputs(vec![got, sent]);
            run(&g, &[("x", &x)]).remove(0)
        });
        for (r, got) in outs.iter().enumerate() {
            let want = tensor(&case["expected"][r]["recv_from_prev"])
                .to_vec::<f64>()
                .unwrap();
            assert_close(got, &want, 0.0, &format!("recv world {world} rank {r}"));
        }
    }
}

#[test]
fn vmap_of_collectives_matches_numpy() {
    let fx = fixture();
    let cases: [(&str, Box<Build>); 3] = [
        (
            "vmap_all_gather_axis1",
            Box::new(|g: &mut Graph, x, w| all_gather_op(g, x, W0, 1, w)),
        ),
        (
            "vmap_reduce_scatter_axis1",
            Box::new(|g: &mut Graph, x, w| {
                reduce_scatter_op(g, x, W0, 1, w, ReduceKind::Sum, ReduceMode::Ring)
            }),
        ),
        (
            "vmap_all_reduce_sum",
            Box::new(|g: &mut Graph, x, _| {
                all_reduce_op_mode(g, x, W0, ReduceKind::Sum, ReduceMode::Deterministic)
            }),
        ),
    ];
    for case in fx["cases"].as_array().unwrap() {
        let world = case["world"].as_u64().unwrap() as usize;
        for (name, build) in &cases {
            let outs = on_world(world, |r| {
                let xb = tensor(&case["xb"][r]);
                let g = op_graph(&xb.dims()[1..], world, build.as_ref());
                let v = rlx_autodiff::vmap(&g, &["x"], xb.dims()[0]).unwrap();
                run(&v, &[("x", &xb)]).remove(0)
            });
            for (r, got) in outs.iter().enumerate() {
                let want = tensor(&case["expected"][r][*name]).to_vec::<f64>().unwrap();
                assert_close(got, &want, 1e-12, &format!("{name} world {world} rank {r}"));
            }
        }
    }
}

/// Deterministic pseudo-random values in [-1, 1) (weights and tangents).
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

/// `loss_r = sum(w_r * op(x_r))`; the world's loss is the sum over ranks.
fn loss_graph(dims: &[usize], world: usize, build: &Build) -> (Graph, NodeId) {
    let mut g = Graph::new("loss");
    let x = g.input("x", Shape::new(dims, DType::F64));
    let y = build(&mut g, x, world).unwrap();
    let ydims = g.shape(y).static_dims().unwrap();
    let w = g.input("w", Shape::new(&ydims, DType::F64));
    let wy = g.mul(w, y);
    let axes: Vec<i64> = (0..ydims.len() as i64).collect();
    let l = g.sum(wy, &axes, false);
    g.set_outputs(vec![l]);
    (g, x)
}

#[test]
fn reverse_rules_match_finite_differences_of_the_world_loss() {
    let world = 3;
    let dims = [2usize, 12];
    let n = dims.iter().product::<usize>();
    let eps = 1e-6;
    // (rank, element) pairs to perturb.
    let probes = [(0usize, 0usize), (1, 5), (2, 13), (0, 23), (2, 7)];
    for (name, build) in ops() {
        let per_rank = on_world(world, |r| {
            let x = HostTensor::from_vec(values(n, 11 + r as u64), &dims).unwrap();
            let (g, xid) = loss_graph(&dims, world, build.as_ref());
            let wdims = g.inputs()[1].2.static_dims().unwrap();
            let w = HostTensor::from_vec(values(wdims.iter().product(), 101 + r as u64), &wdims)
                .unwrap();
            let d = rlx_autodiff::grad(&g, &[xid]).unwrap();
            let grad = run(&d, &[("x", &x), ("w", &w)]).remove(0);
            let mut fwd = Session::new(Device::Cpu).try_compile(g.clone()).unwrap();
            let mut losses = Vec::new();
            for &(q, i) in &probes {
                for sign in [1.0, -1.0] {
                    let mut xv = x.to_vec::<f64>().unwrap();
                    if q == r {
                        xv[i] += sign * eps;
                    }
                    let xp = HostTensor::from_vec(xv, &dims).unwrap();
                    let l = fwd.try_run_typed(&[("x", &xp), ("w", &w)]).unwrap()[0]
                        .to_vec::<f64>()
                        .unwrap()[0];
                    losses.push(l);
                }
            }
            (grad, losses)
        });
        for (k, &(q, i)) in probes.iter().enumerate() {
            let plus: f64 = per_rank.iter().map(|(_, l)| l[2 * k]).sum();
            let minus: f64 = per_rank.iter().map(|(_, l)| l[2 * k + 1]).sum();
            let fd = (plus - minus) / (2.0 * eps);
            let got = per_rank[q].0[i];
            assert!(
                (got - fd).abs() <= 1e-6 * (1.0 + fd.abs()),
                "{name}: d loss / d x_{q}[{i}] = {got}, finite difference {fd}"
            );
        }
    }
}

#[test]
fn forward_rules_match_finite_differences() {
    let world = 3;
    let dims = [2usize, 12];
    let n = dims.iter().product::<usize>();
    let eps = 1e-6;
    for (name, build) in ops() {
        let per_rank = on_world(world, |r| {
            let x = values(n, 31 + r as u64);
            let t = values(n, 71 + r as u64);
            let g = op_graph(&dims, world, build.as_ref());
            let xid = g.inputs()[0].0;
            let j = rlx_autodiff::jvp(&g, &[xid]).unwrap();
            let xt = HostTensor::from_vec(x.clone(), &dims).unwrap();
            let tt = HostTensor::from_vec(t.clone(), &dims).unwrap();
            let outs = run(&j, &[("x", &xt), ("tangent_x", &tt)]);
            let shift = |s: f64| {
                let v: Vec<f64> = x.iter().zip(&t).map(|(a, b)| a + s * eps * b).collect();
                HostTensor::from_vec(v, &dims).unwrap()
            };
            let mut fwd = Session::new(Device::Cpu).try_compile(g.clone()).unwrap();
            let plus = fwd.try_run_typed(&[("x", &shift(1.0))]).unwrap()[0]
                .to_vec::<f64>()
                .unwrap();
            let minus = fwd.try_run_typed(&[("x", &shift(-1.0))]).unwrap()[0]
                .to_vec::<f64>()
                .unwrap();
            let fd: Vec<f64> = plus
                .iter()
                .zip(&minus)
                .map(|(p, m)| (p - m) / (2.0 * eps))
                .collect();
            (outs[1].clone(), fd)
        });
        for (r, (tangent, fd)) in per_rank.iter().enumerate() {
            assert_close(tangent, fd, 1e-6, &format!("jvp of {name} on rank {r}"));
        }
    }
}

#[test]
fn megatron_f_and_g_have_their_conjugate_rules() {
    // f: identity forward, all-reduce backward; g: the reverse. With
    // loss_r = sum(w_r * g(f(x_r))), d loss / d x_r = sum over ranks of w.
    let world = 3;
    let dims = [4usize];
    let outs = on_world(world, |r| {
        let mut g = Graph::new("tp");
        let x = g.input("x", Shape::new(&dims, DType::F64));
        let w = g.input("w", Shape::new(&dims, DType::F64));
        let f = megatron_f(&mut g, x, W0).unwrap();
        let y = megatron_g(&mut g, f, W0).unwrap();
        let wy = g.mul(w, y);
        let l = g.sum(wy, &[0], false);
        g.set_outputs(vec![l, y]);
        let d = rlx_autodiff::grad_with_loss(&g, &[x]).unwrap();
        let xv = HostTensor::from_vec(vec![r as f64 + 1.0; 4], &dims).unwrap();
        let wv = HostTensor::from_vec(vec![1.0, 2.0, 3.0, 4.0 * (r as f64 + 1.0)], &dims).unwrap();
        run(&d, &[("x", &xv), ("w", &wv)])
    });
    for (r, o) in outs.iter().enumerate() {
        // outputs: loss, d/dx, aux y
        assert_eq!(o[1], vec![3.0, 6.0, 9.0, 24.0], "grad on rank {r}");
        assert_eq!(o[2], vec![6.0; 4], "g's forward all-reduce on rank {r}");
    }
}

#[test]
fn text_ir_round_trips_collective_ops() {
    let g = op_graph(&[2, 12], 4, &|g: &mut Graph, x, w| {
        let a = reduce_scatter_op(g, x, W0, 1, w, ReduceKind::Mean, ReduceMode::Deterministic)?;
        let b = all_gather_op(g, a, W0, 1, w)?;
        ppermute_op(g, b, W0, &[(0, 1), (1, 0)])
    });
    let text = g.to_text();
    assert!(text.contains("custom.collectives.reduce_scatter{axis=1, group=0, kind=\"mean\", mode=\"deterministic\", world=4}"), "{text}");
    let back = rlx_ir::parse_graph(&text).unwrap();
    assert_eq!(back.to_text(), text);
}

#[test]
fn misuse_is_a_named_error() {
    // A shape the world does not divide.
    let mut g = Graph::new("bad");
    let x = g.input("x", Shape::new(&[2, 5], DType::F32));
    let e = reduce_scatter_op(&mut g, x, W0, 1, 2, ReduceKind::Sum, ReduceMode::Ring).unwrap_err();
    assert!(
        e.to_string().contains("not a multiple of the world size 2"),
        "{e}"
    );
    // No mean of integers.
    let xi = g.input("xi", Shape::new(&[3], DType::I32));
    let e = all_reduce_op_mode(&mut g, xi, W0, ReduceKind::Mean, ReduceMode::Ring).unwrap_err();
    assert!(e.to_string().contains("mean reduction of i32"), "{e}");
    // Unsupported dtype.
    let xb = g.input("xb", Shape::new(&[3], DType::U8));
    let e = all_reduce_op_mode(&mut g, xb, W0, ReduceKind::Sum, ReduceMode::Ring).unwrap_err();
    assert!(
        e.to_string().contains("not supported by collectives"),
        "{e}"
    );

    // Running with no group bound names the fix.
    let mut g = Graph::new("unbound");
    let x = g.input("x", Shape::new(&[3], DType::F32));
    let y = all_reduce_op_mode(&mut g, x, W0, ReduceKind::Sum, ReduceMode::Ring).unwrap();
    g.set_outputs(vec![y]);
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    let e = c
        .try_run(&[("x", &[1.0, 2.0, 3.0])])
        .unwrap_err()
        .to_string();
    assert!(e.contains(ALL_REDUCE) && e.contains("bind_groups"), "{e}");

    // A graph built for 4 ranks run on 2.
    let errs = on_world(2, |_| {
        let g = op_graph(&[2, 4], 4, &|g: &mut Graph, x, w| {
            all_gather_op(g, x, W0, 0, w)
        });
        let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
        let x = HostTensor::from_vec(vec![0.0f64; 8], &[2, 4]).unwrap();
        c.try_run_typed(&[("x", &x)]).unwrap_err().to_string()
    });
    for e in errs {
        assert!(
            e.contains("group 0 has 2 ranks, the op was built for world = 4"),
            "{e}"
        );
    }

    // grad through a send has no rule: a named error, not a dropped edge.
    let mut g = Graph::new("p2p");
    let x = g.input("x", Shape::new(&[3], DType::F32));
    let s = send_op(&mut g, x, W0, 1, 0).unwrap();
    let l = g.sum(s, &[0], false);
    g.set_outputs(vec![l]);
    let e = rlx_autodiff::grad(&g, &[x]).unwrap_err().to_string();
    assert!(e.contains(SEND), "{e}");
}
