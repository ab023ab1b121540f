//! [`Pass`] and [`CompilePipeline`]: an ordered list of graph -> graph
//! passes, each verified after it runs (always in debug builds, on request
//! in release), with a record of what each pass did.

use crate::{verified, CompileError};
use rlx_ir::{op_histogram, Graph};

/// One graph -> graph rewrite. Passes never mutate their input.
pub trait Pass {
    /// A short name for reports and errors (`"cse"`, `"simplify"`, ...).
    fn name(&self) -> &str;
    /// Rewrites `g`.
    fn run(&self, g: &Graph) -> Result<Graph, CompileError>;
}

impl<P: Pass + ?Sized> Pass for &P {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn run(&self, g: &Graph) -> Result<Graph, CompileError> {
        (**self).run(g)
    }
}

/// A [`Pass`] made from a name and a function.
pub struct FnPass<F> {
    name: String,
    f: F,
}

impl<F: Fn(&Graph) -> Result<Graph, CompileError>> FnPass<F> {
    /// Wraps `f` as a pass called `name`.
    pub fn new(name: impl Into<String>, f: F) -> Self {
        FnPass {
            name: name.into(),
            f,
        }
    }
}

impl<F: Fn(&Graph) -> Result<Graph, CompileError>> Pass for FnPass<F> {
    fn name(&self) -> &str {
        &self.name
    }
    fn run(&self, g: &Graph) -> Result<Graph, CompileError> {
        (self.f)(g)
    }
}

/// What one pass did.
#[derive(Clone, Debug, PartialEq)]
pub struct PassRecord {
    /// The pass.
    pub pass: String,
    /// Node count before.
    pub nodes_before: usize,
    /// Node count after.
    pub nodes_after: usize,
    /// The graph after the pass, when the pipeline keeps stages.
    pub graph: Option<Graph>,
}

impl PassRecord {
    /// True when the pass changed the graph's node count or ops.
    pub fn changed_size(&self) -> bool {
        self.nodes_before != self.nodes_after
    }
}

/// The result of [`CompilePipeline::run`]: the final graph and one record per pass.
#[derive(Clone, Debug, PartialEq)]
pub struct CompileResult {
    /// The graph after every pass.
    pub graph: Graph,
    /// One record per pass, in order.
    pub records: Vec<PassRecord>,
}

impl CompileResult {
    /// A text report: one line per pass with the node counts, then the final op histogram.
    pub fn report(&self) -> String {
        let mut s = String::new();
        for r in &self.records {
            s.push_str(&format!(
                "{:<12} {:>6} -> {:>6} nodes\n",
                r.pass, r.nodes_before, r.nodes_after
            ));
        }
        for (op, count) in op_histogram(&self.graph) {
            s.push_str(&format!("  {op:?}: {count}\n"));
        }
        s
    }
}

/// An ordered list of passes.
///
/// ```
/// use rlx_compile::{CompilePipeline, passes};
/// use rlx_ir::{DType, Graph, GraphExt, Shape};
///
/// let mut g = Graph::new("g");
/// let x = g.input("x", Shape::new(&[4], DType::F32));
/// let a = g.exp(x);
/// let b = g.exp(x); // same value as `a`
/// let y = g.add(a, b);
/// g.set_outputs(vec![y]);
/// let result = CompilePipeline::new()
///     .with_fn("cse", passes::cse::cse)
///     .with_fn("dce", passes::dce::dce)
///     .run(&g)
///     .unwrap();
/// assert_eq!(result.graph.len(), 3); // x, one exp, add
/// ```
#[derive(Default)]
pub struct CompilePipeline<'a> {
    passes: Vec<Box<dyn Pass + 'a>>,
    verify_each: bool,
    keep_stages: bool,
}

impl<'a> CompilePipeline<'a> {
    /// An empty pipeline.
    pub fn new() -> Self {
        CompilePipeline {
            passes: Vec::new(),
            verify_each: cfg!(debug_assertions),
            keep_stages: false,
        }
    }

    /// Appends a pass.
    pub fn with(mut self, pass: impl Pass + 'a) -> Self {
        self.passes.push(Box::new(pass));
        self
    }

    /// Appends a function as a pass.
    pub fn with_fn(
        self,
        name: &str,
        f: impl Fn(&Graph) -> Result<Graph, CompileError> + 'a,
    ) -> Self {
        self.with(FnPass::new(name, f))
    }

    /// Appends a boxed pass.
    pub fn push(&mut self, pass: Box<dyn Pass + 'a>) {
        self.passes.push(pass);
    }

    /// Verifies the graph after every pass (the default in debug builds).
    pub fn verify_each(mut self, on: bool) -> Self {
        self.verify_each = on;
        self
    }

    /// Keeps a copy of the graph after every pass in the records.
    pub fn keep_stages(mut self, on: bool) -> Self {
        self.keep_stages = on;
        self
    }

    /// The pass names, in order.
    pub fn pass_names(&self) -> Vec<String> {
        self.passes.iter().map(|p| p.name().to_string()).collect()
    }

    /// Runs every pass in order.
    pub fn run(&self, g: &Graph) -> Result<CompileResult, CompileError> {
        let mut graph = g.clone();
        let mut records = Vec::with_capacity(self.passes.len());
        for pass in &self.passes {
            let next = pass.run(&graph)?;
            if self.verify_each {
                verified(&next).map_err(|e| match e {
                    CompileError::Verify { graph, errors } => CompileError::Verify {
                        graph: format!("{graph} (after pass {})", pass.name()),
                        errors,
                    },
                    other => other,
                })?;
            }
            records.push(PassRecord {
                pass: pass.name().to_string(),
                nodes_before: graph.len(),
                nodes_after: next.len(),
                graph: self.keep_stages.then(|| next.clone()),
            });
            graph = next;
        }
        Ok(CompileResult { graph, records })
    }
}
