//! The textual dump of a [`LaunchPlan`] (`Display`): one line per value
//! of the manifest and per launch, with every operand's place.

use super::{Buf, Kernel, LaunchPlan, Region};
use std::fmt;

impl fmt::Display for Buf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let region = match self.region {
            Region::Arena => "arena".to_string(),
            Region::Param(i) => format!("param{i}"),
            Region::Const(i) => format!("const{i}"),
        };
        write!(f, "{} {}@{}+{}", self.node, self.dtype, region, self.byte)?;
        if self.owner != self.node {
            write!(f, " (view of {})", self.owner)?;
        }
        Ok(())
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kernel::Unary(op) => write!(f, "unary {op:?}"),
            Kernel::Binary {
                op,
                dims,
                a_strides,
                b_strides,
            } => write!(
                f,
                "binary {op:?} dims {dims:?} strides {a_strides:?} {b_strides:?}"
            ),
            Kernel::Reduce { op, shape } => write!(f, "reduce {op:?} {shape:?}"),
            Kernel::Softmax { shape, log } => {
                write!(
                    f,
                    "{} {shape:?}",
                    if *log { "log_softmax" } else { "softmax" }
                )
            }
            Kernel::LayerNorm { shape, eps } => write!(f, "layer_norm {shape:?} eps {eps:e}"),
            Kernel::RmsNorm { shape, eps } => write!(f, "rms_norm {shape:?} eps {eps:e}"),
            Kernel::Gather { rows, row_len } => write!(f, "gather [{rows}, {row_len}]"),
            Kernel::Copy { width, pieces } => {
                write!(f, "copy b{width}")?;
                for p in pieces {
                    write!(
                        f,
                        " {:?} x{:?}+{} y{:?}+{}",
                        p.dims, p.x_strides, p.x_offset, p.y_strides, p.y_offset
                    )?;
                }
                Ok(())
            }
            Kernel::Cast { from, to } => write!(f, "cast {from}->{to}"),
            Kernel::Compare {
                code,
                suffix,
                dims,
                a_strides,
                b_strides,
            } => write!(
                f,
                "compare {code} {suffix} dims {dims:?} strides {a_strides:?} {b_strides:?}"
            ),
            Kernel::Select {
                width,
                dims,
                c_strides,
                a_strides,
                b_strides,
            } => write!(
                f,
                "select b{width} dims {dims:?} strides {c_strides:?} {a_strides:?} {b_strides:?}"
            ),
            Kernel::Iota {
                inner,
                len,
                start,
                step,
            } => write!(f, "iota {start} + {step} * i (len {len}, inner {inner})"),
            Kernel::Gemm(s) => write!(f, "gemm {}", gemm(s)),
            Kernel::GemmBias { gemm: s, epilogue } => {
                write!(
                    f,
                    "gemm {} + bias{}",
                    gemm(s),
                    match epilogue {
                        super::Epilogue::Bias => "",
                        super::Epilogue::BiasRelu => ", relu",
                        super::Epilogue::BiasGeluTanh => ", gelu_tanh",
                    }
                )
            }
            Kernel::ArgReduce { argmin, shape } => {
                let name = if *argmin { "argmin" } else { "argmax" };
                write!(f, "{name} {shape:?}")
            }
            Kernel::Cumsum {
                shape,
                exclusive,
                reverse,
            } => write!(
                f,
                "cumsum {shape:?}{}{}",
                if *exclusive { " exclusive" } else { "" },
                if *reverse { " reverse" } else { "" }
            ),
            Kernel::Pad {
                width,
                layout,
                mode,
                fill,
            } => {
                let r = layout.rank as usize;
                write!(
                    f,
                    "pad b{width} {:?} -> {:?} before {:?} mode {mode} fill {fill:#x}",
                    &layout.in_dims[..r],
                    &layout.out_dims[..r],
                    &layout.before[..r]
                )
            }
            Kernel::Conv2d(w) => write!(f, "conv2d {}", window(w)),
            Kernel::ConvTranspose2d(w) => write!(f, "conv_transpose2d {}", window(w)),
            Kernel::GatherElements(a) => write!(f, "gather_elements {}", axis_index(a)),
            Kernel::ScatterAdd(a) => write!(f, "scatter_add {}", axis_index(a)),
            Kernel::TopK {
                shape,
                k,
                largest,
                indices,
            } => write!(
                f,
                "topk {shape:?} k {k} {} {}",
                if *largest { "largest" } else { "smallest" },
                if *indices { "indices" } else { "values" }
            ),
            Kernel::Resize(r) => write!(
                f,
                "resize {} {:?} -> {:?} planes {}{}",
                if r.linear != 0 { "linear" } else { "nearest" },
                &r.input[..r.rank as usize],
                &r.output[..r.rank as usize],
                r.planes,
                if r.align_corners != 0 {
                    " align_corners"
                } else {
                    ""
                }
            ),
            Kernel::Dequantize { format } => write!(f, "dequantize {format}"),
            Kernel::Pool2d {
                window: w,
                avg,
                count_include_pad,
            } => write!(
                f,
                "{} {}{}",
                if *avg { "avg_pool2d" } else { "max_pool2d" },
                window(w),
                if *count_include_pad {
                    " counting pads"
                } else {
                    ""
                }
            ),
        }
    }
}

/// `2x[4, 3]@[3, 5]^T strides 12 0`.
fn gemm(s: &super::GemmSpec) -> String {
    format!(
        "{}x[{}, {}]{}@[{}, {}]{} strides {} {}",
        s.batch,
        s.m,
        s.k,
        if s.trans_a { "^T" } else { "" },
        s.k,
        s.n,
        if s.trans_b { "^T" } else { "" },
        s.stride_a,
        s.stride_b
    )
}

impl fmt::Display for LaunchPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "plan \"{}\": arena {} bytes, {} launches, {} constants",
            self.name,
            self.arena_bytes,
            self.steps.len(),
            self.constants.len()
        )?;
        for (name, b) in &self.inputs {
            writeln!(f, "  input {name}: {b}")?;
        }
        for (name, b) in &self.params {
            writeln!(f, "  param {name}: {b}")?;
        }
        for s in &self.steps {
            let ins: Vec<String> = s.inputs.iter().map(Buf::to_string).collect();
            writeln!(
                f,
                "  {} = {} ({}) -> {}",
                s.label,
                s.kernel,
                ins.join(", "),
                s.output
            )?;
        }
        for (c, parts) in &self.joined {
            let parts: Vec<String> = parts
                .iter()
                .map(|p| format!("{} at +{}", p.node, p.byte - c.byte))
                .collect();
            writeln!(f, "  joined {c}: {}", parts.join(", "))?;
        }
        for (k, b) in self.outputs.iter().enumerate() {
            writeln!(f, "  output {k}: {b}")?;
        }
        Ok(())
    }
}

/// `dims [2, 3] strides [0, 1] axis 4 len 5`.
fn axis_index(a: &super::AxisIndex) -> String {
    format!(
        "dims {:?} strides {:?} axis {} len {}",
        a.dims, a.data_strides, a.axis_stride, a.len
    )
}

/// `[1, 3, 8, 8] -> [1, 4, 8, 8] k 3x3 s 1x1 p 1x1 d 1x1 g 1`.
fn window(w: &crate::geometry::Window2d) -> String {
    format!(
        "[{}, {}, {}, {}] -> [{}, {}, {}, {}] k {}x{} s {}x{} p {}x{} d {}x{} g {}",
        w.batch,
        w.in_c,
        w.h,
        w.w,
        w.batch,
        w.out_c,
        w.oh,
        w.ow,
        w.kh,
        w.kw,
        w.sh,
        w.sw,
        w.ph,
        w.pw,
        w.dh,
        w.dw,
        w.groups
    )
}
