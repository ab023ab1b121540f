//! [`EffectiveConfig`]: what a compile actually runs with, printable.

use crate::{CompileOptions, Result};
use rlx_ir::env::RlxEnv;
use std::fmt;

/// The configuration a compile with some [`CompileOptions`] runs with: the
/// options after the environment overlay, the environment snapshot and the
/// CPU backend's worker threads.
///
/// ```
/// use rlx_runtime::{effective_config, CompileOptions, Precision};
/// let text = effective_config(&CompileOptions::default().precision(Precision::F16)).unwrap();
/// assert!(text.contains("precision: F16"), "{text}");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct EffectiveConfig {
    /// The options with the environment's overrides applied.
    pub options: CompileOptions,
    /// Every `RLX_*` variable, read now.
    pub env: RlxEnv,
    /// Worker threads of the CPU backend: the options' `threads`, else
    /// `RLX_NUM_THREADS`, else the cores.
    pub threads: usize,
}

impl EffectiveConfig {
    /// Reads the environment now and lays it over `opts`; a bad variable
    /// is [`crate::RuntimeError::Env`].
    pub fn of(opts: &CompileOptions) -> Result<EffectiveConfig> {
        let env = RlxEnv::current()?;
        let options = opts.clone().with_overrides(&env.overrides)?;
        let threads = options
            .threads
            .or(env.num_threads)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        Ok(EffectiveConfig {
            options,
            env,
            threads,
        })
    }
}

/// [`EffectiveConfig::of`] `opts`, as text (what `rlx info` prints).
pub fn effective_config(opts: &CompileOptions) -> Result<String> {
    Ok(EffectiveConfig::of(opts)?.to_string())
}

fn on(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

impl fmt::Display for EffectiveConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.options;
        let l = &o.lower;
        writeln!(f, "precision: {:?}", l.precision)?;
        writeln!(f, "precision policy: {:?}", l.precision_policy)?;
        writeln!(
            f,
            "passes: simplify {}, cse {}, fold constants {}, dce {}, decompose composites {}",
            on(l.simplify),
            on(l.cse),
            on(l.fold_constants),
            on(!l.keep_dead_code),
            on(l.decompose_composites),
        )?;
        writeln!(f, "fusion: {:?}", l.fusion)?;
        let mut bindings: Vec<_> = l.bindings.iter().collect();
        bindings.sort();
        let bindings: Vec<String> = bindings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        writeln!(f, "dim bindings: {}", bindings.join(", "))?;
        let align = if l.alignment == 0 { 64 } else { l.alignment };
        writeln!(f, "arena alignment: {align} bytes")?;
        writeln!(f, "keep stages: {}", on(l.keep_stages))?;
        writeln!(f, "dispatch: {:?}", o.dispatch)?;
        writeln!(f, "assert fusion clean: {}", on(o.assert_fusion_clean))?;
        writeln!(f, "hoist params: {}", on(o.hoist_params))?;
        writeln!(f, "cpu threads: {}", self.threads)?;
        writeln!(f, "environment:")?;
        for line in self.env.to_string().lines() {
            writeln!(f, "  {line}")?;
        }
        Ok(())
    }
}
