//! Setting a compiled graph's params from a [`WeightLoader`].

use super::{WeightError, WeightLoader};
use crate::{CompiledGraph, Result, RuntimeError};

impl CompiledGraph {
    /// Sets param `name` from `loader`'s tensor `tensor`. When it is stored
    /// in exactly the param's dtype, it is copied in place piece by piece
    /// ([`WeightLoader::read_pieces`]), so no whole host copy is made
    /// (loading peaks near the params, not params + the largest tensor);
    /// other float dtypes are converted through a host copy. Dims are
    /// checked first: on such an error the param is unchanged; a loader
    /// that fails while handing out pieces leaves it unset (a run asks for
    /// it), never half-old, half-new.
    pub fn set_param_from(
        &mut self,
        name: &str,
        loader: &dyn WeightLoader,
        tensor: &str,
    ) -> Result<()> {
        let i = self.param_index(name)?;
        let shape = self.param_shapes()[i].1.clone();
        let meta = loader.meta(tensor)?;
        let dims = shape.static_dims().expect("compiled shapes are static");
        if meta.dims != dims {
            return Err(WeightError::Param {
                name: name.to_string(),
                reason: format!(
                    "the graph expects {shape}, tensor \"{tensor}\" has dims {:?}",
                    meta.dims
                ),
            }
            .into());
        }
        if meta.dtype != shape.dtype() {
            let t = loader.get_as(tensor, shape.dtype())?;
            return self.set_param_typed(name, &t);
        }
        self.fill_param(i, |write| loader.read_pieces(tensor, write))
    }

    /// Sets every param of the graph from `loader`: each param reads the
    /// tensor of the same name, converted to the param's dtype
    /// ([`super::convert_dtype`]), with exactly the param's dims. Every tensor is
    /// read and checked before any param changes, so on error no param is
    /// set.
    pub fn set_params_from(&mut self, loader: &dyn WeightLoader) -> Result<()> {
        let mut staged = Vec::new();
        for (name, shape) in self.param_shapes() {
            let err = |reason: String| {
                RuntimeError::from(WeightError::Param {
                    name: name.clone(),
                    reason,
                })
            };
            let t = loader.get_as(&name, shape.dtype()).map_err(|e| {
                RuntimeError::from(WeightError::ParamTensor {
                    name: name.clone(),
                    source: rlx_ir::SourceBox::new(e),
                })
            })?;
            if shape.static_dims().as_deref() != Some(t.dims()) {
                return Err(err(format!(
                    "the graph expects {shape}, the loader holds dims {:?}",
                    t.dims()
                )));
            }
            staged.push((name, t));
        }
        for (name, t) in staged {
            self.set_param_typed(&name, &t)?;
        }
        Ok(())
    }
}
