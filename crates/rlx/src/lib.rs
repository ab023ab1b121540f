//! # RLX
//!
//! An ML compiler and runtime: build a tensor graph, compile it for a
//! device, run it. This is the prelude crate: `use rlx::prelude::*;` covers
//! everyday use, and every workspace crate is reachable as a module.
//!
//! ## Build and run a graph by hand
//!
//! ```
//! use rlx::prelude::*;
//!
//! let mut g = Graph::new("hello");
//! let x = g.input("x", Shape::new(&[1, 4], DType::F32));
//! let w = g.param("w", Shape::new(&[4, 2], DType::F32));
//! let y = g.matmul(x, w, Shape::new(&[1, 2], DType::F32));
//! let scaled = g.mul(x, g.constant(2.0, DType::F32)); // GraphExt literal
//! g.set_outputs(vec![y, scaled]);
//!
//! let mut compiled = Session::new(Device::Cpu).compile(g);
//! compiled.set_param("w", &[1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]);
//! let out = compiled.run(&[("x", &[1.0, 2.0, 3.0, 4.0])]);
//! assert_eq!(out, vec![vec![4.0, 6.0], vec![2.0, 4.0, 6.0, 8.0]]);
//! ```
//!
//! ## Module map
//!
//! | path           | crate         | what                                           |
//! |----------------|---------------|------------------------------------------------|
//! | `rlx::ir`      | `rlx-ir`      | IR types, ops, graph builder                   |
//! | `rlx::opt`     | `rlx-opt`     | facade: `rlx-fusion` + `rlx-autodiff` + `rlx-compile` |
//! | `rlx::driver`  | `rlx-driver`  | `Device` enum, backend registry                |
//! | `rlx::runtime` | `rlx-runtime` | `Session`, `CompiledGraph`                     |
//! | `rlx::tensor`  | `rlx-tensor`  | `Tensor` DSL: jax.numpy names, `s!`, grad / vmap / jit |
//! | `rlx::macros`  | `rlx-macros`  | `#[rlx_model]`, `pipeline_schedule!`           |
//!
//! ## Namespaces
//!
//! `rlx::ops` (op-builder enums), `rlx::pkg` (`.rlxp` packages, feature
//! `pkg`), `rlx::compile` (compile options and
//! precision), `rlx::prelude` (the star import).
#![deny(missing_docs)]

/// Tensor IR — types, shapes, ops, graph builder.
pub use rlx_ir as ir;

/// Symbolic tensor DSL — operator-overloaded graph building in the
/// vocabulary of `jax.numpy` (`rlx::tensor::np`, `rlx::tensor::nn`), numpy
/// indexing (`s!`) and function transforms over closures (`grad`, `jvp`,
/// `hvp`, `vmap`, `jit`). Available with the `tensor` feature (on by default).
///
/// ```
/// use rlx::prelude::*;
/// let g = graph("affine", |g| {
///     let x = g.input("x", shape![2, 4]);
///     let w = g.param("w", shape![4, 3]);
///     (x.matmul(&w) + 1.0).relu().at(s![.., 1..])
/// })
/// .unwrap();
/// let mut c = Session::new(Device::Cpu).compile(g);
/// c.set_param("w", &[0.5; 12]);
/// assert_eq!(c.run(&[("x", &[1.0; 8])]), vec![vec![3.0; 4]]);
/// ```
#[cfg(feature = "tensor")]
pub use rlx_tensor as tensor;

/// `rlx! { … }` — declarative graph DSL (a compact little language for
/// declaring a [`Graph`], shape-checked at compile time; grammar in the
/// `rlx-lang` docs). Available with the `tensor` feature (on by default).
#[cfg(feature = "tensor")]
pub use rlx_tensor::rlx;

/// Graph rewrites and the compile pipeline.
pub use rlx_opt as opt;

/// Transforms: grad, jvp, hvp, vmap, higher-order derivatives.
///
/// ```
/// use rlx::autodiff::grad_with_loss;
/// use rlx::prelude::*;
/// let mut g = Graph::new("sq");
/// let x = g.input("x", Shape::new(&[2], DType::F32));
/// let sq = g.mul(x, x);
/// let l = g.sum(sq, &[0], false);
/// g.set_outputs(vec![l]);
/// let mut c = Session::new(Device::Cpu).compile(grad_with_loss(&g, &[x]).unwrap());
/// assert_eq!(c.run(&[("x", &[1.0, -3.0])]), vec![vec![10.0], vec![2.0, -6.0]]);
/// ```
pub mod autodiff {
    pub use rlx_autodiff::{
        grad, grad_with_loss, grad_with_loss_opts, hvp, jvp, nth_order_grad, prepare_graph_for_ad,
        vmap, vmap_axes, AutodiffError, GradWithLossOptions, HigherOrderOptions,
    };
}

/// Device enum and backend registry.
pub use rlx_driver as driver;

/// `Session` / `CompiledGraph`.
pub use rlx_runtime as runtime;

/// CUDA support (`rlx-cuda`): driver probe, NVRTC kernels, cuBLAS GEMMs and
/// the graph executor of `Device::Cuda(n)` (launch plans over one arena).
/// Available with the `cuda` feature.
#[cfg(feature = "cuda")]
pub use rlx_cuda as cuda;

#[cfg(feature = "gguf")]
/// GGUF v1 / v2 / v3 parser, writer, dequantize and quantize codecs.
pub use rlx_gguf as gguf;

#[cfg(feature = "geo")]
/// Exact 2D Delaunay triangulation and discrete Voronoi grids (jump
/// flooding and exact).
pub use rlx_geo as geo;

/// 3D Gaussian splatting: the half that lives in this workspace.
///
/// `rlx-ir` owns the `splat.*` opcodes (custom ops), their payloads and the
/// packed buffer layouts; `rlx-cpu` owns dispatch to six executors a
/// renderer registers with [`register_splat_executors`](splat::register_splat_executors)
/// (the reference renderer `rlx-splat` does it in `rlx_splat::register()`).
/// A graph with a splat op whose executor is missing fails to compile,
/// naming the slot. Renderer and runtime must size buffers with the same
/// helpers ([`gaussian_splat_tile_count`](splat::gaussian_splat_tile_count),
/// [`gaussian_splat_prep_packed_len`](splat::gaussian_splat_prep_packed_len)):
/// a renderer computing its own could silently disagree.
#[cfg(feature = "splat")]
pub mod splat {
    pub use rlx_cpu::splat::{
        backward_host_slices, register_splat_executors, registered_slots, render_host_slices,
        ArenaPrepareArgs, ArenaRasterizeArgs, ArenaRenderArgs, ArenaRenderBwdArgs, ExecError,
        HostBackwardArgs, HostBackwardExec, HostRenderArgs, HostRenderExec, PrepareExec,
        RasterizeExec, RenderBwdExec, RenderExec, SplatError, SplatSlot,
    };
    pub use rlx_ir::ops::splat::{
        gaussian_splat_packed_grad_len, gaussian_splat_prep_packed_len, gaussian_splat_tile_count,
        splat_prepare, splat_rasterize, splat_render, splat_render_bwd,
        unpack_gaussian_splat_packed_grads, GaussianSplatBackwardParams, GaussianSplatInputs,
        GaussianSplatRenderParams, GAUSSIAN_SPLAT_PREP_RASTER_PARAMS_FLOATS,
    };
}

#[cfg(feature = "sparse")]
/// Sparse matrices: CSR / CSC / COO with validation, products, direct
/// (faer) and Krylov (CG, BiCGSTAB) solves, scipy `.npz`.
pub use rlx_sparse as sparse;

#[cfg(feature = "umap")]
/// UMAP: the exact k-NN custom op (`umap.knn`, from pairwise distances),
/// fit / transform as umap-learn computes them, and parametric UMAP.
pub use rlx_umap as umap;

#[cfg(feature = "optim")]
/// Training-step optimizers (SGD, Adam family, Adagrad, RMSprop, Adamax,
/// Adadelta, ASGD, Rprop, Adafactor, LAMB, Lion, SOAP, Kron-PSGD, Muon,
/// Sophia, MARS, Stiefel), learning-rate schedules and
/// global-norm gradient clipping.
pub use rlx_optim as optim;

#[cfg(feature = "optim")]
pub mod train;

/// Procedural macros: `#[rlx_model]` (a struct of `Tensor` params with a
/// `forward` method, compiled lazily) and `pipeline_schedule!` (a stage
/// order computed and checked at compile time).
pub use rlx_macros as macros;
/// Proc macros; also available as `rlx::macros::{rlx_model, pipeline_schedule}`.
pub use rlx_macros::{pipeline_schedule, rlx_model};

#[cfg(feature = "peft")]
/// Parameter-efficient adaptation: LoRA / rsLoRA, DoRA, IA3, AdaLoRA (with
/// its rank allocator) and OFT, as HuggingFace PEFT defines them — host
/// arithmetic, graph builders (`peft::graph`) and PEFT's adapter files.
pub use rlx_peft as peft;

#[cfg(feature = "cortexm")]
/// `no_std` ARMv7E-M INT8 kernels (Cortex-M4F / M7). Doesn't
/// implement `Backend` — call the kernels (`dense`, `conv2d`,
/// `maxpool`, `relu`, `argmax`) directly, or a generated layer list
/// through `cortexm::model::run_layers`.
pub use rlx_cortexm as cortexm;

#[cfg(feature = "fpga")]
/// INT8 model → SystemVerilog datapath (dense / conv2d / relu / maxpool /
/// arg-max, `$readmemh` weights, testbench, vendor scripts) and the
/// runtime's [`export`](rlx_runtime::export).
///
/// ```ignore
/// use rlx::prelude::*;
///
/// let arts = ExportSession::fpga("hw/out")
///     .hw_target(HwTarget::Generic)
///     .export_model(&tinyconv_mnist_from_cortexm())?;
/// ```
///
/// Entry via module path: `rlx::fpga::export_graph` / `emit_with_config`.
pub use rlx_fpga as fpga;

#[cfg(feature = "linalg")]
/// Dense linear algebra (cholesky, triangular / general solves, inverse,
/// determinants) as custom ops on faer, with JAX's vjp / jvp rules.
pub use rlx_linalg as linalg;

#[cfg(feature = "gguf-convert")]
/// safetensors / ONNX -> GGUF conversion with per-tensor quantization and a
/// report of sizes and cosines.
pub use rlx_gguf_convert as gguf_convert;

#[cfg(feature = "models")]
/// Encoder models built with the graph API from safetensors weights
/// (`models::bert`: BERT / all-MiniLM-L6-v2, WordPiece tokenizer).
pub use rlx_models as models;

#[cfg(feature = "llama")]
/// llama-family GGUF models (SmolLM2 and others): config from metadata,
/// quantized weights, KV cache, BPE tokenizer, sampling and generation.
pub use rlx_llama as llama;

#[cfg(feature = "onnx")]
/// ONNX `.onnx` import: `OnnxModel::load(path, Device)`, run over named
/// typed tensors on RLX's own compiler and kernels (no ONNX Runtime underneath).
pub use rlx_onnx as onnx;

#[cfg(feature = "bench")]
/// Benchmark harness: `BenchmarkPattern`, `run_benchmark` (warm-up, N runs,
/// min / median / p99) and the patterns the `compare` example runs next to
/// their references.
pub use rlx_bench as bench;

#[cfg(feature = "pkg")]
/// `.rlxp` packages: open, materialize the graph, compile with the stored
/// options and bind the packed weights; write them with
/// [`Package::builder`]. Format: `docs/rlxp.md`.
///
/// ```no_run
/// use rlx::pkg::{compile_rlxp, open_rlxp, Package};
/// use rlx::prelude::*;
///
/// let _pack: Package = open_rlxp("model.rlxp")?;
/// let _compiled = compile_rlxp(&Session::new(Device::Cpu), "model.rlxp")?;
/// # Ok::<(), rlx::pkg::PkgError>(())
/// ```
pub mod pkg {
    pub use rlx_pkg::{
        compile_rlxp, compile_rlxp_bind_params, compile_rlxp_with, load_rlxp_graph,
        load_rlxp_placement, open_rlxp, tensors_for_rank, weight_names_for_rank, Encoding,
        MaterializeMode, Package, PackageBuilder, PkgError, Placement, RankPlacement, TensorBytes,
        TensorEntry, Tier,
    };
}

#[cfg(feature = "pkg")]
pub use rlx_pkg::{
    compile_rlxp, compile_rlxp_bind_params, compile_rlxp_with, load_rlxp_graph,
    load_rlxp_placement, open_rlxp, tensors_for_rank, weight_names_for_rank, MaterializeMode,
    Package, Placement,
};

/// Weight quantization schemes: `QuantScheme` (GGUF block types and more)
/// and `QuantMap` (scheme per tensor name).
pub mod quant {
    pub use rlx_ir::quant::{QuantMap, QuantScheme};
}

#[cfg(feature = "rng")]
/// Bit-exact reproductions of the numpy and PyTorch random streams
/// (`RandomState`/MT19937, `Generator`/PCG64, the torch CPU generator).
pub use rlx_rng as rng;

#[cfg(feature = "distributed")]
/// Process groups (`LoopbackGroup`, `TcpGroup`, `MpiGroup` with feature
/// `mpi`), sub-groups by id (`GroupRegistry`) and host collectives on
/// f16 / f32 / f64 / i32 buffers (`all_reduce` with `ReduceMode::Ring` or
/// `ReduceMode::Deterministic`, `all_gather`, `reduce_scatter`, `broadcast`,
/// `all_to_all`, `ppermute`, `send` / `recv`).
pub use rlx_collectives as collectives;

/// Distributed RLX in one namespace: transports and in-graph collectives
/// (`rlx-collectives`), ship-graph inference / training / diagnostics
/// (`rlx-runtime::dist`) and the node driver (`rlx-runtime::dist::node`).
#[cfg(feature = "distributed")]
pub mod distributed {
    // Transport + in-graph collective ops (rlx-collectives), via its prelude.
    pub use rlx_collectives::prelude::*;
    // Ship-graph inference / training / diagnostics (rlx-runtime::dist).
    pub use crate::runtime::dist::{
        backend_divergence, pull_shards, push_shards, recv_activation, recv_stage, recv_train,
        report_backend_divergence, resolve_weight_bytes, resolve_weight_uri, run_train,
        send_activation, serve_stage, serve_stage_uri, ship_stage, ship_train, uri_resolver,
        BackendDivergence, DataRef, StageSpec, TrainMetrics, TrainSpec, WeightCache, WeightRef,
        WorkerStage,
    };
    // Cut one graph into pipeline stages and run / compare it across ranks.
    pub use crate::runtime::dist::{
        pipeline_divergence, pipeline_stages, run_pipeline, split_pipeline,
    };
    // Heterogeneous placement: one graph split across devices / CPU pools.
    pub use crate::runtime::{DeviceMap, HeteroExecutable};
    // Node driver: join a mesh from any host; `NodeConfig` is fully programmatic.
    pub use crate::runtime::dist::node::{
        collect_caps, mean_reduce, platform_tag, send_caps, serve_fixed_function_n, serve_trainer,
        serve_trainer_here, serve_worker, serve_worker_n, FixedFunction, FixedFunctionDevice,
        LoopbackFixedFunction, NodeCaps, NodeConfig, NodeControl, NodeReport, NodeRole,
        NodeStopHandle, PeerSource, TrainReport,
    };
}

/// Crate-wide result type — alias of `anyhow::Result<T>`.
pub type Result<T, E = anyhow::Error> = std::result::Result<T, E>;

/// Crate-wide error type — alias of `anyhow::Error`.
pub type Error = anyhow::Error;

pub use rlx_autodiff::{
    grad, grad_with_loss, grad_with_loss_opts, hvp, jvp, nth_order_grad, prepare_graph_for_ad,
    vmap, AutodiffError, GradWithLossOptions, HigherOrderOptions,
};
pub use rlx_driver::Device;
#[cfg(feature = "fpga")]
pub use rlx_fpga::{
    tinyconv_mnist_from_cortexm, ExportQuantMode, FpgaExportConfig, GraphIoBind, HwTarget,
    InputIface, IoConfig, OutputIface, OutputKind, PortNames, SidebandSpec,
};
pub use rlx_ir::fft::FftNorm;
pub use rlx_ir::op::ReduceOp;
pub use rlx_ir::ops::upsample::InterpMode;
pub use rlx_ir::quant::QuantScheme;
pub use rlx_ir::FusionPolicy;
pub use rlx_ir::{
    inspect_graph, inspect_graph_diff, node_label, scalar_constant_bytes, verify, verify_all,
    verify_shapes, DType, Dim, Element, Graph, GraphExt, HostTensor, Node, NodeId, NodeOrigin, Op,
    OpKind, Shape, Tick, VerifyError,
};
pub use rlx_ir::{
    inspect_hir, inspect_hir_stats, inspect_mir, inspect_mir_diff, inspect_mir_stats, parse_graph,
    GraphModule, GraphStage, HirModule, HirOp, MirModule, ParseError,
};
pub use rlx_opt::{
    fusion_passes, fusion_passes_for_supported, inspect_lir, supported_for_target, supports_op,
    CalibrationRecord, FusionTarget, PrecisionPolicy,
};
pub use rlx_opt::{
    inspect_pipeline, maybe_dump_pipeline, CompilePipeline, CompileResult, FusionOptions,
    FusionReport, LirModule, MissReason, MissedFusion, Pass, PipelineInspect,
};
pub use rlx_runtime::graph_param_names;
pub use rlx_runtime::{
    available_devices, device_chain_from_env, device_from_env, device_label, device_report,
    devices_for, fastest_device, fastest_device_for, is_available, parse_device, parse_device_list,
    resolve_device, resolve_device_chain, run_with_fallback, CompileOptions, CompiledGraph,
    DeviceFallbackError, GraphDevices, ParseDeviceError, Precision, RuntimeError, Session,
};
pub use rlx_runtime::{
    benchmark_devices, benchmark_devices_with, benchmark_each, devices_for_with_policy,
    run_with_policy, BackendStatus, BackendsManifest, BenchOptions, DeviceBenchResult,
    DeviceCandidate, DevicePickStrategy, DevicePolicy, DeviceRouter, FlexibleSession,
};
pub use rlx_runtime::{effective_config, EffectiveConfig};
#[cfg(feature = "fpga")]
pub use rlx_runtime::{
    export_graph, export_tinyconv_mnist, ExportOptions, ExportSession, ExportTarget,
    ExportedArtifacts,
};
pub use rlx_runtime::{
    save_safetensors, serialize_safetensors, BytesWeightLoader, DynamicGraph, WeightLoader,
};

/// Op-builder enums: what `g.binary`, `g.compare`, `g.activation`,
/// `g.reduce`, `g.attention_kind` take as their first argument.
///
/// ```
/// use rlx::ops::{Activation, BinaryOp, ReduceOp};
/// use rlx::{DType, Graph, Shape};
/// let mut g = Graph::new("ops");
/// let x = g.input("x", Shape::new(&[2, 2], DType::F32));
/// let r = g.activation(Activation::Relu, x, Shape::new(&[2, 2], DType::F32));
/// let s = g.binary(BinaryOp::Add, r, x, Shape::new(&[2, 2], DType::F32));
/// let t = g.reduce(ReduceOp::Sum, s, &[1], false, Shape::new(&[2], DType::F32));
/// g.set_outputs(vec![t]);
/// ```
pub mod ops {
    pub use rlx_ir::fft::FftNorm;
    pub use rlx_ir::op::{
        Activation, BinaryOp, ChainOperand, ChainStep, CmpOp, MaskKind, PadMode, PoolKind,
        ReduceOp, UnaryOp,
    };
    pub use rlx_ir::ops::control::{
        try_custom_fn, try_if, try_scan, try_tuple_get, try_while, CustomFnSpec, IfSpec, ScanSpec,
        WhileSpec, DEFAULT_MAX_ITERATIONS,
    };
    pub use rlx_ir::ops::upsample::InterpMode;
}

/// Compile options and precision — what [`Session::compile_with`] takes.
///
/// ```
/// use rlx::compile::{CompileOptions, Precision};
/// let opts = CompileOptions::default().precision(Precision::F16);
/// assert_eq!(opts.lower.precision, Precision::F16);
/// ```
pub mod compile {
    pub use crate::{CompileOptions, FusionPolicy, Precision};
    /// Pass-level precision: the class the AMP pass gives each op.
    pub use rlx_opt::Precision as PassPrecision;
    pub use rlx_opt::PrecisionPolicy;
    pub use rlx_opt::{
        fingerprint, fusion_passes, fusion_passes_for_supported, insert_fake_quant,
        inspect_hir_pipeline, inspect_lir, supported_for_target, supports_op, CalibrationRecord,
        DispatchPolicy, FusionTarget, QuantConfig, QuantMode, TensorStats,
    };
    pub use rlx_opt::{
        inspect_pipeline, maybe_dump_pipeline, CompilePipeline, CompileResult, Dispatch,
        DispatchReport, FusionKind, FusionOptions, FusionReport, LirModule, MemoryReport,
        MissReason, MissedFusion, Pass, PipelineInspect,
    };
    pub use rlx_opt::{
        legalize_layout, quant_params, quant_targets, CalibrationCollector, CalibrationMethod,
        CalibrationOptions, Histogram, LayoutClaims, LegalizeLayout,
    };
    pub use rlx_opt::{split_param_prelude, ParamPrelude, DERIVED_PARAM_PREFIX};
    pub use rlx_runtime::{collect_calibration, collect_calibration_with, fusion_target};
}

/// Star-import target covering everyday graph build → compile → run.
///
/// ```
/// use rlx::prelude::*;
///
/// // Build
/// let mut g = Graph::new("ex");
/// let x = g.input("x", Shape::new(&[1, 4], DType::F32));
/// let y = g.mul(x, g.constant(2.0, DType::F32));
/// g.set_outputs(vec![y]);
/// assert!(verify(&g).is_empty());
///
/// // Compile + run (pick a device, or let GraphDevices choose)
/// let mut runner = GraphDevices::new(g.clone());
/// let device = runner.fastest();
/// let out = runner.run(device, &[("x", &[1.0; 4])]).unwrap();
/// assert_eq!(out, vec![vec![2.0; 4]]);
///
/// // Or Session + CompileOptions
/// let opts = CompileOptions::default().precision(Precision::F16);
/// let mut compiled = Session::new(Device::Cpu).compile_with(g, &opts);
/// let half = compiled.run(&[("x", &[1.0, 2.5, -3.0, 0.125])]);
/// assert_eq!(half, vec![vec![2.0, 5.0, -6.0, 0.25]]);
/// ```
pub mod prelude {
    // Tensor DSL (expression-style graph building) — feature `tensor`.
    pub use crate::autodiff::{
        grad, grad_with_loss, grad_with_loss_opts, hvp, jvp, nth_order_grad, prepare_graph_for_ad,
        vmap, AutodiffError, GradWithLossOptions, HigherOrderOptions,
    };
    pub use crate::compile::{CompilePipeline, FusionReport, Pass, PrecisionPolicy};
    pub use crate::ir::env::{self, flag, set, unset, var, RlxEnv, RuntimeOverrides};
    #[cfg(feature = "llama")]
    pub use crate::llama::{
        generate, ChatMessage, ChatTemplate, GenerateOptions, KvCache, LlamaConfig, LlamaModel,
        LlamaOptions, Sampler, SamplerConfig, Tokenizer, WeightMode,
    };
    pub use crate::ops::{
        Activation, BinaryOp, ChainOperand, ChainStep, CmpOp, FftNorm, InterpMode, MaskKind,
        ReduceOp,
    };
    #[cfg(feature = "optim")]
    pub use crate::optim::{
        global_grad_clip_scale, l2_norm, Adadelta, Adafactor, Adagrad, Adam, AdamW, Adamax, Asgd,
        KronPsgd, Lamb, Lbfgs, Lion, Mars, Muon, NAdamW, Optimizer, QHAdamW, RAdam,
        ReduceLrOnPlateau, RmsProp, Rprop, Sgd, Soap, Sophia, SparseAdam, Stiefel,
    };
    #[cfg(feature = "pkg")]
    pub use crate::pkg::{
        compile_rlxp, compile_rlxp_bind_params, compile_rlxp_with, load_rlxp_graph,
        load_rlxp_placement, open_rlxp, tensors_for_rank, weight_names_for_rank, MaterializeMode,
        Package, Placement,
    };
    pub use crate::quant::QuantMap;
    // FPGA / ASIC SystemVerilog export (feature `fpga`)
    #[cfg(feature = "tensor")]
    pub use crate::tensor::rlx;
    #[cfg(feature = "tensor")]
    pub use crate::tensor::{ax, graph, graph_with, ix, rg, s, shape, tail, GraphScope, Tensor};
    pub use crate::{
        available_devices, device_chain_from_env, device_from_env, device_label, device_report,
        devices_for, fastest_device, fastest_device_for, is_available, parse_device,
        parse_device_list, resolve_device, resolve_device_chain, run_with_fallback,
        scalar_constant_bytes, verify, verify_all, verify_shapes, CompileOptions, CompiledGraph,
        DType, Device, DeviceFallbackError, Dim, Element, Error, Graph, GraphDevices, GraphExt,
        HostTensor, Node, NodeId, Op, OpKind, ParseDeviceError, Precision, Result, Session, Shape,
        Tick, VerifyError,
    };
    pub use crate::{
        benchmark_devices, devices_for_with_policy, BackendsManifest, DeviceBenchResult,
        DeviceCandidate, DevicePickStrategy, DevicePolicy, DeviceRouter, FlexibleSession,
    };
    #[cfg(feature = "fpga")]
    pub use crate::{
        export_graph, export_tinyconv_mnist, tinyconv_mnist_from_cortexm, ExportOptions,
        ExportQuantMode, ExportSession, ExportTarget, ExportedArtifacts, FpgaExportConfig,
        GraphIoBind, HwTarget, InputIface, IoConfig, OutputIface, OutputKind, PortNames,
        SidebandSpec,
    };
    pub use crate::{graph_param_names, FusionPolicy, GraphModule, GraphStage};
    pub use crate::{parse_graph, ParseError};
    pub use crate::{pipeline_schedule, rlx_model};
    // 3D Gaussian splatting IR surface (the renderer registers itself).
    pub use crate::{BytesWeightLoader, CalibrationRecord, QuantScheme, WeightLoader};
    #[cfg(feature = "splat")]
    pub use rlx_ir::ops::splat::{
        gaussian_splat_prep_packed_len, gaussian_splat_tile_count, GaussianSplatInputs,
        GaussianSplatRenderParams,
    };
}

/// Registers optional backends and companion custom-op crates at startup.
///
/// ```
/// fn register_extra() {}
/// rlx::register_backends! { extra => register_extra }
/// ```
#[macro_export]
macro_rules! register_backends {
    () => {};
    ( $( $name:ident => $register:path ),* $(,)? ) => {
        $( $register(); )*
    };
}
