//! [`CompileOptions`]: the typed source of truth for how a graph compiles.

use rlx_compile::{LowerOptions, Precision};
use std::collections::HashMap;

/// How [`crate::Session::compile_with`] compiles a graph.
///
/// ```
/// use rlx_runtime::{CompileOptions, Precision};
/// let opts = CompileOptions::default().precision(Precision::F16).bind_dim("batch", 8);
/// assert_eq!(opts.precision, Precision::F16);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompileOptions {
    /// Session precision (F32 I/O either way).
    pub precision: Precision,
    /// Decompose every composite op into primitives even where the backend has a native kernel.
    pub decompose_composites: bool,
    /// Values for symbolic dims.
    pub dim_bindings: HashMap<String, usize>,
    /// Arena alignment in bytes (0 = 64).
    pub alignment: usize,
    /// Keep nodes no output depends on.
    pub keep_dead_code: bool,
}

impl CompileOptions {
    /// Sets the session precision.
    pub fn precision(mut self, p: Precision) -> Self {
        self.precision = p;
        self
    }

    /// Forces (or not) decomposition of every composite op.
    pub fn decompose_composites(mut self, on: bool) -> Self {
        self.decompose_composites = on;
        self
    }

    /// Binds a symbolic dim.
    pub fn bind_dim(mut self, name: &str, size: usize) -> Self {
        self.dim_bindings.insert(name.to_string(), size);
        self
    }

    /// Sets the arena alignment.
    pub fn alignment(mut self, bytes: usize) -> Self {
        self.alignment = bytes;
        self
    }

    pub(crate) fn lower_options(&self) -> LowerOptions {
        LowerOptions {
            precision: self.precision,
            decompose_composites: self.decompose_composites,
            bindings: self.dim_bindings.clone(),
            alignment: self.alignment,
            keep_dead_code: self.keep_dead_code,
        }
    }
}
