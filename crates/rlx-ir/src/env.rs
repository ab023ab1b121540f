//! The one place that reads `RLX_*` environment variables.
//!
//! Typed option structs (e.g. `CompileOptions`) are the source of truth; the
//! environment is an overlay read here. In-process overrides ([`set`] /
//! [`unset`]) take precedence over the process environment, so tests and
//! embedders can change a knob without mutating the (process-global,
//! thread-unsafe) environment.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Every variable RLX reads, with what it does.
pub const KNOWN_VARS: &[(&str, &str)] = &[
    (
        "RLX_DEVICE",
        "device for Session / device_from_env (cpu, cuda:0, metal, ...)",
    ),
    (
        "RLX_DEVICE_CHAIN",
        "comma-separated fallback chain for resolve_device_chain",
    ),
    ("RLX_NUM_THREADS", "worker threads of the CPU backend"),
    (
        "RLX_FUSION_REPORT",
        "print the fusion report at compile (1/0)",
    ),
    (
        "RLX_DISPATCH_REPORT",
        "print the dispatch report at compile (1/0)",
    ),
    (
        "RLX_IR_DUMP",
        "directory to write each compile stage's textual IR into",
    ),
];

#[derive(Default)]
struct Overrides {
    map: HashMap<String, Option<String>>,
}

fn overrides() -> &'static Mutex<Overrides> {
    static O: OnceLock<Mutex<Overrides>> = OnceLock::new();
    O.get_or_init(|| Mutex::new(Overrides::default()))
}

/// The value of `name`: an in-process override if one is set, else the
/// process environment. Empty values count as unset.
pub fn var(name: &str) -> Option<String> {
    let o = overrides().lock().unwrap_or_else(|p| p.into_inner());
    let v = match o.map.get(name) {
        Some(v) => v.clone(),
        None => std::env::var(name).ok(),
    };
    v.filter(|s| !s.trim().is_empty())
}

/// True when `name` is `1`, `true`, `yes` or `on` (any case).
pub fn flag(name: &str) -> bool {
    var(name).is_some_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "on"
        )
    })
}

/// Overrides `name` in this process (the process environment is untouched).
pub fn set(name: &str, value: &str) {
    let mut o = overrides().lock().unwrap_or_else(|p| p.into_inner());
    o.map.insert(name.to_string(), Some(value.to_string()));
}

/// Masks `name` in this process: [`var`] returns `None` whatever the environment says.
pub fn unset(name: &str) {
    let mut o = overrides().lock().unwrap_or_else(|p| p.into_inner());
    o.map.insert(name.to_string(), None);
}

/// Removes any override of `name`, so the process environment shows through again.
pub fn clear_override(name: &str) {
    let mut o = overrides().lock().unwrap_or_else(|p| p.into_inner());
    o.map.remove(name);
}

/// A typed snapshot of every `RLX_*` knob.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RlxEnv {
    /// `RLX_DEVICE`.
    pub device: Option<String>,
    /// `RLX_DEVICE_CHAIN`.
    pub device_chain: Option<String>,
    /// `RLX_NUM_THREADS`.
    pub num_threads: Option<usize>,
    /// `RLX_FUSION_REPORT`.
    pub fusion_report: bool,
    /// `RLX_DISPATCH_REPORT`.
    pub dispatch_report: bool,
    /// `RLX_IR_DUMP`.
    pub ir_dump: Option<String>,
}

impl RlxEnv {
    /// Reads every knob now.
    pub fn read() -> RlxEnv {
        RlxEnv {
            device: var("RLX_DEVICE"),
            device_chain: var("RLX_DEVICE_CHAIN"),
            num_threads: var("RLX_NUM_THREADS").and_then(|v| v.trim().parse().ok()),
            fusion_report: flag("RLX_FUSION_REPORT"),
            dispatch_report: flag("RLX_DISPATCH_REPORT"),
            ir_dump: var("RLX_IR_DUMP"),
        }
    }
}

/// Runtime knobs an embedder sets in code; each `Some` wins over the environment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuntimeOverrides {
    /// Device to use.
    pub device: Option<String>,
    /// Worker threads.
    pub num_threads: Option<usize>,
}

impl RuntimeOverrides {
    /// Installs these overrides process-wide (via [`set`]).
    pub fn apply(&self) {
        if let Some(d) = &self.device {
            set("RLX_DEVICE", d);
        }
        if let Some(n) = self.num_threads {
            set("RLX_NUM_THREADS", &n.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_wins_and_unset_masks() {
        set("RLX_TEST_KNOB_A", "on");
        assert!(flag("RLX_TEST_KNOB_A"));
        unset("RLX_TEST_KNOB_A");
        assert_eq!(var("RLX_TEST_KNOB_A"), None);
        set("RLX_TEST_KNOB_A", "0");
        assert!(!flag("RLX_TEST_KNOB_A"));
        clear_override("RLX_TEST_KNOB_A");
    }
}
