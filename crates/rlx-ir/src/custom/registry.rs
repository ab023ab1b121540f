//! The process-wide registry of op extensions: one [`OpExtension`] per
//! namespaced name, added by each extension crate's `register()`.

use super::{check_name, CustomOp};
use crate::{Arity, DType, Graph, IrError, NodeId, Shape};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

/// The shape / dtype rule: the output shape of the op over its inputs'
/// shapes, or why they are invalid (naming the shapes).
pub type ShapeRule = fn(&CustomOp, &[&Shape]) -> Result<Shape, String>;

/// Reverse-mode rule, a graph builder: given the op, its inputs `x`, its
/// output `y` and the output cotangent `ct` (all nodes of `g`), emits the
/// input cotangents into `g` (`None`: a symbolic zero). It may emit any op,
/// custom ones included, so higher-order derivatives compose.
pub type VjpRule =
    fn(&mut Graph, &CustomOp, &[NodeId], NodeId, NodeId) -> Result<Vec<Option<NodeId>>, IrError>;

/// Forward-mode rule, a graph builder: given the op, its inputs, its output
/// and one optional tangent per input (`None`: zero, at least one is set),
/// emits the output tangent into `g`.
pub type JvpRule =
    fn(&mut Graph, &CustomOp, &[NodeId], NodeId, &[Option<NodeId>]) -> Result<NodeId, IrError>;

/// Batching (vmap) rule, a graph builder: inputs `ins`, batched on axis 0
/// where `batched` says so, batch size `b`; returns the output batched on axis 0.
pub type BatchRule =
    fn(&mut Graph, &CustomOp, &[NodeId], &[bool], usize) -> Result<NodeId, IrError>;

/// A read-only host tensor a [`HostKernel`] reads.
#[derive(Clone, Copy, Debug)]
pub struct KernelArg<'a> {
    /// Dims.
    pub dims: &'a [usize],
    /// Dtype.
    pub dtype: DType,
    /// Little-endian bytes, aligned for the dtype.
    pub bytes: &'a [u8],
}

/// The host tensor a [`HostKernel`] fills.
#[derive(Debug)]
pub struct KernelOut<'a> {
    /// Dims.
    pub dims: &'a [usize],
    /// Dtype.
    pub dtype: DType,
    /// Bytes to fill, aligned for the dtype.
    pub bytes: &'a mut [u8],
}

/// A kernel over host memory (the CPU backend's kernel form): reads the
/// inputs, fills the output, or says what was wrong.
pub type HostKernel = fn(&CustomOp, &[KernelArg], &mut KernelOut) -> Result<(), String>;

/// Everything the workspace knows about one custom op: the same facts the
/// op table and the rule matches hold for a built-in op.
#[derive(Clone, Debug)]
pub struct OpExtension {
    /// Namespaced name, `namespace.op` (`linalg.cholesky`).
    pub name: String,
    /// One line on what it computes.
    pub summary: String,
    /// How many inputs it takes.
    pub arity: Arity,
    /// Output shape and dtype.
    pub shape: ShapeRule,
    /// Reverse mode; `None` refuses `grad` naming the op.
    pub vjp: Option<VjpRule>,
    /// Forward mode; `None` refuses `jvp` naming the op.
    pub jvp: Option<JvpRule>,
    /// Batching; `None` refuses `vmap` naming the op.
    pub vmap: Option<BatchRule>,
    /// Kernels by backend name (`"cpu"`).
    pub kernels: Vec<(String, HostKernel)>,
}

impl OpExtension {
    /// An extension with a shape rule and nothing else.
    pub fn new(
        name: impl Into<String>,
        summary: impl Into<String>,
        arity: Arity,
        shape: ShapeRule,
    ) -> OpExtension {
        OpExtension {
            name: name.into(),
            summary: summary.into(),
            arity,
            shape,
            vjp: None,
            jvp: None,
            vmap: None,
            kernels: Vec::new(),
        }
    }

    /// With a reverse-mode rule.
    pub fn with_vjp(mut self, rule: VjpRule) -> OpExtension {
        self.vjp = Some(rule);
        self
    }

    /// With a forward-mode rule.
    pub fn with_jvp(mut self, rule: JvpRule) -> OpExtension {
        self.jvp = Some(rule);
        self
    }

    /// With a batching rule.
    pub fn with_vmap(mut self, rule: BatchRule) -> OpExtension {
        self.vmap = Some(rule);
        self
    }

    /// With the kernel of `backend` (`"cpu"`).
    pub fn with_kernel(mut self, backend: impl Into<String>, kernel: HostKernel) -> OpExtension {
        self.kernels.push((backend.into(), kernel));
        self
    }

    /// The kernel of `backend`, if registered.
    pub fn kernel(&self, backend: &str) -> Option<HostKernel> {
        self.kernels
            .iter()
            .find(|(b, _)| b == backend)
            .map(|(_, k)| *k)
    }
}

type Registry = RwLock<HashMap<String, Arc<OpExtension>>>;

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| RwLock::new(HashMap::new()))
}

/// Registers `ext`. Idempotent and thread-safe: the first registration of
/// a name wins and later ones of the same name are ignored (returns whether
/// this call added it). A malformed name is an error.
pub fn register_op(ext: OpExtension) -> Result<bool, IrError> {
    check_name(&ext.name).map_err(|reason| IrError::InvalidOp {
        op: format!("custom op {:?}", ext.name),
        reason,
    })?;
    let mut map = registry().write().unwrap_or_else(|p| p.into_inner());
    if map.contains_key(&ext.name) {
        return Ok(false);
    }
    map.insert(ext.name.clone(), Arc::new(ext));
    Ok(true)
}

/// The extension registered under `name`.
pub fn lookup_op(name: &str) -> Option<Arc<OpExtension>> {
    registry()
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(name)
        .cloned()
}

/// The names of every registered extension, sorted.
pub fn registered_ops() -> Vec<String> {
    let mut v: Vec<String> = registry()
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .keys()
        .cloned()
        .collect();
    v.sort();
    v
}
