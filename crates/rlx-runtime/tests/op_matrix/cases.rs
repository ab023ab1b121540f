//! numpy fixture cases: parsing `tests/fixtures/*.json` (written by
//! `tools/gen_op_fixtures.py`, see `tools/README.md`), building each case's
//! graph, and comparing tensors with a case's tolerance.
//!
//! Each case names an op, its attributes, its inputs (graph inputs `x0`,
//! `x1`, ...) and the expected outputs with a tolerance.

use rlx_ir::fft::{FftKind, FftNorm};
use rlx_ir::op::{
    ArgReduceOp, AttentionLayout, BinaryOp, CmpOp, DotDims, MaskKind, PadMode, PoolKind, ReduceOp,
    SliceSpec, TopKOutput, UnaryOp, Window,
};
use rlx_ir::ops::normalize_axis;
use rlx_ir::ops::upsample::InterpMode;
use rlx_ir::{
    bf16, f16, python_slice, Complex32, DType, Dim, Graph, HostTensor, NodeId, Op, Shape,
};
use serde_json::Value;
use std::cell::Cell;
use std::collections::HashMap;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Once;

pub(crate) type Res<T> = Result<T, String>;

/// How many mismatching elements one failure lists.
pub(crate) const SHOWN_MISMATCHES: usize = 4;

// ── fixture parsing ─────────────────────────────────────────────────────────

pub(crate) struct Case {
    pub(crate) name: String,
    pub(crate) op: String,
    pub(crate) attrs: Value,
    pub(crate) inputs: Vec<HostTensor>,
    pub(crate) outputs: Vec<HostTensor>,
    pub(crate) rtol: f64,
    pub(crate) atol: f64,
}

pub(crate) fn load_cases(file: &str) -> Vec<Case> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("fixtures")
        .join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let root: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not valid JSON: {e}", path.display()));
    let cases = root["cases"]
        .as_array()
        .unwrap_or_else(|| panic!("{} has no \"cases\" array", path.display()));
    cases
        .iter()
        .enumerate()
        .map(|(i, c)| parse_case(c).unwrap_or_else(|e| panic!("{file}: case #{i}: {e}")))
        .collect()
}

pub(crate) fn parse_case(c: &Value) -> Res<Case> {
    let name = c["name"].as_str().ok_or("missing name")?.to_string();
    let tensors = |key: &str| -> Res<Vec<HostTensor>> {
        c[key]
            .as_array()
            .ok_or_else(|| format!("{name}: missing {key}"))?
            .iter()
            .enumerate()
            .map(|(i, t)| parse_tensor(t).map_err(|e| format!("{name}: {key}[{i}]: {e}")))
            .collect()
    };
    Ok(Case {
        op: c["op"].as_str().ok_or("missing op")?.to_string(),
        attrs: c["attrs"].clone(),
        inputs: tensors("inputs")?,
        outputs: tensors("outputs")?,
        rtol: c["rtol"].as_f64().ok_or("missing rtol")?,
        atol: c["atol"].as_f64().ok_or("missing atol")?,
        name,
    })
}

/// A JSON number, or one of the strings `"nan"`, `"inf"`, `"-inf"`.
pub(crate) fn json_f64(v: &Value) -> Res<f64> {
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| format!("bad number {n}")),
        Value::String(s) => match s.as_str() {
            "nan" => Ok(f64::NAN),
            "inf" => Ok(f64::INFINITY),
            "-inf" => Ok(f64::NEG_INFINITY),
            _ => Err(format!("bad float string {s:?}")),
        },
        _ => Err(format!("not a float: {v}")),
    }
}

pub(crate) fn json_i128(v: &Value) -> Res<i128> {
    v.as_i64()
        .map(i128::from)
        .or_else(|| v.as_u64().map(i128::from))
        .ok_or_else(|| format!("not an integer: {v}"))
}

pub(crate) fn ints_as<T: TryFrom<i128> + rlx_ir::Element>(
    data: &[Value],
    dims: &[usize],
) -> Res<HostTensor> {
    let vals = data
        .iter()
        .map(|v| {
            json_i128(v).and_then(|i| T::try_from(i).map_err(|_| format!("{i} is out of range")))
        })
        .collect::<Res<Vec<T>>>()?;
    HostTensor::from_vec(vals, dims).map_err(|e| e.to_string())
}

pub(crate) fn parse_tensor(t: &Value) -> Res<HostTensor> {
    let name = t["dtype"].as_str().ok_or("missing dtype")?;
    let dtype = DType::parse(name).ok_or_else(|| format!("unknown dtype {name}"))?;
    let dims = t["shape"]
        .as_array()
        .ok_or("missing shape")?
        .iter()
        .map(|d| {
            d.as_u64()
                .map(|d| d as usize)
                .ok_or_else(|| format!("bad dim {d}"))
        })
        .collect::<Res<Vec<usize>>>()?;
    let data = t["data"].as_array().ok_or("missing data")?;
    let floats = || data.iter().map(json_f64).collect::<Res<Vec<f64>>>();
    let tensor = match dtype {
        DType::F32 => {
            HostTensor::from_vec(floats()?.into_iter().map(|v| v as f32).collect(), &dims)
        }
        DType::F64 => HostTensor::from_vec(floats()?, &dims),
        DType::F16 => {
            HostTensor::from_vec(floats()?.into_iter().map(f16::from_f64).collect(), &dims)
        }
        DType::BF16 => {
            HostTensor::from_vec(floats()?.into_iter().map(bf16::from_f64).collect(), &dims)
        }
        DType::C64 => {
            let f = floats()?;
            if f.len() % 2 != 0 {
                return Err("complex data needs [re, im] pairs".into());
            }
            let vals = f
                .chunks_exact(2)
                .map(|p| Complex32::new(p[0] as f32, p[1] as f32))
                .collect();
            HostTensor::from_vec::<Complex32>(vals, &dims)
        }
        DType::Bool => {
            let vals = data
                .iter()
                .map(|v| json_i128(v).map(|i| i != 0))
                .collect::<Res<Vec<bool>>>()?;
            HostTensor::from_vec(vals, &dims)
        }
        DType::I8 => return ints_as::<i8>(data, &dims),
        DType::I16 => return ints_as::<i16>(data, &dims),
        DType::I32 => return ints_as::<i32>(data, &dims),
        DType::I64 => return ints_as::<i64>(data, &dims),
        DType::U8 => return ints_as::<u8>(data, &dims),
        DType::U32 => return ints_as::<u32>(data, &dims),
        DType::U16 => return ints_as::<u16>(data, &dims),
        DType::U64 => return ints_as::<u64>(data, &dims),
        // Values rounded to the format (exact when the fixture holds its values).
        DType::F8E4M3 | DType::F8E5M2 | DType::F8E8M0 | DType::F8E4M3Fnuz | DType::F8E5M2Fnuz => {
            let bytes = floats()?
                .into_iter()
                .map(|v| rlx_ir::f8::encode(dtype, v).expect("an 8-bit float"))
                .collect();
            HostTensor::from_bytes(dtype, &dims, bytes)
        }
    };
    tensor.map_err(|e| e.to_string())
}

// ── attributes ──────────────────────────────────────────────────────────────

pub(crate) fn attr<'a>(a: &'a Value, key: &str) -> Res<&'a Value> {
    a.get(key)
        .ok_or_else(|| format!("missing attribute {key:?}"))
}

pub(crate) fn a_i64(a: &Value, key: &str) -> Res<i64> {
    attr(a, key)?
        .as_i64()
        .ok_or_else(|| format!("attribute {key:?} is not an integer"))
}

pub(crate) fn a_usize(a: &Value, key: &str) -> Res<usize> {
    usize::try_from(a_i64(a, key)?).map_err(|_| format!("attribute {key:?} is negative"))
}

pub(crate) fn a_f64(a: &Value, key: &str) -> Res<f64> {
    json_f64(attr(a, key)?)
}

pub(crate) fn a_opt_f64(a: &Value, key: &str) -> Res<Option<f64>> {
    match a.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => json_f64(v).map(Some),
    }
}

pub(crate) fn a_bool(a: &Value, key: &str) -> Res<bool> {
    attr(a, key)?
        .as_bool()
        .ok_or_else(|| format!("attribute {key:?} is not a bool"))
}

pub(crate) fn a_str<'a>(a: &'a Value, key: &str) -> Res<&'a str> {
    attr(a, key)?
        .as_str()
        .ok_or_else(|| format!("attribute {key:?} is not a string"))
}

pub(crate) fn a_i64s(a: &Value, key: &str) -> Res<Vec<i64>> {
    attr(a, key)?
        .as_array()
        .ok_or_else(|| format!("attribute {key:?} is not a list"))?
        .iter()
        .map(|v| {
            v.as_i64()
                .ok_or_else(|| format!("attribute {key:?}: {v} is not an integer"))
        })
        .collect()
}

pub(crate) fn a_usizes(a: &Value, key: &str) -> Res<Vec<usize>> {
    a_i64s(a, key)?
        .into_iter()
        .map(|v| usize::try_from(v).map_err(|_| format!("attribute {key:?}: {v} is negative")))
        .collect()
}

pub(crate) fn a_pairs(a: &Value, key: &str) -> Res<Vec<(usize, usize)>> {
    attr(a, key)?
        .as_array()
        .ok_or_else(|| format!("attribute {key:?} is not a list"))?
        .iter()
        .map(|p| match p.as_array().map(|v| v.as_slice()) {
            Some([lo, hi]) => match (lo.as_u64(), hi.as_u64()) {
                (Some(lo), Some(hi)) => Ok((lo as usize, hi as usize)),
                _ => Err(format!("attribute {key:?}: bad pair {p}")),
            },
            _ => Err(format!("attribute {key:?}: bad pair {p}")),
        })
        .collect()
}

pub(crate) fn a_dtype(a: &Value, key: &str) -> Res<DType> {
    let s = a_str(a, key)?;
    DType::parse(s).ok_or_else(|| format!("unknown dtype {s}"))
}

// ── graph building ──────────────────────────────────────────────────────────

pub(crate) fn node(
    g: &mut Graph,
    op: Op,
    inputs: &[NodeId],
    declared: Option<Shape>,
) -> Res<NodeId> {
    g.try_node(op, inputs, declared).map_err(|e| e.to_string())
}

pub(crate) fn arg(args: &[NodeId], i: usize, op: &str) -> Res<NodeId> {
    args.get(i)
        .copied()
        .ok_or_else(|| format!("{op} needs at least {} inputs, given {}", i + 1, args.len()))
}

pub(crate) fn axis_of(g: &Graph, x: NodeId, axis: i64) -> Res<usize> {
    normalize_axis(axis, g.shape(x).rank())
}

pub(crate) fn static_dims(g: &Graph, x: NodeId) -> Res<Vec<usize>> {
    g.shape(x)
        .static_dims()
        .ok_or_else(|| format!("{} is not static", g.shape(x)))
}

pub(crate) fn dims_of(v: &[usize]) -> Vec<Dim> {
    v.iter().map(|&d| Dim::Static(d)).collect()
}

/// numpy reshape dims with at most one `-1`.
pub(crate) fn resolve_reshape(total: usize, dims: &[i64]) -> Res<Vec<usize>> {
    let known: usize = dims
        .iter()
        .filter(|&&d| d >= 0)
        .map(|&d| d as usize)
        .product();
    let holes = dims.iter().filter(|&&d| d < 0).count();
    if holes > 1 || dims.iter().any(|&d| d < -1) {
        return Err(format!("bad reshape dims {dims:?}"));
    }
    dims.iter()
        .map(|&d| {
            if d >= 0 {
                Ok(d as usize)
            } else if known == 0 || !total.is_multiple_of(known) {
                Err(format!("cannot infer -1 in {dims:?} for {total} elements"))
            } else {
                Ok(total / known)
            }
        })
        .collect()
}

pub(crate) fn slice_node(
    g: &mut Graph,
    x: NodeId,
    axis: i64,
    start: i64,
    end: i64,
    step: i64,
) -> Res<NodeId> {
    let axis = axis_of(g, x, axis)?;
    let dims = static_dims(g, x)?;
    if step == 0 {
        return Err("slice step 0".into());
    }
    let (first, len) = python_slice(dims[axis], start, end, step);
    let r = dims.len();
    let mut starts = vec![0; r];
    let mut steps = vec![1; r];
    let mut out = dims;
    starts[axis] = first;
    steps[axis] = step;
    out[axis] = len;
    let declared = g.shape(x).with_dims(dims_of(&out));
    node(
        g,
        Op::Slice(SliceSpec { starts, steps }),
        &[x],
        Some(declared),
    )
}

pub(crate) fn window(a: &Value, kernel: Vec<usize>) -> Res<Window> {
    Ok(Window {
        kernel,
        stride: a_usizes(a, "stride")?,
        padding: a_pairs(a, "padding")?,
        dilation: a_usizes(a, "dilation")?,
    })
}

pub(crate) fn by_name<T: Copy>(
    all: &[T],
    name: impl Fn(T) -> &'static str,
    wanted: &str,
    what: &str,
) -> Res<T> {
    all.iter()
        .copied()
        .find(|&v| name(v) == wanted)
        .ok_or_else(|| format!("unknown {what} {wanted:?}"))
}

/// Builds one op over `args`; returns its outputs (two for top-k).
pub(crate) fn build_op(g: &mut Graph, op: &str, a: &Value, args: &[NodeId]) -> Res<Vec<NodeId>> {
    let x = || arg(args, 0, op);
    let one = |id: Res<NodeId>| id.map(|id| vec![id]);
    match op {
        "unary" => {
            let u = by_name(&UnaryOp::ALL, UnaryOp::name, a_str(a, "fn")?, "unary op")?;
            one(node(g, Op::Unary(u), &[x()?], None))
        }
        "binary" => {
            let b = by_name(&BinaryOp::ALL, BinaryOp::name, a_str(a, "fn")?, "binary op")?;
            one(node(g, Op::Binary(b), &[x()?, arg(args, 1, op)?], None))
        }
        "compare" => {
            let c = by_name(&CmpOp::ALL, CmpOp::name, a_str(a, "fn")?, "comparison")?;
            one(node(g, Op::Compare(c), &[x()?, arg(args, 1, op)?], None))
        }
        "select" => one(node(
            g,
            Op::Select,
            &[x()?, arg(args, 1, op)?, arg(args, 2, op)?],
            None,
        )),
        "cast" => {
            let x = x()?;
            let declared = g.shape(x).with_dtype(a_dtype(a, "dtype")?);
            one(node(g, Op::Cast, &[x], Some(declared)))
        }
        "matmul" => one(node(g, Op::MatMul, &[x()?, arg(args, 1, op)?], None)),
        "dot_general" => {
            let dims = DotDims {
                lhs_batch: a_usizes(a, "lhs_batch")?,
                rhs_batch: a_usizes(a, "rhs_batch")?,
                lhs_contract: a_usizes(a, "lhs_contract")?,
                rhs_contract: a_usizes(a, "rhs_contract")?,
            };
            one(node(
                g,
                Op::DotGeneral(dims),
                &[x()?, arg(args, 1, op)?],
                None,
            ))
        }
        "reduce" => {
            let x = x()?;
            let rop = match a_str(a, "fn")? {
                "sum" => ReduceOp::Sum,
                "mean" => ReduceOp::Mean,
                "max" => ReduceOp::Max,
                "min" => ReduceOp::Min,
                "prod" => ReduceOp::Prod,
                other => return Err(format!("unknown reduction {other:?}")),
            };
            let mut axes = a_i64s(a, "axes")?
                .into_iter()
                .map(|ax| axis_of(g, x, ax))
                .collect::<Res<Vec<usize>>>()?;
            axes.sort_unstable();
            axes.dedup();
            let keep_dim = a_bool(a, "keep_dim")?;
            one(node(
                g,
                Op::Reduce {
                    op: rop,
                    axes,
                    keep_dim,
                },
                &[x],
                None,
            ))
        }
        "argmax" | "argmin" => {
            let x = x()?;
            let aop = if op == "argmax" {
                ArgReduceOp::ArgMax
            } else {
                ArgReduceOp::ArgMin
            };
            let axis = axis_of(g, x, a_i64(a, "axis")?)?;
            let keep_dim = a_bool(a, "keep_dim")?;
            one(node(
                g,
                Op::ArgReduce {
                    op: aop,
                    axis,
                    keep_dim,
                },
                &[x],
                None,
            ))
        }
        "cumsum" => {
            let x = x()?;
            let cop = Op::Cumsum {
                axis: axis_of(g, x, a_i64(a, "axis")?)?,
                exclusive: a_bool(a, "exclusive")?,
                reverse: a_bool(a, "reverse")?,
            };
            one(node(g, cop, &[x], None))
        }
        "reshape" => {
            let x = x()?;
            let total = static_dims(g, x)?.iter().product();
            let out = resolve_reshape(total, &a_i64s(a, "shape")?)?;
            let declared = g.shape(x).with_dims(dims_of(&out));
            one(node(g, Op::Reshape, &[x], Some(declared)))
        }
        "transpose" => one(node(
            g,
            Op::Transpose {
                perm: a_usizes(a, "perm")?,
            },
            &[x()?],
            None,
        )),
        "slice" => {
            let (start, end, step) = (a_i64(a, "start")?, a_i64(a, "end")?, a_i64(a, "step")?);
            one(slice_node(g, x()?, a_i64(a, "axis")?, start, end, step))
        }
        "narrow" => {
            let start = a_i64(a, "start")?;
            let len = a_i64(a, "len")?;
            one(slice_node(
                g,
                x()?,
                a_i64(a, "axis")?,
                start,
                start + len,
                1,
            ))
        }
        "concat" => {
            let axis = axis_of(g, x()?, a_i64(a, "axis")?)?;
            one(node(g, Op::Concat { axis }, args, None))
        }
        "pad" => {
            let mode = match a_str(a, "mode")? {
                "constant" => PadMode::Constant(a_f64(a, "value")?),
                "reflect" => PadMode::Reflect,
                "edge" => PadMode::Edge,
                other => return Err(format!("unknown pad mode {other:?}")),
            };
            let pads = a_pairs(a, "pads")?;
            one(node(g, Op::Pad { pads, mode }, &[x()?], None))
        }
        "broadcast" => {
            let x = x()?;
            let declared = g.shape(x).with_dims(dims_of(&a_usizes(a, "shape")?));
            one(node(g, Op::Broadcast, &[x], Some(declared)))
        }
        "gather" | "gather_elements" | "scatter_add" => {
            let x = x()?;
            let axis = axis_of(g, x, a_i64(a, "axis")?)?;
            let (gop, n) = match op {
                "gather" => (Op::Gather { axis }, 2),
                "gather_elements" => (Op::GatherElements { axis }, 2),
                _ => (Op::ScatterAdd { axis }, 3),
            };
            let inputs = (0..n).map(|i| arg(args, i, op)).collect::<Res<Vec<_>>>()?;
            one(node(g, gop, &inputs, None))
        }
        "topk" => {
            let x = x()?;
            let (k, largest) = (a_usize(a, "k")?, a_bool(a, "largest")?);
            let axis = axis_of(g, x, a_i64(a, "axis")?)?;
            let mut outs = Vec::new();
            for output in [TopKOutput::Values, TopKOutput::Indices] {
                let top = Op::TopK {
                    k,
                    axis,
                    largest,
                    output,
                };
                outs.push(node(g, top, &[x], None)?);
            }
            Ok(outs)
        }
        "iota" => {
            let declared = Shape::new(&a_usizes(a, "shape")?, a_dtype(a, "dtype")?);
            let iop = Op::Iota {
                axis: a_usize(a, "axis")?,
                start: a_f64(a, "start")?,
                step: a_f64(a, "step")?,
            };
            one(node(g, iop, &[], Some(declared)))
        }
        "arange" => {
            let (start, stop, step) = (a_f64(a, "start")?, a_f64(a, "stop")?, a_f64(a, "step")?);
            let n = ((stop - start) / step).ceil().max(0.0) as usize;
            let declared = Shape::new(&[n], a_dtype(a, "dtype")?);
            one(node(
                g,
                Op::Iota {
                    axis: 0,
                    start,
                    step,
                },
                &[],
                Some(declared),
            ))
        }
        "softmax" | "log_softmax" => {
            let x = x()?;
            let axis = axis_of(g, x, a_i64(a, "axis")?)?;
            let sop = if op == "softmax" {
                Op::Softmax { axis }
            } else {
                Op::LogSoftmax { axis }
            };
            one(node(g, sop, &[x], None))
        }
        "layer_norm" => {
            let axis = axis_of(g, x()?, a_i64(a, "axis")?)?;
            one(node(
                g,
                Op::LayerNorm {
                    axis,
                    eps: a_f64(a, "eps")?,
                },
                args,
                None,
            ))
        }
        "rms_norm" => one(node(
            g,
            Op::RmsNorm {
                eps: a_f64(a, "eps")?,
            },
            args,
            None,
        )),
        "group_norm" => {
            let gop = Op::GroupNorm {
                groups: a_usize(a, "groups")?,
                eps: a_f64(a, "eps")?,
            };
            one(node(g, gop, args, None))
        }
        "attention" => {
            let mask = match a_str(a, "mask")? {
                "none" => MaskKind::None,
                "causal" => MaskKind::Causal,
                "sliding_window" => MaskKind::SlidingWindow(a_usize(a, "window")?),
                "custom" => MaskKind::Custom,
                "bias" => MaskKind::Bias,
                other => return Err(format!("unknown mask kind {other:?}")),
            };
            let layout = match a.get("layout").and_then(Value::as_str) {
                None | Some("heads_major") => AttentionLayout::HeadsMajor,
                Some("seq_major") => AttentionLayout::SeqMajor,
                Some(other) => return Err(format!("unknown attention layout {other:?}")),
            };
            let aop = Op::Attention {
                mask,
                scale: a_opt_f64(a, "scale")?,
                softcap: a_opt_f64(a, "softcap")?,
                layout,
            };
            one(node(g, aop, args, None))
        }
        "rope" => {
            let rop = Op::Rope {
                interleaved: a_bool(a, "interleaved")?,
            };
            one(node(g, rop, args, None))
        }
        "conv" => {
            let cop = Op::Conv {
                window: window(a, Vec::new())?,
                groups: a_usize(a, "groups")?,
            };
            one(node(g, cop, args, None))
        }
        "conv_transpose" => {
            let cop = Op::ConvTranspose {
                window: window(a, Vec::new())?,
                output_padding: a_usizes(a, "output_padding")?,
                groups: a_usize(a, "groups")?,
            };
            one(node(g, cop, args, None))
        }
        "pool" => {
            let kind = match a_str(a, "kind")? {
                "max" => PoolKind::Max,
                "avg" => PoolKind::Avg,
                other => return Err(format!("unknown pool kind {other:?}")),
            };
            let pop = Op::Pool {
                kind,
                window: window(a, a_usizes(a, "kernel")?)?,
                count_include_pad: a_bool(a, "count_include_pad")?,
            };
            one(node(g, pop, &[x()?], None))
        }
        "upsample" => {
            let x = x()?;
            let mode = match a_str(a, "mode")? {
                "nearest" => InterpMode::Nearest,
                "linear" => InterpMode::Linear,
                other => return Err(format!("unknown interpolation {other:?}")),
            };
            let mut dims = static_dims(g, x)?;
            dims.truncate(2);
            dims.extend(a_usizes(a, "size")?);
            let declared = g.shape(x).with_dims(dims_of(&dims));
            let uop = Op::Upsample {
                mode,
                align_corners: a_bool(a, "align_corners")?,
            };
            one(node(g, uop, &[x], Some(declared)))
        }
        "fft" => {
            let x = x()?;
            let kind = match a_str(a, "kind")? {
                "fft" => FftKind::Fft,
                "ifft" => FftKind::Ifft,
                "rfft" => FftKind::Rfft,
                "irfft" => FftKind::Irfft,
                other => return Err(format!("unknown fft kind {other:?}")),
            };
            let norm = match a_str(a, "norm")? {
                "backward" => FftNorm::Backward,
                "ortho" => FftNorm::Ortho,
                "forward" => FftNorm::Forward,
                other => return Err(format!("unknown fft norm {other:?}")),
            };
            let declared = if kind == FftKind::Irfft {
                let mut dims = static_dims(g, x)?;
                *dims.last_mut().ok_or("irfft of a scalar")? = a_usize(a, "n")?;
                Some(Shape::new(&dims, DType::F32))
            } else {
                None
            };
            one(node(g, Op::Fft { kind, norm }, &[x], declared))
        }
        other => Err(format!("unknown fixture op {other:?}")),
    }
}

/// The case's graph: inputs `x0..`, then the op (or the chain of `graph` steps).
pub(crate) fn build_graph(case: &Case) -> Res<Graph> {
    let mut g = Graph::new(case.name.as_str());
    let mut env: HashMap<String, NodeId> = HashMap::new();
    let mut inputs = Vec::new();
    for (i, t) in case.inputs.iter().enumerate() {
        let name = format!("x{i}");
        let id = g.try_input(&name, t.shape()).map_err(|e| e.to_string())?;
        env.insert(name, id);
        inputs.push(id);
    }
    let outputs = if case.op == "graph" {
        let steps = attr(&case.attrs, "steps")?
            .as_array()
            .ok_or("attribute \"steps\" is not a list")?;
        let mut last = Vec::new();
        for (i, step) in steps.iter().enumerate() {
            let op = step["op"]
                .as_str()
                .ok_or_else(|| format!("step {i}: missing op"))?;
            let args = step["args"]
                .as_array()
                .ok_or_else(|| format!("step {i}: missing args"))?
                .iter()
                .map(|r| {
                    r.as_str()
                        .and_then(|r| env.get(r).copied())
                        .ok_or_else(|| format!("step {i}: unknown arg {r}"))
                })
                .collect::<Res<Vec<NodeId>>>()?;
            last = build_op(&mut g, op, &step["attrs"], &args)
                .map_err(|e| format!("step {i} ({op}): {e}"))?;
            env.insert(format!("s{i}"), last[0]);
        }
        last
    } else {
        build_op(&mut g, &case.op, &case.attrs, &inputs)?
    };
    g.set_outputs(outputs);
    Ok(g)
}

// ── running and comparing ───────────────────────────────────────────────────

thread_local! {
    static QUIET_PANICS: Cell<bool> = const { Cell::new(false) };
}

/// Silences the panic message of panics caught by [`guarded`] (on this
/// thread); other panics, the final assertion included, print as usual.
pub(crate) fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !QUIET_PANICS.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

/// Runs `f`, turning a panic into an error.
pub(crate) fn guarded<T>(f: impl FnOnce() -> Res<T>) -> Res<T> {
    QUIET_PANICS.with(|q| q.set(true));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    QUIET_PANICS.with(|q| q.set(false));
    result.unwrap_or_else(|payload| {
        let msg = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "non-string panic payload".into());
        Err(format!("panicked: {msg}"))
    })
}

/// Integer values of an integer / bool tensor, exactly.
pub(crate) fn int_values(t: &HostTensor) -> Res<Vec<i128>> {
    let e = |e: rlx_ir::IrError| e.to_string();
    Ok(match t.dtype() {
        DType::I8 => t
            .to_vec::<i8>()
            .map_err(e)?
            .into_iter()
            .map(i128::from)
            .collect(),
        DType::I16 => t
            .to_vec::<i16>()
            .map_err(e)?
            .into_iter()
            .map(i128::from)
            .collect(),
        DType::I32 => t
            .to_vec::<i32>()
            .map_err(e)?
            .into_iter()
            .map(i128::from)
            .collect(),
        DType::I64 => t
            .to_vec::<i64>()
            .map_err(e)?
            .into_iter()
            .map(i128::from)
            .collect(),
        DType::U8 => t
            .to_vec::<u8>()
            .map_err(e)?
            .into_iter()
            .map(i128::from)
            .collect(),
        DType::U32 => t
            .to_vec::<u32>()
            .map_err(e)?
            .into_iter()
            .map(i128::from)
            .collect(),
        DType::Bool => t.bytes().iter().map(|&b| i128::from(b != 0)).collect(),
        d => return Err(format!("{d} is not an integer dtype")),
    })
}

/// Float values of a float tensor; complex tensors give `[re, im]` pairs.
pub(crate) fn float_values(t: &HostTensor) -> Res<Vec<f64>> {
    if t.dtype() == DType::C64 {
        let v = t.to_vec::<Complex32>().map_err(|e| e.to_string())?;
        return Ok(v
            .iter()
            .flat_map(|c| [f64::from(c.re), f64::from(c.im)])
            .collect());
    }
    Ok(t.to_f64_lossy())
}

pub(crate) fn close(got: f64, want: f64, rtol: f64, atol: f64) -> bool {
    if want.is_nan() || got.is_nan() {
        return want.is_nan() && got.is_nan();
    }
    if want.is_infinite() || got.is_infinite() {
        return got == want;
    }
    (got - want).abs() <= atol + rtol * want.abs()
}

/// Row-major multi-index of flat element `i` (for complex, `i` counts values).
pub(crate) fn index_text(dims: &[usize], i: usize, complex: bool) -> String {
    let (mut rest, part) = if complex {
        (i / 2, if i.is_multiple_of(2) { ".re" } else { ".im" })
    } else {
        (i, "")
    };
    let mut idx = vec![0; dims.len()];
    for (k, &d) in dims.iter().enumerate().rev() {
        if d > 0 {
            idx[k] = rest % d;
            rest /= d;
        }
    }
    format!("{idx:?}{part}")
}

pub(crate) fn compare_tensors(
    got: &HostTensor,
    want: &HostTensor,
    rtol: f64,
    atol: f64,
) -> Res<()> {
    if got.dtype() != want.dtype() {
        return Err(format!("dtype {} (expected {})", got.dtype(), want.dtype()));
    }
    if got.dims() != want.dims() {
        return Err(format!(
            "dims {:?} (expected {:?})",
            got.dims(),
            want.dims()
        ));
    }
    let dt = want.dtype();
    let mut bad = Vec::new();
    let total;
    if dt.is_float() || dt.is_complex() {
        let (g, w) = (float_values(got)?, float_values(want)?);
        total = w.len();
        for (i, (&gv, &wv)) in g.iter().zip(&w).enumerate() {
            if !close(gv, wv, rtol, atol) {
                bad.push((i, format!("{wv:e}"), format!("{gv:e}")));
            }
        }
    } else {
        let (g, w) = (int_values(got)?, int_values(want)?);
        total = w.len();
        for (i, (&gv, &wv)) in g.iter().zip(&w).enumerate() {
            if gv != wv {
                bad.push((i, wv.to_string(), gv.to_string()));
            }
        }
    }
    if bad.is_empty() {
        return Ok(());
    }
    let shown: Vec<String> = bad
        .iter()
        .take(SHOWN_MISMATCHES)
        .map(|(i, w, g)| {
            format!(
                "{}: expected {w}, got {g}",
                index_text(want.dims(), *i, dt.is_complex())
            )
        })
        .collect();
    Err(format!(
        "{} of {total} values differ (rtol {rtol:e}, atol {atol:e}): {}",
        bad.len(),
        shown.join("; ")
    ))
}
