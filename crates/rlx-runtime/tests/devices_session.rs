//! `FlexibleSession` moves and `DeviceRouter` rules.

mod device_fixture;

use device_fixture::{assert_close, mlp};
use rlx_driver::Device;
use rlx_runtime::*;
use std::time::Duration;

#[test]
fn a_moved_session_keeps_its_params_and_outputs() {
    let m = mlp();
    let mut s = FlexibleSession::new(m.graph.clone(), DeviceCandidate::cpu_threads(1)).unwrap();
    for (name, v) in m.params() {
        s.set_param(name, v).unwrap();
    }
    let before = s.run(&m.inputs()).unwrap();
    assert_close(&before[0], &m.want, 1e-5);

    s.move_to(DeviceCandidate::new(Device::Cpu)).unwrap();
    assert_eq!(s.candidate(), DeviceCandidate::new(Device::Cpu));
    let after = s.run(&m.inputs()).unwrap();
    assert_eq!(before, after);

    // A param set after the move moves on too.
    let b2: Vec<f32> = m.values("b2").iter().map(|v| v + 1.0).collect();
    s.set_param("b2", &b2).unwrap();
    s.move_to(DeviceCandidate::cpu_threads(2)).unwrap();
    let shifted = s.run(&m.inputs()).unwrap();
    let want: Vec<f64> = m.want.iter().map(|w| w + 1.0).collect();
    assert_close(&shifted[0], &want, 1e-5);
}

#[test]
fn a_failed_move_leaves_the_session_where_it_was() {
    let m = mlp();
    let mut s = FlexibleSession::new(m.graph.clone(), DeviceCandidate::cpu_threads(1)).unwrap();
    for (name, v) in m.params() {
        s.set_param(name, v).unwrap();
    }
    let e = s
        .move_to(DeviceCandidate::new(Device::Cuda(0)))
        .unwrap_err();
    assert!(
        e.to_string().starts_with("device cuda:0 is not available"),
        "{e}"
    );
    assert_eq!(s.candidate(), DeviceCandidate::cpu_threads(1));
    assert_close(&s.run(&m.inputs()).unwrap()[0], &m.want, 1e-5);
    // A bad param is refused, naming it, and changes nothing.
    let e = s.set_param("w9", &[1.0]).unwrap_err();
    assert!(e.to_string().contains("unknown param \"w9\""), "{e}");
}

#[test]
fn batch_thresholds_route_and_unusable_devices_are_passed_over() {
    let one = DeviceCandidate::cpu_threads(1);
    let all = DeviceCandidate::new(Device::Cpu);
    let cuda = DeviceCandidate::new(Device::Cuda(0));
    let router = DeviceRouter::new(vec![one])
        .batch_at_least(16, all)
        .batch_at_least(256, cuda);
    assert_eq!(router.route(1).unwrap(), one);
    assert_eq!(router.route(15).unwrap(), one);
    assert_eq!(router.route(16).unwrap(), all);
    // cuda's rule matches but it is not available: the next rule's device.
    assert_eq!(router.route(1000).unwrap(), all);
    let (usable, skipped) = router.ranked(1000);
    assert_eq!(usable, vec![all, one]);
    assert_eq!(skipped[0].0, cuda);
    assert!(
        skipped[0]
            .1
            .contains(&rlx_runtime::devices::unavailable_reason(Device::Cuda(0))),
        "{:?}",
        skipped
    );

    let denied = router
        .clone()
        .policy(DevicePolicy::default().deny(Device::Cpu));
    let e = denied.route(20).unwrap_err();
    assert_eq!(e.attempts.len(), 2, "{e}");
    assert!(e.to_string().contains("denied by the device policy"), "{e}");
}

#[test]
fn measured_latency_chooses_among_the_named_candidates() {
    let one = DeviceCandidate::cpu_threads(1);
    let two = DeviceCandidate::cpu_threads(2);
    let mut router = DeviceRouter::new(vec![one, two]).prefer_measured_latency(true);
    // Nothing measured: rule order.
    assert_eq!(router.route(8).unwrap(), one);
    router.record(one, 8, Duration::from_millis(4));
    // `two` is not measured yet: it is tried next.
    assert_eq!(router.route(8).unwrap(), two);
    router.record(two, 8, Duration::from_millis(2));
    assert_eq!(router.route(8).unwrap(), two);
    // Size classes are measured apart (8 and 5 share one, 9 does not).
    assert_eq!(router.route(5).unwrap(), two);
    assert_eq!(router.route(9).unwrap(), one);
    // A device that slows down loses the route.
    for _ in 0..5 {
        router.record(two, 8, Duration::from_millis(20));
    }
    assert!(router.measured_ms(two, 8).unwrap() > 4.0);
    assert_eq!(router.route(8).unwrap(), one);
}

#[test]
fn routed_runs_are_timed_and_correct() {
    let m = mlp();
    let mut graphs = GraphDevices::new(m.graph.clone());
    for (name, v) in m.params() {
        graphs.set_param(name, v).unwrap();
    }
    let one = DeviceCandidate::cpu_threads(1);
    let all = DeviceCandidate::new(Device::Cpu);
    let cuda = DeviceCandidate::new(Device::Cuda(0));
    let mut router = DeviceRouter::new(vec![cuda, one]).batch_at_least(64, all);
    let (used, out) = router.run(&mut graphs, 64, &m.inputs()).unwrap();
    assert_eq!(used, all);
    assert_close(&out[0], &m.want, 1e-5);
    assert!(router.measured_ms(all, 64).is_some());
    let (used, out) = router.run(&mut graphs, 2, &m.inputs()).unwrap();
    assert_eq!(used, one);
    assert_close(&out[0], &m.want, 1e-5);
    // A run that fails (a bad input) is tried on the next candidate, and
    // every failure is reported.
    let e = router.run(&mut graphs, 64, &[("x", &[1.0])]).unwrap_err();
    assert_eq!(e.attempts.len(), 3, "{e}");
    assert!(
        e.attempts[0]
            .1
            .contains(&rlx_runtime::devices::unavailable_reason(Device::Cuda(0))),
        "{e}"
    );
    assert!(e.attempts[1].1.contains("\"x\""), "{e}");
    let mut strict = router.policy(DevicePolicy::default().fallback(false));
    let e = strict.run(&mut graphs, 64, &[("x", &[1.0])]).unwrap_err();
    assert_eq!(e.attempts.len(), 2, "{e}");
}
