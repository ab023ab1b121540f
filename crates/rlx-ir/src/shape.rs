//! Dimensions (static or symbolic) and shapes (dims + dtype).

use crate::DType;
use std::collections::HashMap;
use std::fmt;

/// One dimension: a static size, or a named symbol bound before memory planning
/// (a dynamic batch or sequence length).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    /// A known size.
    Static(usize),
    /// A named size, bound later (see [`crate::Graph::bind_dims`]).
    Sym(String),
}

impl Dim {
    /// A named symbolic dimension.
    pub fn sym(name: impl Into<String>) -> Dim {
        Dim::Sym(name.into())
    }

    /// The size if static.
    pub fn as_static(&self) -> Option<usize> {
        match self {
            Dim::Static(n) => Some(*n),
            Dim::Sym(_) => None,
        }
    }

    /// Replaces a bound symbol by its size.
    pub fn bind(&self, bindings: &HashMap<String, usize>) -> Dim {
        match self {
            Dim::Sym(s) => bindings
                .get(s)
                .map_or_else(|| self.clone(), |&n| Dim::Static(n)),
            d => d.clone(),
        }
    }
}

impl From<usize> for Dim {
    fn from(n: usize) -> Dim {
        Dim::Static(n)
    }
}

impl From<&str> for Dim {
    fn from(s: &str) -> Dim {
        Dim::Sym(s.to_string())
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Static(n) => write!(f, "{n}"),
            Dim::Sym(s) => write!(f, "{s}"),
        }
    }
}

/// The type of a value: its dims and its dtype.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    dims: Vec<Dim>,
    dtype: DType,
}

impl Shape {
    /// A static shape.
    pub fn new(dims: &[usize], dtype: DType) -> Shape {
        Shape {
            dims: dims.iter().map(|&d| Dim::Static(d)).collect(),
            dtype,
        }
    }

    /// A shape with possibly symbolic dims.
    pub fn from_dims(dims: Vec<Dim>, dtype: DType) -> Shape {
        Shape { dims, dtype }
    }

    /// A rank-0 shape.
    pub fn scalar(dtype: DType) -> Shape {
        Shape {
            dims: Vec::new(),
            dtype,
        }
    }

    /// The dims.
    pub fn dims(&self) -> &[Dim] {
        &self.dims
    }

    /// The dtype.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Number of dims.
    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// The same dims with another dtype.
    pub fn with_dtype(&self, dtype: DType) -> Shape {
        Shape {
            dims: self.dims.clone(),
            dtype,
        }
    }

    /// The same dtype with other dims.
    pub fn with_dims(&self, dims: Vec<Dim>) -> Shape {
        Shape {
            dims,
            dtype: self.dtype,
        }
    }

    /// All dims as sizes, if every dim is static.
    pub fn static_dims(&self) -> Option<Vec<usize>> {
        self.dims.iter().map(Dim::as_static).collect()
    }

    /// True when no dim is symbolic.
    pub fn is_static(&self) -> bool {
        self.dims.iter().all(|d| matches!(d, Dim::Static(_)))
    }

    /// Element count if static.
    pub fn numel(&self) -> Option<usize> {
        self.static_dims().map(|d| d.iter().product())
    }

    /// Byte size if static.
    pub fn size_bytes(&self) -> Option<usize> {
        self.numel().map(|n| n * self.dtype.size_bytes())
    }

    /// Dim `i` as a static size, if it is one.
    pub fn dim(&self, i: usize) -> Option<usize> {
        self.dims.get(i).and_then(Dim::as_static)
    }

    /// Substitutes bound symbols.
    pub fn bind(&self, bindings: &HashMap<String, usize>) -> Shape {
        Shape {
            dims: self.dims.iter().map(|d| d.bind(bindings)).collect(),
            dtype: self.dtype,
        }
    }

    /// Symbols that appear in the dims.
    pub fn symbols(&self) -> impl Iterator<Item = &str> {
        self.dims.iter().filter_map(|d| match d {
            Dim::Sym(s) => Some(s.as_str()),
            Dim::Static(_) => None,
        })
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[", self.dtype)?;
        for (i, d) in self.dims.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

/// Row-major strides (in elements) of static dims.
pub fn contiguous_strides(dims: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * dims[i + 1];
    }
    strides
}
