//! The op matrix: every op kind of the op table (`rlx_ir::OpKind::ALL`)
//! through one set of generic checks on every available backend.
//!
//! Samples are the numpy fixture cases of `tests/fixtures/*.json` (written
//! by `tools/gen_op_fixtures.py`) plus hand-built samples for the kinds numpy
//! has no op for (`samples.rs`: fused ops, quantized weights, control flow),
//! whose references are f64 loops written in the test. For each sample and
//! each device of `rlx_runtime::available_devices()`:
//!
//! - **forward**: the outputs against the reference, within the case's tolerance;
//! - **decomposed**: a graph holding a composite runs again with
//!   `decompose_composites(true)` and must match the reference too;
//! - **text**: every mnemonic starts with the op table's name, and
//!   `Graph::from_text(g.to_text())` prints back the same text and computes
//!   the same bits;
//! - **vjp**: for float graphs, the gradient of `L = Σ w·out` along a random
//!   direction against central finite differences of `L`;
//! - **jvp**: `Σ w·jvp(d)` against the same `⟨∇L, d⟩` (transpose consistency);
//! - **vmap**: the first input batched two ways against two separate runs.
//!
//! A transform the op table marks unsupported for a kind of the graph must
//! fail with a typed error instead (checked too). `docs_ops_md_is_current`
//! renders `docs/ops.md` (op × rules × backends) from the table and the
//! samples and checks the committed file (`RLX_BLESS=1` rewrites it), and
//! asserts that every op kind has at least one sample.
//!
//! `OP_MATRIX_FILTER=substring` runs only the samples whose name contains it.

mod cases;
mod checks;
mod custom;
mod samples;

use cases::{build_graph, guarded, install_panic_hook, load_cases, Res};
use rlx_driver::Device;
use rlx_ir::{Graph, HostTensor, OpKind};
use std::collections::{BTreeMap, BTreeSet};

/// One graph to check, with its inputs (`x0`, `x1`, ...) and reference outputs.
pub(crate) struct Sample {
    pub name: String,
    pub graph: Graph,
    pub inputs: Vec<HostTensor>,
    pub expected: Vec<HostTensor>,
    pub rtol: f64,
    pub atol: f64,
}

impl Sample {
    /// The op kinds of the graph's non-leaf nodes.
    pub fn kinds(&self) -> BTreeSet<OpKind> {
        self.graph
            .nodes()
            .iter()
            .map(|n| n.op.kind())
            .filter(|k| !matches!(k, OpKind::Input | OpKind::Param | OpKind::Constant))
            .collect()
    }
}

/// The fixture files of the matrix, one test each.
const FIXTURE_FILES: &[&str] = &[
    "elementwise.json",
    "binary.json",
    "compare.json",
    "cast.json",
    "linalg.json",
    "reduce.json",
    "movement.json",
    "indexing.json",
    "norm.json",
    "attention.json",
    "conv.json",
    "upsample.json",
    "fft.json",
];

fn fixture_samples(file: &str) -> Vec<Res<Sample>> {
    load_cases(file)
        .into_iter()
        .map(|case| {
            let graph = guarded(|| build_graph(&case))
                .map_err(|e| format!("{} ({}): building the graph: {e}", case.name, case.op))?;
            Ok(Sample {
                name: format!("{}:{}", file.trim_end_matches(".json"), case.name),
                graph,
                inputs: case.inputs,
                expected: case.outputs,
                rtol: case.rtol,
                atol: case.atol,
            })
        })
        .collect()
}

/// The backends the matrix runs on: every device this build has and can use.
fn devices() -> Vec<Device> {
    rlx_runtime::available_devices()
}

fn check_all(samples: Vec<Res<Sample>>, what: &str) {
    install_panic_hook();
    let filter = std::env::var("OP_MATRIX_FILTER").ok();
    let mut failures = Vec::new();
    let mut tally: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut count = 0;
    for sample in samples {
        let sample = match sample {
            Ok(s) => s,
            Err(e) => {
                failures.push(format!("  {e}"));
                continue;
            }
        };
        if filter.as_deref().is_some_and(|f| !sample.name.contains(f)) {
            continue;
        }
        count += 1;
        for &device in &devices() {
            for (check, result) in checks::run_all(&sample, device) {
                match result {
                    Ok(true) => *tally.entry(check).or_default() += 1,
                    Ok(false) => {}
                    Err(e) => {
                        failures.push(format!("  {} [{check} on {device:?}]: {e}", sample.name))
                    }
                }
            }
        }
    }
    println!("{what}: {count} samples; checks passed: {tally:?}");
    assert!(
        failures.is_empty(),
        "{} failures in {what}:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

macro_rules! fixture_tests {
    ($($name:ident => $file:literal,)*) => {
        $(
            #[test]
            fn $name() {
                check_all(fixture_samples($file), $file);
            }
        )*
    };
}

fixture_tests! {
    elementwise => "elementwise.json",
    binary => "binary.json",
    compare => "compare.json",
    cast => "cast.json",
    linalg => "linalg.json",
    reduce => "reduce.json",
    movement => "movement.json",
    indexing => "indexing.json",
    norm => "norm.json",
    attention => "attention.json",
    conv => "conv.json",
    upsample => "upsample.json",
    fft => "fft.json",
}

#[test]
fn hand_built_samples() {
    check_all(samples::all(), "hand-built samples");
}

/// `docs/ops.md`: the op table with its rules, each backend's support and
/// the matrix's samples per kind. Also asserts every kind has a sample.
#[test]
fn docs_ops_md_is_current() {
    install_panic_hook();
    let mut per_kind: BTreeMap<OpKind, usize> = BTreeMap::new();
    let mut ops_of_kind: BTreeMap<OpKind, Vec<rlx_ir::Op>> = BTreeMap::new();
    let mut all: Vec<Res<Sample>> = FIXTURE_FILES
        .iter()
        .flat_map(|f| fixture_samples(f))
        .collect();
    all.extend(samples::all());
    for s in all.iter().flatten() {
        for n in s.graph.nodes() {
            let k = n.op.kind();
            ops_of_kind.entry(k).or_default().push(n.op.clone());
        }
        for k in s.kinds() {
            *per_kind.entry(k).or_default() += 1;
        }
    }
    let leaves = [OpKind::Input, OpKind::Param, OpKind::Constant];
    let unsampled: Vec<String> = OpKind::ALL
        .iter()
        .filter(|k| !leaves.contains(k) && !per_kind.contains_key(k))
        .map(|k| format!("{k:?}"))
        .collect();
    assert!(
        unsampled.is_empty(),
        "op kinds without a matrix sample: {}",
        unsampled.join(", ")
    );

    let text = render_ops_md(&per_kind, &ops_of_kind);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/ops.md");
    if std::env::var("RLX_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &text).expect("write docs/ops.md");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == text,
        "docs/ops.md is out of date with the op table; regenerate it with \
         `RLX_BLESS=1 cargo test -p rlx-runtime --test op_matrix docs_ops_md_is_current`"
    );
}

/// One backend's support of a kind over the ops the samples hold.
fn backend_cell(device: Device, ops: &[rlx_ir::Op]) -> &'static str {
    let Some(backend) = rlx_driver::registry::backend_for(device) else {
        return "not registered";
    };
    let claimed = ops.iter().filter(|op| backend.claims(op)).count();
    match claimed {
        0 if ops.is_empty() => "-",
        0 => "decomposed",
        c if c == ops.len() => "native",
        _ => "native / some payloads decomposed",
    }
}

fn render_ops_md(
    per_kind: &BTreeMap<OpKind, usize>,
    ops_of_kind: &BTreeMap<OpKind, Vec<rlx_ir::Op>>,
) -> String {
    rlx_runtime::devices::ensure_builtin_backends();
    let devices = rlx_driver::registry::registered_devices();
    let mut s = String::from(
        "# Ops\n\n\
         Generated from the op table (`rlx_ir::op_table`) and the op matrix \
         (`crates/rlx-runtime/tests/op_matrix/`) by \
         `RLX_BLESS=1 cargo test -p rlx-runtime --test op_matrix docs_ops_md_is_current`; \
         a test checks it is current. Do not edit by hand.\n\n\
         Rules: `rule` — a rule of its own in `rlx-autodiff/src/rules/`; \
         `via decomposition` — lowered to primitives first; `zero` — no \
         derivative flows (Bool / index results, block bytes); `leaf` — a \
         transform starts here. Backends: `native` — the backend claims the op \
         and runs its own kernel; `decomposed` — it runs the op's \
         decomposition. Samples: graphs of the matrix holding the kind, each \
         checked forward vs reference, decomposed, text round trip, and (float \
         graphs) vjp vs finite differences, jvp vs vjp and vmap vs a loop.\n\n",
    );
    s.push_str("| op | family | inputs | composite | vjp | jvp | vmap |");
    for d in &devices {
        s.push_str(&format!(" {} |", rlx_driver::device_label(*d)));
    }
    s.push_str(" samples |\n|---|---|---|---|---|---|---|");
    for _ in &devices {
        s.push_str("---|");
    }
    s.push_str("---|\n");
    for &kind in OpKind::ALL {
        let info = kind.info();
        s.push_str(&format!(
            "| `{}` ({:?}) | {} | {} | {} | {} | {} | {} |",
            info.name,
            kind,
            info.family,
            info.arity,
            if info.composite { "yes" } else { "no" },
            info.vjp.cell(),
            info.jvp.cell(),
            info.vmap.cell()
        ));
        let ops = ops_of_kind.get(&kind).map(Vec::as_slice).unwrap_or(&[]);
        for d in &devices {
            s.push_str(&format!(" {} |", backend_cell(*d, ops)));
        }
        s.push_str(&format!(
            " {} |\n",
            per_kind.get(&kind).copied().unwrap_or(0)
        ));
    }
    s
}
