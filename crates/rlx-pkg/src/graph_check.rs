//! Check 9 of `docs/rlxp.md`: the stored graph parses and its params match
//! the stored tensors.

use crate::error::{PkgError, Result};
use crate::toc::TensorEntry;
use rlx_ir::Graph;

/// Parses the graph text of a package (`None`: empty, weights only).
pub(crate) fn parse(text: &str) -> Result<Option<Graph>> {
    if text.is_empty() {
        return Ok(None);
    }
    rlx_ir::parse_graph(text)
        .map(Some)
        .map_err(|source| PkgError::GraphParse { source })
}

/// Every param of `g` has a tensor of the same name, dtype and dims.
pub(crate) fn check_params<'a>(
    g: &Graph,
    find: impl Fn(&str) -> Option<&'a TensorEntry>,
) -> Result<()> {
    for (_, name, shape) in g.params() {
        let mismatch = |reason: String| PkgError::GraphMismatch {
            param: name.to_string(),
            reason,
        };
        let Some(t) = find(name) else {
            return Err(mismatch("no stored tensor of that name".into()));
        };
        let Some(dims) = shape.static_dims() else {
            return Err(mismatch(format!(
                "the graph declares symbolic dims {shape}"
            )));
        };
        if t.dtype != shape.dtype() || t.dims != dims {
            return Err(mismatch(format!(
                "the graph expects {shape}, the stored tensor is {} {:?}",
                t.dtype, t.dims
            )));
        }
    }
    Ok(())
}
