//! The one place that reads `RLX_*` environment variables.
//!
//! Typed option structs (e.g. `CompileOptions`) are the source of truth; the
//! environment is an overlay read here. In-process overrides ([`set`] /
//! [`unset`]) take precedence over the process environment, so tests and
//! embedders can change a knob without mutating the (process-global,
//! thread-unsafe) environment.

mod snapshot;
pub mod vars;

pub use snapshot::{RlxEnv, RuntimeOverrides};
pub use vars::{EnvError, Var, KNOWN_VARS};

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

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

    #[test]
    fn snapshot_is_typed_and_errors_name_the_variable() {
        // Variables of their own so parallel tests do not race on them.
        set("RLX_ARENA_ALIGN", "128");
        set("RLX_NO_FUSION", "on");
        set("RLX_CPU_PACK_WEIGHTS", "0");
        let e = RlxEnv::current().unwrap();
        assert_eq!(e.overrides.arena_align, Some(128));
        assert!(e.overrides.no_fusion && !e.cpu_pack_weights);
        let shown = e.to_string();
        assert!(shown.contains("RLX_ARENA_ALIGN=128"), "{shown}");
        assert!(shown.contains("RLX_CPU_PACK_WEIGHTS=0"), "{shown}");
        set("RLX_ARENA_ALIGN", "100");
        let err = RlxEnv::current().unwrap_err();
        assert_eq!((err.name, err.value.as_str()), ("RLX_ARENA_ALIGN", "100"));
        assert!(err.to_string().contains("power of two"), "{err}");
        set("RLX_NO_FUSION", "maybe");
        set("RLX_ARENA_ALIGN", "64");
        assert_eq!(
            RuntimeOverrides::current().unwrap_err().name,
            "RLX_NO_FUSION"
        );
        for v in ["RLX_ARENA_ALIGN", "RLX_NO_FUSION", "RLX_CPU_PACK_WEIGHTS"] {
            unset(v);
        }
        assert_eq!(
            RlxEnv::current().unwrap().overrides,
            RuntimeOverrides::default()
        );
    }

    #[test]
    fn known_vars_list_every_declared_variable() {
        for name in [
            "RLX_CPU_PROFILE",
            "RLX_CPU_GEMM_ISA",
            "RLX_NO_DCE",
            "RLX_ARENA_ALIGN",
        ] {
            assert!(KNOWN_VARS.iter().any(|(n, _)| *n == name), "{name}");
        }
    }
}
