//! Shared helpers: the HDL-tool gate and scratch directories.
#![allow(dead_code)]

use rlx_fpga::sim::tool_available;
use std::path::PathBuf;

/// `true` when iverilog, vvp and verilator are installed. Without them the
/// test prints why it skips, unless `RLX_REQUIRE_HDL=1` makes that a failure.
pub fn hdl_tools() -> bool {
    let missing: Vec<&str> = ["iverilog", "vvp", "verilator"]
        .into_iter()
        .filter(|t| !tool_available(t))
        .collect();
    if missing.is_empty() {
        return true;
    }
    if std::env::var("RLX_REQUIRE_HDL").is_ok_and(|v| v == "1") {
        panic!("RLX_REQUIRE_HDL=1 but {missing:?} are not installed");
    }
    eprintln!("SKIPPED: {missing:?} not installed (apt-get install iverilog verilator)");
    false
}

/// A fresh scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-fpga-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}
