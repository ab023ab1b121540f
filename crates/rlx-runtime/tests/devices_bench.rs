//! `benchmark_devices`: one measured row per available candidate.

mod device_fixture;

use device_fixture::{feeds, mlp};
use rlx_driver::Device;
use rlx_ir::HostTensor;
use rlx_runtime::*;

#[test]
fn one_measured_row_per_available_candidate() {
    let m = mlp();
    let owned = m.host_tensors();
    let rows = benchmark_devices(&m.graph, &feeds(&owned)).unwrap();
    let candidates = DeviceCandidate::available();
    assert_eq!(
        rows.iter().map(|r| r.candidate).collect::<Vec<_>>(),
        candidates
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(
        candidates.contains(&DeviceCandidate::cpu_threads(1)),
        cores > 1
    );
    let defaults = BenchOptions::default();
    for r in &rows {
        assert_eq!((r.warmup, r.runs), (defaults.warmup, defaults.runs));
        assert!(r.compile_ms > 0.0, "{r:?}");
        assert!(
            0.0 < r.min_ms && r.min_ms <= r.median_ms && r.median_ms <= r.p99_ms,
            "{r:?}"
        );
        let j = r.to_json();
        assert_eq!(j["device"], r.candidate.device.to_string());
        assert_eq!(j["median_ms"], r.median_ms);
    }
    // The fastest row is the one with the lowest median, on a device the
    // static picks also name.
    let best = DeviceBenchResult::fastest(&rows).unwrap();
    assert!(rows.iter().all(|r| best.median_ms <= r.median_ms));
    assert_eq!(best.candidate.device, fastest_device_for(&m.graph));
    assert_eq!(best.candidate.device, fastest_device());
}

#[test]
fn explicit_candidates_and_run_counts() {
    let m = mlp();
    let owned = m.host_tensors();
    let cands = [
        DeviceCandidate::cpu_threads(1),
        DeviceCandidate::cpu_threads(2),
    ];
    let rows = benchmark_devices_with(
        &m.graph,
        &feeds(&owned),
        &cands,
        &CompileOptions::default(),
        &BenchOptions { warmup: 0, runs: 0 },
    )
    .unwrap();
    assert_eq!(rows.len(), 2);
    // At least one timed run is made.
    assert!(rows.iter().all(|r| r.runs == 1 && r.median_ms == r.p99_ms));
    // An unavailable device is an error naming it.
    let e = benchmark_devices_with(
        &m.graph,
        &feeds(&owned),
        &[DeviceCandidate::new(Device::Tpu(0))],
        &CompileOptions::default(),
        &BenchOptions::default(),
    )
    .unwrap_err();
    assert!(
        e.to_string().starts_with("device tpu:0 is not available"),
        "{e}"
    );
}

#[test]
fn each_candidate_gets_its_own_result() {
    let m = mlp();
    let owned = m.host_tensors();
    let cands = [
        DeviceCandidate::new(Device::Tpu(0)),
        DeviceCandidate::cpu_threads(1),
    ];
    let bench = BenchOptions { warmup: 1, runs: 3 };
    let rows = benchmark_each(
        &m.graph,
        &feeds(&owned),
        &cands,
        &CompileOptions::default(),
        &bench,
    );
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].0, cands[0]);
    let e = rows[0].1.as_ref().unwrap_err();
    assert!(
        e.to_string().starts_with("device tpu:0 is not available"),
        "{e}"
    );
    // The failure before it does not stop the CPU row.
    let r = rows[1].1.as_ref().unwrap();
    assert_eq!((r.candidate, r.warmup, r.runs), (cands[1], 1, 3));
    assert!(r.min_ms <= r.mean_ms && r.mean_ms <= r.p99_ms, "{r:?}");
    assert!(r.median_ms <= r.p90_ms && r.p90_ms <= r.p99_ms, "{r:?}");
}

#[test]
fn bad_feeds_are_named() {
    let m = mlp();
    let mut owned = m.host_tensors();
    owned.push((
        "bias".into(),
        HostTensor::from_slice(&[1f32], &[1]).unwrap(),
    ));
    let e = benchmark_devices(&m.graph, &feeds(&owned)).unwrap_err();
    assert!(
        matches!(&e, RuntimeError::UnknownInput { name, .. } if name == "bias"),
        "{e}"
    );
    let owned: Vec<_> = m
        .host_tensors()
        .into_iter()
        .filter(|(n, _)| n != "w2")
        .collect();
    let e = benchmark_devices(&m.graph, &feeds(&owned)).unwrap_err();
    assert!(e.to_string().contains("param \"w2\""), "{e}");
    let owned: Vec<_> = m
        .host_tensors()
        .into_iter()
        .map(|(n, t)| {
            if n == "x" {
                (n, HostTensor::from_slice(&[0f32; 3], &[3]).unwrap())
            } else {
                (n, t)
            }
        })
        .collect();
    let e = benchmark_devices(&m.graph, &feeds(&owned)).unwrap_err();
    assert!(e.to_string().contains("\"x\""), "{e}");
}
