//! [`TrainSpec`] / [`DataRef`]: what a data-parallel training run needs,
//! and how it travels ([`ship_train`] / [`recv_train`]).

use super::error::{DistError, DistResult};
use super::stage::MAX_GRAPH_TEXT;
use super::weights::WeightRef;
use super::wire::{expect_frame, send_frame, Kind, Reader, Writer, CH_CONTROL};
use rlx_collectives::{ProcessGroup, ReduceMode};
use rlx_ir::Graph;

/// The training data: inputs `x` and targets `y`, one row per sample
/// (axis 0), as weight references (inline values or `file://` URIs).
#[derive(Debug, Clone, PartialEq)]
pub struct DataRef {
    /// The samples, `[n, ...]`.
    pub x: WeightRef,
    /// The targets, `[n, ...]`.
    pub y: WeightRef,
}

/// The optimizer every rank applies to the all-reduced gradients.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OptimSpec {
    /// `torch.optim.SGD` with momentum.
    Sgd {
        /// Learning rate.
        lr: f64,
        /// Momentum factor.
        momentum: f64,
    },
    /// `torch.optim.Adam` with default betas.
    Adam {
        /// Learning rate.
        lr: f64,
    },
}

/// A data-parallel training run.
///
/// Every step takes the next global batch of `micro_batch * micro_batches`
/// rows of the data (wrapping around); rank `r` of `w` computes the
/// gradients of micro-batches `r * m/w .. (r+1) * m/w` (`m = micro_batches`,
/// which `w` must divide). The loss graph's first output is the mean loss
/// of one micro-batch (inputs `x`, `y`), so the mean of the micro-batch
/// gradients is the gradient of the global batch's mean loss.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainSpec {
    /// The loss graph in textual IR.
    pub graph_text: String,
    /// Initial values of every param (all are trained).
    pub params: Vec<(String, WeightRef)>,
    /// The data set.
    pub data: DataRef,
    /// Rows per micro-batch (the loss graph's batch size).
    pub micro_batch: usize,
    /// Micro-batches per global batch.
    pub micro_batches: usize,
    /// Optimizer steps.
    pub steps: usize,
    /// The optimizer.
    pub optimizer: OptimSpec,
    /// How gradients are summed across ranks.
    pub mode: ReduceMode,
    /// CPU threads per rank (`None`: all).
    pub threads: Option<usize>,
}

impl TrainSpec {
    /// A spec for `loss_graph` with the given initial params and data.
    pub fn new(loss_graph: &Graph, params: Vec<(String, WeightRef)>, data: DataRef) -> Self {
        TrainSpec {
            graph_text: loss_graph.to_text(),
            params,
            data,
            micro_batch: 1,
            micro_batches: 1,
            steps: 1,
            optimizer: OptimSpec::Sgd {
                lr: 0.1,
                momentum: 0.0,
            },
            mode: ReduceMode::Deterministic,
            threads: None,
        }
    }

    /// The global batch size.
    pub fn global_batch(&self) -> usize {
        self.micro_batch * self.micro_batches
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.str(&self.graph_text).u64(self.params.len() as u64);
        for (n, r) in &self.params {
            w.str(n);
            r.write(&mut w);
        }
        self.data.x.write(&mut w);
        self.data.y.write(&mut w);
        w.u64(self.micro_batch as u64)
            .u64(self.micro_batches as u64)
            .u64(self.steps as u64);
        match self.optimizer {
            OptimSpec::Sgd { lr, momentum } => w.u64(0).f64(lr).f64(momentum),
            OptimSpec::Adam { lr } => w.u64(1).f64(lr).f64(0.0),
        };
        w.u64(match self.mode {
            ReduceMode::Ring => 0,
            ReduceMode::Deterministic => 1,
        })
        .u64(self.threads.map_or(0, |t| t as u64));
        w.0
    }

    pub(crate) fn decode(peer: usize, body: &[u8]) -> DistResult<Self> {
        let mut r = Reader::new(peer, body);
        let graph_text = r.str()?;
        if graph_text.len() > MAX_GRAPH_TEXT {
            return Err(DistError::TooLarge {
                what: "training graph text".into(),
                len: graph_text.len() as u64,
                max: MAX_GRAPH_TEXT as u64,
            });
        }
        let n = r.usize()?;
        let params = (0..n)
            .map(|_| Ok((r.str()?, WeightRef::read(&mut r)?)))
            .collect::<DistResult<Vec<_>>>()?;
        let data = DataRef {
            x: WeightRef::read(&mut r)?,
            y: WeightRef::read(&mut r)?,
        };
        let (micro_batch, micro_batches, steps) = (r.usize()?, r.usize()?, r.usize()?);
        let kind = r.u64()?;
        let (a, b) = (r.f64()?, r.f64()?);
        let optimizer = match kind {
            0 => OptimSpec::Sgd { lr: a, momentum: b },
            1 => OptimSpec::Adam { lr: a },
            k => {
                return Err(DistError::InvalidSpec(format!(
                    "unknown optimizer kind {k}"
                )))
            }
        };
        let mode = match r.u64()? {
            0 => ReduceMode::Ring,
            1 => ReduceMode::Deterministic,
            m => return Err(DistError::InvalidSpec(format!("unknown reduce mode {m}"))),
        };
        let threads = match r.usize()? {
            0 => None,
            t => Some(t),
        };
        r.finish()?;
        Ok(TrainSpec {
            graph_text,
            params,
            data,
            micro_batch,
            micro_batches,
            steps,
            optimizer,
            mode,
            threads,
        })
    }
}

/// Sends a training spec to rank `dst`.
pub fn ship_train(pg: &dyn ProcessGroup, dst: usize, spec: &TrainSpec) -> DistResult<()> {
    send_frame(pg, dst, CH_CONTROL, Kind::Train, &spec.encode())
}

/// Receives a training spec from rank `src`.
pub fn recv_train(pg: &dyn ProcessGroup, src: usize) -> DistResult<TrainSpec> {
    let body = expect_frame(pg, src, CH_CONTROL, Kind::Train)?;
    TrainSpec::decode(src, &body)
}
