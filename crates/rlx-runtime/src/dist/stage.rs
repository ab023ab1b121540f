//! Pipeline stages: a [`StageSpec`] (textual IR + weight references +
//! compile options + its neighbours), shipped with [`ship_stage`], received
//! with [`recv_stage`], compiled into a [`WorkerStage`] and served with
//! [`serve_stage`] / [`serve_stage_uri`].

use super::activation::{recv_activation, send_activation, send_stop};
use super::error::{DistError, DistResult};
use super::weights::{uri_resolver, Resolver, WeightCache, WeightRef};
use super::wire::{expect_frame, send_frame, Kind, Reader, Writer, CH_CONTROL};
use crate::{CompileOptions, CompiledGraph, Device, Session};
use rlx_collectives::ProcessGroup;
use rlx_ir::{Graph, HostTensor};
use std::sync::Arc;

/// Largest graph text accepted in a spec (64 MiB).
pub const MAX_GRAPH_TEXT: usize = 64 << 20;

/// One pipeline stage as it travels to a worker.
#[derive(Debug, Clone, PartialEq)]
pub struct StageSpec {
    /// The stage's graph in RLX's textual IR (`Graph::to_text`).
    pub graph_text: String,
    /// A value for every param of the graph.
    pub weights: Vec<(String, WeightRef)>,
    /// CPU threads to compile for (`None`: all).
    pub threads: Option<usize>,
    /// The rank activations come from.
    pub prev: usize,
    /// The rank the outputs go to.
    pub next: usize,
}

impl StageSpec {
    /// A stage running `graph` between ranks `prev` and `next`.
    pub fn new(graph: &Graph, weights: Vec<(String, WeightRef)>, prev: usize, next: usize) -> Self {
        StageSpec {
            graph_text: graph.to_text(),
            weights,
            threads: None,
            prev,
            next,
        }
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.str(&self.graph_text)
            .u64(self.threads.map_or(0, |t| t as u64))
            .u64(self.prev as u64)
            .u64(self.next as u64)
            .u64(self.weights.len() as u64);
        for (name, wr) in &self.weights {
            w.str(name);
            wr.write(&mut w);
        }
        w.0
    }

    pub(crate) fn decode(peer: usize, body: &[u8]) -> DistResult<Self> {
        let mut r = Reader::new(peer, body);
        let graph_text = r.str()?;
        if graph_text.len() > MAX_GRAPH_TEXT {
            return Err(DistError::TooLarge {
                what: "stage graph text".into(),
                len: graph_text.len() as u64,
                max: MAX_GRAPH_TEXT as u64,
            });
        }
        let threads = match r.usize()? {
            0 => None,
            t => Some(t),
        };
        let (prev, next) = (r.usize()?, r.usize()?);
        let n = r.usize()?;
        let weights = (0..n)
            .map(|_| Ok((r.str()?, WeightRef::read(&mut r)?)))
            .collect::<DistResult<Vec<_>>>()?;
        r.finish()?;
        Ok(StageSpec {
            graph_text,
            weights,
            threads,
            prev,
            next,
        })
    }
}

/// Parses a spec's graph and checks its weights name exactly its params.
pub(crate) fn parse_graph(text: &str, weights: &[(String, WeightRef)]) -> DistResult<Graph> {
    let g = Graph::from_text(text).map_err(|e| DistError::graph("parsing the shipped graph", e))?;
    let params: Vec<String> = g.params().iter().map(|(_, n, _)| n.to_string()).collect();
    for p in &params {
        if !weights.iter().any(|(n, _)| n == p) {
            return Err(DistError::InvalidSpec(format!("no weight for param {p:?}")));
        }
    }
    for (n, _) in weights {
        if !params.contains(n) {
            return Err(DistError::InvalidSpec(format!(
                "weight {n:?} is not a param of the graph"
            )));
        }
    }
    Ok(g)
}

/// Compiles `g` on the CPU with `threads` and sets its params.
pub(crate) fn compile_with_weights(
    g: Graph,
    threads: Option<usize>,
    weights: &[(String, WeightRef)],
    resolve: &Resolver,
) -> DistResult<CompiledGraph> {
    let opts = CompileOptions::default().threads(threads);
    let mut c = Session::new(Device::Cpu)
        .try_compile_with(g, &opts)
        .map_err(|e| DistError::graph("compiling the shipped graph", e))?;
    for (name, w) in weights {
        let t = resolve(w)?;
        c.set_param_typed(name, &t)
            .map_err(|e| DistError::graph(format!("setting param {name:?}"), e))?;
    }
    Ok(c)
}

/// Sends `spec` to rank `dst` (which runs [`recv_stage`] or [`serve_stage`]).
pub fn ship_stage(pg: &dyn ProcessGroup, dst: usize, spec: &StageSpec) -> DistResult<()> {
    send_frame(pg, dst, CH_CONTROL, Kind::Stage, &spec.encode())
}

/// Receives a stage spec from rank `src`.
pub fn recv_stage(pg: &dyn ProcessGroup, src: usize) -> DistResult<StageSpec> {
    let body = expect_frame(pg, src, CH_CONTROL, Kind::Stage)?;
    StageSpec::decode(src, &body)
}

/// A received stage, compiled on the CPU with its weights set.
pub struct WorkerStage {
    spec: StageSpec,
    compiled: CompiledGraph,
    inputs: Vec<String>,
}

impl WorkerStage {
    /// Parses, checks and compiles `spec`, resolving its weights with `resolve`.
    pub fn build(spec: StageSpec, resolve: &Resolver) -> DistResult<Self> {
        let g = parse_graph(&spec.graph_text, &spec.weights)?;
        let compiled = compile_with_weights(g, spec.threads, &spec.weights, resolve)?;
        let inputs = compiled.input_names();
        Ok(WorkerStage {
            spec,
            compiled,
            inputs,
        })
    }

    /// The spec this stage was built from.
    pub fn spec(&self) -> &StageSpec {
        &self.spec
    }

    /// Runs the stage on one activation (its inputs in graph order).
    pub fn run(&mut self, inputs: &[HostTensor]) -> DistResult<Vec<HostTensor>> {
        if inputs.len() != self.inputs.len() {
            return Err(DistError::InvalidSpec(format!(
                "the stage takes {} inputs ({:?}), the activation has {}",
                self.inputs.len(),
                self.inputs,
                inputs.len()
            )));
        }
        let named: Vec<(&str, &HostTensor)> =
            self.inputs.iter().map(|s| s.as_str()).zip(inputs).collect();
        self.compiled
            .try_run_typed(&named)
            .map_err(|e| DistError::graph("running the stage", e))
    }

    /// Serves activations: receive from `prev`, run, send to `next`, until
    /// the stop frame (forwarded to `next`). Returns how many it ran.
    pub fn serve(&mut self, pg: &dyn ProcessGroup) -> DistResult<usize> {
        let mut served = 0;
        while let Some(x) = recv_activation(pg, self.spec.prev)? {
            let y = self.run(&x)?;
            send_activation(pg, self.spec.next, &y)?;
            served += 1;
        }
        send_stop(pg, self.spec.next)?;
        Ok(served)
    }
}

/// Receives one stage from `coordinator`, compiles it and serves it until
/// the stop frame; returns the number of activations run.
pub fn serve_stage(
    pg: &dyn ProcessGroup,
    coordinator: usize,
    resolve: &Resolver,
) -> DistResult<usize> {
    let spec = recv_stage(pg, coordinator)?;
    WorkerStage::build(spec, resolve)?.serve(pg)
}

/// [`serve_stage`] resolving weights with [`uri_resolver`] over a fresh cache.
pub fn serve_stage_uri(pg: &dyn ProcessGroup, coordinator: usize) -> DistResult<usize> {
    serve_stage(
        pg,
        coordinator,
        &*uri_resolver(Arc::new(WeightCache::new())),
    )
}
