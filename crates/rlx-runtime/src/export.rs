//! Hardware export (feature `fpga`): [`ExportSession`] writes a quantized
//! model (or a trained graph, quantized on the way) as SystemVerilog with
//! `rlx-fpga`, and returns what it wrote as [`ExportedArtifacts`].
//!
//! ```no_run
//! use rlx_runtime::export::{tinyconv_mnist_from_cortexm, ExportSession, FpgaError, HwTarget};
//!
//! let arts = ExportSession::fpga("hw/out")
//!     .hw_target(HwTarget::Generic)
//!     .export_model(&tinyconv_mnist_from_cortexm())?;
//! println!("{} cycles per inference", arts.latency_cycles);
//! # Ok::<(), FpgaError>(())
//! ```

pub use rlx_fpga::{
    tinyconv_mnist_from_cortexm, ExportedArtifacts, FpgaError, FpgaExportConfig, HwTarget,
    IoConfig, QuantizedModel,
};
use rlx_ir::Graph;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where an export goes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExportTarget {
    /// SystemVerilog + `.mem` files (+ testbench, vendor script) in `dir`.
    Fpga {
        /// Output directory (created if missing).
        dir: PathBuf,
    },
}

/// An export's target and the generator's options.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportOptions {
    /// Where the files go.
    pub target: ExportTarget,
    /// RTL generator options.
    pub fpga: FpgaExportConfig,
}

impl ExportOptions {
    /// FPGA export into `dir` with default options.
    pub fn fpga(dir: impl AsRef<Path>) -> Self {
        ExportOptions {
            target: ExportTarget::Fpga {
                dir: dir.as_ref().to_path_buf(),
            },
            fpga: FpgaExportConfig::default(),
        }
    }

    fn dir(&self) -> &Path {
        match &self.target {
            ExportTarget::Fpga { dir } => dir,
        }
    }
}

/// Builder for one export.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportSession {
    options: ExportOptions,
}

impl ExportSession {
    /// A session with explicit options.
    pub fn new(options: ExportOptions) -> Self {
        ExportSession { options }
    }

    /// FPGA export into `dir`.
    pub fn fpga(dir: impl AsRef<Path>) -> Self {
        Self::new(ExportOptions::fpga(dir))
    }

    /// Device family (vendor script and default memory capacity).
    pub fn hw_target(mut self, target: HwTarget) -> Self {
        self.options.fpga.hw_target = target;
        self
    }

    /// I/O interface, port names, sideband.
    pub fn io(mut self, io: IoConfig) -> Self {
        self.options.fpga.io = io;
        self
    }

    /// Replaces all generator options.
    pub fn config(mut self, config: FpgaExportConfig) -> Self {
        self.options.fpga = config;
        self
    }

    /// Quantized images for the generated testbench.
    pub fn testbench_images(mut self, images: Vec<Vec<i8>>) -> Self {
        self.options.fpga.testbench_images = images;
        self
    }

    /// The options in force.
    pub fn options(&self) -> &ExportOptions {
        &self.options
    }

    /// Exports a quantized model.
    pub fn export_model(&self, model: &QuantizedModel) -> Result<ExportedArtifacts, FpgaError> {
        rlx_fpga::emit_with_config(model, &self.options.fpga, self.options.dir())
    }

    /// Quantizes a trained graph on `calibration` images and exports it.
    pub fn export_graph(
        &self,
        graph: &Graph,
        params: &HashMap<String, Vec<f32>>,
        calibration: &[Vec<f32>],
    ) -> Result<ExportedArtifacts, FpgaError> {
        export_graph(graph, params, calibration, &self.options)
    }
}

/// Quantizes a trained graph (see `rlx_fpga::export_graph`) and exports it
/// as `options` say.
pub fn export_graph(
    graph: &Graph,
    params: &HashMap<String, Vec<f32>>,
    calibration: &[Vec<f32>],
    options: &ExportOptions,
) -> Result<ExportedArtifacts, FpgaError> {
    rlx_fpga::export_graph(graph, params, calibration, &options.fpga, options.dir())
}

/// Exports the quantized digits CNN of the Cortex-M firmware into `dir`
/// (generic RTL) with a testbench over its 64 first held-out images.
pub fn export_tinyconv_mnist(dir: impl AsRef<Path>) -> Result<ExportedArtifacts, FpgaError> {
    let images = rlx_quant_int8::tinyconv_test_set().images;
    ExportSession::fpga(dir)
        .testbench_images(images.into_iter().take(64).collect())
        .export_model(&rlx_fpga::tinyconv_mnist_from_cortexm())
}
