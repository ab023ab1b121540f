//! `rlx inspect FILE`: what a model file holds.

use crate::model::{read_text_ir, require_file, FileKind};
use anyhow::{Context, Result};
use clap::Args;
use rlx::gguf::GgufReader;
use rlx::onnx::OnnxModel;
use rlx::pkg::Package;
use rlx::runtime::{BytesWeightLoader, WeightLoader};
use rlx::{CompileOptions, Device, Dim, Graph, Session, Shape};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `rlx inspect` arguments.
#[derive(Args)]
pub struct InspectArgs {
    /// The model file (.onnx, .gguf, .safetensors, .rlxp or .rlx text IR).
    file: PathBuf,
    /// Size of a symbolic dim for the fusion report (default 1), `name=N`.
    #[arg(long, value_parser = parse_binding)]
    bind: Vec<(String, usize)>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Parses `name=N`.
pub fn parse_binding(s: &str) -> std::result::Result<(String, usize), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("expected name=N, got \"{s}\""))?;
    let n = v
        .parse::<usize>()
        .map_err(|_| format!("\"{v}\" in \"{s}\" is not a size"))?;
    Ok((k.to_string(), n))
}

/// `{"name", "dtype", "dims"}` (a symbolic dim as its name).
fn tensor_json(name: &str, dtype: impl std::fmt::Debug, dims: Value) -> Value {
    json!({"name": name, "dtype": format!("{dtype:?}"), "dims": dims})
}

fn dims_json(dims: &[Dim]) -> Value {
    dims.iter()
        .map(|d| match d {
            Dim::Static(n) => json!(n),
            Dim::Sym(s) => json!(s),
        })
        .collect()
}

fn shape_json(name: &str, s: &Shape) -> Value {
    tensor_json(name, s.dtype(), dims_json(s.dims()))
}

/// The head of an op's textual-IR mnemonic: `add`, `matmul`, `reduce.sum`.
fn op_name(op: &rlx::Op) -> String {
    op.mnemonic()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '_')
        .collect()
}

/// Inputs, outputs, params and the op histogram of `g`, into `out`.
fn graph_fields(g: &Graph, output_names: &[String], out: &mut Map<String, Value>) {
    out.insert(
        "inputs".into(),
        g.inputs()
            .iter()
            .map(|(_, n, s)| shape_json(n, s))
            .collect(),
    );
    out.insert(
        "outputs".into(),
        g.outputs()
            .iter()
            .enumerate()
            .map(|(i, &o)| {
                let name = output_names
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| format!("output_{i}"));
                shape_json(&name, g.shape(o))
            })
            .collect(),
    );
    out.insert(
        "params".into(),
        g.params()
            .iter()
            .map(|(_, n, s)| shape_json(n, s))
            .collect(),
    );
    let mut hist: BTreeMap<String, usize> = BTreeMap::new();
    for n in g.nodes().iter().filter(|n| !n.op.is_leaf()) {
        *hist.entry(op_name(&n.op)).or_default() += 1;
    }
    out.insert("op_histogram".into(), json!(hist));
}

/// What fusion does to `g` on the CPU (symbolic dims bound from `bind`, else 1).
fn fusion_json(g: &Graph, opts: &CompileOptions, bind: &[(String, usize)]) -> Value {
    let mut opts = opts.clone();
    for (_, _, s) in g.inputs() {
        for d in s.dims() {
            if let Dim::Sym(name) = d {
                let n = bind.iter().find(|(k, _)| k == name).map_or(1, |b| b.1);
                if !opts.lower.bindings.contains_key(name) {
                    opts = opts.bind_dim(name, n);
                }
            }
        }
    }
    match Session::new(Device::Cpu).try_compile_with(g.clone(), &opts) {
        Ok(c) => {
            let lir = c.lir();
            let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
            for r in &lir.fusion.regions {
                *kinds.entry(format!("{:?}", r.kind)).or_default() += 1;
            }
            json!({
                "nodes_before": g.nodes().len(),
                "nodes_after": lir.graph.nodes().len(),
                "regions": kinds,
                "nodes_fused": lir.fusion.nodes_saved(),
                "missed": lir.fusion.missed.len(),
            })
        }
        Err(e) => json!({"error": e.to_string()}),
    }
}

fn onnx(a: &InspectArgs) -> Result<Map<String, Value>> {
    let m = OnnxModel::load(&a.file, Device::Cpu).with_context(|| a.file.display().to_string())?;
    let info = m.info();
    let mut out = Map::new();
    out.insert(
        "model".into(),
        json!({
            "producer": format!("{} {}", info.producer_name, info.producer_version).trim(),
            "ir_version": info.ir_version,
            "opsets": info.opsets,
            "graph": info.graph_name,
        }),
    );
    let imported = m.import().with_context(|| a.file.display().to_string())?;
    let names: Vec<String> = imported.outputs.iter().map(|o| o.name.clone()).collect();
    graph_fields(&imported.graph, &names, &mut out);
    out.insert("onnx_op_histogram".into(), json!(imported.op_counts));
    out.insert(
        "fusion".into(),
        fusion_json(&imported.graph, &CompileOptions::default(), &a.bind),
    );
    Ok(out)
}

fn rlxp(a: &InspectArgs) -> Result<Map<String, Value>> {
    let p = Package::open(&a.file).with_context(|| a.file.display().to_string())?;
    let mut out = Map::new();
    let (major, minor) = p.version();
    out.insert("version".into(), json!(format!("{major}.{minor}")));
    out.insert("metadata".into(), json!(p.metadata()));
    out.insert(
        "tensors".into(),
        p.entries()
            .iter()
            .map(|e| {
                let mut t = tensor_json(&e.name, e.dtype, json!(e.dims));
                t["tier"] = json!(format!("{:?}", e.tier));
                t["stored_bytes"] = json!(e.len);
                t
            })
            .collect(),
    );
    if p.has_graph() {
        let g = p.graph().with_context(|| a.file.display().to_string())?;
        graph_fields(g, &[], &mut out);
        out.insert("fusion".into(), fusion_json(g, p.options(), &a.bind));
    }
    Ok(out)
}

fn gguf(a: &InspectArgs) -> Result<Map<String, Value>> {
    let r = GgufReader::open(&a.file).with_context(|| a.file.display().to_string())?;
    let mut out = Map::new();
    out.insert("version".into(), json!(r.version()));
    let meta = r.metadata();
    let mut m = Map::new();
    for (k, v) in meta.iter() {
        // Long arrays (the vocabulary) are summarised.
        let text = v.as_str().map(str::to_string).unwrap_or_else(|| {
            let s = format!("{v:?}");
            if s.chars().count() > 80 {
                format!("{}...", s.chars().take(77).collect::<String>())
            } else {
                s
            }
        });
        m.insert(k.to_string(), json!(text));
    }
    out.insert("metadata".into(), Value::Object(m));
    let mut types: BTreeMap<String, usize> = BTreeMap::new();
    let mut params = Vec::new();
    for t in r.tensors() {
        *types.entry(format!("{:?}", t.ggml_type())).or_default() += 1;
        params.push(tensor_json(t.name(), t.ggml_type(), json!(t.shape())));
    }
    out.insert("params".into(), Value::Array(params));
    out.insert("type_histogram".into(), json!(types));
    Ok(out)
}

fn safetensors(a: &InspectArgs) -> Result<Map<String, Value>> {
    let l = BytesWeightLoader::open(&a.file).with_context(|| a.file.display().to_string())?;
    let mut out = Map::new();
    let mut dtypes: BTreeMap<String, usize> = BTreeMap::new();
    let mut params = Vec::new();
    for name in l.names() {
        let m = l.meta(&name)?;
        *dtypes.entry(format!("{:?}", m.dtype)).or_default() += 1;
        params.push(tensor_json(&name, m.dtype, json!(m.dims)));
    }
    out.insert("params".into(), Value::Array(params));
    out.insert("dtype_histogram".into(), json!(dtypes));
    Ok(out)
}

fn text_ir(a: &InspectArgs) -> Result<Map<String, Value>> {
    let g = read_text_ir(&a.file)?;
    let mut out = Map::new();
    graph_fields(&g, &[], &mut out);
    out.insert(
        "fusion".into(),
        fusion_json(&g, &CompileOptions::default(), &a.bind),
    );
    Ok(out)
}

/// Runs `rlx inspect`.
pub fn run(a: InspectArgs) -> Result<()> {
    require_file(&a.file)?;
    let kind = FileKind::of(&a.file)?;
    let mut out = match kind {
        FileKind::Onnx => onnx(&a)?,
        FileKind::Rlxp => rlxp(&a)?,
        FileKind::Gguf => gguf(&a)?,
        FileKind::Safetensors => safetensors(&a)?,
        FileKind::TextIr => text_ir(&a)?,
    };
    out.insert("file".into(), json!(a.file.display().to_string()));
    out.insert("format".into(), json!(format!("{kind:?}").to_lowercase()));
    if a.json {
        println!("{}", serde_json::to_string_pretty(&Value::Object(out))?);
    } else {
        print_text(&out);
    }
    Ok(())
}

fn tensor_line(t: &Value) -> String {
    let dims: Vec<String> = t["dims"]
        .as_array()
        .map(|d| {
            d.iter()
                .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let mut s = format!(
        "  {:<40} {:<8} [{}]",
        t["name"].as_str().unwrap_or(""),
        t["dtype"].as_str().unwrap_or(""),
        dims.join(", ")
    );
    if let Some(tier) = t["tier"].as_str() {
        s.push_str(&format!("  {tier}"));
    }
    s
}

/// The report as text: one section per field.
fn print_text(out: &Map<String, Value>) {
    println!(
        "{} ({})",
        out["file"].as_str().unwrap_or(""),
        out["format"].as_str().unwrap_or("")
    );
    // Model facts first, then I/O, weights, histograms, fusion.
    const ORDER: [&str; 12] = [
        "model",
        "version",
        "metadata",
        "inputs",
        "outputs",
        "params",
        "tensors",
        "onnx_op_histogram",
        "op_histogram",
        "type_histogram",
        "dtype_histogram",
        "fusion",
    ];
    for (key, v) in ORDER.iter().filter_map(|&k| out.get(k).map(|v| (k, v))) {
        match v {
            Value::Array(items) => {
                println!("{key} ({}):", items.len());
                const SHOWN: usize = 40;
                for t in items.iter().take(SHOWN) {
                    println!("{}", tensor_line(t));
                }
                if items.len() > SHOWN {
                    println!("  ... {} more (--json lists all)", items.len() - SHOWN);
                }
            }
            Value::Object(m) => {
                println!("{key}:");
                for (k, x) in m {
                    let x = x.as_str().map_or_else(|| x.to_string(), str::to_string);
                    println!("  {k:<40} {x}");
                }
            }
            x => println!(
                "{key}: {}",
                x.as_str().map_or_else(|| x.to_string(), str::to_string)
            ),
        }
    }
}
