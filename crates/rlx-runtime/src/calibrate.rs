//! Collecting a [`CalibrationRecord`] by running a graph over sample inputs
//! with the values to quantize exposed as extra outputs.

use crate::{Result, Session};
use rlx_compile::{
    quant_targets, CalibrationCollector, CalibrationOptions, CalibrationRecord, CompileError,
    QuantRole,
};
use rlx_ir::{Graph, HostTensor, Op};

/// Runs `g` on `session` once per sample and records the range of every
/// value [`rlx_compile::insert_fake_quant`] will quantize: data inputs per
/// tensor (min / max), weights per output channel (from `params`, which must
/// set every param of `g`).
pub fn collect_calibration(
    session: &Session,
    g: &Graph,
    params: &[(&str, &[f32])],
    samples: &[Vec<(&str, &[f32])>],
) -> Result<CalibrationRecord> {
    collect_calibration_with(session, g, params, samples, &CalibrationOptions::default())
}

/// [`collect_calibration`] choosing activation ranges with `opts.method`
/// (min / max, percentile or entropy histograms, as ONNX Runtime's
/// calibrators), per channel along `opts.activation_axis` when set; weights
/// keep min / max per output channel.
pub fn collect_calibration_with(
    session: &Session,
    g: &Graph,
    params: &[(&str, &[f32])],
    samples: &[Vec<(&str, &[f32])>],
    opts: &CalibrationOptions,
) -> Result<CalibrationRecord> {
    let mut record = CalibrationCollector::new(g, opts.method)?;
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
        QuantRole::Activation => opts.activation_axis,
    };
    for (v, role) in &targets {
        if let (QuantRole::Activation, Some(a)) = (role, opts.activation_axis) {
            let rank = g.shape(*v).rank();
            if a >= rank {
                return Err(CompileError::Calibration {
                    reason: format!(
                        "activation axis {a} is out of range for {} of rank {rank}",
                        rlx_ir::node_label(g, *v)
                    ),
                }
                .into());
            }
        }
    }
    for (v, role) in &targets {
        let axis = axis_of(role);
        match &g.node(*v).op {
            Op::Param { name } => {
                let (_, values) = params.iter().find(|(n, _)| n == name).ok_or_else(|| {
                    CompileError::Calibration {
                        reason: format!("param \"{name}\" was not given"),
                    }
                })?;
                record.observe_min_max(*v, values, &dims(*v), axis)?;
            }
            Op::Constant { bytes } => {
                let t = HostTensor::from_bytes(g.shape(*v).dtype(), &dims(*v), bytes.to_vec())?;
                record.observe_min_max(*v, &t.to_vec::<f32>()?, &dims(*v), axis)?;
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
    Ok(record.finish())
}
