//! Graph builders: each wraps a linear layer of an [`rlx_ir::Graph`] with an
//! adapter and returns the adapted output, so the adapter trains with
//! `rlx_autodiff::grad_with_loss` and runs on any backend.
//!
//! Every builder takes the input `x [..., in]` and the base layer's
//! [`LinearNodes`] (`weight [out, in]`, optional `bias [out]`, PyTorch's
//! layout), adds the adapter's parameters as graph params, and computes
//! exactly what the host adapter (and PEFT) computes.
//!
//! Parameter names are `<prefix>.<tensor>` with PEFT's tensor names
//! (`lora_A.weight`, `lora_B.weight`, `lora_magnitude_vector`, `ia3_l`,
//! `lora_A` / `lora_E` / `lora_B` for AdaLoRA, `oft_R.weight`). With
//! `prefix = "base_model.model.<module>"` they are the keys of PEFT's
//! `adapter_model.safetensors`, so a loaded adapter's tensors
//! ([`crate::AdapterSet::tensors`]) set the params by name.
//!
//! Dropout is not applied (PEFT's eval-mode forward); `lora_dropout` and
//! OFT's `module_dropout` are for the caller to add if wanted.
//!
//! A LoRA training step: build, differentiate with respect to the adapter's
//! params only, compile, set the frozen base and the adapter, run. After
//! training, [`crate::AdapterSet::from_tensors`] + [`crate::AdapterSet::save`]
//! write the params in PEFT's format.
//!
//! ```
//! use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
//! use rlx_peft::graph::{self, LinearNodes};
//! use rlx_peft::LoraConfig;
//! use rlx_runtime::{Device, Session};
//!
//! let mut g = Graph::new("lora_linear");
//! let x = g.input("x", Shape::new(&[2, 8], DType::F32));
//! let w = g.param("lin.weight", Shape::new(&[4, 8], DType::F32));
//! let b = g.param("lin.bias", Shape::new(&[4], DType::F32));
//! let cfg = LoraConfig { r: 2, lora_alpha: 4.0, use_rslora: false }; // scaling 2
//! let lora = graph::lora(&mut g, "lin", x, LinearNodes::new(w, Some(b)), &cfg)?;
//! assert_eq!(g.shape(lora.output), &Shape::new(&[2, 4], DType::F32));
//! assert!(g.find_param("lin.lora_B.weight").is_some());
//!
//! let loss = g.sum(lora.output, &[0, 1], false);
//! g.set_outputs(vec![loss]);
//! // outputs: loss, d loss / d lora_A, d loss / d lora_B
//! let train = rlx_autodiff::grad_with_loss(&g, &[lora.lora_a, lora.lora_b])?;
//! let mut exe = Session::new(Device::Cpu).try_compile(train)?;
//! let t = |v: f32, d: &[usize]| HostTensor::from_vec(vec![v; d.iter().product()], d);
//! exe.set_param_typed("lin.weight", &t(0.5, &[4, 8])?)?;
//! exe.set_param_typed("lin.bias", &t(0.0, &[4])?)?;
//! exe.set_param_typed("lin.lora_A.weight", &t(0.25, &[2, 8])?)?;
//! exe.set_param_typed("lin.lora_B.weight", &t(0.0, &[4, 2])?)?; // PEFT's init: B = 0
//! let out = exe.try_run_typed(&[("x", &t(1.0, &[2, 8])?)])?;
//! assert_eq!(out[0].to_vec::<f32>()?, vec![32.0]); // B = 0: the base alone
//! assert_eq!(out[1].to_vec::<f32>()?, vec![0.0; 16]); // no gradient into A yet
//! // dB[o, k] = scaling * sum_n (x A^T)[n, k] = 2 * 2 * 2
//! assert_eq!(out[2].to_vec::<f32>()?, vec![8.0; 8]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod adapters;
mod detach;
mod oft;

pub use adapters::{
    adalora, adalora_orth_reg, dora, ia3, lora, AdaLoraNodes, DoraNodes, Ia3Nodes, LoraNodes,
};
pub use detach::detach;
pub use oft::{oft, OftNodes};

use crate::error::{PeftError, Result};
use rlx_ir::{DType, Dim, Graph, GraphExt, HostTensor, NodeId, Shape};

/// The base linear layer's nodes: `weight [out, in]`, optional `bias [out]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinearNodes {
    /// `[out, in]`.
    pub weight: NodeId,
    /// `[out]`.
    pub bias: Option<NodeId>,
}

impl LinearNodes {
    /// From the weight and bias nodes.
    pub fn new(weight: NodeId, bias: Option<NodeId>) -> LinearNodes {
        LinearNodes { weight, bias }
    }
}

/// The nodes [`adapter`] added: the output and every new param by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterNodes {
    /// The adapted layer's output `[..., out]`.
    pub output: NodeId,
    /// The adapter's params `(name, node)`, in PEFT's order.
    pub params: Vec<(String, NodeId)>,
}

/// Wraps a linear layer with whichever adapter `adapter` is (e.g. one of a
/// loaded [`crate::AdapterSet`]), using its hyper-parameters; the params'
/// values are not set here (they are graph params: set them at run time,
/// e.g. from [`crate::AdapterSet::tensors`]).
pub fn adapter(
    g: &mut Graph,
    prefix: &str,
    x: NodeId,
    base: LinearNodes,
    adapter: &crate::AnyAdapter,
) -> Result<AdapterNodes> {
    use crate::AnyAdapter as A;
    let (output, ids) = match adapter {
        A::Lora(a) => {
            let n = lora(g, prefix, x, base, a.config())?;
            (n.output, vec![n.lora_a, n.lora_b])
        }
        A::Dora(a) => {
            let n = dora(g, prefix, x, base, a.lora().config())?;
            (n.output, vec![n.lora_a, n.lora_b, n.magnitude])
        }
        A::Ia3(a) => {
            let n = ia3(g, prefix, x, base, a.is_feedforward())?;
            (n.output, vec![n.ia3_l])
        }
        A::AdaLora(a) => {
            let n = adalora(g, prefix, x, base, a.config())?;
            (n.output, vec![n.lora_a, n.lora_e, n.lora_b])
        }
        A::Oft(a) => {
            let n = oft(g, prefix, x, base, a.config())?;
            (n.output, vec![n.oft_r])
        }
    };
    let params = ids
        .into_iter()
        .map(|id| {
            let name = match &g.node(id).op {
                rlx_ir::Op::Param { name } => name.clone(),
                _ => unreachable!("builders return param nodes"),
            };
            (name, id)
        })
        .collect();
    Ok(AdapterNodes { output, params })
}

/// `x @ weight^T + bias`, PyTorch's `F.linear`.
pub fn linear(g: &mut Graph, x: NodeId, base: LinearNodes) -> Result<NodeId> {
    check_linear(g, x, base)?;
    Ok(linear_unchecked(g, x, base))
}

pub(crate) fn linear_unchecked(g: &mut Graph, x: NodeId, base: LinearNodes) -> NodeId {
    let y = matmul_t(g, x, base.weight);
    match base.bias {
        Some(b) => g.add(y, b),
        None => y,
    }
}

/// `a @ b^T` for a rank-2 `b`.
pub(crate) fn matmul_t(g: &mut Graph, a: NodeId, b: NodeId) -> NodeId {
    let bt = g.transpose_(b, &[1, 0]);
    g.mm(a, bt)
}

/// What a builder learns from checking its inputs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LinearDims {
    pub in_features: usize,
    pub out_features: usize,
    pub dtype: DType,
}

fn static_dims(g: &Graph, id: NodeId, what: &str) -> Result<Vec<usize>> {
    g.get(id)
        .ok_or_else(|| PeftError::Invalid {
            what: what.into(),
            reason: format!("node {id} is not in graph {:?}", g.name()),
        })?
        .shape
        .static_dims()
        .ok_or_else(|| PeftError::Invalid {
            what: what.into(),
            reason: format!("needs static dims, given {}", g.shape(id)),
        })
}

/// Checks `x [..., in]` (leading dims may be symbolic), `weight [out, in]`,
/// `bias [out]`, one float dtype.
pub(crate) fn check_linear(g: &Graph, x: NodeId, base: LinearNodes) -> Result<LinearDims> {
    let wd = static_dims(g, base.weight, "base weight")?;
    if g.get(x).is_none() {
        return Err(PeftError::Invalid {
            what: "x".into(),
            reason: format!("node {x} is not in graph {:?}", g.name()),
        });
    }
    let dtype = g.shape(base.weight).dtype();
    if wd.len() != 2 {
        return Err(PeftError::Invalid {
            what: "base weight".into(),
            reason: format!("expected [out, in], given dims {wd:?}"),
        });
    }
    if !matches!(dtype, DType::F32 | DType::F64) {
        return Err(PeftError::DType {
            what: "base weight".into(),
            expected: "f32 or f64".into(),
            given: dtype.to_string(),
        });
    }
    let (out_f, in_f) = (wd[0], wd[1]);
    let xs = g.shape(x);
    if xs.dtype() != dtype {
        return Err(PeftError::DType {
            what: "x".into(),
            expected: dtype.to_string(),
            given: xs.dtype().to_string(),
        });
    }
    if xs.dims().last() != Some(&Dim::Static(in_f)) {
        return Err(PeftError::Invalid {
            what: "x".into(),
            reason: format!(
                "expected [..., {in_f}] (the base weight is [{out_f}, {in_f}]), given {xs}"
            ),
        });
    }
    if let Some(b) = base.bias {
        let bd = static_dims(g, b, "base bias")?;
        if bd != [out_f] || g.shape(b).dtype() != dtype {
            return Err(PeftError::Shape {
                what: "base bias".into(),
                expected: vec![out_f],
                given: bd,
            });
        }
    }
    Ok(LinearDims {
        in_features: in_f,
        out_features: out_f,
        dtype,
    })
}

/// Errors if any `<prefix>.<name>` is taken, so a builder fails before it
/// adds anything (the graph is append-only).
pub(crate) fn check_free(g: &Graph, prefix: &str, names: &[&str]) -> Result<()> {
    for name in names {
        let full = format!("{prefix}.{name}");
        if g.find_param(&full).is_some() {
            return Err(PeftError::Graph {
                source: rlx_ir::IrError::DuplicateName {
                    kind: "param",
                    name: full.clone(),
                },
                builder: full,
            });
        }
    }
    Ok(())
}

/// A new param `<prefix>.<name>`; a taken name is an error.
pub(crate) fn param(
    g: &mut Graph,
    prefix: &str,
    name: &str,
    dims: &[usize],
    dtype: DType,
) -> Result<NodeId> {
    let full = format!("{prefix}.{name}");
    g.try_param(&full, Shape::new(dims, dtype))
        .map_err(|source| PeftError::Graph {
            builder: full,
            source,
        })
}

/// A constant tensor of `dtype` (f32 or f64) from f64 values.
pub(crate) fn constant(g: &mut Graph, values: Vec<f64>, dims: &[usize], dtype: DType) -> NodeId {
    let t = match dtype {
        DType::F64 => HostTensor::from_vec(values, dims),
        _ => HostTensor::from_vec(values.into_iter().map(|v| v as f32).collect(), dims),
    }
    .expect("value count matches dims");
    g.constant_tensor(&t)
}
