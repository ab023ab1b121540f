use crate::error::KernelError;

/// Per-tensor quantization of a kernel's input and output plus the output
/// clamp: `real = scale * (q - zero_point)`; the scales live on the host,
/// folded into [`ChannelQuant`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QParams {
    /// Zero point of the input tensor (`-128..=127`).
    pub input_zero_point: i32,
    /// Zero point of the output tensor (`-128..=127`).
    pub output_zero_point: i32,
    /// Lowest output value (a fused ReLU sets it to the output zero point).
    pub activation_min: i8,
    /// Highest output value.
    pub activation_max: i8,
}

impl QParams {
    /// Zero points in the int8 range and `activation_min <= activation_max`.
    pub fn validate(&self) -> Result<(), KernelError> {
        let in_range = |z: i32| (-128..=127).contains(&z);
        if !in_range(self.input_zero_point) || !in_range(self.output_zero_point) {
            return Err(KernelError::QParam("zero point outside -128..=127"));
        }
        if self.activation_min > self.activation_max {
            return Err(KernelError::QParam("activation_min > activation_max"));
        }
        Ok(())
    }

    /// Adds the output zero point to a requantized value and clamps it.
    #[inline]
    pub(crate) fn finish(&self, scaled: i32) -> i8 {
        scaled
            .saturating_add(self.output_zero_point)
            .clamp(self.activation_min as i32, self.activation_max as i32) as i8
    }
}

/// Per-output-channel requantization: `acc * multiplier * 2^shift / 2^31`
/// (TFLite's `QuantizeMultiplier` output; one entry per output channel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelQuant<'a> {
    /// Q0.31 multipliers.
    pub multiplier: &'a [i32],
    /// Power-of-two exponents (`-31..=30`).
    pub shift: &'a [i32],
}

impl ChannelQuant<'_> {
    /// Both slices hold `channels` entries and every shift is in range.
    pub(crate) fn validate(&self, channels: usize) -> Result<(), KernelError> {
        crate::error::check_len("multiplier", channels, self.multiplier.len())?;
        crate::error::check_len("shift", channels, self.shift.len())?;
        if self.shift.iter().any(|s| !(-31..=30).contains(s)) {
            return Err(KernelError::QParam("shift outside -31..=30"));
        }
        Ok(())
    }
}

/// `Err(AccumulatorOverflow)` when `depth` products of an offset input
/// (`|x - zp| <= 255`) and an int8 weight (`|w| <= 128`) plus any int32
/// bias can leave the int32 range. The bias is bounded separately, so the
/// products alone must stay within half the range.
pub(crate) fn check_accumulator(depth: usize) -> Result<(), KernelError> {
    let worst = (depth as u64).saturating_mul(255 * 128);
    if worst > (i32::MAX as u64) / 2 {
        Err(KernelError::AccumulatorOverflow { depth })
    } else {
        Ok(())
    }
}
