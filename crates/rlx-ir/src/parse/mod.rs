//! The textual-IR parser: reads back exactly what [`Graph`]'s printer
//! writes (see `display.rs`), so graphs can live in golden files and pass
//! tests can be written as text.
//!
//! Blank lines and `#` comment lines before and after the graph are skipped
//! (so the output of [`crate::inspect_mir`], the text plus its statistics,
//! parses too).
//!
//! The text of [`Graph::to_text`] (or `format!("{g:#}")`) always parses back
//! to a graph that prints the same. The default `Display` elides constants
//! of more than 8 elements as `constant<N bytes>`; such a text does not
//! carry the data, so parsing it is an error that says so. In the full text
//! a constant is written either as its value list `constant [1, 2.5]`
//! (only when the list reproduces its bytes exactly) or as the lowercase hex
//! of its little-endian bytes, `constant hex"0000803f"`.
//!
//! ```
//! use rlx_ir::{DType, Graph, GraphExt, Shape};
//! let mut g = Graph::new("ex");
//! let x = g.input("x", Shape::new(&[2, 3], DType::F32));
//! let y = g.mul(x, g.constant(2.0, DType::F32));
//! let s = g.sum(y, &[-1], false);
//! g.set_outputs(vec![s]);
//! let back = Graph::from_text(&g.to_text()).unwrap();
//! assert_eq!(back.to_text(), g.to_text());
//! ```

mod cursor;
mod op;

use crate::{verify_all, DType, Dim, Graph, IrError, NodeId, Op, Shape};
use cursor::Cursor;
use op::{ParsedOp, SubGraphs};
use std::sync::Arc;
use thiserror::Error;

/// Sub-graphs nest at most this deep (a guard against hostile texts
/// overflowing the stack).
const MAX_NESTING: usize = 64;

/// Why a text is not a graph; every variant says where (1-based line and
/// column, in characters).
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ParseError {
    /// The text does not follow the grammar here.
    #[error("line {line}, column {column}: expected {expected}, found {found}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the grammar allows here.
        expected: String,
        /// What the text has instead.
        found: String,
    },
    /// The text is well-formed but the node (or the graph) it describes is
    /// not valid: a dangling id, a shape that differs from inference, a
    /// duplicate input name, an op given the wrong inputs.
    #[error("line {line}, column {column}: {error}")]
    Invalid {
        /// 1-based line of the node.
        line: usize,
        /// 1-based column of the node.
        column: usize,
        /// What the IR builder or verifier rejected.
        error: IrError,
    },
}

impl ParseError {
    /// The 1-based line of the error.
    pub fn line(&self) -> usize {
        match self {
            ParseError::Syntax { line, .. } | ParseError::Invalid { line, .. } => *line,
        }
    }

    /// The 1-based column of the error.
    pub fn column(&self) -> usize {
        match self {
            ParseError::Syntax { column, .. } | ParseError::Invalid { column, .. } => *column,
        }
    }
}

/// Parses the textual IR of one graph: the text [`Graph::to_text`] (or
/// `format!("{g:#}")`) writes, blank and `#` comment lines around it skipped.
/// A text whose large constants were elided (`constant<N bytes>`, the
/// default `Display`) does not carry their data and is an error.
pub fn parse_graph(text: &str) -> Result<Graph, ParseError> {
    let mut c = Cursor::new(text);
    c.skip_blank_and_comments();
    let g = graph(&mut c, 0)?;
    if !c.skip_blank_and_comments() {
        return Err(c.error("end of input after the graph's `}`"));
    }
    Ok(g)
}

impl Graph {
    /// Parses the textual IR (see [`parse_graph`]).
    pub fn from_text(text: &str) -> Result<Graph, ParseError> {
        parse_graph(text)
    }
}

impl std::str::FromStr for Graph {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Graph, ParseError> {
        parse_graph(s)
    }
}

/// Converts an IR error at byte `at` into a [`ParseError`].
fn invalid(c: &Cursor, at: usize, error: IrError) -> ParseError {
    match c.error_at(at, "") {
        ParseError::Syntax { line, column, .. } => ParseError::Invalid {
            line,
            column,
            error,
        },
        e => e,
    }
}

/// `graph "name" {` NL node* `return` ids NL `}`
fn graph(c: &mut Cursor, depth: usize) -> Result<Graph, ParseError> {
    if depth > MAX_NESTING {
        return Err(c.error(format!("at most {MAX_NESTING} levels of nested sub-graphs")));
    }
    c.expect("graph")?;
    let name = c.string("the graph's name")?;
    c.expect("{")?;
    c.newline()?;
    let mut g = Graph::new(name);
    loop {
        c.skip_spaces();
        if c.eat("return") {
            break;
        }
        node(c, &mut g, depth)?;
    }
    let at = c.pos();
    let outputs = id_list(c, g.len(), "return")?;
    c.newline()?;
    c.expect("}")?;
    g.set_outputs(outputs);
    if let Some(e) = verify_all(&g).into_iter().next() {
        let what = e
            .node
            .map_or_else(|| g.name().to_string(), |n| n.to_string());
        return Err(invalid(c, at, IrError::invalid(what, e.message)));
    }
    Ok(g)
}

/// `%a, %b, ...` (possibly none), each below `len`; `reader` names the
/// node (or `return`) in errors.
fn id_list(c: &mut Cursor, len: usize, reader: &str) -> Result<Vec<NodeId>, ParseError> {
    let mut ids = Vec::new();
    if c.peek() != Some('%') {
        return Ok(ids);
    }
    loop {
        let at = c.pos();
        let id = node_ref(c)?;
        if id.index() >= len {
            let error = IrError::DanglingInput {
                node: reader.into(),
                input: id.to_string(),
                len,
            };
            return Err(invalid(c, at, error));
        }
        ids.push(id);
        if !c.eat(",") {
            return Ok(ids);
        }
    }
}

/// `%N`
fn node_ref(c: &mut Cursor) -> Result<NodeId, ParseError> {
    c.expect("%")?;
    let at = c.pos();
    let n = c.usize("a node id")?;
    u32::try_from(n)
        .map(NodeId)
        .map_err(|_| c.error_at(at, "a node id below 2^32"))
}

/// `%N = rhs inputs : shape [# name]` NL, then the sub-graphs of a control op.
fn node(c: &mut Cursor, g: &mut Graph, depth: usize) -> Result<(), ParseError> {
    let at = c.pos();
    let id = node_ref(c)?;
    if id.index() != g.len() {
        return Err(c.error_at(at, format!("`%{}` (ids count up from %0)", g.len())));
    }
    c.expect("=")?;
    let op_at = c.pos();
    let parsed = op::op(c)?;
    let inputs = id_list(c, g.len(), &format!("%{}", g.len()))?;
    c.expect(":")?;
    let shape = shape(c)?;
    let name = node_name(c)?;
    c.newline()?;
    let op = match parsed {
        ParsedOp::Ready(op) => op,
        ParsedOp::Constant(value) => Op::Constant {
            bytes: value.into_bytes(c, op_at, &shape)?.into(),
        },
        ParsedOp::Control(header) => {
            let subs = sub_graphs(c, &header, depth)?;
            header.build(subs)
        }
    };
    if op.is_leaf() && !inputs.is_empty() {
        let error = IrError::invalid(op.mnemonic(), "a leaf takes no inputs");
        return Err(invalid(c, op_at, error));
    }
    let built = match op {
        Op::Input { name } => g.try_input(&name, shape),
        Op::Param { name } => g.try_param(&name, shape),
        Op::Constant { bytes } => g.try_constant_bytes(bytes, shape),
        op => g.try_node(op, &inputs, Some(shape)),
    };
    let new = built.map_err(|e| invalid(c, op_at, e))?;
    if let Some(name) = name {
        g.set_name(new, name);
    }
    Ok(())
}

/// The sub-graphs a control op's header announces, each on lines
/// `role: graph ... }` right after the node's line.
fn sub_graphs(
    c: &mut Cursor,
    header: &op::ControlHeader,
    depth: usize,
) -> Result<SubGraphs, ParseError> {
    let mut out = Vec::new();
    for role in header.roles() {
        c.expect(role)?;
        c.expect(":")?;
        out.push(Arc::new(graph(c, depth + 1)?));
        c.newline()?;
    }
    Ok(out)
}

/// `  # name` or `  # "escaped name"` (see `display::name_text`).
fn node_name(c: &mut Cursor) -> Result<Option<String>, ParseError> {
    if !c.eat("#") {
        return Ok(None);
    }
    if !c.eat_raw(' ') {
        return Err(c.error("a space after `#`"));
    }
    if c.peek() == Some('"') {
        return c.string("the node's name").map(Some);
    }
    Ok(Some(c.rest_of_line().to_string()))
}

/// `dtype[d0,d1,...]`, each dim a size or a symbol.
pub(crate) fn shape(c: &mut Cursor) -> Result<Shape, ParseError> {
    let at = c.pos();
    let dt = c.word("a dtype")?;
    let dtype = DType::ALL
        .into_iter()
        .find(|d| d.short_name() == dt)
        .ok_or_else(|| {
            let names: Vec<&str> = DType::ALL.iter().map(|d| d.short_name()).collect();
            c.error_at(at, format!("a dtype (one of {})", names.join(", ")))
        })?;
    let dims = c.list(|c| {
        c.skip_spaces();
        if c.peek().is_some_and(|ch| ch.is_ascii_digit()) {
            c.usize("a dim").map(Dim::Static)
        } else {
            c.word("a dim (a size or a symbol)")
                .map(|s| Dim::Sym(s.to_string()))
        }
    })?;
    let shape = Shape::from_dims(dims, dtype);
    // Hostile sizes must not overflow later element counts.
    let mut sizes = shape.dims().iter().filter_map(Dim::as_static);
    let bytes = sizes.try_fold(dtype.size_bytes(), |acc, d| acc.checked_mul(d));
    if bytes.is_none_or(|b| b > isize::MAX as usize) {
        return Err(c.error_at(at, "a shape whose byte size fits in memory"));
    }
    Ok(shape)
}
