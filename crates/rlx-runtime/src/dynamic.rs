//! [`DynamicGraph`]: a graph with symbolic dims (`batch`, `seq`, ...) that
//! runs on inputs of any size. The graph-level passes (precision, decompose,
//! simplify, constant folding, CSE, DCE) run once, on the symbolic graph.
//! Each run reads the symbol sizes off its inputs; the first run of a
//! binding binds the optimised graph, fuses it (fusion decides on concrete
//! sizes), plans its memory and builds its executable; later runs of the
//! same binding reuse that plan from a small MRU cache.

use crate::{CompileOptions, CompiledGraph, Precision, Result, RuntimeError, Session};
use rlx_compile::OptimizedGraph;
use rlx_compile::PrecisionPolicy;
use rlx_compile::{FusionOptions, LowerOptions};
use rlx_ir::{Dim, Graph, HostTensor, Shape};
use std::collections::{BTreeMap, HashMap};

/// Bindings cached by default (MRU; the least recently used is dropped).
pub const DEFAULT_PLAN_CACHE: usize = 8;

/// A compiled-per-binding graph; see the module docs.
///
/// ```
/// use rlx_runtime::{CompileOptions, Session};
/// use rlx_driver::Device;
/// use rlx_ir::{DType, Dim, Graph, GraphExt, HostTensor, Shape};
///
/// let mut g = Graph::new("scale");
/// let x = g.input("x", Shape::from_dims(vec![Dim::sym("n")], DType::F32));
/// let y = g.mul(x, g.constant(2.0, DType::F32));
/// g.set_outputs(vec![y]);
/// let mut d = Session::new(Device::Cpu)
///     .compile_dynamic(g, &CompileOptions::default())
///     .unwrap();
/// for n in [2, 5, 2] {
///     let x = HostTensor::from_vec(vec![1.0f32; n], &[n]).unwrap();
///     let out = d.run_typed(&[("x", &x)]).unwrap();
///     assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![2.0; n]);
/// }
/// assert_eq!(d.compile_count(), 2); // n = 2 once, n = 5 once
/// ```
#[derive(Debug)]
pub struct DynamicGraph {
    session: Session,
    graph: Graph,
    optimized: OptimizedGraph,
    opts: CompileOptions,
    /// (binding, compiled), most recently used last.
    cache: Vec<(BTreeMap<String, usize>, CompiledGraph)>,
    capacity: usize,
    params: BTreeMap<String, HostTensor>,
    compiles: usize,
}

impl Session {
    /// Prepares `graph`, whose inputs may have symbolic dims, to run on
    /// inputs of any size (see [`DynamicGraph`]). `opts.lower.bindings` fix
    /// symbols up front. Every symbol must be fixed or appear in an input.
    pub fn compile_dynamic(&self, graph: Graph, opts: &CompileOptions) -> Result<DynamicGraph> {
        let mut from_inputs: Vec<&str> = Vec::new();
        for (_, _, shape) in graph.inputs() {
            from_inputs.extend(shape.symbols());
        }
        for id in graph.ids() {
            for sym in graph.node(id).shape.symbols() {
                if !from_inputs.contains(&sym) && !opts.lower.bindings.contains_key(sym) {
                    return Err(RuntimeError::UnboundDim {
                        symbol: sym.to_string(),
                    });
                }
            }
        }
        let mut once = opts.clone();
        once.lower.fusion = FusionOptions::disabled();
        let optimized = self.optimize(&graph, &once)?;
        Ok(DynamicGraph {
            session: self.clone(),
            optimized,
            graph,
            opts: opts.clone(),
            cache: Vec::new(),
            capacity: DEFAULT_PLAN_CACHE,
            params: BTreeMap::new(),
            compiles: 0,
        })
    }
}

impl DynamicGraph {
    /// How many bindings stay compiled (at least 1).
    pub fn with_cache_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity.max(1);
        self.cache.truncate(self.capacity);
        self
    }

    /// The symbolic graph as given.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// The symbolic graph after the graph-level passes (run once).
    pub fn optimized(&self) -> &Graph {
        &self.optimized.graph
    }

    /// How many plans were built (one per new binding, plus re-plans of
    /// bindings that fell out of the cache); the graph-level passes ran once
    /// regardless.
    pub fn compile_count(&self) -> usize {
        self.compiles
    }

    /// The bindings compiled now, least recently used first.
    pub fn cached_bindings(&self) -> Vec<BTreeMap<String, usize>> {
        self.cache.iter().map(|(b, _)| b.clone()).collect()
    }

    /// The compiled plans with their bindings, least recently used first
    /// (for inspection: `lir()` of each shows its fusion and memory plan).
    pub fn cached(&self) -> impl Iterator<Item = (&BTreeMap<String, usize>, &CompiledGraph)> {
        self.cache.iter().map(|(b, c)| (b, c))
    }

    /// Sets a param of any dtype; its dims must fit the param's shape (a
    /// symbolic dim of a param is bound by the value). On error nothing
    /// changes, in the cache either.
    pub fn set_param_typed(&mut self, name: &str, value: &HostTensor) -> Result<()> {
        let params = self.graph.params();
        let (_, _, shape) =
            params
                .iter()
                .find(|p| p.1 == name)
                .ok_or_else(|| RuntimeError::UnknownParam {
                    name: name.to_string(),
                    known: params.iter().map(|p| p.1.to_string()).collect(),
                })?;
        check_fits(&format!("param \"{name}\""), shape, value)?;
        for (_, compiled) in &mut self.cache {
            compiled.set_param_typed(name, value)?;
        }
        self.params.insert(name.to_string(), value.clone());
        Ok(())
    }

    /// The symbol sizes `inputs` imply (plus the fixed ones), or an error
    /// naming the input whose dims do not fit.
    pub fn binding_for(&self, inputs: &[(&str, &HostTensor)]) -> Result<BTreeMap<String, usize>> {
        let mut binding: BTreeMap<String, usize> = self
            .opts
            .lower
            .bindings
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        let mut bound_by: HashMap<String, String> = binding
            .keys()
            .map(|k| (k.clone(), "CompileOptions::bind_dim".to_string()))
            .collect();
        let declared = self.graph.inputs();
        for (name, value) in inputs {
            let Some((_, _, shape)) = declared.iter().find(|i| i.1 == *name) else {
                return Err(RuntimeError::UnknownInput {
                    name: name.to_string(),
                    known: declared.iter().map(|i| i.1.to_string()).collect(),
                });
            };
            let what = format!("input \"{name}\"");
            check_fits(&what, shape, value)?;
            for (dim, &size) in shape.dims().iter().zip(value.dims()) {
                let Dim::Sym(sym) = dim else { continue };
                match binding.get(sym) {
                    Some(&first) if first != size => {
                        return Err(RuntimeError::DimConflict {
                            symbol: sym.clone(),
                            first,
                            first_from: bound_by[sym].clone(),
                            second: size,
                            second_from: what,
                        })
                    }
                    Some(_) => {}
                    None => {
                        binding.insert(sym.clone(), size);
                        bound_by.insert(sym.clone(), what.clone());
                    }
                }
            }
        }
        Ok(binding)
    }

    /// Runs on named typed inputs, compiling for their binding on first use.
    pub fn run_typed(&mut self, inputs: &[(&str, &HostTensor)]) -> Result<Vec<HostTensor>> {
        let binding = self.binding_for(inputs)?;
        let slot = match self.cache.iter().position(|(b, _)| *b == binding) {
            Some(i) => {
                let hit = self.cache.remove(i);
                self.cache.push(hit);
                self.cache.len() - 1
            }
            None => {
                let compiled = self.compile(&binding)?;
                if self.cache.len() == self.capacity {
                    self.cache.remove(0);
                }
                self.cache.push((binding, compiled));
                self.cache.len() - 1
            }
        };
        self.cache[slot].1.try_run_typed(inputs)
    }

    fn compile(&mut self, binding: &BTreeMap<String, usize>) -> Result<CompiledGraph> {
        let bindings: HashMap<String, usize> =
            binding.iter().map(|(k, &v)| (k.clone(), v)).collect();
        let bound = self.optimized.graph.bind_dims(&bindings)?;
        // What ran once is not repeated: only fusion and the plan are per binding.
        // Control-flow bodies were not optimised: they get the session's options.
        let session = self.opts.clone().with_env_overlay()?.lower_options();
        let mut per_binding = self.opts.clone();
        per_binding.lower = LowerOptions {
            precision: Precision::F32,
            precision_policy: PrecisionPolicy::AlwaysF32,
            simplify: false,
            cse: false,
            fold_constants: false,
            bindings: HashMap::new(),
            ..per_binding.lower
        }
        .with_subgraphs_of(&session);
        let mut compiled = self.session.try_compile_with(bound, &per_binding)?;
        for (name, value) in &self.params {
            compiled.set_param_typed(name, value)?;
        }
        self.compiles += 1;
        Ok(compiled)
    }
}

/// `value` has `shape`'s dtype and rank and equals it on every static dim.
fn check_fits(what: &str, shape: &Shape, value: &HostTensor) -> Result<()> {
    if value.dtype() != shape.dtype() {
        return Err(RuntimeError::DType {
            what: what.to_string(),
            shape: shape.clone(),
            expected: shape.dtype(),
            given: value.dtype(),
        });
    }
    let fits = value.dims().len() == shape.rank()
        && shape
            .dims()
            .iter()
            .zip(value.dims())
            .all(|(d, &n)| !matches!(d, Dim::Static(s) if *s != n));
    if fits {
        Ok(())
    } else {
        Err(RuntimeError::Shape {
            what: what.to_string(),
            expected: shape.clone(),
            given: value.dims().to_vec(),
        })
    }
}
