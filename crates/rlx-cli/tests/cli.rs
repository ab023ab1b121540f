//! The `rlx` binary on small committed files (`tools/gen_cli_fixtures.py`):
//! outputs against onnxruntime / numpy, errors and exit codes.

mod common;

use common::*;
use rlx_cli::npy::read_npy;
use serde_json::Value;

const ONNX_INPUTS: [&str; 4] = ["x", "k", "d", "i"];
const ONNX_OUTPUTS: [&str; 5] = ["hidden", "probs", "k3", "d2", "i2"];

fn onnx_input_args() -> Vec<String> {
    ONNX_INPUTS
        .iter()
        .flat_map(|n| {
            [
                "--input".to_string(),
                format!("{n}={}", fixture(&format!("{n}.npy")).display()),
            ]
        })
        .collect()
}

/// Every output of the tiny ONNX model in `dir` equals onnxruntime's.
fn assert_onnx_outputs(dir: &std::path::Path) {
    for name in ONNX_OUTPUTS {
        let got = read_npy(dir.join(format!("{name}.npy"))).unwrap();
        let want = read_npy(fixture(&format!("ort_{name}.npy"))).unwrap();
        assert_close(&got, &want, 1e-5, 1e-6, name);
    }
}

#[test]
fn help_lists_every_command() {
    let text = stdout_of(rlx().arg("--help"));
    for cmd in [
        "info", "inspect", "run", "bench", "convert", "pack", "generate", "train",
    ] {
        assert!(text.contains(cmd), "{cmd} missing from --help:\n{text}");
    }
    let run = stdout_of(rlx().args(["run", "--help"]));
    assert!(run.contains("--input") && run.contains("--out"), "{run}");
    let version = stdout_of(rlx().arg("--version"));
    assert_eq!(version.trim(), format!("rlx {}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn info_reports_version_and_devices() {
    let v = json_of(rlx().args(["info", "--json"]));
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    let devices = v["devices"].as_array().unwrap();
    let get = |name: &str| devices.iter().find(|d| d["device"] == name).unwrap();
    assert_eq!(get("cpu")["available"], true);
    // No CUDA backend is built into this binary: unavailable, with the reason.
    assert_eq!(get("cuda:0")["available"], false);
    assert!(get("cuda:0")["reason"].as_str().unwrap().contains("cuda"));
    assert!(v["cpu"]["threads"].as_u64().unwrap() >= 1);
    let text = stdout_of(rlx().arg("info"));
    assert!(text.contains("cpu") && text.contains("available"), "{text}");
}

#[test]
fn inspect_onnx_lists_io_and_histograms() {
    let v = json_of(rlx().arg("inspect").arg(fixture("tiny.onnx")).arg("--json"));
    assert_eq!(v["format"], "onnx");
    let names = |k: &str| -> Vec<String> {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names("inputs"), ONNX_INPUTS);
    assert_eq!(names("outputs"), ONNX_OUTPUTS);
    assert_eq!(v["inputs"][0]["dims"], serde_json::json!(["batch", 4]));
    assert_eq!(v["inputs"][1]["dtype"], "I64");
    let onnx_ops = &v["onnx_op_histogram"];
    for (op, n) in [
        ("MatMul", 1),
        ("Add", 3),
        ("Mul", 2),
        ("Tanh", 1),
        ("Softmax", 1),
    ] {
        assert_eq!(onnx_ops[op], n, "{op} in {onnx_ops}");
    }
    let ops = &v["op_histogram"];
    for op in ["matmul", "tanh", "softmax", "add", "mul"] {
        assert!(ops[op].as_u64().unwrap_or(0) >= 1, "{op} in {ops}");
    }
    assert!(
        v["fusion"]["nodes_before"].as_u64().unwrap() > 0,
        "{}",
        v["fusion"]
    );
    let text = stdout_of(rlx().arg("inspect").arg(fixture("tiny.onnx")));
    assert!(
        text.contains("inputs (4):") && text.contains("MatMul"),
        "{text}"
    );
}

#[test]
fn inspect_safetensors_and_text_ir() {
    let v = json_of(
        rlx()
            .arg("inspect")
            .arg(fixture("tiny.safetensors"))
            .arg("--json"),
    );
    let params = v["params"].as_array().unwrap();
    let w = params.iter().find(|t| t["name"] == "w").unwrap();
    assert_eq!(
        (w["dtype"].as_str(), &w["dims"]),
        (Some("F32"), &serde_json::json!([4, 32]))
    );
    let v = json_of(rlx().arg("inspect").arg(fixture("tiny.rlx")).arg("--json"));
    assert_eq!(v["inputs"][0]["dims"], serde_json::json!(["n", 4]));
    assert_eq!(v["params"].as_array().unwrap().len(), 2);
    let ops = &v["op_histogram"];
    for op in ["matmul", "add", "mul"] {
        assert_eq!(ops[op], 1, "{op} in {ops}");
    }
}

#[test]
fn run_onnx_writes_what_onnxruntime_computes() {
    let out = tempfile::tempdir().unwrap();
    stdout_of(
        rlx()
            .arg("run")
            .arg(fixture("tiny.onnx"))
            .args(onnx_input_args())
            .arg("--out")
            .arg(out.path()),
    );
    assert_onnx_outputs(out.path());
}

#[test]
fn run_text_ir_with_safetensors_weights_matches_numpy() {
    let out = tempfile::tempdir().unwrap();
    stdout_of(
        rlx()
            .arg("run")
            .arg(fixture("tiny.rlx"))
            .arg("--weights")
            .arg(fixture("tiny.safetensors"))
            .arg("--input")
            .arg(format!("x={}", fixture("x_ir.npy").display()))
            .arg("--out")
            .arg(out.path()),
    );
    let got = read_npy(out.path().join("output_0.npy")).unwrap();
    let want = read_npy(fixture("ref_y.npy")).unwrap();
    assert_close(&got, &want, 1e-5, 1e-6, "y");
}

#[test]
fn pack_then_run_gives_the_same_outputs() {
    let dir = tempfile::tempdir().unwrap();
    // ONNX -> .rlxp (constants lifted into tensors) -> run.
    let pkg = dir.path().join("tiny.rlxp");
    stdout_of(
        rlx()
            .arg("pack")
            .arg(fixture("tiny.onnx"))
            .arg(&pkg)
            .args(["--lift-min-bytes", "16"]),
    );
    let v = json_of(rlx().arg("inspect").arg(&pkg).arg("--json"));
    assert_eq!(v["format"], "rlxp");
    assert!(!v["tensors"].as_array().unwrap().is_empty(), "{v}");
    let out = dir.path().join("out");
    stdout_of(
        rlx()
            .arg("run")
            .arg(&pkg)
            .args(onnx_input_args())
            .arg("--out")
            .arg(&out),
    );
    assert_onnx_outputs(&out);

    // Text IR + safetensors -> .rlxp (w warm) -> run.
    let pkg = dir.path().join("ir.rlxp");
    stdout_of(
        rlx()
            .arg("pack")
            .arg(fixture("tiny.rlx"))
            .arg(&pkg)
            .arg("--weights")
            .arg(fixture("tiny.safetensors"))
            .args(["--warm", "w"]),
    );
    let v = json_of(rlx().arg("inspect").arg(&pkg).arg("--json"));
    let w = v["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "w")
        .unwrap()
        .clone();
    assert_eq!(w["tier"], "Warm");
    let out = dir.path().join("out_ir");
    stdout_of(
        rlx()
            .arg("run")
            .arg(&pkg)
            .arg("--input")
            .arg(format!("x={}", fixture("x_ir.npy").display()))
            .arg("--out")
            .arg(&out),
    );
    let got = read_npy(out.join("output_0.npy")).unwrap();
    assert_close(
        &got,
        &read_npy(fixture("ref_y.npy")).unwrap(),
        1e-5,
        1e-6,
        "y",
    );
}

#[test]
fn bench_measures_one_row_per_device_and_thread_count() {
    let v = json_of(rlx().arg("bench").arg(fixture("tiny.onnx")).args([
        "--bind",
        "batch=2",
        "--runs",
        "5",
        "--threads",
        "1,2",
        "--json",
    ]));
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{v}");
    for (row, threads) in rows.iter().zip([1, 2]) {
        assert_eq!(row["device"], "cpu");
        assert_eq!(row["threads"], threads);
        assert_eq!(row["runs"], 5);
        let f = |k: &str| row[k].as_f64().unwrap();
        assert!(f("min_ms") <= f("median_ms") && f("median_ms") <= f("p90_ms"));
        // With at most 100 runs the nearest-rank p99 is the slowest run.
        assert!(
            f("min_ms") <= f("mean_ms") && f("mean_ms") <= f("p99_ms"),
            "{row}"
        );
        assert!(f("p90_ms") <= f("p99_ms") && f("min_ms") > 0.0, "{row}");
    }
    // A device without a backend is a row that says why.
    let v = json_of(
        rlx()
            .arg("bench")
            .arg(fixture("tiny.rlx"))
            .arg("--weights")
            .arg(fixture("tiny.safetensors"))
            .args([
                "--bind",
                "n=3",
                "--devices",
                "cpu,cuda:0",
                "--runs",
                "2",
                "--json",
            ]),
    );
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows[0]["runs"], 2);
    assert!(rows[1]["error"].as_str().unwrap().contains("cuda"), "{v}");
    let text = stdout_of(
        rlx()
            .arg("bench")
            .arg(fixture("tiny.onnx"))
            .args(["--bind", "batch=1", "--runs", "2"]),
    );
    assert!(text.contains("p50 ms") && text.contains("cpu"), "{text}");
}

#[test]
fn bench_asks_for_a_symbolic_dim_it_cannot_know() {
    assert_one_line_failure(
        rlx().arg("bench").arg(fixture("tiny.onnx")),
        1,
        "--bind batch=N",
    );
}

fn reference(name: &str) -> Vec<f32> {
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("convert_ref.json")).unwrap())
            .unwrap();
    v[name]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

#[test]
fn convert_writes_gguf_with_the_source_values() {
    let dir = tempfile::tempdir().unwrap();
    let f32_path = dir.path().join("tiny-f32.gguf");
    stdout_of(
        rlx()
            .arg("convert")
            .arg(fixture("tiny.safetensors"))
            .arg(&f32_path)
            .args(["--type", "f32"]),
    );
    let r = rlx::gguf::GgufReader::open(&f32_path).unwrap();
    assert_eq!(r.dequantize_f32("w").unwrap(), reference("w"));
    assert_eq!(r.dequantize_f32("b").unwrap(), reference("b"));

    // Q8_0: each 32-value block within half a step (amax / 127 / 2) of the source.
    let q8 = dir.path().join("tiny-q8.gguf");
    stdout_of(
        rlx()
            .arg("convert")
            .arg(fixture("tiny.safetensors"))
            .arg(&q8)
            .args(["--type", "q8_0"]),
    );
    let v = json_of(rlx().arg("inspect").arg(&q8).arg("--json"));
    assert_eq!(v["type_histogram"]["Q8_0"], 1, "{v}");
    let r = rlx::gguf::GgufReader::open(&q8).unwrap();
    let got = r.dequantize_f32("w").unwrap();
    for (g, w) in got.chunks(32).zip(reference("w").chunks(32)) {
        let step = w.iter().fold(0f32, |m, x| m.max(x.abs())) / 127.0;
        for (a, b) in g.iter().zip(w) {
            assert!((a - b).abs() <= step * 0.5 + 1e-3 * step, "{a} vs {b}");
        }
    }
}

#[test]
fn generate_streams_the_greedy_tokens_of_the_numpy_reference() {
    let gguf = crate_file("rlx-llama/tests/fixtures/tiny_llama.gguf");
    let fx: Value = serde_json::from_str(
        &std::fs::read_to_string(crate_file("rlx-llama/tests/fixtures/tiny_llama.json")).unwrap(),
    )
    .unwrap();
    let v = json_of(
        rlx()
            .arg("generate")
            .arg(&gguf)
            .args(["--prompt", "The capital of France is", "--max-tokens", "20"])
            .args(["--ignore-eos", "--json"]),
    );
    assert_eq!(v["prompt_ids"], fx["prompt"]);
    assert_eq!(v["ids"], fx["q8"]["greedy"]);
    assert!(v["decode_tokens_per_s"].as_f64().unwrap() > 0.0);
    // Streaming: the prompt, then the continuation's text; the speed on stderr.
    let out = rlx()
        .arg("generate")
        .arg(&gguf)
        .args([
            "--prompt",
            "The capital of France is",
            "--max-tokens",
            "20",
            "--ignore-eos",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.trim_end_matches('\n'),
        format!("The capital of France is{}", v["text"].as_str().unwrap())
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("tokens/s"));
}

#[test]
fn bad_arguments_exit_2_with_one_line() {
    for args in [
        vec!["frobnicate"],
        vec!["run"],
        vec!["run", "m.onnx", "--input", "novalue"],
        vec!["run", "m.onnx", "--device", "quantum"],
        vec!["bench", "m.onnx", "--runs", "0"],
        vec!["inspect", "m.onnx", "--bind", "n=x"],
        vec!["train", "digits", "--epochs", "-1"],
    ] {
        assert_one_line_failure(rlx().args(&args), 2, "error:");
    }
    // clap's multi-line messages are joined: the missing argument is named.
    assert_one_line_failure(rlx().arg("run"), 2, "<FILE>");
}

#[test]
fn a_missing_file_is_named_in_one_line() {
    let missing = "no/such/model.onnx";
    for args in [
        vec!["run", missing],
        vec!["inspect", missing],
        vec!["bench", missing],
        vec!["pack", missing, "out.rlxp"],
        vec!["convert", missing, "out.gguf"],
        vec!["generate", missing, "--prompt", "hi"],
    ] {
        assert_one_line_failure(rlx().args(&args), 1, missing);
    }
    // A missing input array too.
    assert_one_line_failure(
        rlx()
            .arg("run")
            .arg(fixture("tiny.rlx"))
            .arg("--weights")
            .arg(fixture("tiny.safetensors"))
            .args(["--input", "x=no/such/x.npy"]),
        1,
        "no/such/x.npy",
    );
}

#[test]
fn wrong_inputs_are_named() {
    let w = fixture("tiny.safetensors");
    assert_one_line_failure(
        rlx()
            .arg("run")
            .arg(fixture("tiny.rlx"))
            .arg("--weights")
            .arg(&w)
            .arg("--input")
            .arg(format!("y={}", fixture("x_ir.npy").display())),
        1,
        "missing --input for x",
    );
    assert_one_line_failure(
        rlx()
            .arg("run")
            .arg(fixture("tiny.rlx"))
            .arg("--weights")
            .arg(&w)
            .arg("--input")
            .arg(format!("x={}", fixture("x_ir.npy").display()))
            .arg("--input")
            .arg(format!("y={}", fixture("x_ir.npy").display())),
        1,
        "no input \"y\"",
    );
    assert_one_line_failure(
        rlx()
            .arg("run")
            .arg(fixture("tiny.rlx"))
            .arg("--input")
            .arg(format!("x={}", fixture("x_ir.npy").display())),
        1,
        "--weights",
    );
    // Not a .npy file.
    assert_one_line_failure(
        rlx()
            .arg("run")
            .arg(fixture("tiny.rlx"))
            .arg("--weights")
            .arg(&w)
            .arg("--input")
            .arg(format!("x={}", fixture("tiny.rlx").display())),
        1,
        "not a .npy file",
    );
}

/// Max |a - b| over the rows of `got` `[n, vocab]`, relative to the row's max |b|.
fn max_rel_err(got: &rlx::HostTensor, want: &Value) -> f64 {
    let vocab = got.dims()[1];
    let got = got.to_f64_lossy();
    let rows = want.as_array().unwrap();
    assert_eq!(got.len(), rows.len() * vocab);
    let mut worst: f64 = 0.0;
    for (row, w) in got.chunks(vocab).zip(rows) {
        let w: Vec<f64> = w
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        let scale = w.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        for (g, w) in row.iter().zip(&w) {
            worst = worst.max((g - w).abs() / scale);
        }
    }
    worst
}

#[test]
fn a_llama_gguf_packs_runs_and_benches() {
    let gguf = crate_file("rlx-llama/tests/fixtures/tiny_llama.gguf");
    let fx: Value = serde_json::from_str(
        &std::fs::read_to_string(crate_file("rlx-llama/tests/fixtures/tiny_llama.json")).unwrap(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let prompt: Vec<i64> = fx["prompt"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    let ids = dir.path().join("ids.npy");
    rlx_cli::npy::write_npy(
        &ids,
        &rlx::HostTensor::from_vec(prompt.clone(), &[1, prompt.len()]).unwrap(),
    )
    .unwrap();
    let pkg = dir.path().join("tiny_llama.rlxp");
    stdout_of(rlx().arg("pack").arg(&gguf).arg(&pkg));
    for model in [&gguf, &pkg] {
        let out = dir.path().join("out");
        stdout_of(
            rlx()
                .arg("run")
                .arg(model)
                .arg("--input")
                .arg(format!("input_ids={}", ids.display()))
                .arg("--out")
                .arg(&out),
        );
        let logits = read_npy(out.join("logits.npy")).unwrap();
        assert_eq!(logits.dims()[0], prompt.len());
        // numpy's ggml-math reference of the quantized model.
        let err = max_rel_err(&logits, &fx["q8"]["logits"]);
        assert!(
            err < 1e-4,
            "{}: relative logit error {err}",
            model.display()
        );
    }
    let v = json_of(
        rlx()
            .arg("bench")
            .arg(&pkg)
            .args(["--bind", "tokens=8", "--runs", "2", "--json"]),
    );
    assert_eq!(v["rows"][0]["runs"], 2, "{v}");
    // A token id outside the vocabulary is refused with its value.
    let bad = dir.path().join("bad.npy");
    rlx_cli::npy::write_npy(
        &bad,
        &rlx::HostTensor::from_vec(vec![1i64, 1 << 40], &[2]).unwrap(),
    )
    .unwrap();
    assert_one_line_failure(
        rlx()
            .arg("run")
            .arg(&pkg)
            .arg("--input")
            .arg(format!("input_ids={}", bad.display()))
            .arg("--out")
            .arg(dir.path()),
        1,
        "token id 1099511627776",
    );
}
