//! The device mesh and the placement planner: hand-computed closed-form
//! cases, refusals, and monotonicity properties.

use proptest::prelude::*;
use rlx_collectives::prelude::*;
use std::sync::Arc;
use std::time::Duration;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 + 1e-9 * b.abs()
}

fn uniform(n: usize, memory: u64, rate: f64, link: LinkSpec) -> ClusterSpec {
    ClusterSpec::uniform(
        n,
        DeviceSpec {
            memory_bytes: memory,
            flops_per_s: rate,
        },
        link,
    )
}

fn two_equal_layers(global_batch: u64, microbatches: u64) -> ModelProfile {
    let layer = LayerProfile {
        params: 1000,
        activation_bytes: 100,
        output_bytes: 40,
        forward_flops: 1e6,
    };
    let mut m = ModelProfile::f32_sgd(vec![layer; 2], global_batch);
    m.microbatches = microbatches;
    m
}

#[test]
fn ring_all_reduce_matches_the_closed_form() {
    let link = LinkSpec {
        bandwidth_bytes_per_s: 1e9,
        latency_s: 1e-5,
    };
    // 2(n-1)/n · bytes / bw + 2(n-1) · latency with n = 4, 1 GB at 1 GB/s.
    assert!(close(ring_all_reduce_seconds(1e9, 4, &link), 1.5 + 6e-5));
    assert_eq!(ring_all_reduce_seconds(1e9, 1, &link), 0.0);
    assert!(close(
        LinkSpec::gbit(25.0, 5.0).bandwidth_bytes_per_s,
        3.125e9
    ));
}

#[test]
fn data_parallel_mlp_step_by_hand() {
    // MLP 100 -> 50 -> 10: 5050 + 510 = 5560 params, 2·(5000 + 500) = 11000 forward FLOPs/sample.
    let model = ModelProfile::mlp(&[100, 50, 10], 64);
    assert_eq!(model.total_params(), 5560);
    let link = LinkSpec {
        bandwidth_bytes_per_s: 1e9,
        latency_s: 1e-5,
    };
    let cluster = uniform(4, 1 << 30, 1e9, link);
    let plan = evaluate_mesh(&model, &cluster, DeviceMesh::new(4, 1, 1).unwrap()).unwrap();
    // 16 samples per replica, forward + 2× backward.
    assert!(close(plan.step.compute_s, 11000.0 * 3.0 * 16.0 / 1e9));
    // 5560 f32 gradients over a ring of 4.
    assert!(close(
        plan.step.data_all_reduce_s,
        1.5 * 22240.0 / 1e9 + 6e-5
    ));
    assert_eq!(plan.step.bubble_s, 0.0);
    assert_eq!(plan.step.tensor_comm_s, 0.0);
    assert_eq!(plan.step.pipeline_comm_s, 0.0);
    // Params + grads (8 B each) + 16 samples × (4·150 + 4·60) B of activations.
    assert_eq!(plan.memory_per_device, vec![44480 + 16 * 840; 4]);
    assert_eq!(plan.stages, vec![0..2]);
}

#[test]
fn pipeline_bubble_by_hand() {
    let model = two_equal_layers(8, 4);
    let link = LinkSpec {
        bandwidth_bytes_per_s: 1e8,
        latency_s: 1e-6,
    };
    let cluster = uniform(2, 1 << 20, 1e9, link);
    let plan = evaluate_mesh(&model, &cluster, DeviceMesh::new(1, 1, 2).unwrap()).unwrap();
    assert_eq!(plan.stages, vec![0..1, 1..2]);
    // Each stage: 1e6 FLOPs × 3 × 8 samples / 1e9 = 24 ms.
    assert!(close(plan.step.compute_s, 0.024));
    // GPipe with p = 2 stages, m = 4 micro-batches: (p-1)/m × stage = 6 ms.
    assert!(close(plan.step.bubble_s, 0.006));
    // 4 micro-batches of 2 samples × 40 B, sent forward and back.
    assert!(close(plan.step.pipeline_comm_s, 8.0 * (1e-6 + 80.0 / 1e8)));
    assert_eq!(plan.memory_per_device, vec![1000 * 8 + 8 * 100; 2]);
}

#[test]
fn tensor_parallel_by_hand() {
    let model = two_equal_layers(8, 1);
    let link = LinkSpec {
        bandwidth_bytes_per_s: 1e8,
        latency_s: 1e-6,
    };
    let cluster = uniform(2, 1 << 20, 1e9, link);
    let plan = evaluate_mesh(&model, &cluster, DeviceMesh::new(1, 2, 1).unwrap()).unwrap();
    assert!(close(plan.step.compute_s, 2e6 * 3.0 * 8.0 / 2.0 / 1e9));
    // Per layer a forward and a backward ring all-reduce of 8 × 40 B over 2 ranks.
    let one = 320.0 / 1e8 + 2e-6;
    assert!(close(plan.step.tensor_comm_s, 2.0 * 2.0 * one));
    // Half the params each, half the activations.
    assert_eq!(plan.memory_per_device, vec![1000 * 8 + 8 * 200 / 2; 2]);
    assert!(close(
        plan.step.total_s(),
        plan.step.compute_s + plan.step.tensor_comm_s
    ));
}

#[test]
fn refuses_a_model_that_cannot_fit_naming_the_device() {
    let model = ModelProfile::mlp(&[100, 50, 10], 64);
    let cluster = uniform(1, 1000, 1e9, LinkSpec::gbit(25.0, 5.0));
    match plan_placement(&model, &cluster) {
        Err(PlanError::DoesNotFit {
            device,
            needed,
            available,
            ..
        }) => {
            assert_eq!(device, 0);
            assert_eq!(needed, 44480 + 64 * 840);
            assert_eq!(available, 1000);
        }
        other => panic!("expected DoesNotFit, got {other:?}"),
    }
    // Two devices, the second tiny: every placement puts work on it.
    let mut cluster = uniform(2, 1 << 30, 1e9, LinkSpec::gbit(25.0, 5.0));
    cluster.devices[1].memory_bytes = 10;
    let err = plan_placement(&model, &cluster).unwrap_err();
    assert!(matches!(
        err,
        PlanError::DoesNotFit {
            device: 1,
            available: 10,
            candidates: 3,
            ..
        }
    ));
    assert!(err.to_string().contains("device 1 needs"), "{err}");
}

#[test]
fn splits_the_model_when_a_replica_does_not_fit() {
    // Two 1000-param layers need 16000 + 8·200 B whole; give each device 12 kB.
    let model = two_equal_layers(8, 1);
    let cluster = uniform(2, 12_000, 1e9, LinkSpec::gbit(25.0, 5.0));
    let plan = plan_placement(&model, &cluster).unwrap();
    assert_eq!(plan.mesh.size(MeshAxis::Data), 1);
    assert!(plan.memory_per_device.iter().all(|&m| m <= 12_000));
    // With room to spare, plain data parallelism wins (it communicates least per FLOP here).
    let roomy = uniform(2, 1 << 20, 1e9, LinkSpec::gbit(25.0, 5.0));
    assert_eq!(
        plan_placement(&model, &roomy).unwrap().mesh,
        DeviceMesh::new(2, 1, 1).unwrap()
    );
}

#[test]
fn bad_requests_are_typed_errors() {
    let model = ModelProfile::mlp(&[4, 4], 8);
    let link = LinkSpec::gbit(25.0, 5.0);
    let empty = ClusterSpec {
        devices: vec![],
        link,
    };
    assert!(matches!(
        plan_placement(&model, &empty),
        Err(PlanError::InvalidInput(_))
    ));
    let zero_rate = uniform(2, 1 << 20, 0.0, link);
    assert!(matches!(
        plan_placement(&model, &zero_rate),
        Err(PlanError::InvalidInput(_))
    ));
    let cluster = uniform(2, 1 << 20, 1e9, link);
    // A one-layer model cannot have 2 stages.
    let mesh = DeviceMesh::new(1, 1, 2).unwrap();
    assert!(matches!(
        evaluate_mesh(&model, &cluster, mesh),
        Err(PlanError::InvalidInput(_))
    ));
    assert!(DeviceMesh::new(0, 1, 1).is_err());
    assert!(DeviceMesh::for_world(6, 2, 2, 1).is_err());
}

#[test]
fn mesh_layout_and_axis_groups() {
    let mesh = DeviceMesh::for_world(8, 2, 2, 2).unwrap();
    for r in 0..8 {
        assert_eq!(mesh.rank(mesh.coord(r).unwrap()).unwrap(), r);
    }
    assert_eq!(
        mesh.coord(6).unwrap(),
        MeshCoord {
            data: 1,
            tensor: 0,
            pipeline: 1
        }
    );
    assert_eq!(
        mesh.axis_groups(MeshAxis::Tensor),
        vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]
    );
    assert_eq!(
        mesh.axis_groups(MeshAxis::Data),
        vec![vec![0, 2], vec![1, 3], vec![4, 6], vec![5, 7]]
    );
    assert_eq!(
        mesh.axis_groups(MeshAxis::Pipeline),
        vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]
    );
    assert!(mesh.coord(8).is_err());
}

#[test]
fn mesh_groups_carry_collectives() {
    // 2 × 3 × 1 on 6 loopback ranks: each data group sums its members' ranks.
    let mesh = DeviceMesh::for_world(6, 2, 3, 1).unwrap();
    let world = LoopbackGroup::new_world(6, Duration::from_secs(10)).unwrap();
    let sums: Vec<(f64, f64)> = std::thread::scope(|s| {
        let hs: Vec<_> = world
            .into_iter()
            .enumerate()
            .map(|(rank, pg)| {
                s.spawn(move || {
                    let registry = GroupRegistry::new(Arc::new(pg));
                    let ids = mesh.register(&registry, rank).unwrap();
                    let data = registry.get(ids.get(MeshAxis::Data)).unwrap();
                    let tensor = registry.get(ids.get(MeshAxis::Tensor)).unwrap();
                    let v = [rank as f64];
                    let d = all_reduce(&*data, &v, ReduceKind::Sum, ReduceMode::Ring).unwrap()[0];
                    let t = all_reduce(&*tensor, &v, ReduceKind::Sum, ReduceMode::Ring).unwrap()[0];
                    (d, t)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // Data lines {0,3} {1,4} {2,5}; tensor lines {0,1,2} {3,4,5}.
    let data = [3.0, 5.0, 7.0, 3.0, 5.0, 7.0];
    let tensor = [3.0, 3.0, 3.0, 12.0, 12.0, 12.0];
    for r in 0..6 {
        assert_eq!(sums[r], (data[r], tensor[r]), "rank {r}");
    }
}

fn arb_model() -> impl Strategy<Value = ModelProfile> {
    (
        prop::collection::vec((1u64..100_000, 1u64..10_000, 1u64..4096, 1.0f64..1e8), 1..6),
        1u64..256,
        1u64..8,
    )
        .prop_map(|(layers, batch, micro)| {
            let layers = layers
                .into_iter()
                .map(|(params, act, out, flops)| LayerProfile {
                    params,
                    activation_bytes: act,
                    output_bytes: out,
                    forward_flops: flops,
                })
                .collect();
            let mut m = ModelProfile::f32_sgd(layers, batch);
            m.microbatches = micro;
            m
        })
}

fn arb_cluster() -> impl Strategy<Value = ClusterSpec> {
    (
        1usize..9,
        1u64..(1 << 34),
        1e6f64..1e13,
        1e6f64..1e11,
        0.0f64..1e-3,
    )
        .prop_map(|(n, mem, rate, bw, lat)| {
            uniform(
                n,
                mem,
                rate,
                LinkSpec {
                    bandwidth_bytes_per_s: bw,
                    latency_s: lat,
                },
            )
        })
}

proptest! {
    #[test]
    fn faster_links_never_slow_the_plan(model in arb_model(), cluster in arb_cluster(), k in 1.0f64..100.0) {
        if let Ok(slow) = plan_placement(&model, &cluster) {
            let mut fast = cluster.clone();
            fast.link.bandwidth_bytes_per_s *= k;
            let fast = plan_placement(&model, &fast).unwrap();
            prop_assert!(fast.step.total_s() <= slow.step.total_s() * (1.0 + 1e-12));
        }
    }

    #[test]
    fn faster_devices_never_slow_the_plan(model in arb_model(), cluster in arb_cluster(), k in 1.0f64..100.0) {
        if let Ok(slow) = plan_placement(&model, &cluster) {
            let mut fast = cluster.clone();
            for d in &mut fast.devices { d.flops_per_s *= k; }
            let fast = plan_placement(&model, &fast).unwrap();
            prop_assert!(fast.step.total_s() <= slow.step.total_s() * (1.0 + 1e-12));
        }
    }

    #[test]
    fn more_memory_never_loses_a_plan(model in arb_model(), cluster in arb_cluster(), extra in 0u64..(1 << 30)) {
        let mut big = cluster.clone();
        for d in &mut big.devices { d.memory_bytes += extra; }
        if let Ok(small) = plan_placement(&model, &cluster) {
            let big = plan_placement(&model, &big).unwrap();
            prop_assert!(big.step.total_s() <= small.step.total_s() * (1.0 + 1e-12));
        }
    }

    #[test]
    fn wider_layers_never_need_less_memory(model in arb_model(), cluster in arb_cluster(), extra in 0u64..100_000) {
        let mut bigger = model.clone();
        bigger.layers[0].params += extra;
        let mut roomy = cluster.clone();
        for d in &mut roomy.devices { d.memory_bytes = u64::MAX / 2; }
        if let Ok(a) = plan_placement(&model, &roomy) {
            let b = evaluate_mesh(&bigger, &roomy, a.mesh).unwrap();
            for (x, y) in a.memory_per_device.iter().zip(&b.memory_per_device) {
                prop_assert!(y >= x);
            }
        }
    }
}

#[test]
fn an_absurd_model_is_refused_not_overflowed() {
    let huge = LayerProfile {
        params: u64::MAX / 2,
        activation_bytes: u64::MAX / 2,
        output_bytes: 4,
        forward_flops: 1.0,
    };
    let model = ModelProfile::f32_sgd(vec![huge; 3], 4);
    let cluster = uniform(2, 1 << 40, 1e9, LinkSpec::gbit(25.0, 5.0));
    assert!(matches!(
        plan_placement(&model, &cluster),
        Err(PlanError::DoesNotFit { .. })
    ));
}
