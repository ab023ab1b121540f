//! The node driver and faults: capability exchange, a fixed-function
//! device against its graph's numpy reference, a clean stop from another
//! thread, shards round trip, weights from a safetensors file, and
//! survivors of a dead / silent / wrong-secret rank getting named errors
//! within the timeout.
#![cfg(feature = "dist")]

mod dist_common;
use dist_common::*;
use rlx_collectives::{CollectiveError, ProcessGroup, TcpConfig, TcpGroup};
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
use rlx_runtime::dist::node::{
    collect_caps, platform_tag, send_caps, serve_fixed_function_n, serve_worker, FixedFunction,
    FixedFunctionDevice, LoopbackFixedFunction, NodeConfig, NodeControl, NodeRole,
};
use rlx_runtime::dist::{
    backend_divergence, pull_shards, push_shards, recv_activation, resolve_weight_bytes,
    resolve_weight_uri, send_activation, send_stop, DistError, WeightCache, WeightRef,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn fixture_layer() -> (Graph, Vec<(String, HostTensor)>) {
    let fx = fixture();
    let p = &fx["pipeline"];
    let mut g = Graph::new("l1");
    let x = g.input("x", Shape::new(&[4, 8], DType::F32));
    let w = g.param("w1", Shape::new(&[8, 6], DType::F32));
    let b = g.param("b1", Shape::new(&[6], DType::F32));
    let h = g.mm(x, w);
    let h = g.add(h, b);
    let y = g.tanh(h);
    g.set_outputs(vec![y]);
    (
        g,
        vec![
            ("w1".into(), tensor(&p["w1"])),
            ("b1".into(), tensor(&p["b1"])),
        ],
    )
}

#[test]
fn caps_reach_the_coordinator() {
    let r = with_deadline(30, || {
        on_world(
            Transport::Tcp,
            3,
            Duration::from_secs(10),
            |pg: Arc<dyn ProcessGroup>| {
                if pg.rank() == 0 {
                    collect_caps(&*pg).map(Some)
                } else {
                    send_caps(&*pg, 0).map(|_| None)
                }
            },
        )
    });
    let caps = r[0].as_ref().unwrap().as_ref().unwrap();
    assert_eq!(caps.len(), 3);
    for (i, c) in caps.iter().enumerate() {
        assert_eq!(c.rank, i);
        assert_eq!(c.platform, platform_tag());
        assert!(c.devices.iter().any(|d| d == "CPU"), "{:?}", c.devices);
        assert!(c.threads >= 1);
    }
    assert!(platform_tag().starts_with(&format!(
        "{}-{}-",
        std::env::consts::OS,
        std::env::consts::ARCH
    )));
}

#[test]
fn fixed_function_serves_its_graph() {
    let r = with_deadline(30, || {
        on_world(
            Transport::Loopback,
            2,
            Duration::from_secs(10),
            |pg: Arc<dyn ProcessGroup>| {
                let x = tensor(&fixture()["pipeline"]["x"]);
                if pg.rank() == 1 {
                    let (g, params) = fixture_layer();
                    let f = LoopbackFixedFunction::new(g, &params)?;
                    assert_eq!(f.input_shapes(), vec![Shape::new(&[4, 8], DType::F32)]);
                    let mut dev = FixedFunctionDevice::new("fpga0", Box::new(f));
                    let bad = dev.call(&[HostTensor::zeros(DType::F32, &[4, 7])]);
                    assert!(
                        matches!(bad, Err(DistError::FixedFunction { .. })),
                        "{bad:?}"
                    );
                    let rep = serve_fixed_function_n(&pg, 0, &mut dev, 5, &NodeControl::new())?;
                    return Ok((rep.activations, vec![]));
                }
                let mut ys = Vec::new();
                for _ in 0..2 {
                    send_activation(&*pg, 1, std::slice::from_ref(&x))?;
                    ys.push(recv_activation(&*pg, 1)?.unwrap().remove(0));
                }
                send_stop(&*pg, 1)?;
                Ok::<_, DistError>((2, ys))
            },
        )
    });
    assert_eq!(r[1].as_ref().unwrap().0, 2);
    // numpy: tanh(x @ w1 + b1), float64.
    let fx = fixture();
    let p = &fx["pipeline"];
    let (x, w, b) = (values(&p["x"]), values(&p["w1"]), values(&p["b1"]));
    for y in &r[0].as_ref().unwrap().1 {
        let got = y.to_vec::<f32>().unwrap();
        for i in 0..4 {
            for j in 0..6 {
                let want = ((0..8).map(|k| x[i * 8 + k] * w[k * 6 + j]).sum::<f64>() + b[j]).tanh();
                assert!(
                    (got[i * 6 + j] as f64 - want).abs() < 1e-5,
                    "{} vs {want}",
                    got[i * 6 + j]
                );
            }
        }
    }
}

#[test]
fn stop_handle_ends_a_waiting_worker() {
    let r = with_deadline(30, || {
        on_world(
            Transport::Tcp,
            2,
            Duration::from_secs(60),
            |pg: Arc<dyn ProcessGroup>| {
                if pg.rank() == 0 {
                    std::thread::sleep(Duration::from_millis(1500));
                    return Ok(None);
                }
                let control = NodeControl::new();
                let h = control.stop_handle();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(200));
                    h.stop();
                });
                let t = Instant::now();
                let rep = serve_worker(&pg, 0, &control, &resolve_weight_bytes)?;
                Ok::<_, DistError>(Some((rep, t.elapsed())))
            },
        )
    });
    let (rep, took) = r[1].as_ref().unwrap().clone().unwrap();
    assert!(rep.stopped && rep.stages == 0, "{rep:?}");
    assert!(
        took < Duration::from_secs(5),
        "the stop took {took:?} (timeout is 60 s)"
    );
}

#[test]
fn shards_round_trip() {
    let r = with_deadline(30, || {
        on_world(
            Transport::Loopback,
            4,
            Duration::from_secs(10),
            |pg: Arc<dyn ProcessGroup>| {
                let w =
                    HostTensor::from_vec((0..24).map(|v| v as f32).collect::<Vec<_>>(), &[8, 3])
                        .unwrap();
                let all = if pg.rank() == 0 {
                    vec![("w".to_string(), w)]
                } else {
                    vec![]
                };
                let mine = push_shards(&*pg, 0, &all)?;
                assert_eq!(mine[0].1.dims(), &[2, 3]);
                assert_eq!(
                    mine[0].1.to_vec::<f32>().unwrap()[0],
                    (pg.rank() * 6) as f32
                );
                pull_shards(&*pg, 0, &mine)
            },
        )
    });
    let back = r[0].as_ref().unwrap().as_ref().unwrap();
    assert_eq!(
        back[0].1.to_vec::<f32>().unwrap(),
        (0..24).map(|v| v as f32).collect::<Vec<_>>()
    );
}

#[test]
fn weights_from_a_safetensors_file_and_cache() {
    let dir = std::env::temp_dir().join(format!("rlx_dist_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("w.safetensors");
    let t = HostTensor::from_vec(vec![1.5f32, -2.0, 3.25], &[3]).unwrap();
    rlx_runtime::save_safetensors(&path, [("a", &t)], None).unwrap();
    let r = WeightRef::safetensors(&path, "a");
    assert_eq!(resolve_weight_bytes(&r).unwrap(), t);
    let cache = WeightCache::new();
    cache.resolve(&r).unwrap();
    cache.resolve(&WeightRef::Inline(t.clone())).unwrap();
    assert_eq!(cache.len(), 1, "same content, one entry");
    let missing = resolve_weight_uri(&format!("file://{}#b", path.display()));
    assert!(matches!(missing, Err(DistError::Weight { .. })));
    assert!(matches!(
        resolve_weight_uri("http://x#a"),
        Err(DistError::Weight { .. })
    ));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn divergence_of_the_cpu_configurations_is_small() {
    let (_, params) = fixture_layer();
    let x = tensor(&fixture()["pipeline"]["x"]);
    let mut g = Graph::new("plain");
    let xi = g.input("x", Shape::new(&[4, 8], DType::F32));
    let w = g.input("w", Shape::new(&[8, 6], DType::F32));
    let y = g.mm(xi, w);
    g.set_outputs(vec![y]);
    let d = backend_divergence(&g, &[("x", &x), ("w", &params[0].1)]).unwrap();
    assert!(!d.runs.is_empty());
    assert!(
        d.max_rel() < 1e-5,
        "{}",
        rlx_runtime::dist::report_backend_divergence(&d)
    );
}

#[test]
fn config_from_lookup_names_what_is_wrong() {
    let vars = |k: &str| match k {
        "RLX_NODE_RANK" => Some("1".to_string()),
        "RLX_NODE_WORLD" => Some("two".to_string()),
        _ => None,
    };
    let e = NodeConfig::from_lookup(&vars).unwrap_err().to_string();
    assert!(e.contains("RLX_NODE_WORLD"), "{e}");
    let ok = |k: &str| {
        Some(
            match k {
                "RLX_NODE_RANK" => "1",
                "RLX_NODE_WORLD" => "2",
                "RLX_NODE_ROLE" => "trainer",
                "RLX_NODE_COORDINATOR" => "127.0.0.1:1",
                "RLX_NODE_SECRET" => "s",
                _ => return None,
            }
            .to_string(),
        )
    };
    let c = NodeConfig::from_lookup(&ok).unwrap();
    assert_eq!((c.rank, c.world, c.role), (1, 2, NodeRole::Trainer));
}

/// Every variable `from_lookup` reads is declared in rlx-ir's `KNOWN_VARS`
/// with its doc (so `effective_config` and the docs list it).
#[test]
fn node_variables_are_known_vars() {
    let asked = std::sync::Mutex::new(Vec::<String>::new());
    let all = |k: &str| {
        asked.lock().unwrap().push(k.to_string());
        Some(
            match k {
                "RLX_NODE_ROLE" => "worker",
                "RLX_NODE_COORDINATOR" => "127.0.0.1:1",
                "RLX_NODE_SECRET" => "s",
                _ => "3",
            }
            .to_string(),
        )
    };
    let c = NodeConfig::from_lookup(&all).unwrap();
    assert_eq!(c.timeout, Duration::from_millis(3));
    let asked = asked.into_inner().unwrap();
    assert_eq!(asked.len(), 6, "{asked:?}");
    for name in &asked {
        let doc = rlx_ir::env::KNOWN_VARS
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} is read but not in KNOWN_VARS"))
            .1;
        assert!(!doc.is_empty(), "{name} has no doc");
    }
    // A zero timeout is refused by the declaration's parser, naming the variable.
    let zero = |k: &str| {
        Some(
            match k {
                "RLX_NODE_TIMEOUT_MS" => "0",
                "RLX_NODE_ROLE" => "worker",
                "RLX_NODE_COORDINATOR" => "127.0.0.1:1",
                "RLX_NODE_SECRET" => "s",
                _ => "1",
            }
            .to_string(),
        )
    };
    let e = NodeConfig::from_lookup(&zero).unwrap_err().to_string();
    assert!(e.contains("RLX_NODE_TIMEOUT_MS"), "{e}");
}

/// A pipeline rank that dies mid-run (its group dropped): the others get a
/// named transport error at once, not a hang.
#[test]
fn dead_stage_is_an_error_for_the_survivors() {
    for transport in [Transport::Loopback, Transport::Tcp] {
        let r = with_deadline(30, move || {
            on_world(
                transport,
                2,
                Duration::from_secs(10),
                |pg: Arc<dyn ProcessGroup>| {
                    if pg.rank() == 1 {
                        let _ = recv_activation(&*pg, 0);
                        drop(pg); // dies without answering
                        return Ok(Duration::ZERO);
                    }
                    let t = Instant::now();
                    send_activation(&*pg, 1, &[HostTensor::zeros(DType::F32, &[2])])?;
                    recv_activation(&*pg, 1).map(|_| t.elapsed())
                },
            )
        });
        let e = r[0].as_ref().unwrap_err();
        assert!(
            matches!(
                e,
                DistError::Collective(
                    CollectiveError::PeerDisconnected { .. }
                        | CollectiveError::TruncatedFrame { .. }
                )
            ),
            "{transport:?}: {e}"
        );
    }
}

/// A rank that stops responding: the survivor times out with a named error.
#[test]
fn silent_rank_times_out() {
    let r = with_deadline(30, || {
        on_world(
            Transport::Tcp,
            2,
            Duration::from_millis(500),
            |pg: Arc<dyn ProcessGroup>| {
                if pg.rank() == 1 {
                    std::thread::sleep(Duration::from_millis(1500));
                    return Ok(None);
                }
                recv_activation(&*pg, 1)
            },
        )
    });
    assert!(
        matches!(
            r[0],
            Err(DistError::Collective(CollectiveError::Timeout { .. }))
        ),
        "{:?}",
        r[0]
    );
}

/// A rank with the wrong secret is refused; the group does not form.
#[test]
fn wrong_secret_is_refused() {
    let r = with_deadline(30, || {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let a2 = addr.clone();
        let bad = std::thread::spawn(move || {
            TcpGroup::join(
                TcpConfig::new(a2, 1, 2, b"wrong")
                    .rendezvous_timeout(Duration::from_secs(2))
                    .timeout(Duration::from_secs(2)),
            )
            .err()
        });
        let root = TcpGroup::join_with_listener(
            TcpConfig::new(addr, 0, 2, SECRET)
                .rendezvous_timeout(Duration::from_secs(2))
                .timeout(Duration::from_secs(2)),
            l,
        )
        .err();
        (root, bad.join().unwrap())
    });
    assert!(r.0.is_some() && r.1.is_some(), "{r:?}");
}

/// A frame that is not a ship-graph frame (truncated header, bad magic) is
/// a named error, not a panic.
#[test]
fn garbage_frames_are_bad_messages() {
    let r = with_deadline(30, || {
        on_world(
            Transport::Loopback,
            2,
            Duration::from_secs(5),
            |pg: Arc<dyn ProcessGroup>| {
                if pg.rank() == 0 {
                    let tag = rlx_collectives::Tag::user(pg.group_id(), 0x5D00 + 2);
                    pg.send(1, tag, b"RLXD\x01").unwrap();
                    pg.send(1, tag, b"XXXXXXXXXXXXXXXXXXXX").unwrap();
                    std::thread::sleep(Duration::from_millis(300));
                    return vec![];
                }
                vec![
                    recv_activation(&*pg, 0).map(|_| ()),
                    recv_activation(&*pg, 0).map(|_| ()),
                ]
            },
        )
    });
    for e in &r[1] {
        assert!(
            matches!(e, Err(DistError::BadMessage { peer: 0, .. })),
            "{e:?}"
        );
    }
}
