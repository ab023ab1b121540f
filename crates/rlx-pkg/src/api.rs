//! The spec's free functions: open, load the graph / placement, compile
//! with the stored (or given) options and bind the params, rank subsets.

use crate::error::{PkgError, Result};
use crate::package::Package;
use crate::placement::Placement;
use crate::source::MaterializeMode;
use rlx_ir::{Graph, HostTensor};
use rlx_runtime::{CompileOptions, CompiledGraph, Session};
use std::path::Path;

/// Opens and checks the package at `path` (memory-mapped; reads only the
/// header and the table of contents).
pub fn open_rlxp(path: impl AsRef<Path>) -> Result<Package> {
    Package::open(path)
}

/// The graph stored in the package at `path` (no tensor is read).
pub fn load_rlxp_graph(path: impl AsRef<Path>) -> Result<Graph> {
    Ok(Package::open_with(path, MaterializeMode::Lazy)?
        .graph()?
        .clone())
}

/// The placement table of the package at `path` (no tensor is read).
pub fn load_rlxp_placement(path: impl AsRef<Path>) -> Result<Placement> {
    Ok(Package::open_with(path, MaterializeMode::Lazy)?
        .placement()
        .clone())
}

/// Compiles the package at `path` on `session` with its stored compile
/// options and sets every param from its tensors (hot ones copied straight
/// from the map).
pub fn compile_rlxp(session: &Session, path: impl AsRef<Path>) -> Result<CompiledGraph> {
    let pkg = open_rlxp(path)?;
    let opts = pkg.options().clone();
    compile_rlxp_bind_params(session, &pkg, &opts)
}

/// [`compile_rlxp`] with `opts` instead of the stored options.
pub fn compile_rlxp_with(
    session: &Session,
    path: impl AsRef<Path>,
    opts: &CompileOptions,
) -> Result<CompiledGraph> {
    compile_rlxp_bind_params(session, &open_rlxp(path)?, opts)
}

/// Compiles the graph of the open package `pkg` with `opts` and binds every
/// param of the compiled graph to the package's tensor of the same name
/// (through [`rlx_runtime::WeightLoader::read_pieces`]: no whole host copy
/// of a hot tensor; a warm one decoded a block at a time).
pub fn compile_rlxp_bind_params(
    session: &Session,
    pkg: &Package,
    opts: &CompileOptions,
) -> Result<CompiledGraph> {
    let mut compiled = session.try_compile_with(pkg.graph()?.clone(), opts)?;
    for name in compiled.param_names() {
        compiled.set_param_from(&name, pkg, &name)?;
    }
    Ok(compiled)
}

/// The tensor names the placement assigns to `rank`, in the order written.
pub fn weight_names_for_rank(pkg: &Package, rank: u32) -> Result<Vec<String>> {
    Ok(pkg.placement().tensors(rank)?.to_vec())
}

/// The tensors the placement assigns to `rank` (and no others), read now
/// whatever their tier.
pub fn tensors_for_rank(pkg: &Package, rank: u32) -> Result<Vec<(String, HostTensor)>> {
    weight_names_for_rank(pkg, rank)?
        .into_iter()
        .map(|name| {
            let t = pkg.tensor(&name)?;
            Ok::<_, PkgError>((name, t))
        })
        .collect()
}
