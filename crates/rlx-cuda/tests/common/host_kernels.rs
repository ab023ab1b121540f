//! The real CUDA kernel sources run on the CPU: every `src/kernels/*.cu`
//! module compiled by the host C++ compiler (g++) through
//! `tests/host/cuda_host.h` into a shared library (cached under the test
//! target's tmp dir by a hash of the sources), loaded with libloading, and
//! launched with the exact launches the executor makes
//! ([`rlx_cuda::step_launch::step_launches`]: entry points, argument bytes,
//! grid and block). Each entry gets an `extern "C"` trampoline that checks
//! the argument count and sizes against the kernel's parameters.
//!
//! Without g++ the tests that use this skip with a message, unless
//! `RLX_REQUIRE_HOST_KERNELS` is set (CI sets it): then they fail.

use rlx_cuda::kernels::{KernelSource, SOURCES};
use rlx_cuda::plan::{Buf, LaunchPlan, Region};
use rlx_cuda::step_launch::{step_launches, KernelLaunch, StepLaunch};
use rlx_ir::{DType, HostTensor};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const SHIM: &str = include_str!("../host/cuda_host.h");
const FLAGS: &[&str] = &[
    "-std=c++17",
    "-O2",
    "-fPIC",
    "-shared",
    // A product is never fused into an fma unless the source asks.
    "-ffp-contract=off",
    "-fno-strict-aliasing",
    "-w",
];

type Trampoline =
    unsafe extern "C" fn(*const u32, *const u32, *const *const u8, *const u32, u32, i32) -> i32;

/// The compiled modules.
pub struct HostKernels {
    modules: HashMap<&'static str, (libloading::Library, bool)>,
}

/// The host kernels, or `None` (after printing why) where g++ is missing
/// and `RLX_REQUIRE_HOST_KERNELS` is unset; panics on any other failure.
pub fn host_kernels() -> Option<&'static HostKernels> {
    static HOST: OnceLock<Result<HostKernels, String>> = OnceLock::new();
    match HOST.get_or_init(build) {
        Ok(h) => Some(h),
        Err(why) if std::env::var_os("RLX_REQUIRE_HOST_KERNELS").is_none() && missing_gxx() => {
            eprintln!("skipped: the CUDA kernels' host run needs g++ ({why})");
            None
        }
        Err(why) => panic!("host kernels: {why}"),
    }
}

fn missing_gxx() -> bool {
    Command::new("g++").arg("--version").output().is_err()
}

/// True when the module's kernels meet at barriers (block reductions):
/// their threads then run as fibers.
fn uses_barriers(s: &KernelSource) -> bool {
    ["block_sum", "block_max", "__syncthreads", "__shfl"]
        .iter()
        .any(|t| s.source.contains(t))
}

fn build() -> Result<HostKernels, String> {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (SHIM, FLAGS).hash(&mut h);
    for s in SOURCES {
        s.translation_unit().hash(&mut h);
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("host_kernels")
        .join(format!("{:016x}", h.finish()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    std::fs::write(dir.join("cuda_host.h"), SHIM).map_err(|e| e.to_string())?;
    // Two at a time (the CI machines have two cores).
    let mut libs = Vec::new();
    for pair in SOURCES.chunks(2) {
        let built: Vec<Result<PathBuf, String>> = std::thread::scope(|sc| {
            let hs: Vec<_> = pair.iter().map(|s| sc.spawn(|| compile(s, &dir))).collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (s, so) in pair.iter().zip(built) {
            libs.push((s, so?));
        }
    }
    let mut modules = HashMap::new();
    for (s, so) in libs {
        // SAFETY: a library this function just compiled; its initialisers
        // are the C++ runtime's.
        let lib = unsafe { libloading::Library::new(&so) }
            .map_err(|e| format!("loading {}: {e}", so.display()))?;
        modules.insert(s.name, (lib, uses_barriers(s)));
    }
    Ok(HostKernels { modules })
}

/// One module as a shared library (reused when already built).
fn compile(s: &KernelSource, dir: &Path) -> Result<PathBuf, String> {
    let so = dir.join(format!("{}.so", s.name));
    if so.exists() {
        return Ok(so);
    }
    let mut unit = String::from("#include \"cuda_host.h\"\n");
    unit += &s.translation_unit();
    unit += "\n";
    for e in s.entries {
        unit += &format!("RLX_HOST_ENTRY({e})\n");
    }
    let cpp = dir.join(format!("{}.cpp", s.name));
    std::fs::write(&cpp, unit).map_err(|e| e.to_string())?;
    let tmp = dir.join(format!("{}.{}.so", s.name, std::process::id()));
    let out = Command::new("g++")
        .args(FLAGS)
        .arg("-o")
        .arg(&tmp)
        .arg(&cpp)
        .output()
        .map_err(|e| format!("cannot run g++: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "g++ failed on {}.cu: {}",
            s.name,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    std::fs::rename(&tmp, &so).map_err(|e| e.to_string())?;
    Ok(so)
}

impl HostKernels {
    /// Runs one launch on the host.
    pub fn launch(&self, k: &KernelLaunch) -> Result<(), String> {
        let (lib, fibers) = self
            .modules
            .get(k.module)
            .ok_or_else(|| format!("no kernel module {}", k.module))?;
        let name = format!("rlx_host_{}", k.entry);
        // SAFETY: every trampoline has this signature (RLX_HOST_ENTRY).
        let f = unsafe { lib.get::<Trampoline>(name.as_bytes()) }
            .map_err(|e| format!("{}: no entry {}: {e}", k.module, k.entry))?;
        let args: Vec<*const u8> = k.args.iter().map(|a| a.value_ptr()).collect();
        let sizes: Vec<u32> = k.args.iter().map(|a| a.size() as u32).collect();
        let grid = [k.grid.0, k.grid.1, k.grid.2];
        let block = [k.block.0, k.block.1, k.block.2];
        // SAFETY: the trampoline checks the argument count and sizes; the
        // caller's addresses hold what the plan placed there.
        let rc = unsafe {
            f(
                grid.as_ptr(),
                block.as_ptr(),
                args.as_ptr(),
                sizes.as_ptr(),
                args.len() as u32,
                i32::from(*fibers),
            )
        };
        match rc {
            0 => Ok(()),
            1 => Err(format!(
                "{}: the arguments (sizes {sizes:?}) do not match its parameters",
                k.entry
            )),
            _ => Err(format!("{}: a barrier some threads never reach", k.entry)),
        }
    }
}

/// Host memory aligned for any element type (u64 words).
struct Aligned(Vec<u64>);

impl Aligned {
    fn from_bytes(b: &[u8], fill: u8) -> Aligned {
        let mut v = Aligned(vec![
            u64::from_ne_bytes([fill; 8]);
            b.len().div_ceil(8).max(1)
        ]);
        v.bytes_mut()[..b.len()].copy_from_slice(b);
        v
    }
    fn bytes(&self) -> &[u8] {
        // SAFETY: u64s viewed as their bytes.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr() as *const u8, self.0.len() * 8) }
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr() as *mut u8, self.0.len() * 8) }
    }
    fn addr(&mut self) -> u64 {
        self.0.as_mut_ptr() as u64
    }
}

/// Runs `plan` with the real kernels on the host (GEMMs in f64 on the
/// host: cuBLAS has no source here); returns the outputs' values, or the
/// first launch's error (a bad index named by its step).
pub fn run_plan(
    hk: &HostKernels,
    plan: &LaunchPlan,
    inputs: &[&HostTensor],
    params: &[&HostTensor],
) -> Result<Vec<Vec<f64>>, String> {
    let mut arena = Aligned::from_bytes(&vec![0xAB; plan.arena_bytes], 0xAB);
    for ((_, b), t) in plan.inputs.iter().zip(inputs) {
        arena.bytes_mut()[b.byte..b.byte + b.bytes].copy_from_slice(t.bytes());
    }
    let mut params: Vec<Aligned> = params
        .iter()
        .map(|p| Aligned::from_bytes(p.bytes(), 0))
        .collect();
    let mut consts: Vec<Aligned> = plan
        .constants
        .iter()
        .map(|c| Aligned::from_bytes(c, 0))
        .collect();
    let bases = (
        arena.addr(),
        params.iter_mut().map(Aligned::addr).collect::<Vec<_>>(),
        consts.iter_mut().map(Aligned::addr).collect::<Vec<_>>(),
    );
    let addr = |b: &Buf| {
        b.byte as u64
            + match b.region {
                Region::Arena => bases.0,
                Region::Param(i) => bases.1[i],
                Region::Const(i) => bases.2[i],
            }
    };
    for step in &plan.steps {
        let mut flag = 0i64;
        let launches = step_launches(step, &addr, &mut flag as *mut i64 as u64)
            .map_err(|e| format!("{}: {e}", step.label))?;
        for l in launches {
            let done = match l {
                StepLaunch::Kernel(k) => hk.launch(&k),
                StepLaunch::Gemm {
                    spec,
                    dtype,
                    places,
                } => host_gemm(&spec, dtype, places),
                StepLaunch::GemmBias {
                    spec,
                    dtype,
                    places: [a, b, _, c],
                    fallback,
                    ..
                } => host_gemm(&spec, dtype, [a, b, c])
                    .and_then(|()| fallback.iter().try_for_each(|k| hk.launch(k))),
            };
            done.map_err(|e| format!("{}: {e}", step.label))?;
        }
        if flag != 0 {
            return Err(format!(
                "{}: bad index at position {}",
                step.label,
                flag - 1
            ));
        }
    }
    Ok(plan
        .outputs
        .iter()
        .map(|b| {
            // SAFETY: a planned place inside its region's live buffer.
            let bytes = unsafe { std::slice::from_raw_parts(addr(b) as *const u8, b.bytes) };
            values(bytes, b.dtype)
        })
        .collect())
}

/// Element values of `bytes` as f64.
pub fn values(bytes: &[u8], dtype: DType) -> Vec<f64> {
    let w = dtype.size_bytes().max(1);
    bytes
        .chunks_exact(w)
        .map(|c| match dtype {
            DType::F32 => f32::from_le_bytes(c.try_into().unwrap()) as f64,
            DType::F16 => half::f16::from_le_bytes(c.try_into().unwrap()).to_f64(),
            DType::BF16 => half::bf16::from_le_bytes(c.try_into().unwrap()).to_f64(),
            DType::I32 => i32::from_le_bytes(c.try_into().unwrap()) as f64,
            DType::I64 => i64::from_le_bytes(c.try_into().unwrap()) as f64,
            DType::Bool | DType::U8 => f64::from(c[0]),
            other => panic!("host kernels read no {other}"),
        })
        .collect()
}

/// A planned GEMM on host memory (f64 accumulation, rounded to the type).
fn host_gemm(
    s: &rlx_cuda::plan::GemmSpec,
    dtype: DType,
    [a, b, c]: [u64; 3],
) -> Result<(), String> {
    let w = dtype.size_bytes();
    let read = |base: u64, len: usize| {
        // SAFETY: the plan sized a and b for this GEMM.
        values(
            unsafe { std::slice::from_raw_parts(base as *const u8, len * w) },
            dtype,
        )
    };
    let last = s.batch.saturating_sub(1);
    let a = read(a, last * s.stride_a + s.m * s.k);
    let b = read(b, last * s.stride_b + s.k * s.n);
    let mut out = vec![0.0; s.batch * s.m * s.n];
    for bt in 0..s.batch {
        let (ab, bb) = (bt * s.stride_a, bt * s.stride_b);
        for i in 0..s.m {
            for j in 0..s.n {
                let mut acc = 0.0;
                for k in 0..s.k {
                    let av = a[ab + if s.trans_a { k * s.m + i } else { i * s.k + k }];
                    let bv = b[bb + if s.trans_b { j * s.k + k } else { k * s.n + j }];
                    acc += av * bv;
                }
                out[(bt * s.m + i) * s.n + j] = acc;
            }
        }
    }
    for (i, v) in out.iter().enumerate() {
        let bytes: Vec<u8> = match dtype {
            DType::F32 => (*v as f32).to_le_bytes().to_vec(),
            DType::F16 => half::f16::from_f64(*v).to_le_bytes().to_vec(),
            DType::BF16 => half::bf16::from_f64(*v).to_le_bytes().to_vec(),
            other => return Err(format!("no host GEMM of {other}")),
        };
        // SAFETY: the plan sized c for batch * m * n elements.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), (c as usize + i * w) as *mut u8, w)
        };
    }
    Ok(())
}
