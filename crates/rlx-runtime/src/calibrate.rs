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
    let axis_of = |role: &QuantRole| match role {
        QuantRole::Weight { axis } => Some(*axis),
        QuantRole::Activation => None,
    };
    for (v, role) in &targets {
        let axis = axis_of(role);
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
        let mut computed = out[first_extra..].iter();
        for (v, role) in &targets {
            let values = match &g.node(*v).op {
                Op::Input { name } => sample
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, values)| *values),
                op if !op.is_leaf() => computed.next().map(|v| v.as_slice()),
                _ => None,
            };
            if let Some(values) = values {
                record.observe(*v, values, &dims(*v), axis_of(role))?;
            }
        }
        record.runs += 1;
    }
    Ok(record)
}
