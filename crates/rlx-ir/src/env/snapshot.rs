//! [`RlxEnv`]: every `RLX_*` variable read once into typed values, and
//! [`RuntimeOverrides`]: the part of it that overlays compile options.

use super::vars::{self, EnvError};
use std::fmt;
use std::path::PathBuf;

/// The variables that overlay a compile's typed options (applied by
/// `rlx_runtime::CompileOptions::with_env_overlay`). `None` / `false`
/// leaves the typed option as it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuntimeOverrides {
    /// `RLX_DISPATCH_POLICY`, lower-cased (the runtime parses it).
    pub dispatch_policy: Option<String>,
    /// `RLX_ARENA_ALIGN`: arena alignment in bytes (a power of two).
    pub arena_align: Option<usize>,
    /// `RLX_NO_DCE`: keep dead code.
    pub no_dce: bool,
    /// `RLX_NO_FUSION`: turn fusion off.
    pub no_fusion: bool,
    /// `RLX_ASSERT_FUSION_CLEAN`: a missed fusion fails the compile.
    pub assert_fusion_clean: bool,
}

impl RuntimeOverrides {
    /// Reads the overlay variables now (in-process overrides included).
    pub fn current() -> Result<RuntimeOverrides, EnvError> {
        Ok(RuntimeOverrides {
            dispatch_policy: vars::DISPATCH_POLICY.get()?,
            arena_align: vars::ARENA_ALIGN.get()?,
            no_dce: vars::NO_DCE.get()?.unwrap_or(false),
            no_fusion: vars::NO_FUSION.get()?.unwrap_or(false),
            assert_fusion_clean: vars::ASSERT_FUSION_CLEAN.get()?.unwrap_or(false),
        })
    }

    /// True when no variable overlays anything.
    pub fn is_empty(&self) -> bool {
        *self == RuntimeOverrides::default()
    }
}

/// A typed snapshot of every `RLX_*` variable RLX reads
/// ([`super::KNOWN_VARS`]); `Default` is an empty environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RlxEnv {
    /// `RLX_DEVICE` as written (the runtime parses it into a device).
    pub device: Option<String>,
    /// `RLX_DEVICE_CHAIN` as written.
    pub device_chain: Option<String>,
    /// `RLX_NUM_THREADS`.
    pub num_threads: Option<usize>,
    /// `RLX_FUSION_REPORT`.
    pub fusion_report: bool,
    /// `RLX_DISPATCH_REPORT`.
    pub dispatch_report: bool,
    /// `RLX_IR_DUMP`: the directory stage dumps go to.
    pub ir_dump: Option<PathBuf>,
    /// The variables that overlay compile options.
    pub overrides: RuntimeOverrides,
    /// `RLX_CPU_PROFILE`.
    pub cpu_profile: bool,
    /// `RLX_CPU_PACK_WEIGHTS` (on unless `0`).
    pub cpu_pack_weights: bool,
    /// `RLX_CPU_GEMM_ISA`, lower-cased (`avx2` caps the GEMM tiles).
    pub cpu_gemm_isa: Option<String>,
    /// `RLX_CPU_IN_PLACE_IO` (on unless `0`).
    pub cpu_in_place_io: bool,
}

impl Default for RlxEnv {
    fn default() -> Self {
        RlxEnv {
            device: None,
            device_chain: None,
            num_threads: None,
            fusion_report: false,
            dispatch_report: false,
            ir_dump: None,
            overrides: RuntimeOverrides::default(),
            cpu_profile: false,
            cpu_pack_weights: true,
            cpu_gemm_isa: None,
            cpu_in_place_io: true,
        }
    }
}

impl RlxEnv {
    /// Reads every variable now, through [`super::var`] (so in-process
    /// [`super::set`] / [`super::unset`] apply); the first bad value is an
    /// error naming the variable and the value.
    pub fn current() -> Result<RlxEnv, EnvError> {
        Ok(RlxEnv {
            device: vars::DEVICE.get()?,
            device_chain: vars::DEVICE_CHAIN.get()?,
            num_threads: vars::NUM_THREADS.get()?,
            fusion_report: vars::FUSION_REPORT.get()?.unwrap_or(false),
            dispatch_report: vars::DISPATCH_REPORT.get()?.unwrap_or(false),
            ir_dump: vars::IR_DUMP.get()?,
            overrides: RuntimeOverrides::current()?,
            cpu_profile: vars::CPU_PROFILE.get()?.unwrap_or(false),
            cpu_pack_weights: vars::CPU_PACK_WEIGHTS.get()?.unwrap_or(true),
            cpu_gemm_isa: vars::CPU_GEMM_ISA.get()?,
            cpu_in_place_io: vars::CPU_IN_PLACE_IO.get()?.unwrap_or(true),
        })
    }
}

/// One `NAME=value` line per variable that differs from an empty
/// environment (`(none set)` when none does).
impl fmt::Display for RlxEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = RlxEnv::default();
        let o = &self.overrides;
        let mut lines: Vec<(&str, String)> = Vec::new();
        let mut opt = |name, v: Option<String>| {
            if let Some(v) = v {
                lines.push((name, v));
            }
        };
        opt(vars::DEVICE.name, self.device.clone());
        opt(vars::DEVICE_CHAIN.name, self.device_chain.clone());
        opt(
            vars::NUM_THREADS.name,
            self.num_threads.map(|n| n.to_string()),
        );
        opt(
            vars::IR_DUMP.name,
            self.ir_dump.as_ref().map(|p| p.display().to_string()),
        );
        opt(vars::DISPATCH_POLICY.name, o.dispatch_policy.clone());
        opt(vars::ARENA_ALIGN.name, o.arena_align.map(|n| n.to_string()));
        opt(vars::CPU_GEMM_ISA.name, self.cpu_gemm_isa.clone());
        let flags = [
            (
                vars::FUSION_REPORT.name,
                self.fusion_report,
                d.fusion_report,
            ),
            (
                vars::DISPATCH_REPORT.name,
                self.dispatch_report,
                d.dispatch_report,
            ),
            (vars::NO_DCE.name, o.no_dce, false),
            (vars::NO_FUSION.name, o.no_fusion, false),
            (vars::ASSERT_FUSION_CLEAN.name, o.assert_fusion_clean, false),
            (vars::CPU_PROFILE.name, self.cpu_profile, d.cpu_profile),
            (
                vars::CPU_PACK_WEIGHTS.name,
                self.cpu_pack_weights,
                d.cpu_pack_weights,
            ),
            (
                vars::CPU_IN_PLACE_IO.name,
                self.cpu_in_place_io,
                d.cpu_in_place_io,
            ),
        ];
        for (name, v, default) in flags {
            if v != default {
                lines.push((name, u8::from(v).to_string()));
            }
        }
        if lines.is_empty() {
            return writeln!(f, "(no RLX_* variable set)");
        }
        for (name, v) in lines {
            writeln!(f, "{name}={v}")?;
        }
        Ok(())
    }
}
