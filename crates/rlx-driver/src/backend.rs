//! The one trait a backend implements, and the executable it produces.

use crate::Device;
use rlx_compile::{LayoutClaims, LirModule};
use rlx_ir::{HostTensor, NodeId, Op, Shape};
use thiserror::Error;

/// An error raised by a backend while compiling or running.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum BackendError {
    /// The backend has no kernel for this node (after decomposition).
    #[error("{device}: no kernel for {node}")]
    Unsupported {
        /// The device.
        device: Device,
        /// The node label.
        node: String,
    },
    /// A kernel failed at run time (e.g. an index out of range), naming the node.
    #[error("{node}: {message}")]
    Kernel {
        /// The node label.
        node: String,
        /// What went wrong.
        message: String,
    },
    /// A kernel failed on an error of another layer (the IR, a codec),
    /// naming the node; that error is the source.
    #[error("{node}: {source}")]
    KernelSource {
        /// The node label.
        node: String,
        /// The inner error.
        #[source]
        source: rlx_ir::ErrorSource,
    },
    /// A sub-graph of a control-flow node (If / While / Scan / CustomFn)
    /// failed to run; the sub-graph executable's error is the source.
    #[error("{node}: {role} sub-graph: {source}")]
    SubGraph {
        /// The control node's label.
        node: String,
        /// The sub-graph's role (`then`, `else`, `cond`, `body`).
        role: String,
        /// The sub-graph's error (naming the failing node inside it).
        #[source]
        source: rlx_ir::SourceBox<BackendError>,
    },
    /// A sub-graph of a control-flow node failed to compile.
    #[error("{node}: compiling the {role} sub-graph: {source}")]
    SubGraphCompile {
        /// The control node's op.
        node: String,
        /// The sub-graph's role.
        role: String,
        /// The compiler's error.
        #[source]
        source: rlx_ir::SourceBox<rlx_compile::CompileError>,
    },
    /// A caller passed data that does not match the compiled signature.
    #[error("{0}")]
    Signature(String),
}

/// A backend: says which ops it runs natively and compiles LIR.
pub trait Backend: Send + Sync {
    /// The device it drives.
    fn device(&self) -> Device;
    /// Short name for reports.
    fn name(&self) -> &'static str;
    /// True when the backend has a native kernel for `op`. Composites it
    /// does not claim are decomposed before [`Backend::compile`].
    fn claims(&self, op: &Op) -> bool;
    /// What its kernels accept about layout (implicit broadcasting, strided
    /// inputs); the pipeline legalises what is not claimed. Native by default.
    fn layout(&self) -> LayoutClaims {
        LayoutClaims::NATIVE
    }
    /// Turns LIR into something that runs.
    fn compile(&self, lir: LirModule) -> Result<Box<dyn Executable>, BackendError>;
}

/// A compiled graph on a device. Inputs and params come in the order of the
/// LIR's I/O manifest and are already checked against it by the runtime.
pub trait Executable: Send {
    /// Uploads param number `index` of the manifest.
    fn set_param(&mut self, index: usize, value: &HostTensor) -> Result<(), BackendError>;
    /// Runs once; returns the outputs in manifest order.
    fn run(&mut self, inputs: &[&HostTensor]) -> Result<Vec<HostTensor>, BackendError>;
    /// The LIR it was compiled from.
    fn lir(&self) -> &LirModule;
    /// The LIR of every sub-graph it compiled for a control-flow node
    /// (If / While / Scan / CustomFn bodies), with that node, in schedule
    /// order; empty for a backend that compiles none.
    fn subgraph_lirs(&self) -> Vec<(NodeId, &LirModule)> {
        Vec::new()
    }
    /// Runs this executable's kernels on at most `threads` host threads
    /// (`None`: the backend's default). A backend without host threads
    /// refuses a limit, saying so.
    fn limit_threads(&mut self, threads: Option<usize>) -> Result<(), BackendError> {
        match threads {
            None => Ok(()),
            Some(n) => Err(BackendError::Signature(format!(
                "this backend has no host thread count to limit (asked for {n})"
            ))),
        }
    }
    /// A handle on param `index`'s uploaded storage that another executable
    /// of the same backend can adopt without a copy; `None` when it is not
    /// set or the backend does not share params.
    fn share_param(&self, _index: usize) -> Option<SharedParam> {
        None
    }
    /// Makes param `index` read `shared` (from [`Executable::share_param`]
    /// of an executable of the same backend, with the same dtype and dims:
    /// the runtime checks them) instead of its own copy.
    fn set_param_shared(
        &mut self,
        _index: usize,
        _shared: &SharedParam,
    ) -> Result<(), BackendError> {
        Err(BackendError::Signature(
            "this backend does not share params between executables".into(),
        ))
    }
    /// Overwrites `bytes.len()` bytes of param `index` from byte `offset` in
    /// place (the rest is kept): persistent state such as a KV cache that
    /// each run extends by a few rows. A param shared with another
    /// executable is copied first, so the other one keeps its bytes.
    fn write_param_bytes(
        &mut self,
        _index: usize,
        _offset: usize,
        _bytes: &[u8],
    ) -> Result<(), BackendError> {
        Err(BackendError::Signature(
            "this backend does not write params in place".into(),
        ))
    }
    /// Gives param `index` a zero-filled buffer of its size, to be filled
    /// in place ([`Executable::write_param_bytes`]) without a host tensor
    /// of the whole param. By default, uploads a zero tensor.
    fn alloc_param(&mut self, index: usize) -> Result<(), BackendError> {
        let param = self.lir().io.params.get(index);
        let Some((dtype, dims)) = param.and_then(|p| Some((p.2.dtype(), p.2.static_dims()?)))
        else {
            return Err(BackendError::Signature(format!(
                "param index {index} out of range or not static"
            )));
        };
        self.set_param(index, &HostTensor::zeros(dtype, &dims))
    }
    /// The current value of param `index` (as set, or as updated by
    /// [`Executable::run_updating`]); an error when it is not set or the
    /// backend cannot read params back.
    fn param_value(&self, index: usize) -> Result<HostTensor, BackendError> {
        Err(BackendError::Signature(format!(
            "this backend does not read params back (param index {index})"
        )))
    }
    /// Runs once like [`Executable::run`], then makes manifest output
    /// `output` the new value of param `param` for each `(output, param)`
    /// of `updates` (same dtype and dims: the runtime checks them), and
    /// returns only the other outputs, in manifest order: a training step's
    /// parameters updated in the graph (JAX's donated buffers), with no
    /// host round trip. Every read of a param in the run sees its value
    /// from before the run. The default runs, then sets each param from its
    /// returned output; a backend may instead copy the value on the device.
    fn run_updating(
        &mut self,
        inputs: &[&HostTensor],
        updates: &[(usize, usize)],
    ) -> Result<Vec<HostTensor>, BackendError> {
        let outs = self.run(inputs)?;
        if let Some((output, _)) = updates.iter().find(|u| u.0 >= outs.len()) {
            return Err(BackendError::Signature(format!(
                "update output {output} out of range ({} outputs)",
                outs.len()
            )));
        }
        for &(output, param) in updates {
            self.set_param(param, &outs[output])?;
        }
        Ok(outs
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !updates.iter().any(|u| u.0 == *i))
            .map(|(_, t)| t)
            .collect())
    }
    /// Runs like [`Executable::run`], writing manifest output `j` into
    /// `outputs[j]` instead of returning new tensors, so a loop of runs
    /// reuses the caller's output tensors (ONNX Runtime's bound outputs,
    /// numpy's `out=`). Each tensor must have its output's dtype and dims
    /// ([`check_output_tensors`]). The default runs and copies; a backend may
    /// instead compute outputs straight into the caller's bytes.
    fn run_into(
        &mut self,
        inputs: &[&HostTensor],
        outputs: &mut [HostTensor],
    ) -> Result<(), BackendError> {
        check_output_tensors(&self.lir().io.outputs, outputs)?;
        let outs = self.run(inputs)?;
        for (o, v) in outputs.iter_mut().zip(outs) {
            o.bytes_mut().copy_from_slice(v.bytes());
        }
        Ok(())
    }
    /// Gives back the working memory of runs (the arena) until the next
    /// run, for executables that run rarely (a param prelude). The next run
    /// allocates it again. No-op by default.
    fn release_scratch(&mut self) {}
}

/// Checks that `outputs` holds one tensor of each manifest output's dtype
/// and dims, in order (the contract of [`Executable::run_into`]).
pub fn check_output_tensors(
    manifest: &[(NodeId, Shape)],
    outputs: &[HostTensor],
) -> Result<(), BackendError> {
    if outputs.len() != manifest.len() {
        return Err(BackendError::Signature(format!(
            "{} output tensors given for {} outputs",
            outputs.len(),
            manifest.len()
        )));
    }
    for (j, ((_, shape), t)) in manifest.iter().zip(outputs).enumerate() {
        let dims = shape.static_dims();
        if t.dtype() != shape.dtype() || dims.as_deref() != Some(t.dims()) {
            return Err(BackendError::Signature(format!(
                "output {j}: a tensor of {}{:?} given for {shape}",
                t.dtype(),
                t.dims()
            )));
        }
    }
    Ok(())
}

/// A backend's param storage, shared between executables (reference
/// counted; the backend downcasts it to its own buffer type).
#[derive(Clone)]
pub struct SharedParam(pub std::sync::Arc<dyn std::any::Any + Send + Sync>);

impl std::fmt::Debug for SharedParam {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedParam")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlx_ir::{DType, Graph, GraphExt, Shape};

    /// Returns `[x + 1, p]`-like fixed outputs and records params, to
    /// check the trait's default `run_updating` on a backend without one.
    struct Fixed {
        lir: LirModule,
        outputs: Vec<HostTensor>,
        params: Vec<Option<HostTensor>>,
    }

    impl Executable for Fixed {
        fn set_param(&mut self, index: usize, value: &HostTensor) -> Result<(), BackendError> {
            self.params[index] = Some(value.clone());
            Ok(())
        }
        fn run(&mut self, _: &[&HostTensor]) -> Result<Vec<HostTensor>, BackendError> {
            Ok(self.outputs.clone())
        }
        fn lir(&self) -> &LirModule {
            &self.lir
        }
    }

    fn fixed() -> Fixed {
        let mut g = Graph::new("fixed");
        let p = g.param("p", Shape::new(&[2], DType::F32));
        let y = g.add(p, g.constant(1.0, DType::F32));
        g.set_outputs(vec![y, p]);
        let opts = rlx_compile::LowerOptions::default();
        let t = |v: [f32; 2]| HostTensor::from_slice(&v, &[2]).unwrap();
        Fixed {
            lir: rlx_compile::lower(&g, &|_| true, &opts).unwrap(),
            outputs: vec![t([1.0, 2.0]), t([3.0, 4.0])],
            params: vec![None],
        }
    }

    #[test]
    fn default_run_updating_sets_the_params_and_returns_the_rest() {
        let mut e = fixed();
        let outs = e.run_updating(&[], &[(0, 0)]).unwrap();
        assert_eq!(outs, [e.outputs[1].clone()]);
        assert_eq!(e.params[0].as_ref(), Some(&e.outputs[0]));
        let err = e.param_value(0).unwrap_err();
        assert!(
            err.to_string().contains("does not read params back"),
            "{err}"
        );
    }

    #[test]
    fn default_run_updating_checks_every_index_before_setting_any() {
        let mut e = fixed();
        let err = e.run_updating(&[], &[(1, 0), (2, 0)]).unwrap_err();
        assert!(err.to_string().contains("output 2 out of range"), "{err}");
        assert!(e.params[0].is_none());
    }
}
