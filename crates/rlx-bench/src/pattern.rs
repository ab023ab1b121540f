//! The workload description.

use rlx_ir::Graph;

/// A benchmark failure.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Building the training graph failed.
    #[error("pattern {pattern}: autodiff: {message}")]
    Autodiff {
        /// The pattern.
        pattern: String,
        /// What went wrong.
        message: String,
    },
    /// Compiling, setting a parameter or running failed.
    #[error("pattern {pattern}: runtime: {source}")]
    Runtime {
        /// The pattern.
        pattern: String,
        /// The runtime's error.
        #[source]
        source: Box<rlx_runtime::RuntimeError>,
    },
    /// An input or output tensor does not have the pattern's dims / dtype.
    #[error("pattern {pattern}: {message}")]
    Input {
        /// The pattern.
        pattern: String,
        /// What went wrong.
        message: String,
    },
    /// The reference process could not be run or its output not read.
    #[error("reference for {pattern}: {message}")]
    Reference {
        /// The pattern.
        pattern: String,
        /// What went wrong.
        message: String,
    },
}

/// A named workload to time.
#[derive(Clone, Debug)]
pub struct BenchmarkPattern {
    /// Name, also the pattern id `tools/bench_ref.py` knows (when it has a reference).
    pub name: String,
    /// Floating-point operations of one iteration (matmul multiply-adds count 2),
    /// 0 where not meaningful.
    pub flops: f64,
    /// The graph one iteration runs (for a training step: the loss graph).
    pub graph: Graph,
    /// Parameter values by name (all f32).
    pub params: Vec<(String, Vec<f32>)>,
    /// Input values by name (all f32).
    pub inputs: Vec<(String, Vec<f32>)>,
    /// `Some(lr)`: a training step. The graph is differentiated with
    /// `grad_with_loss` for every parameter and `p - lr * grad` of each is
    /// bound as that parameter's next value, so each iteration runs the
    /// whole step (forward, backward, update in place) and returns the loss.
    pub sgd: Option<f32>,
}
