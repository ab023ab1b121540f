//! The hardware plan of a quantized model: one sequential engine per layer
//! (INIT, one tap per cycle, WRITE for every output), the memories it
//! needs, and the checks that must pass before any RTL is written.

use crate::config::FpgaExportConfig;
use crate::FpgaError;
use rlx_quant_int8::{Geometry, QLayer, QWeights, QuantizedModel};

/// What one engine computes per output.
#[derive(Clone, Debug)]
pub(crate) enum Engine {
    /// Convolution: taps `[k_h, k_w, in_c]`.
    Conv(Geometry),
    /// Dense: taps `[1, 1, depth]`.
    Dense { depth: usize },
    /// Max pooling: taps `[k_h, k_w, 1]` on the output's channel.
    MaxPool(Geometry),
    /// Stand-alone ReLU: one tap, the floor is the zero point.
    Relu,
}

/// One layer's engine with its constants.
#[derive(Clone, Debug)]
pub(crate) struct LayerPlan {
    pub engine: Engine,
    /// Output `[h, w, c]` (dense and relu: `[1, 1, n]`).
    pub out: [usize; 3],
    /// Tap loop bounds `[t0, t1, t2]`.
    pub taps: [usize; 3],
    pub in_len: usize,
    /// Multiply-accumulate (conv / dense) or running max (pool / relu).
    pub weights: Option<QWeights>,
    /// Initial running max (pool: -128, relu: the zero point).
    pub floor: i8,
    pub label: String,
}

impl LayerPlan {
    pub fn out_len(&self) -> usize {
        self.out.iter().product()
    }

    pub fn taps_per_output(&self) -> usize {
        self.taps.iter().product()
    }

    /// INIT + one cycle per tap + WRITE, for every output.
    pub fn cycles(&self) -> u64 {
        (self.out_len() * (self.taps_per_output() + 2)) as u64
    }

    pub fn is_mac(&self) -> bool {
        self.weights.is_some()
    }
}

/// A memory of the design: `name`, words, bits per word.
#[derive(Clone, Debug)]
pub(crate) struct Memory {
    pub name: String,
    pub depth: usize,
    pub width: u32,
    /// Initial contents (weights); `None` for activation buffers.
    pub init: Option<Vec<i64>>,
}

impl Memory {
    pub fn bits(&self) -> u64 {
        self.depth as u64 * self.width as u64
    }
}

/// Bits to address `n` words (at least 1).
pub(crate) fn addr_bits(n: usize) -> u32 {
    (usize::BITS - n.saturating_sub(1).leading_zeros()).max(1)
}

/// The validated plan.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub layers: Vec<LayerPlan>,
    pub input_len: usize,
    pub memories: Vec<Memory>,
}

impl Plan {
    pub fn output_len(&self) -> usize {
        self.layers
            .last()
            .map_or(self.input_len, LayerPlan::out_len)
    }

    /// Cycles from the start of an inference to `done` inclusive: every
    /// layer, one cycle per output for the arg-max scan, one for DONE.
    pub fn latency_cycles(&self) -> u64 {
        self.layers.iter().map(LayerPlan::cycles).sum::<u64>() + self.output_len() as u64 + 1
    }
}

fn shape_err(layer: usize, detail: String) -> FpgaError {
    FpgaError::Shape { layer, detail }
}

/// `HxWxC -> HxWxC` of a window layer.
fn shapes(g: &Geometry) -> String {
    format!(
        "{}x{}x{} -> {}x{}x{}",
        g.in_h,
        g.in_w,
        g.in_c,
        g.out_h(),
        g.out_w(),
        g.out_c
    )
}

fn check_geometry(layer: usize, g: &Geometry) -> Result<(), FpgaError> {
    if g.stride_h == 0 || g.stride_w == 0 || g.k_h == 0 || g.k_w == 0 || g.in_c == 0 {
        return Err(shape_err(layer, format!("degenerate geometry {g:?}")));
    }
    if g.k_h > g.in_h + g.pads[0] + g.pads[1] || g.k_w > g.in_w + g.pads[2] + g.pads[3] {
        return Err(shape_err(
            layer,
            format!("kernel larger than the padded input in {g:?}"),
        ));
    }
    Ok(())
}

fn check_weights(
    layer: usize,
    p: &QWeights,
    channels: usize,
    per_channel: usize,
    acc_bits: u32,
) -> Result<(), FpgaError> {
    let lens = [p.bias.len(), p.multiplier.len(), p.shift.len()];
    if p.weights.len() != channels * per_channel || lens.iter().any(|&n| n != channels) {
        return Err(shape_err(
            layer,
            format!(
                "{} weights / {lens:?} bias, multiplier, shift for {channels} channels of {per_channel}",
                p.weights.len()
            ),
        ));
    }
    if p.shift.iter().any(|s| !(-31..=30).contains(s)) {
        return Err(shape_err(layer, "a shift outside -31..=30".into()));
    }
    let limit = 1u64 << (acc_bits - 1);
    for c in 0..channels {
        let row = &p.weights[c * per_channel..(c + 1) * per_channel];
        // |x - zp| <= 255 for int8 x and zero point.
        let bound = p.bias[c].unsigned_abs() as u64
            + 255 * row.iter().map(|w| w.unsigned_abs() as u64).sum::<u64>();
        if bound >= limit {
            return Err(FpgaError::AccumulatorOverflow {
                layer,
                channel: c,
                bound,
                acc_bits,
            });
        }
    }
    Ok(())
}

fn plan_layer(i: usize, layer: &QLayer, acc_bits: u32) -> Result<LayerPlan, FpgaError> {
    let unsupported = |kind| Err(FpgaError::UnsupportedLayer { layer: i, kind });
    let plan = match layer {
        QLayer::Conv2d {
            geometry: g,
            params,
        } => {
            check_geometry(i, g)?;
            check_weights(i, params, g.out_c, g.k_h * g.k_w * g.in_c, acc_bits)?;
            LayerPlan {
                engine: Engine::Conv(*g),
                out: [g.out_h(), g.out_w(), g.out_c],
                taps: [g.k_h, g.k_w, g.in_c],
                in_len: g.input_len(),
                weights: Some(params.clone()),
                floor: -128,
                label: format!(
                    "conv2d {}, kernel {}x{}, stride {}x{}, pads {:?}",
                    shapes(g),
                    g.k_h,
                    g.k_w,
                    g.stride_h,
                    g.stride_w,
                    g.pads
                ),
            }
        }
        QLayer::Dense {
            depth,
            units,
            params,
        } => {
            if *depth == 0 || *units == 0 {
                return Err(shape_err(i, "dense with no inputs or outputs".into()));
            }
            check_weights(i, params, *units, *depth, acc_bits)?;
            LayerPlan {
                engine: Engine::Dense { depth: *depth },
                out: [1, 1, *units],
                taps: [1, 1, *depth],
                in_len: *depth,
                weights: Some(params.clone()),
                floor: -128,
                label: format!("dense {depth} -> {units}"),
            }
        }
        QLayer::MaxPool { geometry: g, .. } => {
            check_geometry(i, g)?;
            if g.in_c != g.out_c {
                return Err(shape_err(i, "max pool changes the channel count".into()));
            }
            LayerPlan {
                engine: Engine::MaxPool(*g),
                out: [g.out_h(), g.out_w(), g.out_c],
                taps: [g.k_h, g.k_w, 1],
                in_len: g.input_len(),
                weights: None,
                floor: -128,
                label: format!("maxpool {}, window {}x{}", shapes(g), g.k_h, g.k_w),
            }
        }
        QLayer::Relu { len, quant } => {
            if *len == 0 || !(-128..=127).contains(&quant.zero_point) {
                return Err(shape_err(
                    i,
                    "relu of no values or a zero point outside int8".into(),
                ));
            }
            LayerPlan {
                engine: Engine::Relu,
                out: [1, 1, *len],
                taps: [1, 1, 1],
                in_len: *len,
                weights: None,
                floor: quant.zero_point as i8,
                label: format!("relu {len}"),
            }
        }
        QLayer::DepthwiseConv2d { .. } => return unsupported("depthwise_conv2d"),
        QLayer::AvgPool { .. } => return unsupported("avgpool"),
        QLayer::Softmax { .. } => return unsupported("softmax"),
    };
    Ok(plan)
}

fn memories(model: &QuantizedModel, layers: &[LayerPlan]) -> Vec<Memory> {
    let mut mems = vec![Memory {
        name: "act0".into(),
        depth: model.input_len(),
        width: 8,
        init: None,
    }];
    for (i, l) in layers.iter().enumerate() {
        if let Some(p) = &l.weights {
            let wide = |v: &[i32]| Some(v.iter().map(|&x| x as i64).collect());
            mems.push(Memory {
                name: format!("l{i}_w"),
                depth: p.weights.len(),
                width: 8,
                init: Some(p.weights.iter().map(|&x| x as i64).collect()),
            });
            mems.push(Memory {
                name: format!("l{i}_b"),
                depth: p.bias.len(),
                width: 32,
                init: wide(&p.bias),
            });
            mems.push(Memory {
                name: format!("l{i}_m"),
                depth: p.multiplier.len(),
                width: 32,
                init: wide(&p.multiplier),
            });
            mems.push(Memory {
                name: format!("l{i}_s"),
                depth: p.shift.len(),
                width: 8,
                init: wide(&p.shift),
            });
        }
        mems.push(Memory {
            name: format!("act{}", i + 1),
            depth: l.out_len(),
            width: 8,
            init: None,
        });
    }
    mems
}

/// Validates `model` against `config` and lays out the engines and memories.
pub(crate) fn plan(model: &QuantizedModel, config: &FpgaExportConfig) -> Result<Plan, FpgaError> {
    config.validate()?;
    if model.layers.is_empty() {
        return Err(FpgaError::EmptyModel);
    }
    let mut layers = Vec::with_capacity(model.layers.len());
    let mut len = model.input_len();
    if len == 0 {
        return Err(shape_err(0, "the model takes an empty input".into()));
    }
    for (i, layer) in model.layers.iter().enumerate() {
        let p = plan_layer(i, layer, config.acc_bits)?;
        if p.in_len != len {
            return Err(shape_err(
                i,
                format!("takes {} values, the previous layer gives {len}", p.in_len),
            ));
        }
        len = p.out_len();
        layers.push(p);
    }
    let memories = memories(model, &layers);
    if let Some(capacity) = config.capacity_bits() {
        for m in &memories {
            if m.bits() > capacity {
                return Err(FpgaError::MemoryOverflow {
                    memory: m.name.clone(),
                    bits: m.bits(),
                    capacity,
                });
            }
        }
        let total: u64 = memories.iter().map(Memory::bits).sum();
        if total > capacity {
            return Err(FpgaError::MemoryOverflow {
                memory: "all memories".into(),
                bits: total,
                capacity,
            });
        }
    }
    if let Some(bad) = config
        .testbench_images
        .iter()
        .position(|im| im.len() != model.input_len())
    {
        return Err(FpgaError::InvalidConfig(format!(
            "testbench image {bad} has {} values, the model takes {}",
            config.testbench_images[bad].len(),
            model.input_len()
        )));
    }
    Ok(Plan {
        layers,
        input_len: model.input_len(),
        memories,
    })
}
