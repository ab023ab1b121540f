//! Device divergence: one graph run on several backends, the largest
//! difference of each output against the first backend's.

use rlx_compile::LowerOptions;
use rlx_driver::{Backend, BackendError, Device};
use rlx_ir::{Graph, HostTensor};
use std::fmt;
use std::sync::Arc;

/// How far one output of one device is from the reference device's.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputDivergence {
    /// Manifest output index.
    pub output: usize,
    /// Largest `|x - ref|`.
    pub max_abs: f64,
    /// Largest `|x - ref| / max(|ref|, 1e-30)` over the elements.
    pub max_rel: f64,
    /// Largest `|x - ref| / (atol + rtol * |ref|)` for the tolerances given:
    /// at most 1 means within tolerance.
    pub worst_ratio: f64,
}

/// Each device's outputs against the reference device's.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceDivergence {
    /// The device every other one is compared with.
    pub reference: Device,
    /// Per other device: its divergence per output.
    pub devices: Vec<(Device, Vec<OutputDivergence>)>,
}

impl DeviceDivergence {
    /// The largest tolerance ratio over every device and output (0 when
    /// there was only the reference).
    pub fn worst_ratio(&self) -> f64 {
        self.devices
            .iter()
            .flat_map(|(_, o)| o.iter().map(|d| d.worst_ratio))
            .fold(0.0, f64::max)
    }
}

impl fmt::Display for DeviceDivergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "device divergence vs {}:", self.reference)?;
        for (d, outs) in &self.devices {
            for o in outs {
                writeln!(
                    f,
                    "  {d} output {}: max abs {:.3e}, max rel {:.3e}, worst / tolerance {:.3}",
                    o.output, o.max_abs, o.max_rel, o.worst_ratio
                )?;
            }
        }
        Ok(())
    }
}

/// Compiles `graph` for each of `backends` (the first is the reference),
/// sets `params` and runs `inputs` (both by name), and reports the largest
/// difference of every output against the reference's, with the ratio to
/// the tolerance `atol + rtol * |ref|`. A backend that fails to compile or
/// run is an error naming its device.
pub fn device_divergence(
    graph: &Graph,
    params: &[(&str, &HostTensor)],
    inputs: &[(&str, &HostTensor)],
    backends: &[Arc<dyn Backend>],
    (atol, rtol): (f64, f64),
) -> Result<DeviceDivergence, DivergenceError> {
    let Some(reference) = backends.first() else {
        return Err(DivergenceError::NoBackends);
    };
    let ref_out = run_on(graph, params, inputs, reference.as_ref())?;
    let mut devices = Vec::new();
    for b in &backends[1..] {
        let outs = run_on(graph, params, inputs, b.as_ref())?;
        let per = ref_out
            .iter()
            .zip(&outs)
            .enumerate()
            .map(|(output, (r, x))| compare(output, r, x, atol, rtol))
            .collect();
        devices.push((b.device(), per));
    }
    Ok(DeviceDivergence {
        reference: reference.device(),
        devices,
    })
}

/// Why a divergence report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum DivergenceError {
    /// No backend was given.
    #[error("no backends to compare")]
    NoBackends,
    /// Compiling for a device failed.
    #[error("compiling for {device}: {source}")]
    Compile {
        /// The device.
        device: Device,
        /// The compiler's error.
        #[source]
        source: rlx_compile::CompileError,
    },
    /// Running on a device failed.
    #[error("running on {device}: {source}")]
    Run {
        /// The device.
        device: Device,
        /// The backend's error.
        #[source]
        source: BackendError,
    },
    /// A param or input the graph needs was not given.
    #[error("{what} \"{name}\" was not given")]
    Missing {
        /// `param` or `input`.
        what: &'static str,
        /// Its name.
        name: String,
    },
}

fn run_on(
    graph: &Graph,
    params: &[(&str, &HostTensor)],
    inputs: &[(&str, &HostTensor)],
    backend: &dyn Backend,
) -> Result<Vec<HostTensor>, DivergenceError> {
    let device = backend.device();
    let opts = LowerOptions {
        layout: backend.layout(),
        ..LowerOptions::default()
    };
    let lir = rlx_compile::lower(graph, &|op| backend.claims(op), &opts)
        .map_err(|source| DivergenceError::Compile { device, source })?;
    let find = |list: &[(&str, &HostTensor)], what, name: &str| {
        list.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| (*t).clone())
            .ok_or_else(|| DivergenceError::Missing {
                what,
                name: name.to_string(),
            })
    };
    let param_values: Vec<HostTensor> = lir
        .io
        .params
        .iter()
        .map(|(_, name, _)| find(params, "param", name))
        .collect::<Result<_, _>>()?;
    let input_values: Vec<HostTensor> = lir
        .io
        .inputs
        .iter()
        .map(|(_, name, _)| find(inputs, "input", name))
        .collect::<Result<_, _>>()?;
    let run = |source| DivergenceError::Run { device, source };
    let mut exe = backend.compile(lir).map_err(run)?;
    for (i, p) in param_values.iter().enumerate() {
        exe.set_param(i, p).map_err(run)?;
    }
    let refs: Vec<&HostTensor> = input_values.iter().collect();
    exe.run(&refs).map_err(run)
}

fn compare(
    output: usize,
    r: &HostTensor,
    x: &HostTensor,
    atol: f64,
    rtol: f64,
) -> OutputDivergence {
    let (r, x) = (r.to_f64_lossy(), x.to_f64_lossy());
    let mut d = OutputDivergence {
        output,
        max_abs: if r.len() == x.len() {
            0.0
        } else {
            f64::INFINITY
        },
        max_rel: 0.0,
        worst_ratio: if r.len() == x.len() {
            0.0
        } else {
            f64::INFINITY
        },
    };
    for (a, b) in r.iter().zip(&x) {
        let same = a == b || (a.is_nan() && b.is_nan());
        let diff = if same { 0.0 } else { (a - b).abs() };
        let diff = if diff.is_nan() { f64::INFINITY } else { diff };
        d.max_abs = d.max_abs.max(diff);
        d.max_rel = d.max_rel.max(diff / a.abs().max(1e-30));
        d.worst_ratio = d.worst_ratio.max(diff / (atol + rtol * a.abs()));
    }
    d
}
