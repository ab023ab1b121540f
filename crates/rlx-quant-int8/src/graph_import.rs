//! Reads a trained RLX graph (NCHW convs, pools, flatten, matmul, bias
//! adds, ReLU, softmax, arg-max; one chain from one input) and its param
//! values into a [`FloatModel`] over NHWC images. Any other op is
//! [`QuantError::UnsupportedOp`].

use crate::float_model::{FloatLayer, FloatModel};
use crate::model::Geometry;
use crate::QuantError;
use rlx_ir::op::{ArgReduceOp, BinaryOp, PoolKind, UnaryOp, Window};
use rlx_ir::{Graph, Node, NodeId, Op};
use std::collections::HashMap;

/// The activation flowing down the chain.
#[derive(Clone, Copy, Debug)]
enum Act {
    /// `[N, C, H, W]`.
    Image { c: usize, h: usize, w: usize },
    /// `[N, len]`; `from` is the image it was flattened from (NCHW order).
    Flat {
        len: usize,
        from: Option<(usize, usize, usize)>,
    },
}

struct Importer<'a> {
    graph: &'a Graph,
    params: &'a HashMap<String, Vec<f32>>,
    layers: Vec<FloatLayer>,
    act: Act,
    cur: NodeId,
    /// The last layer can still absorb a bias add / ReLU.
    open_affine: bool,
    argmax: bool,
}

fn unsupported(id: usize, node: &Node) -> QuantError {
    QuantError::UnsupportedOp {
        node: id,
        op: node.op.mnemonic(),
    }
}

fn structure(msg: impl Into<String>) -> QuantError {
    QuantError::Structure(msg.into())
}

fn dims(node: &Node) -> Result<Vec<usize>, QuantError> {
    node.shape
        .static_dims()
        .ok_or_else(|| structure(format!("{} has a symbolic shape", node.op.mnemonic())))
}

fn geometry(
    window: &Window,
    c: usize,
    h: usize,
    w: usize,
    out_c: usize,
    k: [usize; 2],
) -> Result<Geometry, QuantError> {
    if window.stride.len() != 2 || window.dilation.iter().any(|&d| d != 1) {
        return Err(structure("only 2-d windows without dilation are supported"));
    }
    let g = Geometry {
        in_h: h,
        in_w: w,
        in_c: c,
        out_c,
        k_h: k[0],
        k_w: k[1],
        stride_h: window.stride[0],
        stride_w: window.stride[1],
        pads: [
            window.padding[0].0,
            window.padding[0].1,
            window.padding[1].0,
            window.padding[1].1,
        ],
    };
    g.to_cortexm()
        .validate()
        .map_err(|e| structure(format!("window: {e}")))?;
    Ok(g)
}

impl Importer<'_> {
    /// The values of a param input, checked against its node's element count.
    fn param(&self, id: NodeId) -> Result<(Vec<usize>, &[f32]), QuantError> {
        let node = self.graph.node(id);
        let Op::Param { name } = &node.op else {
            return Err(structure(format!(
                "weights must be params, found {}",
                node.op.mnemonic()
            )));
        };
        let d = dims(node)?;
        let v = self
            .params
            .get(name)
            .ok_or_else(|| structure(format!("no value for param {name:?}")))?;
        if v.len() != d.iter().product::<usize>() {
            return Err(structure(format!(
                "param {name:?} has {} values, its shape {d:?} needs {}",
                v.len(),
                d.iter().product::<usize>()
            )));
        }
        Ok((d, v))
    }

    fn image(&self) -> Result<(usize, usize, usize), QuantError> {
        match self.act {
            Act::Image { c, h, w } => Ok((c, h, w)),
            Act::Flat { .. } => Err(structure("a spatial op after the flatten")),
        }
    }

    fn push(&mut self, layer: FloatLayer, act: Act, affine: bool) {
        self.layers.push(layer);
        self.act = act;
        self.open_affine = affine;
    }

    fn conv(
        &mut self,
        id: usize,
        node: &Node,
        window: &Window,
        groups: usize,
    ) -> Result<(), QuantError> {
        let (c, h, w) = self.image()?;
        let (wd, wv) = self.param(node.inputs[1])?;
        let (o, cg, kh, kw) = (wd[0], wd[1], wd[2], wd[3]);
        let bias = match node.inputs.get(2) {
            Some(&b) => self.param(b)?.1.to_vec(),
            None => vec![0.0; o],
        };
        let g = geometry(window, c, h, w, o, [kh, kw])?;
        let act = Act::Image {
            c: o,
            h: g.out_h(),
            w: g.out_w(),
        };
        let layer = if groups == 1 {
            // OIHW -> OHWI.
            let mut weights = vec![0.0; wv.len()];
            for oc in 0..o {
                for ic in 0..cg {
                    for y in 0..kh {
                        for x in 0..kw {
                            weights[((oc * kh + y) * kw + x) * cg + ic] =
                                wv[((oc * cg + ic) * kh + y) * kw + x];
                        }
                    }
                }
            }
            FloatLayer::Conv2d {
                geometry: g,
                weights,
                bias,
                relu: false,
            }
        } else if groups == c && cg == 1 && o % c == 0 {
            // [O, 1, KH, KW] -> [KH][KW][O].
            let mut weights = vec![0.0; wv.len()];
            for oc in 0..o {
                for y in 0..kh {
                    for x in 0..kw {
                        weights[(y * kw + x) * o + oc] = wv[(oc * kh + y) * kw + x];
                    }
                }
            }
            FloatLayer::DepthwiseConv2d {
                geometry: g,
                depth_multiplier: o / c,
                weights,
                bias,
                relu: false,
            }
        } else {
            return Err(unsupported(id, node));
        };
        self.push(layer, act, node.inputs.len() == 2);
        Ok(())
    }

    fn dense(&mut self, id: usize, node: &Node) -> Result<(), QuantError> {
        let Act::Flat { len, from } = self.act else {
            return Err(unsupported(id, node));
        };
        let (wd, wv) = self.param(node.inputs[1])?;
        if wd.len() != 2 || wd[0] != len {
            return Err(structure(format!(
                "matmul weight {wd:?} does not take {len} inputs"
            )));
        }
        let units = wd[1];
        // Row j of the int8 layer reads NHWC position j; the graph's weight
        // row is the NCHW position of the same value.
        let nchw_of = |j: usize| match from {
            Some((c, h, w)) => {
                let (pix, ch) = (j / c, j % c);
                ch * h * w + pix
            }
            None => j,
        };
        let mut weights = vec![0.0; wv.len()];
        for u in 0..units {
            for j in 0..len {
                weights[u * len + j] = wv[nchw_of(j) * units + u];
            }
        }
        self.push(
            FloatLayer::Dense {
                depth: len,
                units,
                weights,
                bias: vec![0.0; units],
                relu: false,
            },
            Act::Flat {
                len: units,
                from: None,
            },
            true,
        );
        Ok(())
    }

    fn bias_add(&mut self, id: usize, node: &Node, other: NodeId) -> Result<(), QuantError> {
        let (_, values) = self.param(other)?;
        let values = values.to_vec();
        let open = self.open_affine;
        match self.layers.last_mut() {
            Some(
                FloatLayer::Conv2d {
                    bias, relu: false, ..
                }
                | FloatLayer::DepthwiseConv2d {
                    bias, relu: false, ..
                }
                | FloatLayer::Dense {
                    bias, relu: false, ..
                },
            ) if open && bias.len() == values.len() => {
                *bias = values;
                self.open_affine = false;
                Ok(())
            }
            _ => Err(unsupported(id, node)),
        }
    }

    fn relu(&mut self) {
        if let Some(
            FloatLayer::Conv2d { relu, .. }
            | FloatLayer::DepthwiseConv2d { relu, .. }
            | FloatLayer::Dense { relu, .. },
        ) = self.layers.last_mut()
        {
            if !*relu {
                *relu = true;
                self.open_affine = false;
                return;
            }
        }
        let len = self.layers.last().map_or(0, FloatLayer::output_len);
        self.layers.push(FloatLayer::Relu { len });
        self.open_affine = false;
    }

    fn step(&mut self, id: usize, node: &Node) -> Result<(), QuantError> {
        if self.argmax {
            return Err(structure("ops after the arg-max"));
        }
        let pos = node.inputs.iter().position(|&i| i == self.cur);
        let Some(pos) = pos else {
            return Err(structure(format!(
                "node {id} ({}) does not read the activation chain",
                node.op.mnemonic()
            )));
        };
        match &node.op {
            Op::Conv { window, groups } if pos == 0 => self.conv(id, node, window, *groups)?,
            Op::MatMul if pos == 0 => self.dense(id, node)?,
            Op::Binary(BinaryOp::Add) => self.bias_add(id, node, node.inputs[1 - pos])?,
            Op::Unary(UnaryOp::Relu) => self.relu(),
            Op::Pool {
                kind,
                window,
                count_include_pad,
            } => {
                let (c, h, w) = self.image()?;
                let pads = window.padding.iter().any(|p| p.0 + p.1 > 0);
                if *kind == PoolKind::Avg && *count_include_pad && pads {
                    return Err(unsupported(id, node));
                }
                let k = [window.kernel[0], window.kernel[1]];
                let g = geometry(window, c, h, w, c, k)?;
                let act = Act::Image {
                    c,
                    h: g.out_h(),
                    w: g.out_w(),
                };
                let layer = match kind {
                    PoolKind::Max => FloatLayer::MaxPool { geometry: g },
                    PoolKind::Avg => FloatLayer::AvgPool { geometry: g },
                };
                self.push(layer, act, false);
            }
            Op::Reshape => {
                let d = dims(node)?;
                let (c, h, w) = self.image()?;
                if d.len() != 2 || d[1] != c * h * w {
                    return Err(unsupported(id, node));
                }
                self.act = Act::Flat {
                    len: d[1],
                    from: Some((c, h, w)),
                };
            }
            Op::Softmax { axis } => {
                let d = dims(node)?;
                if *axis != d.len() - 1 {
                    return Err(unsupported(id, node));
                }
                let len = self.layers.last().map_or(0, FloatLayer::output_len);
                self.layers.push(FloatLayer::Softmax {
                    len,
                    classes: d[d.len() - 1],
                });
                self.open_affine = false;
            }
            Op::ArgReduce {
                op: ArgReduceOp::ArgMax,
                axis,
                ..
            } if *axis == dims(self.graph.node(self.cur))?.len() - 1 => self.argmax = true,
            _ => return Err(unsupported(id, node)),
        }
        self.cur = NodeId(id as u32);
        Ok(())
    }
}

/// The float layer list of `graph` with `params` (values by param name).
/// The graph's one input is `[N, C, H, W]` (or `[N, K]` for a dense-only
/// network); the model takes one NHWC image.
pub fn float_model_from_graph(
    graph: &Graph,
    params: &HashMap<String, Vec<f32>>,
) -> Result<FloatModel, QuantError> {
    let inputs = graph.inputs();
    let [(input, _, shape)] = inputs.as_slice() else {
        return Err(structure(format!(
            "expected one graph input, found {}",
            inputs.len()
        )));
    };
    let d = shape
        .static_dims()
        .ok_or_else(|| structure("the input shape is symbolic"))?;
    let (act, input_shape) = match d.as_slice() {
        [_, c, h, w] => (
            Act::Image {
                c: *c,
                h: *h,
                w: *w,
            },
            [*h, *w, *c],
        ),
        [_, k] => (
            Act::Flat {
                len: *k,
                from: None,
            },
            [1, 1, *k],
        ),
        _ => {
            return Err(structure(format!(
                "input shape {d:?} is neither [N, C, H, W] nor [N, K]"
            )))
        }
    };
    let mut im = Importer {
        graph,
        params,
        layers: Vec::new(),
        act,
        cur: *input,
        open_affine: false,
        argmax: false,
    };
    for (id, node) in graph.nodes().iter().enumerate() {
        if node.op.is_leaf() {
            continue;
        }
        im.step(id, node)?;
    }
    if graph.outputs() != [im.cur] {
        return Err(structure(
            "the graph's one output must be the end of the layer chain",
        ));
    }
    if im.layers.is_empty() {
        return Err(structure("the graph has no layers"));
    }
    Ok(FloatModel {
        name: graph.name().to_string(),
        input_shape,
        layers: im.layers,
        argmax: im.argmax,
    })
}
