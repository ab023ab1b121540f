//! `BackendsManifest`: every device kind, compiled in or not, and why.

use rlx_driver::Device;
use rlx_runtime::*;

#[test]
fn every_kind_is_listed_with_its_state_and_reason() {
    let m = BackendsManifest::current();
    assert_eq!(m.backends.len(), Device::KINDS.len());
    let cpu = m.status(Device::Cpu).unwrap();
    assert!(cpu.compiled_in && cpu.available && cpu.reason.is_none());
    assert_eq!(m.available, available_devices());
    // The accelerator kinds (cuda, rocm, metal, mlx, tpu) give their own
    // reasons: `devices_accelerators.rs`.
    {
        let d = Device::Gpu;
        let s = m.status(d).unwrap();
        assert!(!s.compiled_in && !s.available, "{s:?}");
        let why = s.reason.as_deref().unwrap();
        assert_eq!(
            why,
            format!("compiled out: {}", devices::unavailable_reason(d))
        );
        assert!(why.contains(&format!("`{}` feature", d.feature())), "{why}");
        // A compiled-out device is refused with the same reason at compile.
        let e = Session::new(d)
            .try_compile(rlx_ir::Graph::new("g"))
            .unwrap_err();
        let refused = why.trim_start_matches("compiled out: ");
        assert_eq!(
            e.to_string(),
            format!("device {d} is not available: {refused}")
        );
    }
    assert_eq!(m.cpu_threads, Some(rlx_cpu::num_threads()));
}

#[test]
fn json_and_text_forms() {
    let m = BackendsManifest::current();
    let j = m.to_json();
    assert_eq!(j["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(j["available"], serde_json::json!(["cpu"]));
    let rows = j["backends"].as_array().unwrap();
    assert_eq!(rows.len(), 7);
    assert_eq!(rows[0]["device"], "cpu");
    assert_eq!(rows[0]["available"], true);
    assert!(rows[0]["reason"].is_null());
    assert_eq!(rows[1]["device"], "cuda:0");
    assert_eq!(rows[1]["compiled_in"], false);
    assert!(rows[1]["reason"]
        .as_str()
        .unwrap()
        .starts_with("compiled out"));
    let text = m.to_string();
    assert!(text.contains("  cpu      built  available (CPU)"), "{text}");
    assert!(
        text.contains("  metal    absent unavailable: compiled out"),
        "{text}"
    );
    assert!(text.contains("available (fastest first): cpu"), "{text}");
}
