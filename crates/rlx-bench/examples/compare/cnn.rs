//! The CNN rows of the compare example (issue 28): the five models of
//! `tools/gen_cnn_bench_models.py` (ResNet-18, MobileNetV2, U-Net, CRNN,
//! YOLO-style; `$RLX_MODELS/cnn/<model>_b<B>.onnx`) imported with
//! `rlx_onnx::OnnxModel`, each against ONNX Runtime on the same file at
//! batch 1 and 8, plus import + compile time against ONNX Runtime's session
//! creation, cold (the compiled-graph cache cleared) and cached (a second
//! load of the same bytes). Before a model's rows its outputs are checked against ONNX
//! Runtime's (`tools/bench_ref.py --dump`): max |RLX - ORT| over an output
//! must be at most 1e-4 x max |ORT|, else the row is marked `MISMATCH`.
//! The timed RLX runs write into bound outputs (`OnnxModel::run_into`)
//! reused run to run, as the reference's runs (bound through ONNX Runtime's
//! IO binding, `tools/bench_ref.py`): neither side allocates its outputs per run.
//!
//! Without the models (run the script) the rows are skipped with a note.

use super::minilm::{Reference, Row};
use rlx_bench::reference::run_reference_with;
use rlx_bench::{time_iterations, BenchConfig, BenchResult};
use rlx_ir::HostTensor;
use rlx_onnx::OnnxModel;
use rlx_runtime::Device;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

type Error = Box<dyn std::error::Error>;

/// The models, in the order the rows print.
pub const MODELS: [&str; 5] = ["resnet18", "mobilenetv2", "unet", "crnn", "yolo"];
/// Batch sizes timed.
const BATCHES: [usize; 2] = [1, 8];
/// Largest max |RLX - ORT| / max |ORT| an output may show.
const TOLERANCE: f64 = 1e-4;

/// Where the script writes the models.
pub fn model_dir() -> PathBuf {
    let home = PathBuf::from(std::env::var("HOME").unwrap_or_default());
    std::env::var("RLX_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| home.join(".cache/rlx-models"))
        .join("cnn")
}

/// The bench pattern id (`tools/bench_ref.py`'s name for it).
fn pattern_id(model: &str, batch: usize) -> String {
    format!("cnn_{model}_b{batch}")
}

/// The deterministic input both sides feed: `((i * 7919) % 1000) / 500 - 1`.
fn input(dims: &[usize]) -> Result<HostTensor, Error> {
    let n: usize = dims.iter().product();
    let x: Vec<f32> = (0..n)
        .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
        .collect();
    Ok(HostTensor::from_vec(x, dims)?)
}

/// What the external pieces the rows need: the reference python and script.
pub struct Env<'a> {
    /// The reference python (`None`: RLX rows only, no output check).
    pub python: Option<&'a Path>,
    /// `tools/bench_ref.py`.
    pub script: &'a Path,
}

/// Max |ours - ORT| / max |ORT| over each output, from ORT's dump of the
/// same input (`tools/bench_ref.py --dump`).
fn check_outputs(env: &Env, id: &str, ours: &[HostTensor]) -> Result<Vec<f64>, Error> {
    let Some(python) = env.python else {
        return Ok(Vec::new());
    };
    let dir = std::env::temp_dir().join(format!("rlx-cnn-check-{}-{id}", std::process::id()));
    let out = std::process::Command::new(python)
        .arg(env.script)
        .args([id, "--threads", "1", "--dump"])
        .arg(&dir)
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "{id}: ONNX Runtime dump failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    let mut errors = Vec::new();
    for (i, t) in ours.iter().enumerate() {
        let bytes = std::fs::read(dir.join(format!("{i}.bin")))?;
        let theirs: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let ours: Vec<f32> = t.to_vec()?;
        if ours.len() != theirs.len() {
            return Err(format!(
                "{id}: output {i} has {} values, ONNX Runtime's {}",
                ours.len(),
                theirs.len()
            )
            .into());
        }
        let scale = theirs.iter().fold(0f64, |m, &v| m.max(f64::from(v).abs()));
        let diff = ours
            .iter()
            .zip(&theirs)
            .fold(0f64, |m, (&a, &b)| m.max(f64::from(a - b).abs()));
        errors.push(diff / scale.max(f64::MIN_POSITIVE));
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(errors)
}

/// Import + compile of one model, timed as ONNX Runtime's session
/// creation is: load, then [`OnnxModel::prepare`] for the input's shape
/// (import, compile, weights packed), no run. Also returns the first run
/// after it and a steady run, for the note. `cold` clears the
/// compiled-graph cache first.
fn import_compile(path: &Path, x: &HostTensor, cold: bool) -> Result<[Duration; 3], Error> {
    if cold {
        rlx_onnx::clear_compile_cache();
    }
    let t = Instant::now();
    let mut model = OnnxModel::load(path, Device::Cpu)?;
    model.prepare(&[("input", x)])?;
    let compile = t.elapsed();
    let t = Instant::now();
    model.run(&[("input", x)])?;
    let first = t.elapsed();
    let t = Instant::now();
    model.run(&[("input", x)])?;
    Ok([compile, first, t.elapsed()])
}

/// Prints the CNN rows (those `wanted` selects) at each thread count;
/// returns the import + compile lines, printed after the table.
pub fn rows(
    env: &Env,
    threads: &[usize],
    cfg: &BenchConfig,
    rounds: super::rounds::Plan,
    wanted: &dyn Fn(&str) -> bool,
    reference: &mut Reference,
    row: Row,
) -> Result<Vec<String>, Error> {
    let dir = model_dir();
    let mut notes = Vec::new();
    for model in MODELS {
        for batch in BATCHES {
            let id = pattern_id(model, batch);
            let path = dir.join(format!("{model}_b{batch}.onnx"));
            if !wanted(&id) {
                continue;
            }
            if !path.is_file() {
                eprintln!(
                    "{id} skipped: no {} (tools/gen_cnn_bench_models.py)",
                    path.display()
                );
                continue;
            }
            let mut onnx = OnnxModel::load(&path, Device::Cpu)?;
            let dims: Vec<usize> = onnx.inputs()[0]
                .dims
                .iter()
                .map(|d| d.as_static().ok_or("symbolic input dim"))
                .collect::<Result<_, _>>()?;
            let x = input(&dims)?;
            let outs = onnx.run(&[("input", &x)])?;
            let errors = check_outputs(env, &id, &outs)?;
            let worst = errors.iter().cloned().fold(0f64, f64::max);
            let verdict = if worst <= TOLERANCE { "ok" } else { "MISMATCH" };
            if !errors.is_empty() {
                eprintln!("{id}: max |RLX - ORT| / max |ORT| = {worst:.2e} ({verdict})");
            }
            // Bound outputs, reused run to run (the reference binds its
            // outputs too).
            let mut bound = onnx.output_tensors(&[("input", &x)])?;
            for &t in threads {
                rlx_ir::env::set("RLX_NUM_THREADS", &t.to_string());
                let r = super::rounds::alternate(
                    rounds,
                    || {
                        time_iterations(cfg, || onnx.run_into(&[("input", &x)], &mut bound))
                            .map(|s| BenchResult::from_samples(&id, 0.0, s))
                    },
                    || reference(&id, t),
                )?;
                let label = if errors.is_empty() || worst <= TOLERANCE {
                    id.clone()
                } else {
                    format!("{id} (MISMATCH {worst:.1e})")
                };
                row(&label, t, &r);
            }
            notes.push(compile_line(env, &id, &path, &x)?);
        }
    }
    Ok(notes)
}

/// Import + compile (median of 3 cold, then median of 3 cached loads;
/// 1 thread) against ONNX Runtime's session creation (median of 5).
fn compile_line(env: &Env, id: &str, path: &Path, x: &HostTensor) -> Result<String, Error> {
    rlx_ir::env::set("RLX_NUM_THREADS", "1");
    let mut cold = Vec::new();
    let mut cached = Vec::new();
    for _ in 0..3 {
        cold.push(import_compile(path, x, true)?);
        cached.push(import_compile(path, x, false)?[0]);
    }
    cold.sort();
    cached.sort();
    let [compile, first, steady] = cold[1];
    let cached = cached[1];
    let ort = match env.python {
        Some(python) => run_reference_with(python, env.script, id, 1, &["--session-time".into()])?,
        None => None,
    };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let ours = format!(
        "{id} import + compile (1 thread): RLX {:.1} ms (load + prepare; then a first run {:.1} ms, a second {:.1} ms)",
        ms(compile),
        ms(first),
        ms(steady)
    );
    Ok(match ort {
        Some(o) => format!(
            "{ours}, ONNX Runtime session {:.1} ms: {:.2}x; cached (second load) {:.1} ms: {:.2}x",
            ms(o.median),
            compile.as_secs_f64() / o.median.as_secs_f64(),
            ms(cached),
            cached.as_secs_f64() / o.median.as_secs_f64()
        ),
        None => format!("{ours}; cached (second load) {:.1} ms", ms(cached)),
    })
}
