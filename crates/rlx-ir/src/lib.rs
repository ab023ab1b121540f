//! # rlx-ir — the RLX tensor IR
//!
//! Types ([`DType`], [`Dim`], [`Shape`]), the operation set ([`Op`]), the
//! append-only SSA [`Graph`] with its two builder styles (inherent
//! explicit-shape methods and the shape-inferring [`GraphExt`]), the
//! verifier, the textual IR (printed by `Display` / [`Graph::to_text`],
//! read back by [`parse_graph`]) and inspection helpers, [`HostTensor`] (the one
//! host tensor type of every API) and [`env`](mod@env) (the one place that reads
//! `RLX_*` variables). This crate is a leaf: it does no I/O besides reading
//! the environment in [`env`](mod@env).
//!
//! ```
//! use rlx_ir::{DType, Graph, GraphExt, Shape};
//! let mut g = Graph::new("ex");
//! let x = g.input("x", Shape::new(&[2, 3], DType::F32));
//! let y = g.mul(x, g.constant(2.0, DType::F32));
//! let s = g.sum(y, &[-1], false);
//! g.set_outputs(vec![s]);
//! assert!(rlx_ir::verify_all(&g).is_empty());
//! assert_eq!(g.shape(s), &Shape::new(&[2], DType::F32));
//! ```
#![deny(missing_docs)]

mod builder;
mod const_bytes;
pub mod custom;
mod display;
mod dtype;
mod element;
pub mod env;
mod error;
mod ext;
pub mod f8;
mod fusion_policy;
mod graph;
mod hir;
mod host_tensor;
mod huge_buf;
mod inspect;
pub mod op;
pub mod op_coverage;
pub mod op_table;
pub mod ops;
mod parse;
pub mod quant;
mod shape;
mod stage;
mod tick;
mod verify;

/// FFT payloads (`rlx_ir::fft::FftNorm`), defined with the FFT op family.
pub mod fft {
    pub use crate::ops::fft::{FftKind, FftNorm};
}

pub use const_bytes::ConstBytes;
pub use display::node_text;
pub use dtype::DType;
pub use element::{from_le_bytes, scalar_constant_bytes, to_le_bytes, Element};
pub use error::{ErrorSource, IrError, SourceBox};
pub use ext::{python_slice, GraphExt, Operand};
pub use fusion_policy::FusionPolicy;
pub use graph::{Graph, Node, NodeId};
pub use hir::{HirDef, HirModule, HirNode, HirOp, HirValue, MlpActivation};
pub use host_tensor::HostTensor;
pub use huge_buf::{FrozenBuf, HugeBuf, HUGE_PAGE};
pub use inspect::{
    inspect_graph, inspect_graph_diff, inspect_hir, inspect_hir_stats, inspect_mir,
    inspect_mir_diff, inspect_mir_stats, node_label, op_histogram, NodeOrigin,
};
pub use op::{Op, OpKind};
pub use op_table::{Arity, Attr, OpInfo, Rule};
pub use parse::{parse_graph, ParseError};
pub use shape::{contiguous_strides, Dim, Shape};
pub use stage::{GraphModule, GraphStage, MirModule, StageKind};
pub use tick::Tick;
pub use verify::{verify, verify_all, verify_shapes, VerifyError};

/// Re-exported so element types (`f16`, `bf16`, `Complex32`) need no extra dependency.
pub use half::{bf16, f16};
pub use num_complex::Complex32;
