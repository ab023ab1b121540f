//! Shape values over symbolic dims. `Shape` of a tensor with a dynamic
//! batch / sequence dim yields a *symbolic shape value*: a 0-d or 1-d
//! integer tensor whose entries are sizes or dim symbols. Shape plumbing
//! ops (Gather, Slice, Squeeze, Unsqueeze, Concat, Cast, Identity) carry it
//! on the host; Reshape, Expand, ConstantOfShape and Range consume it as
//! symbolic dims. Anything else on a symbolic value needs the dims bound.

use super::{node_label, Value};
use crate::proto::NodeProto;
use crate::tensor::to_i64s;
use crate::{OnnxError, Result};
use rlx_ir::{Dim, Graph};

/// One entry of a shape value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum SymInt {
    /// A known integer.
    Int(i64),
    /// A dim symbol.
    Sym(String),
}

impl SymInt {
    /// As an IR dim (`None` for a negative integer).
    pub fn dim(&self) -> Option<Dim> {
        match self {
            SymInt::Int(v) if *v >= 0 => Some(Dim::Static(*v as usize)),
            SymInt::Int(_) => None,
            SymInt::Sym(s) => Some(Dim::sym(s.clone())),
        }
    }
}

/// A shape value: its entries and whether it is 0-d.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SymShape {
    pub items: Vec<SymInt>,
    pub scalar: bool,
}

/// Ops that carry shape values.
const PLUMBING: &[&str] = &[
    "Shape",
    "Gather",
    "Slice",
    "Squeeze",
    "Unsqueeze",
    "Concat",
    "Cast",
    "Identity",
];

/// Ops that consume a shape value as dims (the input index).
pub(crate) const CONSUMERS: &[(&str, usize)] = &[
    ("Reshape", 1),
    ("Expand", 1),
    ("ConstantOfShape", 0),
    ("Range", 1),
    ("Slice", 2),
];

/// The shape value of an input: symbolic, or a small constant integer tensor.
pub(crate) fn shape_value(v: &Value) -> Option<SymShape> {
    if let Some(s) = &v.sym {
        return Some((**s).clone());
    }
    let t = v.konst.as_ref()?;
    if t.dims().len() > 1 || !(t.dtype().is_int()) {
        return None;
    }
    Some(SymShape {
        items: to_i64s(t).into_iter().map(SymInt::Int).collect(),
        scalar: t.dims().is_empty(),
    })
}

fn ints(v: &Option<Value>) -> Option<Vec<i64>> {
    v.as_ref()?.konst.as_ref().map(|t| to_i64s(t))
}

/// Evaluates a plumbing op on shape values when one of its inputs is
/// symbolic (or `Shape` of symbolic dims). `None`: not a symbolic case.
pub(crate) fn eval(
    g: &Graph,
    n: &NodeProto,
    index: usize,
    ins: &[Option<Value>],
) -> Result<Option<SymShape>> {
    let op = n.op_type.as_deref().unwrap_or_default();
    let err = |reason: String| OnnxError::Node {
        node: node_label(n, index),
        op_type: op.to_string(),
        reason,
    };
    let attr_i = |name: &str| {
        n.attribute
            .iter()
            .find(|a| a.name.as_deref() == Some(name))
            .and_then(|a| a.i)
    };
    if op == "Shape" {
        let Some(x) = ins.first().cloned().flatten() else {
            return Ok(None);
        };
        let s = g.shape(x.node);
        if s.is_static() {
            return Ok(None);
        }
        let r = s.rank() as i64;
        let clamp = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
        let (a, b) = (
            clamp(attr_i("start").unwrap_or(0)),
            clamp(attr_i("end").unwrap_or(r)),
        );
        let items = s.dims()[a..b.max(a)]
            .iter()
            .map(|d| match d {
                Dim::Static(v) => SymInt::Int(*v as i64),
                Dim::Sym(name) => SymInt::Sym(name.clone()),
            })
            .collect();
        return Ok(Some(SymShape {
            items,
            scalar: false,
        }));
    }
    if !PLUMBING.contains(&op) || !ins.iter().flatten().any(|v| v.sym.is_some()) {
        return Ok(None);
    }
    let first = ins.first().cloned().flatten().and_then(|v| shape_value(&v));
    let Some(x) = first else {
        if op == "Slice" {
            return Ok(None); // a data tensor sliced to a symbolic end
        }
        let s = ins
            .iter()
            .flatten()
            .find_map(|v| v.sym.clone())
            .expect("a symbolic input");
        return Err(needs_binding(n, index, &s));
    };
    let out = match op {
        "Identity" | "Cast" => x,
        "Gather" => {
            let idx = ins.get(1).cloned().flatten();
            let t = idx
                .as_ref()
                .and_then(|v| v.konst.clone())
                .ok_or_else(|| err("run-time indices into a shape".into()))?;
            let n = x.items.len() as i64;
            let pick = |i: i64| {
                x.items
                    .get((if i < 0 { i + n } else { i }) as usize)
                    .cloned()
            };
            let items = to_i64s(&t)
                .into_iter()
                .map(pick)
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| err("index out of range".into()))?;
            SymShape {
                items,
                scalar: t.dims().is_empty(),
            }
        }
        "Slice" => {
            let (starts, ends) = (
                ints(&ins[1]).unwrap_or_default(),
                ints(&ins[2]).unwrap_or_default(),
            );
            let steps = ins.get(4).and_then(ints).unwrap_or_else(|| vec![1]);
            let n = x.items.len();
            let (first, len) = rlx_ir::python_slice(n, starts[0], ends[0], steps[0]);
            let items = (0..len)
                .map(|i| x.items[(first as i64 + i as i64 * steps[0]) as usize].clone())
                .collect();
            SymShape {
                items,
                scalar: false,
            }
        }
        "Unsqueeze" => SymShape {
            items: x.items,
            scalar: false,
        },
        "Squeeze" if x.items.len() == 1 => SymShape {
            items: x.items,
            scalar: true,
        },
        "Concat" => {
            let mut items = Vec::new();
            for v in ins.iter().flatten() {
                let s = shape_value(v)
                    .ok_or_else(|| err("concatenating a run-time value with a shape".into()))?;
                items.extend(s.items);
            }
            SymShape {
                items,
                scalar: false,
            }
        }
        _ => {
            return Err(err(
                "unsupported use of a symbolic shape value; bind the dims".into(),
            ))
        }
    };
    Ok(Some(out))
}

/// The error for a symbolic shape value reaching an op that needs numbers.
pub(crate) fn needs_binding(n: &NodeProto, index: usize, s: &SymShape) -> OnnxError {
    let syms: Vec<&str> = s
        .items
        .iter()
        .filter_map(|i| match i {
            SymInt::Sym(s) => Some(s.as_str()),
            SymInt::Int(_) => None,
        })
        .collect();
    OnnxError::Node {
        node: node_label(n, index),
        op_type: n.op_type.clone().unwrap_or_default(),
        reason: format!("computes on the symbolic dims {syms:?}; bind them (OnnxOptions::bind_dim) or run with concrete inputs"),
    }
}
