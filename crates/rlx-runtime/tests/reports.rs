//! Compile reports: dispatch per op kind, memory, the pipeline inspection
//! and the RLX_IR_DUMP files.

use rlx_compile::{inspect_pipeline, Dispatch, LowerOptions, MemoryReport};
use rlx_driver::Device;
use rlx_ir::{DType, Graph, GraphExt, OpKind, Shape};
use rlx_runtime::{CompileOptions, Session};

fn block() -> Graph {
    let mut g = Graph::new("block");
    let x = g.input("x", Shape::new(&[4, 16], DType::F32));
    let w = g.param("w", Shape::new(&[16, 16], DType::F32));
    let h = g.mm(x, w);
    let h = g.add(h, 1.0);
    let h = g.tanh(h);
    let p = g.sm(h, -1);
    g.set_outputs(vec![p]);
    g
}

#[test]
fn dispatch_report_says_native_or_decomposed() {
    let c = Session::new(Device::Cpu).compile(block());
    let d = &c.lir().dispatch;
    assert_eq!(d.kinds[&OpKind::Softmax], (Dispatch::Native, 1));
    assert_eq!(d.kinds[&OpKind::MatMul], (Dispatch::Native, 1));
    assert!(d.unsupported().is_empty());
    let c = Session::new(Device::Cpu).compile_with(
        block(),
        &CompileOptions::default().decompose_composites(true),
    );
    assert_eq!(
        c.lir().dispatch.kinds[&OpKind::Softmax],
        (Dispatch::Decomposed, 1)
    );
}

#[test]
fn inspect_pipeline_lists_every_stage_and_the_reports() {
    let inspect = inspect_pipeline(&block(), &|_| true, &LowerOptions::default(), None).unwrap();
    let names: Vec<&str> = inspect.stages.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "input",
            "decompose",
            "simplify",
            "cse",
            "dce",
            "fuse_gelu",
            "fuse_attention",
            "fuse_add_norm",
            "fuse_gated_matmul",
            "fuse_shared_input",
            "fuse_transposed_operands",
            "fuse_elementwise",
            "fuse_matmul_epilogue"
        ]
    );
    // add + tanh fuse into a region, which then folds into the matmul.
    assert_eq!(inspect.fusion.regions.len(), 2);
    let text = inspect.to_string();
    for want in [
        "== input",
        "== lir ==",
        "matmul+epilogue[",
        "fusion: 2 region(s)",
        "memory: arena",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    let m: MemoryReport = inspect.memory;
    assert!(m.peak_live_bytes <= m.arena_bytes && m.arena_bytes <= m.total_buffer_bytes);
}

#[test]
fn ir_dump_writes_each_stage() {
    let dir = std::env::temp_dir().join(format!("rlx-ir-dump-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut g = block();
    g = {
        // a distinct name so parallel tests do not write the same files
        let mut h = Graph::new("dumped");
        let x = h.input("x", Shape::new(&[3], DType::F32));
        let y = h.exp(x);
        let y = h.neg(y);
        h.set_outputs(vec![y]);
        drop(g);
        h
    };
    rlx_ir::env::set("RLX_IR_DUMP", dir.to_str().unwrap());
    let compiled = Session::new(Device::Cpu).try_compile(g);
    rlx_ir::env::unset("RLX_IR_DUMP");
    compiled.unwrap();
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.starts_with("dumped."))
        .collect();
    files.sort();
    assert!(
        files.contains(&"dumped.00.input.txt".to_string()),
        "{files:?}"
    );
    assert!(files.contains(&"dumped.lir.txt".to_string()), "{files:?}");
    assert!(
        files.contains(&"dumped.reports.txt".to_string()),
        "{files:?}"
    );
    let lir = std::fs::read_to_string(dir.join("dumped.lir.txt")).unwrap();
    assert!(lir.contains("region["), "{lir}");
    // Best effort: a test compiling in parallel while the knob was set may
    // still be writing its own dump here.
    let _ = std::fs::remove_dir_all(&dir);
}
