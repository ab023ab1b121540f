//! Node → launch mapping of [`plan`].

use super::gemm::{dot_general, matmul};
use super::{float_suffix, Buf, CopyPiece, Kernel, LaunchPlan, Region, Step};
use super::{fused, indexing};
use crate::geometry::{PadLayout, Window2d};
use crate::kernels::{BinaryOp, ReduceOp, UnaryOp};
use crate::launch::{broadcast, contiguous_strides, MAX_RANK};
use rlx_compile::LirModule;
use rlx_driver::{BackendError, Device};
use rlx_ir::op as ir;
use rlx_ir::{node_label, DType, Graph, NodeId, Op};

/// Plans `lir` for CUDA device `ordinal` (the device only names errors).
pub fn plan(lir: &LirModule, ordinal: u32) -> Result<LaunchPlan, BackendError> {
    let g = &lir.graph;
    let mut places: Vec<Option<Buf>> = vec![None; g.len()];
    let mut constants = Vec::new();
    let param_index = |id: NodeId| lir.io.params.iter().position(|p| p.0 == id);
    for id in g.ids() {
        let n = g.node(id);
        let bytes = n.shape.size_bytes().ok_or_else(|| BackendError::Kernel {
            node: node_label(g, id),
            message: format!("shape {} is not static", n.shape),
        })?;
        let (region, byte) = match &n.op {
            Op::Param { .. } => match param_index(id) {
                Some(i) => (Region::Param(i), 0),
                None => continue, // a param no step reads (not in the manifest)
            },
            Op::Constant { bytes } => {
                constants.push(bytes.clone());
                (Region::Const(constants.len() - 1), 0)
            }
            _ => match lir.plan.slots[id.index()] {
                Some(s) => (Region::Arena, s.offset),
                None => continue, // dead code the plan did not place
            },
        };
        let owner = lir.plan.view_of[id.index()].map_or(id, |o| NodeId(o as u32));
        places[id.index()] = Some(Buf {
            node: id,
            owner,
            region,
            byte,
            bytes,
            dtype: n.shape.dtype(),
        });
    }
    let place = |id: NodeId| {
        places[id.index()].ok_or_else(|| BackendError::Kernel {
            node: node_label(g, id),
            message: "the memory plan gave it no place".into(),
        })
    };
    let mut steps = Vec::new();
    let unsupported = |id: NodeId, why: String| BackendError::Unsupported {
        device: Device::Cuda(ordinal),
        node: format!("{} of {} ({why})", node_label(g, id), describe_types(g, id)),
    };
    // Fused matmuls' intermediates live past the memory plan's arena.
    let scratch_at = lir.plan.arena_bytes.div_ceil(fused::ALIGN) * fused::ALIGN;
    let mut scratch = 0;
    for &id in &lir.schedule {
        let n = g.node(id);
        if lir.plan.runs_nothing(id.index()) || n.op.is_leaf() {
            continue;
        }
        let output = place(id)?;
        if output.bytes == 0 {
            continue;
        }
        let inputs: Vec<Buf> = n
            .inputs
            .iter()
            .map(|&i| place(i))
            .collect::<Result<_, _>>()?;
        let inlined = match &n.op {
            Op::FusedMatMul { epilogue } => Some(fused::fused_matmul(
                g, id, epilogue, &inputs, output, scratch_at,
            )),
            Op::ElementwiseRegion { steps } => {
                Some(fused::region(g, id, steps, &inputs, output, scratch_at))
            }
            _ => None,
        };
        if let Some(f) = inlined {
            let f = f.map_err(|why| unsupported(id, why))?;
            scratch = scratch.max(f.scratch);
            steps.extend(f.steps);
            continue;
        }
        let kernel = kernel_for(g, id).map_err(|why| unsupported(id, why))?;
        steps.push(Step {
            node: id,
            label: node_label(g, id),
            kernel,
            inputs,
            output,
        });
    }
    let named = |list: &[(NodeId, String, rlx_ir::Shape)]| {
        list.iter()
            .map(|(id, name, _)| Ok((name.clone(), place(*id)?)))
            .collect::<Result<Vec<_>, BackendError>>()
    };
    Ok(LaunchPlan {
        name: g.name().to_string(),
        arena_bytes: if scratch > 0 {
            scratch_at + scratch
        } else {
            lir.plan.arena_bytes
        },
        steps,
        inputs: named(&lir.io.inputs)?,
        params: named(&lir.io.params)?,
        outputs: lir
            .io
            .outputs
            .iter()
            .map(|(id, _)| place(*id))
            .collect::<Result<_, _>>()?,
        constants,
        joined: lir
            .schedule
            .iter()
            .filter(|id| lir.plan.is_joined(id.index()))
            .map(|&id| {
                let parts = g.node(id).inputs.iter().map(|&p| place(p));
                Ok((place(id)?, parts.collect::<Result<_, _>>()?))
            })
            .collect::<Result<_, BackendError>>()?,
    })
}

/// `f32[4, 8] <- (f32[4, 3], f32[3, 8])`: the dtypes an unsupported-node
/// error names.
fn describe_types(g: &Graph, id: NodeId) -> String {
    let n = g.node(id);
    let ins: Vec<String> = n.inputs.iter().map(|&i| g.shape(i).to_string()).collect();
    format!("{} <- ({})", n.shape, ins.join(", "))
}

fn dims(g: &Graph, id: NodeId) -> Vec<usize> {
    g.shape(id).static_dims().unwrap_or_default()
}

pub(super) fn float_only(dt: DType) -> Result<(), String> {
    float_suffix(dt)
        .map(|_| ())
        .ok_or_else(|| format!("no CUDA kernel computes {dt}; f32, f16 and bf16 have kernels"))
}

pub(super) fn kernel_for(g: &Graph, id: NodeId) -> Result<Kernel, String> {
    let n = g.node(id);
    let out = dims(g, id);
    let dt = n.shape.dtype();
    let input = |k: usize| dims(g, n.inputs[k]);
    match &n.op {
        Op::Unary(u) => {
            float_only(dt)?;
            Ok(Kernel::Unary(unary(*u)?))
        }
        Op::Binary(b) => {
            float_only(dt)?;
            let op = binary(*b)?;
            let bc = broadcast(&input(0), &input(1)).map_err(|e| e.to_string())?;
            check_rank(bc.dims.len())?;
            Ok(Kernel::Binary {
                op,
                dims: bc.dims,
                a_strides: bc.a_strides,
                b_strides: bc.b_strides,
            })
        }
        Op::Reduce { op, axes, .. } => {
            float_only(dt)?;
            let op = match op {
                ir::ReduceOp::Sum => ReduceOp::Sum,
                ir::ReduceOp::Mean => ReduceOp::Mean,
                ir::ReduceOp::Max => ReduceOp::Max,
                ir::ReduceOp::Min => ReduceOp::Min,
                other => return Err(format!("no CUDA reduction kernel for {other:?}")),
            };
            Ok(Kernel::Reduce {
                op,
                shape: reduce_shape(&input(0), axes)?,
            })
        }
        Op::Softmax { axis } | Op::LogSoftmax { axis } => {
            float_only(dt)?;
            let [rows, n_] = last_axis(&out, *axis, "softmax")?;
            Ok(Kernel::Softmax {
                shape: [rows, n_],
                log: matches!(n.op, Op::LogSoftmax { .. }),
            })
        }
        Op::LayerNorm { axis, eps } => {
            float_only(dt)?;
            let rows: usize = out[..*axis].iter().product();
            let len: usize = out[*axis..].iter().product();
            check_scales(g, id, len)?;
            Ok(Kernel::LayerNorm {
                shape: [rows, len],
                eps: *eps as f32,
            })
        }
        Op::RmsNorm { eps } => {
            float_only(dt)?;
            let shape = last_axis(&out, out.len().saturating_sub(1), "rms norm")?;
            check_scales(g, id, shape[1])?;
            Ok(Kernel::RmsNorm {
                shape,
                eps: *eps as f32,
            })
        }
        Op::Gather { axis } => {
            float_only(dt)?;
            let table = input(0);
            if *axis != 0 || table.is_empty() {
                return Err(format!(
                    "the CUDA gather takes rows (axis 0), not axis {axis} of {table:?}"
                ));
            }
            let idx = g.shape(n.inputs[1]).dtype();
            if idx != DType::I64 {
                return Err(format!("gather indices must be i64 on CUDA, not {idx}"));
            }
            Ok(Kernel::Gather {
                rows: table[0],
                row_len: table[1..].iter().product(),
            })
        }
        Op::Transpose { perm } => {
            let src = strides(&input(0));
            copy_of(
                dt,
                vec![CopyPiece {
                    x_strides: perm.iter().map(|&p| src[p]).collect(),
                    y_strides: strides(&out),
                    dims: out.clone(),
                    x_offset: 0,
                    y_offset: 0,
                }],
            )
        }
        Op::Broadcast => {
            let bc = broadcast(&input(0), &out).map_err(|e| e.to_string())?;
            if bc.dims != out {
                return Err(format!("{:?} does not broadcast to {out:?}", input(0)));
            }
            copy_of(
                dt,
                vec![CopyPiece {
                    dims: out.clone(),
                    x_strides: bc.a_strides,
                    y_strides: strides(&out),
                    x_offset: 0,
                    y_offset: 0,
                }],
            )
        }
        Op::Slice(spec) => {
            let src = strides(&input(0));
            copy_of(
                dt,
                vec![CopyPiece {
                    x_strides: (0..out.len()).map(|i| src[i] * spec.steps[i]).collect(),
                    x_offset: (0..out.len()).map(|i| src[i] * spec.starts[i] as i64).sum(),
                    y_strides: strides(&out),
                    dims: out.clone(),
                    y_offset: 0,
                }],
            )
        }
        Op::Concat { axis } => {
            let ys = strides(&out);
            let mut at = 0usize;
            let mut pieces = Vec::new();
            for k in 0..n.inputs.len() {
                let d = input(k);
                pieces.push(CopyPiece {
                    x_strides: strides(&d),
                    y_strides: ys.clone(),
                    x_offset: 0,
                    y_offset: at as i64 * ys[*axis],
                    dims: d.clone(),
                });
                at += d[*axis];
            }
            copy_of(dt, pieces)
        }
        // A reshape the memory plan could not alias (of a param or a
        // constant): a contiguous copy.
        Op::Reshape => {
            let len = out.iter().product::<usize>();
            copy_of(
                dt,
                vec![CopyPiece {
                    dims: vec![len],
                    x_strides: vec![1],
                    y_strides: vec![1],
                    x_offset: 0,
                    y_offset: 0,
                }],
            )
        }
        Op::Cast => {
            let from = g.shape(n.inputs[0]).dtype();
            let name = |d: DType, to: bool| {
                match d {
                DType::F32 | DType::F16 | DType::BF16 | DType::I32 => {
                    Ok(float_suffix(d).unwrap_or("i32"))
                }
                DType::I64 if !to => Ok("i64"),
                _ => Err(format!(
                    "no CUDA cast {from} -> {dt} (casts from f32 / f16 / bf16 / i32 / i64 to f32 / f16 / bf16 / i32)"
                )),
            }
            };
            Ok(Kernel::Cast {
                from: name(from, false)?,
                to: name(dt, true)?,
            })
        }
        Op::MatMul => {
            float_only(dt)?;
            matmul(&input(0), &input(1), &out)
        }
        Op::DotGeneral(dd) => {
            float_only(dt)?;
            dot_general(dd, &input(0), &input(1), &out)
        }
        Op::Compare(c) => {
            let from = g.shape(n.inputs[0]).dtype();
            let suffix =
                super::iota_suffix(from).ok_or_else(|| format!("no CUDA comparison of {from}"))?;
            let bc = broadcast(&input(0), &input(1)).map_err(|e| e.to_string())?;
            check_rank(bc.dims.len())?;
            use ir::CmpOp as C;
            let code = match c {
                C::Eq => 0,
                C::Ne => 1,
                C::Lt => 2,
                C::Le => 3,
                C::Gt => 4,
                C::Ge => 5,
            };
            Ok(Kernel::Compare {
                code,
                suffix,
                dims: bc.dims,
                a_strides: bc.a_strides,
                b_strides: bc.b_strides,
            })
        }
        Op::Select => {
            let width = dt.size_bytes();
            if ![1, 2, 4, 8].contains(&width) {
                return Err(format!("no CUDA select of {dt}"));
            }
            check_rank(out.len())?;
            let over = |k: usize| -> Result<Vec<i64>, String> {
                let bc = broadcast(&input(k), &out).map_err(|e| e.to_string())?;
                if bc.dims != out {
                    return Err(format!("{:?} does not broadcast to {out:?}", input(k)));
                }
                Ok(bc.a_strides)
            };
            Ok(Kernel::Select {
                width,
                c_strides: over(0)?,
                a_strides: over(1)?,
                b_strides: over(2)?,
                dims: out.clone(),
            })
        }
        Op::Iota { axis, start, step } => {
            if super::iota_suffix(dt).is_none() {
                return Err(format!("no CUDA iota of {dt}"));
            }
            Ok(Kernel::Iota {
                inner: out[axis + 1..].iter().product(),
                len: out[*axis],
                start: *start,
                step: *step,
            })
        }
        Op::ArgReduce { op, axis, .. } => {
            float_only(g.shape(n.inputs[0]).dtype())?;
            if dt != DType::I64 {
                return Err(format!("argmax / argmin give i64 on CUDA, not {dt}"));
            }
            Ok(Kernel::ArgReduce {
                argmin: *op == ir::ArgReduceOp::ArgMin,
                shape: line_shape(&input(0), *axis)?,
            })
        }
        Op::Cumsum {
            axis,
            exclusive,
            reverse,
        } => {
            float_only(dt)?;
            Ok(Kernel::Cumsum {
                shape: line_shape(&input(0), *axis)?,
                exclusive: *exclusive,
                reverse: *reverse,
            })
        }
        Op::Pad { pads, mode } => pad(dt, &input(0), &out, pads, *mode),
        Op::Conv { window, groups } => {
            float_only(dt)?;
            let w = input(1);
            let kernel = w.get(2..).unwrap_or_default();
            Ok(Kernel::Conv2d(Window2d::new(
                &input(0),
                &out,
                kernel,
                window,
                *groups,
            )?))
        }
        Op::Pool {
            kind,
            window,
            count_include_pad,
        } => {
            float_only(dt)?;
            Ok(Kernel::Pool2d {
                window: Window2d::new(&input(0), &out, &window.kernel, window, 1)?,
                avg: *kind == ir::PoolKind::Avg,
                count_include_pad: *count_include_pad,
            })
        }
        Op::ConvTranspose { window, groups, .. } => {
            float_only(dt)?;
            indexing::conv_transpose(&input(0), &input(1), &out, window, *groups)
        }
        Op::GatherElements { axis } => {
            float_only(dt)?;
            let idx_dt = g.shape(n.inputs[1]).dtype();
            indexing::axis_index(&input(0), &input(1), *axis, idx_dt).map(Kernel::GatherElements)
        }
        Op::ScatterAdd { axis } => indexing::scatter_add(
            dt,
            &input(0),
            &input(1),
            *axis,
            g.shape(n.inputs[1]).dtype(),
        ),
        Op::TopK {
            k,
            axis,
            largest,
            output,
        } => indexing::topk(
            &input(0),
            g.shape(n.inputs[0]).dtype(),
            *axis,
            *k,
            *largest,
            *output == ir::TopKOutput::Indices,
        ),
        Op::Upsample {
            mode,
            align_corners,
        } => {
            float_only(dt)?;
            indexing::resize(&input(0), &out, *mode, *align_corners)
        }
        Op::Dequantize { scheme } => indexing::dequantize(*scheme, dt),
        other => Err(format!("no CUDA kernel for {}", other.mnemonic())),
    }
}

fn unary(u: ir::UnaryOp) -> Result<UnaryOp, String> {
    use ir::UnaryOp as U;
    Ok(match u {
        U::Neg => UnaryOp::Neg,
        U::Abs => UnaryOp::Abs,
        U::Exp => UnaryOp::Exp,
        U::Log => UnaryOp::Log,
        U::Sqrt => UnaryOp::Sqrt,
        U::Rsqrt => UnaryOp::Rsqrt,
        U::Reciprocal => UnaryOp::Recip,
        U::Tanh => UnaryOp::Tanh,
        U::Sigmoid => UnaryOp::Sigmoid,
        U::Relu => UnaryOp::Relu,
        U::Gelu => UnaryOp::Gelu,
        U::GeluApprox => UnaryOp::GeluTanh,
        U::Silu => UnaryOp::Silu,
        U::Sin => UnaryOp::Sin,
        U::Cos => UnaryOp::Cos,
        U::Floor => UnaryOp::Floor,
        U::Ceil => UnaryOp::Ceil,
        U::Round => UnaryOp::Round,
        U::Sign => UnaryOp::Sign,
        U::Erf => UnaryOp::Erf,
        U::Softplus => UnaryOp::Softplus,
        other => return Err(format!("no CUDA kernel for unary {other:?}")),
    })
}

fn binary(b: ir::BinaryOp) -> Result<BinaryOp, String> {
    use ir::BinaryOp as B;
    Ok(match b {
        B::Add => BinaryOp::Add,
        B::Sub => BinaryOp::Sub,
        B::Mul => BinaryOp::Mul,
        B::Div => BinaryOp::Div,
        B::Max => BinaryOp::Max,
        B::Min => BinaryOp::Min,
        B::Pow => BinaryOp::Pow,
        B::Mod => BinaryOp::Mod,
        B::Atan2 => BinaryOp::Atan2,
        other => return Err(format!("no CUDA kernel for binary {other:?}")),
    })
}

fn strides(d: &[usize]) -> Vec<i64> {
    contiguous_strides(d)
}

fn check_rank(rank: usize) -> Result<(), String> {
    if rank > MAX_RANK {
        return Err(format!(
            "rank {rank}: CUDA layouts carry at most {MAX_RANK} dims"
        ));
    }
    Ok(())
}

fn copy_of(dt: DType, pieces: Vec<CopyPiece>) -> Result<Kernel, String> {
    let width = dt.size_bytes();
    if ![1, 2, 4, 8].contains(&width) {
        return Err(format!("no strided copy for {dt} ({width}-byte elements)"));
    }
    for p in &pieces {
        check_rank(p.dims.len())?;
    }
    Ok(Kernel::Copy { width, pieces })
}

/// `[outer, n, inner]` of a reduction over `axes` (which must be adjacent).
fn reduce_shape(d: &[usize], axes: &[usize]) -> Result<[usize; 3], String> {
    let (Some(&lo), Some(&hi)) = (axes.first(), axes.last()) else {
        return Ok([d.iter().product(), 1, 1]);
    };
    if hi - lo + 1 != axes.len() || hi >= d.len() {
        return Err(format!(
            "the CUDA reduction takes adjacent axes, not {axes:?} of {d:?}"
        ));
    }
    Ok([
        d[..lo].iter().product(),
        d[lo..=hi].iter().product(),
        d[hi + 1..].iter().product(),
    ])
}

/// `[rows, n]` of a row-wise kernel over the last axis.
fn last_axis(d: &[usize], axis: usize, what: &str) -> Result<[usize; 2], String> {
    if d.is_empty() || axis + 1 != d.len() {
        return Err(format!(
            "the CUDA {what} runs over the last axis, not axis {axis} of {d:?}"
        ));
    }
    Ok([d[..axis].iter().product(), d[axis]])
}

/// Norm scales / shifts must hold exactly the normalised length.
fn check_scales(g: &Graph, id: NodeId, len: usize) -> Result<(), String> {
    for &s in &g.node(id).inputs[1..] {
        let have: usize = dims(g, s).iter().product();
        if have != len {
            return Err(format!(
                "a norm scale / shift of {have} elements for rows of {len} (CUDA takes whole rows)"
            ));
        }
    }
    Ok(())
}

/// `[outer, n, inner]` of a scan along `axis` of `d`.
fn line_shape(d: &[usize], axis: usize) -> Result<[usize; 3], String> {
    if axis >= d.len() {
        return Err(format!("axis {axis} of {d:?}"));
    }
    Ok([
        d[..axis].iter().product(),
        d[axis],
        d[axis + 1..].iter().product(),
    ])
}

/// A pad of `x` to `out`: any element width; a constant fill is stored as
/// the element's bytes.
fn pad(
    dt: DType,
    x: &[usize],
    out: &[usize],
    pads: &[(usize, usize)],
    mode: ir::PadMode,
) -> Result<Kernel, String> {
    let width = dt.size_bytes();
    if ![1, 2, 4, 8].contains(&width) {
        return Err(format!("no CUDA pad of {dt} ({width}-byte elements)"));
    }
    let (mode, fill) = match mode {
        ir::PadMode::Constant(v) => {
            let mut word = [0u8; 8];
            word[..width].copy_from_slice(&rlx_ir::scalar_constant_bytes(v, dt));
            (0, u64::from_le_bytes(word))
        }
        ir::PadMode::Reflect => (1, 0),
        ir::PadMode::Edge => (2, 0),
    };
    let before: Vec<usize> = pads.iter().map(|p| p.0).collect();
    Ok(Kernel::Pad {
        width,
        layout: PadLayout::new(x, out, &before)?,
        mode,
        fill,
    })
}
