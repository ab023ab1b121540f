//! # rlx-pkg — `.rlxp` packages
//!
//! One file that ships a model: the graph (textual IR) and the
//! `CompileOptions` it is compiled with, its weights in three tiers (hot:
//! raw, used in place from a memory map; warm: zstd blocks decoded on first
//! use into a bounded cache; cold: never read until asked for), GGUF
//! quantized blocks kept as they are, a placement table (which tensors each
//! rank / device needs), metadata and blobs (a tokenizer json), with an
//! XXH3-64 checksum for the header, the TOC and every span. The byte layout,
//! the versioning rule and every check a reader makes are in
//! `docs/rlxp.md`; every refusal is a named [`PkgError`].
//!
//! ```
//! use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
//! use rlx_pkg::{compile_rlxp_bind_params, Package};
//! use rlx_runtime::{Device, Session};
//!
//! let mut g = Graph::new("double");
//! let x = g.input("x", Shape::new(&[2], DType::F32));
//! let w = g.param("w", Shape::new(&[2], DType::F32));
//! let y = g.mul(x, w);
//! g.set_outputs(vec![y]);
//! let w = HostTensor::from_vec(vec![2.0f32, 3.0], &[2]).unwrap();
//! let bytes = Package::builder().graph(g).tensor("w", &w).to_bytes().unwrap();
//!
//! let pkg = Package::from_bytes(bytes).unwrap();
//! let session = Session::new(Device::Cpu);
//! let mut c = compile_rlxp_bind_params(&session, &pkg, pkg.options()).unwrap();
//! assert_eq!(c.run(&[("x", &[1.0, 1.0])]), vec![vec![2.0, 3.0]]);
//! ```
#![deny(missing_docs)]

mod api;
mod error;
pub mod format;
mod graph_check;
mod lift;
mod options;
mod package;
mod placement;
mod source;
mod toc;
mod warm;
mod writer;

pub use api::{
    compile_rlxp, compile_rlxp_bind_params, compile_rlxp_with, load_rlxp_graph,
    load_rlxp_placement, open_rlxp, tensors_for_rank, weight_names_for_rank,
};
pub use error::{PkgError, Result};
pub use lift::lift_constants;
pub use options::{options_from_json, options_to_json};
pub use package::Package;
pub use placement::{Placement, RankPlacement};
pub use source::{MaterializeMode, TensorBytes};
pub use toc::{BlobEntry, Encoding, QuantInfo, TensorEntry, Tier};
pub use warm::DEFAULT_WARM_BUDGET;
pub use writer::PackageBuilder;
