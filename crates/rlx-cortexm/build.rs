//! Sets `cfg(rlx_dsp)` for Arm cores with the DSP extension (`SMLAD`).
//!
//! Arm target features are unstable, so stable `rustc` never sets
//! `target_feature = "dsp"`; ARMv7E-M (`thumbv7em-*`) always has the
//! extension, and an explicit `-C target-feature=+dsp` is honoured too.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(rlx_dsp)");
    println!("cargo::rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let explicit = features.split(',').any(|f| f == "dsp");
    if arch == "arm" && (target.starts_with("thumbv7em") || explicit) {
        println!("cargo::rustc-cfg=rlx_dsp");
    }
}
