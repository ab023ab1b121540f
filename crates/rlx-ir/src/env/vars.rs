//! Every `RLX_*` variable declared once: its name, what it does and how its
//! value parses. [`crate::env::KNOWN_VARS`] and [`crate::env::RlxEnv`] are
//! built from these declarations, so a variable cannot be read without
//! being listed.

use super::var;
use std::path::PathBuf;
use thiserror::Error;

/// An `RLX_*` variable holds a value its parser rejects.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("environment variable {name}={value:?}: {reason}")]
pub struct EnvError {
    /// The variable.
    pub name: &'static str,
    /// Its value as read.
    pub value: String,
    /// What is wrong with it.
    pub reason: String,
}

/// One typed variable: read with [`Var::get`] (through [`var`], so in-process
/// overrides apply).
#[derive(Clone, Copy, Debug)]
pub struct Var<T: 'static> {
    /// The variable's name (`RLX_...`).
    pub name: &'static str,
    /// What it does (listed by [`crate::env::KNOWN_VARS`]).
    pub doc: &'static str,
    parse: fn(&str) -> Result<T, String>,
}

impl<T> Var<T> {
    /// The parsed value; `None` when unset or empty.
    pub fn get(&self) -> Result<Option<T>, EnvError> {
        var(self.name).map(|v| self.parse_value(&v)).transpose()
    }

    /// Parses `value` as this variable would be parsed (for a value read
    /// from somewhere other than the process environment).
    pub fn parse_value(&self, value: &str) -> Result<T, EnvError> {
        (self.parse)(value.trim()).map_err(|reason| EnvError {
            name: self.name,
            value: value.to_string(),
            reason,
        })
    }
}

fn string(v: &str) -> Result<String, String> {
    Ok(v.to_string())
}

fn path(v: &str) -> Result<PathBuf, String> {
    Ok(PathBuf::from(v))
}

/// `1/true/yes/on` or `0/false/no/off`, any case.
fn switch(v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err("expected 1/true/yes/on or 0/false/no/off".into()),
    }
}

/// The CPU knobs' historical reading: only `0` turns them off.
fn not_zero(v: &str) -> Result<bool, String> {
    Ok(v != "0")
}

fn positive(v: &str) -> Result<usize, String> {
    match v.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("expected a positive integer".into()),
    }
}

fn non_negative(v: &str) -> Result<usize, String> {
    v.parse::<usize>()
        .map_err(|_| "expected a non-negative integer".into())
}

fn power_of_two(v: &str) -> Result<usize, String> {
    match v.parse::<usize>() {
        Ok(n) if n.is_power_of_two() => Ok(n),
        _ => Err("expected a power of two (bytes)".into()),
    }
}

fn lowercase(v: &str) -> Result<String, String> {
    Ok(v.to_ascii_lowercase())
}

/// `RLX_DEVICE`.
pub const DEVICE: Var<String> = Var {
    name: "RLX_DEVICE",
    doc: "device for Session / device_from_env (cpu, cuda:0, metal, ...)",
    parse: string,
};
/// `RLX_DEVICE_CHAIN`.
pub const DEVICE_CHAIN: Var<String> = Var {
    name: "RLX_DEVICE_CHAIN",
    doc: "comma-separated fallback chain for resolve_device_chain",
    parse: string,
};
/// `RLX_NUM_THREADS`.
pub const NUM_THREADS: Var<usize> = Var {
    name: "RLX_NUM_THREADS",
    doc: "worker threads of the CPU backend (default: every core)",
    parse: positive,
};
/// `RLX_FUSION_REPORT`.
pub const FUSION_REPORT: Var<bool> = Var {
    name: "RLX_FUSION_REPORT",
    doc: "print the fusion report at compile (1/0)",
    parse: switch,
};
/// `RLX_DISPATCH_REPORT`.
pub const DISPATCH_REPORT: Var<bool> = Var {
    name: "RLX_DISPATCH_REPORT",
    doc: "print the dispatch report at compile (1/0)",
    parse: switch,
};
/// `RLX_IR_DUMP`.
pub const IR_DUMP: Var<PathBuf> = Var {
    name: "RLX_IR_DUMP",
    doc: "directory to write each compile stage's textual IR into",
    parse: path,
};
/// `RLX_DISPATCH_POLICY` (parsed by the runtime into its `DispatchPolicy`).
pub const DISPATCH_POLICY: Var<String> = Var {
    name: "RLX_DISPATCH_POLICY",
    doc: "overlays CompileOptions::dispatch (native-first, decompose-all, error-on-unsupported)",
    parse: lowercase,
};
/// `RLX_ARENA_ALIGN`.
pub const ARENA_ALIGN: Var<usize> = Var {
    name: "RLX_ARENA_ALIGN",
    doc: "overlays the arena alignment in bytes (a power of two)",
    parse: power_of_two,
};
/// `RLX_NO_DCE`.
pub const NO_DCE: Var<bool> = Var {
    name: "RLX_NO_DCE",
    doc: "keep dead code: turns dead-code elimination off (1/0)",
    parse: switch,
};
/// `RLX_NO_FUSION`.
pub const NO_FUSION: Var<bool> = Var {
    name: "RLX_NO_FUSION",
    doc: "turns every fusion pass off (1/0)",
    parse: switch,
};
/// `RLX_ASSERT_FUSION_CLEAN`.
pub const ASSERT_FUSION_CLEAN: Var<bool> = Var {
    name: "RLX_ASSERT_FUSION_CLEAN",
    doc: "fail the compile when the fusion report lists a missed fusion (1/0)",
    parse: switch,
};
/// `RLX_CPU_PROFILE`.
pub const CPU_PROFILE: Var<bool> = Var {
    name: "RLX_CPU_PROFILE",
    doc: "CPU backend: time every kernel, print the profile when the executable drops (anything but 0)",
    parse: not_zero,
};
/// `RLX_CPU_PACK_WEIGHTS`.
pub const CPU_PACK_WEIGHTS: Var<bool> = Var {
    name: "RLX_CPU_PACK_WEIGHTS",
    doc: "CPU backend: 0 keeps matmul weights unpacked (default: packed panels)",
    parse: not_zero,
};
/// `RLX_CPU_WINOGRAD`.
pub const CPU_WINOGRAD: Var<bool> = Var {
    name: "RLX_CPU_WINOGRAD",
    doc: "CPU backend: 0 runs 3x3 stride-1 convs as im2col + GEMM (default: Winograd F(2,3) where it wins)",
    parse: not_zero,
};
/// `RLX_CPU_GEMM_ISA`.
pub const CPU_GEMM_ISA: Var<String> = Var {
    name: "RLX_CPU_GEMM_ISA",
    doc: "CPU backend: avx2 keeps an AVX-512 machine on the AVX2 GEMM tiles (default: widest)",
    parse: lowercase,
};
/// `RLX_CPU_IN_PLACE_IO`.
pub const CPU_IN_PLACE_IO: Var<bool> = Var {
    name: "RLX_CPU_IN_PLACE_IO",
    doc:
        "CPU backend: 0 copies every input into the arena and every output out (default: in place)",
    parse: not_zero,
};

/// `RLX_NVRTC_LIB`.
pub const NVRTC_LIB: Var<PathBuf> = Var {
    name: "RLX_NVRTC_LIB",
    doc: "CUDA: full path of libnvrtc to load before the usual names (e.g. from the nvidia-cuda-nvrtc-cu12 wheel)",
    parse: path,
};
/// `RLX_REQUIRE_CUDA`.
pub const REQUIRE_CUDA: Var<bool> = Var {
    name: "RLX_REQUIRE_CUDA",
    doc: "CUDA tests: 1 fails (instead of skipping) the GPU tests when no CUDA device is usable",
    parse: switch,
};

/// `RLX_NODE_RANK` (read by the runtime's `NodeConfig::from_env`).
pub const NODE_RANK: Var<usize> = Var {
    name: "RLX_NODE_RANK",
    doc: "distributed node: this process's rank, 0..RLX_NODE_WORLD (required)",
    parse: non_negative,
};
/// `RLX_NODE_WORLD`.
pub const NODE_WORLD: Var<usize> = Var {
    name: "RLX_NODE_WORLD",
    doc: "distributed node: how many ranks the group has (required)",
    parse: positive,
};
/// `RLX_NODE_ROLE`.
pub const NODE_ROLE: Var<String> = Var {
    name: "RLX_NODE_ROLE",
    doc: "distributed node: worker, trainer or fixed-function (default: worker)",
    parse: lowercase,
};
/// `RLX_NODE_COORDINATOR`.
pub const NODE_COORDINATOR: Var<String> = Var {
    name: "RLX_NODE_COORDINATOR",
    doc: "distributed node: host:port of rank 0's TCP rendezvous (required)",
    parse: string,
};
/// `RLX_NODE_SECRET`.
pub const NODE_SECRET: Var<String> = Var {
    name: "RLX_NODE_SECRET",
    doc: "distributed node: the shared secret every rank's TCP handshake proves (required)",
    parse: string,
};
/// `RLX_NODE_TIMEOUT_MS`.
pub const NODE_TIMEOUT_MS: Var<usize> = Var {
    name: "RLX_NODE_TIMEOUT_MS",
    doc: "distributed node: rendezvous and receive timeout in milliseconds (default: 30000)",
    parse: positive,
};

/// Every variable RLX reads, with what it does.
pub const KNOWN_VARS: &[(&str, &str)] = &[
    (DEVICE.name, DEVICE.doc),
    (DEVICE_CHAIN.name, DEVICE_CHAIN.doc),
    (NUM_THREADS.name, NUM_THREADS.doc),
    (FUSION_REPORT.name, FUSION_REPORT.doc),
    (DISPATCH_REPORT.name, DISPATCH_REPORT.doc),
    (IR_DUMP.name, IR_DUMP.doc),
    (DISPATCH_POLICY.name, DISPATCH_POLICY.doc),
    (ARENA_ALIGN.name, ARENA_ALIGN.doc),
    (NO_DCE.name, NO_DCE.doc),
    (NO_FUSION.name, NO_FUSION.doc),
    (ASSERT_FUSION_CLEAN.name, ASSERT_FUSION_CLEAN.doc),
    (CPU_PROFILE.name, CPU_PROFILE.doc),
    (CPU_PACK_WEIGHTS.name, CPU_PACK_WEIGHTS.doc),
    (CPU_WINOGRAD.name, CPU_WINOGRAD.doc),
    (CPU_GEMM_ISA.name, CPU_GEMM_ISA.doc),
    (CPU_IN_PLACE_IO.name, CPU_IN_PLACE_IO.doc),
    (NVRTC_LIB.name, NVRTC_LIB.doc),
    (REQUIRE_CUDA.name, REQUIRE_CUDA.doc),
    (NODE_RANK.name, NODE_RANK.doc),
    (NODE_WORLD.name, NODE_WORLD.doc),
    (NODE_ROLE.name, NODE_ROLE.doc),
    (NODE_COORDINATOR.name, NODE_COORDINATOR.doc),
    (NODE_SECRET.name, NODE_SECRET.doc),
    (NODE_TIMEOUT_MS.name, NODE_TIMEOUT_MS.doc),
];
