//! [`backend_divergence`]: the same graph on every available device (and
//! the CPU at every thread count choice) against a one-thread CPU run.

use super::error::{DistError, DistResult};
use crate::{available_devices, device_label, CompileOptions, Device, Session};
use rlx_ir::{Graph, HostTensor};

/// The largest differences of one run's outputs from the reference run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunDivergence {
    /// The device and configuration of the run.
    pub label: String,
    /// Per output: (largest absolute difference, largest relative difference).
    pub per_output: Vec<(f64, f64)>,
}

/// [`backend_divergence`]'s answer.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendDivergence {
    /// The reference run's label (the CPU on one thread).
    pub reference: String,
    /// Every other run, against the reference.
    pub runs: Vec<RunDivergence>,
}

impl BackendDivergence {
    /// The largest absolute difference over all runs and outputs.
    pub fn max_abs(&self) -> f64 {
        self.runs
            .iter()
            .flat_map(|r| r.per_output.iter().map(|p| p.0))
            .fold(0.0, f64::max)
    }
    /// The largest relative difference over all runs and outputs.
    pub fn max_rel(&self) -> f64 {
        self.runs
            .iter()
            .flat_map(|r| r.per_output.iter().map(|p| p.1))
            .fold(0.0, f64::max)
    }
}

fn run(
    g: &Graph,
    device: Device,
    threads: Option<usize>,
    inputs: &[(&str, &HostTensor)],
) -> DistResult<Vec<HostTensor>> {
    let label = device_label(device);
    let mut c = Session::new(device)
        .try_compile_with(g.clone(), &CompileOptions::default().threads(threads))
        .map_err(|e| DistError::graph(format!("compiling on {label}"), e))?;
    c.try_run_typed(inputs)
        .map_err(|e| DistError::graph(format!("running on {label}"), e))
}

/// Per output: (largest absolute, largest relative) difference of `got` from `want`.
pub(crate) fn compare(want: &[HostTensor], got: &[HostTensor]) -> Vec<(f64, f64)> {
    want.iter()
        .zip(got)
        .map(|(a, b)| {
            let (a, b) = (a.to_f64_lossy(), b.to_f64_lossy());
            a.iter().zip(&b).fold((0.0f64, 0.0f64), |(ma, mr), (x, y)| {
                let d = (x - y).abs();
                let rel = if d == 0.0 {
                    0.0
                } else {
                    d / x.abs().max(y.abs())
                };
                (ma.max(d), mr.max(rel))
            })
        })
        .collect()
}

/// Runs `graph` on the CPU with one thread (the reference), then on the CPU
/// with every thread and on every other available device, and reports the
/// largest difference per output of each run.
pub fn backend_divergence(
    graph: &Graph,
    inputs: &[(&str, &HostTensor)],
) -> DistResult<BackendDivergence> {
    let reference = run(graph, Device::Cpu, Some(1), inputs)?;
    let mut runs = vec![RunDivergence {
        label: "cpu (all threads)".into(),
        per_output: compare(&reference, &run(graph, Device::Cpu, None, inputs)?),
    }];
    for d in available_devices()
        .into_iter()
        .filter(|d| *d != Device::Cpu)
    {
        runs.push(RunDivergence {
            label: device_label(d),
            per_output: compare(&reference, &run(graph, d, None, inputs)?),
        });
    }
    Ok(BackendDivergence {
        reference: "cpu (1 thread)".into(),
        runs,
    })
}

/// A plain-text table of `d`: one line per run and output.
pub fn report_backend_divergence(d: &BackendDivergence) -> String {
    let mut s = format!("reference: {}\n", d.reference);
    for r in &d.runs {
        for (i, (a, rel)) in r.per_output.iter().enumerate() {
            s.push_str(&format!(
                "{:<24} output {i}: max abs {a:.3e}  max rel {rel:.3e}\n",
                r.label
            ));
        }
    }
    s
}
