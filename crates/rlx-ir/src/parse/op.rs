//! Op payloads of the textual IR: one reader per mnemonic, each the inverse
//! of [`Op::mnemonic`] (and of the region and control-op printers).

use super::cursor::Cursor;
use super::{shape, ParseError};
use crate::custom::{CustomAttr, CustomAttrs, CustomOp};
use crate::fft::{FftKind, FftNorm};
use crate::op::{
    ArgReduceOp, AttentionLayout, BinaryOp, ChainOperand, ChainStep, CmpOp, DotDims, MaskKind,
    PadMode, PoolKind, ReduceOp, SliceSpec, TopKOutput, UnaryOp, Window,
};
use crate::ops::control::{CustomFnSpec, IfSpec, ScanSpec, WhileSpec};
use crate::ops::upsample::InterpMode;
use crate::quant::QuantScheme;
use crate::{scalar_constant_bytes, DType, Graph, IrError, Op, Shape};
use std::sync::Arc;

/// The sub-graphs of a control op, in the order its printer writes them.
pub(crate) type SubGraphs = Vec<Arc<Graph>>;

/// An op as read from its mnemonic; constants need the node's shape and
/// control ops their sub-graphs (both come later on the line / after it).
pub(crate) enum ParsedOp {
    /// Complete.
    Ready(Op),
    /// A constant's data, to be encoded at the node's dtype.
    Constant(ConstantText),
    /// A control op waiting for its sub-graphs.
    Control(ControlHeader),
}

/// How a constant's data is written.
pub(crate) enum ConstantText {
    /// `[v0, v1, ...]`: each value encoded at the node's dtype.
    Values(Vec<f64>),
    /// `hex"..."`: the little-endian bytes.
    Hex(Vec<u8>),
}

impl ConstantText {
    /// The constant's bytes for a node of `shape`.
    pub(crate) fn into_bytes(
        self,
        c: &Cursor,
        at: usize,
        shape: &Shape,
    ) -> Result<Vec<u8>, ParseError> {
        match self {
            ConstantText::Hex(b) => Ok(b),
            ConstantText::Values(v) => {
                let numel = shape.numel();
                if numel != Some(v.len()) {
                    return Err(super::invalid(
                        c,
                        at,
                        IrError::DataLength {
                            what: format!("constant values of {shape}"),
                            expected: numel.unwrap_or(0),
                            given: v.len(),
                        },
                    ));
                }
                Ok(v.iter()
                    .flat_map(|&x| scalar_constant_bytes(x, shape.dtype()))
                    .collect())
            }
        }
    }
}

/// A control op's payload without its sub-graphs.
pub(crate) enum ControlHeader {
    If,
    While { max_iterations: usize },
    Scan(ScanSpec),
    CustomFn { name: String, vjp: bool, jvp: bool },
}

impl ControlHeader {
    /// The sub-graph roles the printer writes after the node, in order.
    pub(crate) fn roles(&self) -> Vec<&'static str> {
        match self {
            ControlHeader::If => vec!["then", "else"],
            ControlHeader::While { .. } => vec!["cond", "body"],
            ControlHeader::Scan(_) => vec!["body"],
            ControlHeader::CustomFn { vjp, jvp, .. } => {
                let mut r = vec!["body"];
                if *vjp {
                    r.push("vjp");
                }
                if *jvp {
                    r.push("jvp");
                }
                r
            }
        }
    }

    /// The op, given the sub-graphs of [`ControlHeader::roles`].
    pub(crate) fn build(self, subs: SubGraphs) -> Op {
        let mut subs = subs.into_iter();
        let mut next = || subs.next().expect("one sub-graph per role");
        match self {
            ControlHeader::If => Op::If(IfSpec {
                then_branch: next(),
                else_branch: next(),
            }),
            ControlHeader::While { max_iterations } => Op::While(WhileSpec {
                cond: next(),
                body: next(),
                max_iterations,
            }),
            ControlHeader::Scan(spec) => Op::Scan(ScanSpec {
                body: next(),
                ..spec
            }),
            ControlHeader::CustomFn { name, vjp, jvp } => {
                let body = next();
                let vjp = vjp.then(&mut next);
                let jvp = jvp.then(&mut next);
                Op::CustomFn(CustomFnSpec {
                    name,
                    body,
                    vjp,
                    jvp,
                })
            }
        }
    }
}

/// `key=` then a value read by `read`; `first` omits the leading `, `.
fn attr<T>(
    c: &mut Cursor,
    key: &str,
    first: bool,
    read: impl FnOnce(&mut Cursor) -> Result<T, ParseError>,
) -> Result<T, ParseError> {
    if !first {
        c.expect(",")?;
    }
    c.expect(key)?;
    c.expect("=")?;
    read(c)
}

fn usizes(c: &mut Cursor) -> Result<Vec<usize>, ParseError> {
    c.list(|c| c.usize("an axis or size"))
}

fn pairs(c: &mut Cursor) -> Result<Vec<(usize, usize)>, ParseError> {
    c.list(|c| {
        c.expect("(")?;
        let a = c.usize("a padding")?;
        c.expect(",")?;
        let b = c.usize("a padding")?;
        c.expect(")")?;
        Ok((a, b))
    })
}

/// `Some(x)` or `None`, as `{:?}` writes an `Option`.
fn option<T>(
    c: &mut Cursor,
    read: impl FnOnce(&mut Cursor) -> Result<T, ParseError>,
) -> Result<Option<T>, ParseError> {
    if c.eat("None") {
        return Ok(None);
    }
    c.expect("Some(")?;
    let v = read(c)?;
    c.expect(")")?;
    Ok(Some(v))
}

/// One of `names`, returning the matching value.
fn one_of<T: Copy>(c: &mut Cursor, what: &str, names: &[(&str, T)]) -> Result<T, ParseError> {
    let at = c.pos();
    let w = c.word(what)?;
    names
        .iter()
        .find(|(n, _)| *n == w)
        .map(|(_, v)| *v)
        .ok_or_else(|| {
            let list: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
            c.error_at(at, format!("{what} (one of {})", list.join(", ")))
        })
}

fn unary_names() -> Vec<(&'static str, UnaryOp)> {
    UnaryOp::ALL.iter().map(|&u| (u.name(), u)).collect()
}

fn dtype(c: &mut Cursor) -> Result<DType, ParseError> {
    let names: Vec<(&str, DType)> = DType::ALL.iter().map(|&d| (d.short_name(), d)).collect();
    one_of(c, "a dtype", &names)
}

/// Reads one op mnemonic with its payload.
pub(crate) fn op(c: &mut Cursor) -> Result<ParsedOp, ParseError> {
    let at = c.pos();
    let word = c.word("an op mnemonic")?;
    let ready = |op| Ok(ParsedOp::Ready(op));
    if let Some(u) = UnaryOp::ALL.iter().find(|u| u.name() == word) {
        return ready(Op::Unary(*u));
    }
    if let Some(b) = BinaryOp::ALL.iter().find(|b| b.name() == word) {
        return ready(Op::Binary(*b));
    }
    if let Some(cmp) = word.strip_prefix("cmp.") {
        return match CmpOp::ALL.iter().find(|x| x.name() == cmp) {
            Some(x) => ready(Op::Compare(*x)),
            None => Err(c.error_at(at, "a comparison (cmp.eq, cmp.ne, cmp.lt, ...)")),
        };
    }
    if let Some(r) = word.strip_prefix("reduce.") {
        let ops = [
            ReduceOp::Sum,
            ReduceOp::Mean,
            ReduceOp::Max,
            ReduceOp::Min,
            ReduceOp::Prod,
        ];
        let Some(&op) = ops.iter().find(|o| o.name() == r) else {
            return Err(c.error_at(at, "a reduction (reduce.sum, .mean, .max, .min, .prod)"));
        };
        c.expect("{")?;
        let axes = attr(c, "axes", true, usizes)?;
        let keep_dim = attr(c, "keep_dim", false, |c| c.bool("keep_dim"))?;
        c.expect("}")?;
        return ready(Op::Reduce { op, axes, keep_dim });
    }
    if let Some(kind) = word.strip_prefix("pool.") {
        let kind = match kind {
            "max" => PoolKind::Max,
            "avg" => PoolKind::Avg,
            _ => return Err(c.error_at(at, "pool.max or pool.avg")),
        };
        c.expect("{")?;
        let kernel = attr(c, "kernel", true, usizes)?;
        let window = window(c, kernel, false)?;
        let count_include_pad = attr(c, "count_include_pad", false, |c| c.bool("a flag"))?;
        c.expect("}")?;
        return ready(Op::Pool {
            kind,
            window,
            count_include_pad,
        });
    }
    if let Some(name) = word.strip_prefix("custom.") {
        return ready(Op::Custom(custom(c, at, name)?));
    }
    let axis_attr = |c: &mut Cursor| -> Result<usize, ParseError> {
        c.expect("{")?;
        let a = attr(c, "axis", true, |c| c.usize("an axis"))?;
        c.expect("}")?;
        Ok(a)
    };
    let op = match word {
        "input" | "param" => {
            let name = c.string("a name")?;
            return ready(if word == "input" {
                Op::Input { name }
            } else {
                Op::Param { name }
            });
        }
        "constant" => return constant(c).map(ParsedOp::Constant),
        "select" => Op::Select,
        "cast" => Op::Cast,
        "matmul" => Op::MatMul,
        "reshape" => Op::Reshape,
        "broadcast" => Op::Broadcast,
        "dot_general" => {
            c.expect("{")?;
            let d = DotDims {
                lhs_batch: attr(c, "lb", true, usizes)?,
                rhs_batch: attr(c, "rb", false, usizes)?,
                lhs_contract: attr(c, "lc", false, usizes)?,
                rhs_contract: attr(c, "rc", false, usizes)?,
            };
            c.expect("}")?;
            Op::DotGeneral(d)
        }
        "argmax" | "argmin" => {
            c.expect("{")?;
            let axis = attr(c, "axis", true, |c| c.usize("an axis"))?;
            let keep_dim = attr(c, "keep_dim", false, |c| c.bool("keep_dim"))?;
            c.expect("}")?;
            let op = if word == "argmax" {
                ArgReduceOp::ArgMax
            } else {
                ArgReduceOp::ArgMin
            };
            Op::ArgReduce { op, axis, keep_dim }
        }
        "cumsum" => {
            c.expect("{")?;
            let axis = attr(c, "axis", true, |c| c.usize("an axis"))?;
            let exclusive = attr(c, "exclusive", false, |c| c.bool("a flag"))?;
            let reverse = attr(c, "reverse", false, |c| c.bool("a flag"))?;
            c.expect("}")?;
            Op::Cumsum {
                axis,
                exclusive,
                reverse,
            }
        }
        "transpose" => {
            c.expect("{")?;
            let perm = attr(c, "perm", true, usizes)?;
            c.expect("}")?;
            Op::Transpose { perm }
        }
        "slice" => {
            c.expect("{")?;
            let starts = attr(c, "starts", true, usizes)?;
            let steps = attr(c, "steps", false, |c| c.list(|c| c.i64("a step")))?;
            c.expect("}")?;
            Op::Slice(SliceSpec { starts, steps })
        }
        "concat" => Op::Concat {
            axis: axis_attr(c)?,
        },
        "pad" => {
            c.expect("{")?;
            let pads = attr(c, "pads", true, pairs)?;
            let mode = attr(c, "mode", false, pad_mode)?;
            c.expect("}")?;
            Op::Pad { pads, mode }
        }
        "gather" => Op::Gather {
            axis: axis_attr(c)?,
        },
        "gather_elements" => Op::GatherElements {
            axis: axis_attr(c)?,
        },
        "scatter_add" => Op::ScatterAdd {
            axis: axis_attr(c)?,
        },
        "softmax" => Op::Softmax {
            axis: axis_attr(c)?,
        },
        "log_softmax" => Op::LogSoftmax {
            axis: axis_attr(c)?,
        },
        "topk" => {
            c.expect("{")?;
            let k = attr(c, "k", true, |c| c.usize("k"))?;
            let axis = attr(c, "axis", false, |c| c.usize("an axis"))?;
            let largest = attr(c, "largest", false, |c| c.bool("a flag"))?;
            let output = attr(c, "output", false, |c| {
                one_of(
                    c,
                    "a top-k output",
                    &[
                        ("Values", TopKOutput::Values),
                        ("Indices", TopKOutput::Indices),
                    ],
                )
            })?;
            c.expect("}")?;
            Op::TopK {
                k,
                axis,
                largest,
                output,
            }
        }
        "iota" => {
            c.expect("{")?;
            let axis = attr(c, "axis", true, |c| c.usize("an axis"))?;
            let start = attr(c, "start", false, |c| c.f64("start"))?;
            let step = attr(c, "step", false, |c| c.f64("step"))?;
            c.expect("}")?;
            Op::Iota { axis, start, step }
        }
        "layer_norm" => {
            c.expect("{")?;
            let axis = attr(c, "axis", true, |c| c.usize("an axis"))?;
            let eps = attr(c, "eps", false, |c| c.f64("eps"))?;
            c.expect("}")?;
            Op::LayerNorm { axis, eps }
        }
        "rms_norm" => {
            c.expect("{")?;
            let eps = attr(c, "eps", true, |c| c.f64("eps"))?;
            c.expect("}")?;
            Op::RmsNorm { eps }
        }
        "group_norm" => {
            c.expect("{")?;
            let groups = attr(c, "groups", true, |c| c.usize("groups"))?;
            let eps = attr(c, "eps", false, |c| c.f64("eps"))?;
            c.expect("}")?;
            Op::GroupNorm { groups, eps }
        }
        "attention" => {
            c.expect("{")?;
            let mask = attr(c, "mask", true, mask_kind)?;
            let scale = attr(c, "scale", false, |c| option(c, |c| c.f64("scale")))?;
            let softcap = attr(c, "softcap", false, |c| option(c, |c| c.f64("softcap")))?;
            // Written only when not the default.
            let layout = if c.eat(",") {
                attr(c, "layout", true, |c| {
                    one_of(
                        c,
                        "an attention layout",
                        &[
                            ("heads_major", AttentionLayout::HeadsMajor),
                            ("seq_major", AttentionLayout::SeqMajor),
                        ],
                    )
                })?
            } else {
                AttentionLayout::HeadsMajor
            };
            c.expect("}")?;
            Op::Attention {
                mask,
                scale,
                softcap,
                layout,
            }
        }
        "rope" => {
            c.expect("{")?;
            let interleaved = attr(c, "interleaved", true, |c| c.bool("a flag"))?;
            c.expect("}")?;
            Op::Rope { interleaved }
        }
        "conv" => {
            c.expect("{")?;
            let window = conv_window(c)?;
            let groups = attr(c, "groups", false, |c| c.usize("groups"))?;
            c.expect("}")?;
            Op::Conv { window, groups }
        }
        "conv_transpose" => {
            c.expect("{")?;
            let window = conv_window(c)?;
            let output_padding = attr(c, "output_padding", false, usizes)?;
            let groups = attr(c, "groups", false, |c| c.usize("groups"))?;
            c.expect("}")?;
            Op::ConvTranspose {
                window,
                output_padding,
                groups,
            }
        }
        "upsample" => {
            c.expect("{")?;
            let mode = attr(c, "mode", true, |c| {
                one_of(
                    c,
                    "an interpolation",
                    &[
                        ("Nearest", InterpMode::Nearest),
                        ("Linear", InterpMode::Linear),
                    ],
                )
            })?;
            let align_corners = attr(c, "align_corners", false, |c| c.bool("a flag"))?;
            c.expect("}")?;
            Op::Upsample {
                mode,
                align_corners,
            }
        }
        "fft" | "ifft" | "rfft" | "irfft" => {
            let kind = match word {
                "fft" => FftKind::Fft,
                "ifft" => FftKind::Ifft,
                "rfft" => FftKind::Rfft,
                _ => FftKind::Irfft,
            };
            c.expect("{")?;
            let norm = attr(c, "norm", true, |c| {
                one_of(
                    c,
                    "an fft norm",
                    &[
                        ("backward", FftNorm::Backward),
                        ("ortho", FftNorm::Ortho),
                        ("forward", FftNorm::Forward),
                    ],
                )
            })?;
            c.expect("}")?;
            Op::Fft { kind, norm }
        }
        "region" => Op::ElementwiseRegion { steps: region(c)? },
        "matmul+epilogue" => Op::FusedMatMul {
            epilogue: region(c)?,
        },
        "conv+epilogue" => {
            c.expect("{")?;
            let window = conv_window(c)?;
            let groups = attr(c, "groups", false, |c| c.usize("groups"))?;
            let bias = attr(c, "bias", false, |c| c.bool("a flag"))?;
            c.expect("}")?;
            Op::FusedConv {
                window,
                groups,
                bias,
                epilogue: region(c)?,
            }
        }
        "add+layer_norm" | "add+rms_norm" => {
            c.expect("{")?;
            let axis = attr(c, "axis", true, |c| c.usize("an axis"))?;
            let eps = attr(c, "eps", false, |c| c.f64("eps"))?;
            let keep_sum = attr(c, "keep_sum", false, |c| c.bool("a flag"))?;
            c.expect("}")?;
            Op::AddNorm {
                axis,
                eps,
                rms: word == "add+rms_norm",
                keep_sum,
            }
        }
        "gated_matmul" => {
            c.expect("{")?;
            let act = attr(c, "act", true, |c| {
                one_of(c, "an activation", &unary_names())
            })?;
            c.expect("}")?;
            Op::GatedMatMul { act }
        }
        "dequantize" => {
            c.expect("{")?;
            let scheme = attr(c, "scheme", true, scheme)?;
            c.expect("}")?;
            Op::Dequantize { scheme }
        }
        "dequant_matmul" => {
            c.expect("{")?;
            let scheme = attr(c, "scheme", true, |c| {
                if c.eat("none") {
                    Ok(None)
                } else {
                    scheme(c).map(Some)
                }
            })?;
            let n = attr(c, "n", false, |c| c.usize("n"))?;
            let k = attr(c, "k", false, |c| c.usize("k"))?;
            c.expect("}")?;
            Op::DequantMatMul { scheme, n, k }
        }
        "tuple_get" => {
            c.expect("{")?;
            let index = attr(c, "index", true, |c| c.usize("an index"))?;
            let offset = attr(c, "offset", false, |c| c.usize("an offset"))?;
            let shape = attr(c, "shape", false, shape)?;
            c.expect("}")?;
            Op::TupleGet {
                index,
                offset,
                shape,
            }
        }
        "if" | "while" | "scan" | "custom_fn" => return control(c, word).map(ParsedOp::Control),
        _ => return Err(c.error_at(at, "an op mnemonic (`matmul`, `add`, `reduce.sum`, ...)")),
    };
    ready(op)
}

fn control(c: &mut Cursor, word: &str) -> Result<ControlHeader, ParseError> {
    if word == "if" {
        return Ok(ControlHeader::If);
    }
    c.expect("{")?;
    let header = match word {
        "while" => ControlHeader::While {
            max_iterations: attr(c, "max_iterations", true, |c| c.usize("a count"))?,
        },
        "scan" => {
            let num_carry = attr(c, "num_carry", true, |c| c.usize("a count"))?;
            let length = attr(c, "length", false, |c| c.usize("a length"))?;
            let reverse = attr(c, "reverse", false, |c| c.bool("a flag"))?;
            let checkpoint = attr(c, "checkpoint", false, |c| {
                option(c, |c| c.usize("a segment length"))
            })?;
            ControlHeader::Scan(ScanSpec {
                body: Arc::new(Graph::new("")),
                num_carry,
                length,
                reverse,
                checkpoint,
            })
        }
        _ => ControlHeader::CustomFn {
            name: attr(c, "name", true, |c| c.string("a name"))?,
            vjp: attr(c, "vjp", false, |c| c.bool("a flag"))?,
            jvp: attr(c, "jvp", false, |c| c.bool("a flag"))?,
        },
    };
    c.expect("}")?;
    Ok(header)
}

/// `stride=[..], padding=[(a, b), ..], dilation=[..]` after `kernel` (or
/// first, when `first`).
fn window(c: &mut Cursor, kernel: Vec<usize>, first: bool) -> Result<Window, ParseError> {
    Ok(Window {
        kernel,
        stride: attr(c, "stride", first, usizes)?,
        padding: attr(c, "padding", false, pairs)?,
        dilation: attr(c, "dilation", false, usizes)?,
    })
}

/// A conv window: `kernel=` is written only when the payload carries one.
fn conv_window(c: &mut Cursor) -> Result<Window, ParseError> {
    c.skip_spaces();
    if c.eat("kernel") {
        c.expect("=")?;
        let kernel = usizes(c)?;
        window(c, kernel, false)
    } else {
        window(c, Vec::new(), true)
    }
}

fn pad_mode(c: &mut Cursor) -> Result<PadMode, ParseError> {
    if c.eat("Reflect") {
        Ok(PadMode::Reflect)
    } else if c.eat("Edge") {
        Ok(PadMode::Edge)
    } else if c.eat("Constant(") {
        let v = c.f64("a fill value")?;
        c.expect(")")?;
        Ok(PadMode::Constant(v))
    } else {
        Err(c.error("a pad mode (Constant(x), Reflect, Edge)"))
    }
}

fn mask_kind(c: &mut Cursor) -> Result<MaskKind, ParseError> {
    if c.eat("SlidingWindow(") {
        let w = c.usize("a window")?;
        c.expect(")")?;
        return Ok(MaskKind::SlidingWindow(w));
    }
    one_of(
        c,
        "a mask",
        &[
            ("None", MaskKind::None),
            ("Causal", MaskKind::Causal),
            ("Custom", MaskKind::Custom),
            ("Bias", MaskKind::Bias),
        ],
    )
}

fn scheme(c: &mut Cursor) -> Result<QuantScheme, ParseError> {
    let at = c.pos();
    let w = c.word("a quant scheme")?;
    QuantScheme::from_name(w)
        .filter(|s| s.name() == w)
        .ok_or_else(|| c.error_at(at, "a quant scheme (q4_0, q8_0, q4_k, ...)"))
}

/// `[1, 2.5]`, `hex"0000803f"`; `<N bytes>` is the elided form.
fn constant(c: &mut Cursor) -> Result<ConstantText, ParseError> {
    c.skip_spaces();
    if c.peek() == Some('[') {
        return c.list(|c| c.f64("a value")).map(ConstantText::Values);
    }
    if c.eat("hex") {
        let at = c.pos();
        let s = c.string("hex bytes")?;
        return decode_hex(&s)
            .map(ConstantText::Hex)
            .ok_or_else(|| c.error_at(at, "an even number of hex digits"));
    }
    if c.eat("<") {
        return Err(c.error(
            "constant data: this text elides it (`constant<N bytes>`); \
             print the graph with `Graph::to_text` for a parseable text",
        ));
    }
    Err(c.error("constant data (`[v, ...]` or `hex\"..\"`)"))
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

/// `[s0 = exp(in0); s1 = add(s0, in1); s2 = cast<f16>(s1)]`.
fn region(c: &mut Cursor) -> Result<Vec<ChainStep>, ParseError> {
    c.expect("[")?;
    let mut steps = Vec::new();
    if c.eat("]") {
        return Ok(steps);
    }
    loop {
        c.expect(&format!("s{}", steps.len()))?;
        c.expect("=")?;
        steps.push(step(c)?);
        if c.eat("]") {
            return Ok(steps);
        }
        c.expect(";")?;
    }
}

fn step(c: &mut Cursor) -> Result<ChainStep, ParseError> {
    let at = c.pos();
    let word = c.word("a step op")?;
    if word == "cast" {
        c.expect("<")?;
        let to = dtype(c)?;
        c.expect(">")?;
        let [x] = operands::<1>(c)?;
        return Ok(ChainStep::Cast(x, to));
    }
    if word == "select" {
        let [p, a, b] = operands::<3>(c)?;
        return Ok(ChainStep::Select(p, a, b));
    }
    if let Some(u) = UnaryOp::ALL.iter().find(|u| u.name() == word) {
        let [x] = operands::<1>(c)?;
        return Ok(ChainStep::Unary(*u, x));
    }
    if let Some(b) = BinaryOp::ALL.iter().find(|b| b.name() == word) {
        let [x, y] = operands::<2>(c)?;
        return Ok(ChainStep::Binary(*b, x, y));
    }
    if let Some(cmp) = word
        .strip_prefix("cmp.")
        .and_then(|n| CmpOp::ALL.iter().find(|x| x.name() == n))
    {
        let [x, y] = operands::<2>(c)?;
        return Ok(ChainStep::Compare(*cmp, x, y));
    }
    Err(c.error_at(
        at,
        "an elementwise step (a unary, binary, cmp.*, select or cast)",
    ))
}

/// `(a, b, ...)`: exactly `N` operands `inK` / `sK`.
fn operands<const N: usize>(c: &mut Cursor) -> Result<[ChainOperand; N], ParseError> {
    c.expect("(")?;
    let mut out = [ChainOperand::Input(0); N];
    for (i, slot) in out.iter_mut().enumerate() {
        if i > 0 {
            c.expect(",")?;
        }
        *slot = if c.eat("in") {
            ChainOperand::Input(c.usize("an input index")?)
        } else if c.eat("s") {
            ChainOperand::Step(c.usize("a step index")?)
        } else {
            return Err(c.error("an operand (`inK` or `sK`)"));
        };
    }
    c.expect(")")?;
    Ok(out)
}

/// `custom.<name>` then optional `{key=value, ...}` (see [`CustomAttr`]'s printer).
fn custom(c: &mut Cursor, at: usize, name: &str) -> Result<CustomOp, ParseError> {
    crate::custom::check_name(name).map_err(|e| c.error_at(at, e))?;
    let mut attrs = CustomAttrs::new();
    c.skip_spaces();
    if c.rest().starts_with('{') {
        c.expect("{")?;
        let mut first = true;
        while !c.eat("}") {
            if !first {
                c.expect(",")?;
            }
            first = false;
            let key = c.word("an attribute name")?.to_string();
            c.expect("=")?;
            attrs.insert(key, custom_value(c)?);
        }
    }
    Ok(CustomOp::new(name, attrs))
}

fn custom_value(c: &mut Cursor) -> Result<CustomAttr, ParseError> {
    c.skip_spaces();
    if c.rest().starts_with('"') {
        return c.string("a string attribute").map(CustomAttr::Str);
    }
    if c.eat("true") {
        return Ok(CustomAttr::Bool(true));
    }
    if c.eat("false") {
        return Ok(CustomAttr::Bool(false));
    }
    if c.rest().starts_with("i64[") {
        c.expect("i64")?;
        return c.list(|c| c.i64("an integer")).map(CustomAttr::Ints);
    }
    if c.rest().starts_with("f64[") {
        c.expect("f64")?;
        return c.list(|c| c.f64("a float")).map(CustomAttr::Floats);
    }
    let at = c.pos();
    let t = c.number_token();
    if let Ok(i) = t.parse::<i64>() {
        return Ok(CustomAttr::Int(i));
    }
    t.parse::<f64>().map(CustomAttr::Float).map_err(|_| {
        c.error_at(
            at,
            "an attribute value (bool, integer, float, string, i64[..], f64[..])",
        )
    })
}
