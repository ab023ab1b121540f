//! Collecting a [`CalibrationRecord`] by running a graph over sample inputs
//! with the values to quantize exposed as extra outputs.

use crate::{Result, Session};
use rlx_compile::{quant_targets, CalibrationRecord, CompileError, QuantRole};
use rlx_ir::{Graph, HostTensor, Op};

/// Runs `g` on `session` once per sample and records the range of every
/// value [`rlx_compile::insert_fake_quant`] will quantize: data inputs per
/// tensor, weights per output channel (from `params`, which must set every
/// param of `g`).
pub fn collect_calibration(
    session: &Session,
    g: &Graph,
    params: &[(&str, &[f32])],
    samples: &[Vec<(&str, &[f32])>],
) -> Result<CalibrationRecord> {
    let mut record = CalibrationRecord::new(g);
    let targets = quant_targets(g);
    // Values computed inside the graph are read back as extra outputs.
    let mut probe = g.clone();
    let exposed: Vec<_> = targets
        .iter()
        .filter(|(v, _)| !g.node(*v).op.is_leaf())
        .map(|(v, _)| *v)
        .collect();
    let first_extra = g.outputs().len();
    let mut outputs = g.outputs().to_vec();
    outputs.extend(&exposed);
    probe.set_outputs(outputs);
    let mut compiled =
        session.try_compile_with(probe, &crate::CompileOptions::default().fusion(false))?;
    for (name, values) in params {
        compiled.try_set_param(name, values)?;
    }
    let dims = |v| g.shape(v).static_dims().unwrap_or_default();
    for (v, role) in &targets {
        let axis = match role {
            QuantRole::Weight { axis } => Some(*axis),
            QuantRole::Activation => None,
        };
        match &g.node(*v).op {
            Op::Param { name } => {
                let (_, values) = params.iter().find(|(n, _)| n == name).ok_or_else(|| {
                    CompileError::Calibration {
                        reason: format!("param \"{name}\" was not given"),
                    }
                })?;
                record.observe(*v, values, &dims(*v), axis)?;
            }
            Op::Constant { bytes } => {
                let t = HostTensor::from_bytes(g.shape(*v).dtype(), &dims(*v), bytes.clone())?;
                record.observe(*v, &t.to_vec::<f32>()?, &dims(*v), axis)?;
            }
            _ => {}
        }
    }
    for sample in samples {
        let out = compiled.try_run(sample)?;
        for (&v, values) in exposed.iter().zip(&out[first_extra..]) {
            record.observe(v, values, &dims(v), None)?;
        }
        for (v, _) in &targets {
            if let Op::Input { name } = &g.node(*v).op {
                if let Some((_, values)) = sample.iter().find(|(n, _)| n == name) {
                    record.observe(*v, values, &dims(*v), None)?;
                }
            }
        }
        record.runs += 1;
    }
    Ok(record)
}
