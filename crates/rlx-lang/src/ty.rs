//! Expansion-time types: dtypes and (possibly symbolic) dims, with the
//! same broadcasting / matmul / reshape rules as `rlx_ir`'s shape inference,
//! so a program that passes here builds without a run-time shape error.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use std::fmt;

/// The dtypes a program may declare (`rlx_ir::DType`'s compute dtypes).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DType {
    F32,
    F16,
    BF16,
    F64,
    I8,
    I16,
    I32,
    I64,
    U8,
    U32,
    Bool,
}

/// Source spelling and variant of each dtype.
const DTYPES: [(&str, DType, &str); 11] = [
    ("f32", DType::F32, "F32"),
    ("f16", DType::F16, "F16"),
    ("bf16", DType::BF16, "BF16"),
    ("f64", DType::F64, "F64"),
    ("i8", DType::I8, "I8"),
    ("i16", DType::I16, "I16"),
    ("i32", DType::I32, "I32"),
    ("i64", DType::I64, "I64"),
    ("u8", DType::U8, "U8"),
    ("u32", DType::U32, "U32"),
    ("bool", DType::Bool, "Bool"),
];

impl DType {
    /// The dtype spelled `name`, if any.
    pub fn parse(name: &str) -> Option<DType> {
        DTYPES.iter().find(|d| d.0 == name).map(|d| d.1)
    }

    /// The comma-separated list of accepted spellings.
    pub fn spellings() -> String {
        DTYPES.iter().map(|d| d.0).collect::<Vec<_>>().join(", ")
    }

    /// Floating point?
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16 | DType::BF16 | DType::F64)
    }

    /// `krate::DType::X`.
    pub fn tokens(self, krate: &TokenStream) -> TokenStream {
        let v = DTYPES.iter().find(|d| d.1 == self).expect("listed").2;
        let v = proc_macro2::Ident::new(v, Span::call_site());
        quote!(#krate::DType::#v)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(DTYPES.iter().find(|d| d.1 == *self).expect("listed").0)
    }
}

/// One dim: a number or a symbol bound at run time.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Dim {
    Static(usize),
    Sym(String),
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Static(n) => write!(f, "{n}"),
            Dim::Sym(s) => f.write_str(s),
        }
    }
}

impl Dim {
    /// `krate::Dim::..` construction.
    pub fn tokens(&self, krate: &TokenStream) -> TokenStream {
        match self {
            Dim::Static(n) => quote!(#krate::Dim::Static(#n)),
            Dim::Sym(s) => quote!(#krate::Dim::sym(#s)),
        }
    }
}

/// A tensor type: dtype and dims.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Ty {
    pub dtype: DType,
    pub dims: Vec<Dim>,
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.dtype, fmt_dims(&self.dims))
    }
}

/// `[B, 784]`
pub fn fmt_dims(dims: &[Dim]) -> String {
    let d: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    format!("[{}]", d.join(", "))
}

impl Ty {
    /// A type of `dtype` and `dims`.
    pub fn new(dtype: DType, dims: Vec<Dim>) -> Ty {
        Ty { dtype, dims }
    }

    /// Rank.
    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// `krate::Shape::from_dims(vec![..], dtype)`.
    pub fn tokens(&self, krate: &TokenStream) -> TokenStream {
        let dims = self.dims.iter().map(|d| d.tokens(krate));
        let dt = self.dtype.tokens(krate);
        quote!(#krate::Shape::from_dims(::std::vec![#(#dims),*], #dt))
    }

    /// Normalises a possibly negative axis; the message names the op.
    pub fn axis(&self, axis: i64, op: &str) -> Result<usize, String> {
        let r = self.rank() as i64;
        let a = if axis < 0 { axis + r } else { axis };
        if a < 0 || a >= r {
            return Err(format!(
                "{op}: axis {axis} is out of range for {self} (rank {r})"
            ));
        }
        Ok(a as usize)
    }
}

/// numpy broadcasting of two dim lists (a symbol matches only itself or 1).
pub fn broadcast(a: &[Dim], b: &[Dim]) -> Result<Vec<Dim>, String> {
    let rank = a.len().max(b.len());
    let mut out = Vec::with_capacity(rank);
    for i in 0..rank {
        let da = (i + a.len()).checked_sub(rank).map(|j| &a[j]);
        let db = (i + b.len()).checked_sub(rank).map(|j| &b[j]);
        let d = match (da, db) {
            (Some(x), None) | (None, Some(x)) => x.clone(),
            (Some(Dim::Static(1)), Some(d)) | (Some(d), Some(Dim::Static(1))) => d.clone(),
            (Some(x), Some(y)) if x == y => x.clone(),
            (Some(x), Some(y)) => {
                return Err(format!(
                    "cannot broadcast {} with {}: {x} vs {y} at axis {i} of the result",
                    fmt_dims(a),
                    fmt_dims(b)
                ))
            }
            (None, None) => unreachable!("i < rank"),
        };
        out.push(d);
    }
    Ok(out)
}

/// numpy `matmul` result dims (rank-1 operands as numpy promotes them).
pub fn matmul(a: &Ty, b: &Ty) -> Result<Ty, String> {
    if a.dtype != b.dtype {
        return Err(format!(
            "matmul operands have different dtypes: {a} vs {b} (cast one with astype)"
        ));
    }
    if a.dtype == DType::Bool {
        return Err(format!("matmul is not defined for {a}"));
    }
    if a.rank() == 0 || b.rank() == 0 {
        return Err(format!(
            "matmul needs operands of rank >= 1, given {a} and {b}"
        ));
    }
    let ad = if a.rank() == 1 {
        vec![Dim::Static(1), a.dims[0].clone()]
    } else {
        a.dims.clone()
    };
    let bd = if b.rank() == 1 {
        vec![b.dims[0].clone(), Dim::Static(1)]
    } else {
        b.dims.clone()
    };
    let (m, k1) = (&ad[ad.len() - 2], &ad[ad.len() - 1]);
    let (k2, n) = (&bd[bd.len() - 2], &bd[bd.len() - 1]);
    if k1 != k2 {
        return Err(format!(
            "matmul inner dims differ: lhs {a} has {k1}, rhs {b} has {k2}"
        ));
    }
    let mut out = broadcast(&ad[..ad.len() - 2], &bd[..bd.len() - 2])
        .map_err(|e| format!("matmul batch dims: {e}"))?;
    if a.rank() > 1 {
        out.push(m.clone());
    }
    if b.rank() > 1 {
        out.push(n.clone());
    }
    Ok(Ty::new(a.dtype, out))
}

/// Static product and sorted symbols of a dim list (its element count).
fn count(dims: &[Dim]) -> (usize, Vec<String>) {
    let mut prod = 1usize;
    let mut syms = Vec::new();
    for d in dims {
        match d {
            Dim::Static(n) => prod = prod.saturating_mul(*n),
            Dim::Sym(s) => syms.push(s.clone()),
        }
    }
    syms.sort();
    (prod, syms)
}

/// Reshape target with at most one `None` (numpy's `-1`) inferred.
pub fn reshape(x: &Ty, target: &[Option<Dim>]) -> Result<Ty, String> {
    let holes = target.iter().filter(|d| d.is_none()).count();
    if holes > 1 {
        return Err("reshape: at most one -1".into());
    }
    let known: Vec<Dim> = target.iter().flatten().cloned().collect();
    let (xp, xs) = count(&x.dims);
    let (kp, ks) = count(&known);
    let out: Vec<Dim> = if holes == 0 {
        if (xp, &xs) != (kp, &ks) {
            return Err(format!(
                "cannot reshape {x} to {}: element counts differ",
                fmt_dims(&known)
            ));
        }
        known
    } else {
        let mut rest = xs.clone();
        for s in &ks {
            match rest.iter().position(|r| r == s) {
                Some(i) => {
                    rest.remove(i);
                }
                None => return Err(format!("reshape {x}: symbol {s} is not in the input")),
            }
        }
        let fill = match rest.as_slice() {
            [] if kp != 0 && xp % kp == 0 => Dim::Static(xp / kp),
            [s] if kp == xp => Dim::Sym(s.clone()),
            _ => {
                return Err(format!(
                    "reshape: cannot infer the -1 reshaping {x} (the rest is not one static or symbolic dim)"
                ))
            }
        };
        target
            .iter()
            .map(|d| d.clone().unwrap_or_else(|| fill.clone()))
            .collect()
    };
    Ok(Ty::new(x.dtype, out))
}
