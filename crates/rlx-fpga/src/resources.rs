//! A coarse resource estimate, counted from the datapath (not synthesized).

use crate::plan::Plan;

/// Estimated FPGA resources of an exported design.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResourceEstimate {
    /// 18x18-class multipliers: one for the 8x8 MAC, four for the 32x32
    /// requantization product.
    pub dsps: u32,
    /// Bits of on-chip memory (weights, biases, multipliers, shifts,
    /// activations). The datapath reads them combinationally, which maps to
    /// distributed (LUT) RAM or ROM; block RAM would need a registered read.
    pub bram_bits: u64,
    /// Look-up tables: counters, address arithmetic, the per-layer
    /// multiplexers, the requantization's adders / shifters, the arg-max.
    pub luts: u32,
}

/// Rough LUT costs: the sequencer's nine 32-bit counters and FSM, the
/// 64-bit requantization adders / barrel shifter, address arithmetic
/// (three adds + two compares) and an 8-bit mux leg per layer.
const SEQUENCER_LUTS: u32 = 9 * 32 + 16;
const REQUANT_LUTS: u32 = 4 * 64 + 2 * 64 * 6 / 4;
const PER_LAYER_LUTS: u32 = 3 * 32 + 2 * 32 + 8;
const ARGMAX_LUTS: u32 = 8 + 32;

pub(crate) fn estimate(plan: &Plan) -> ResourceEstimate {
    let has_mac = plan.layers.iter().any(|l| l.is_mac());
    ResourceEstimate {
        dsps: if has_mac { 1 + 4 } else { 0 },
        bram_bits: plan.memories.iter().map(|m| m.bits()).sum(),
        luts: SEQUENCER_LUTS
            + if has_mac { REQUANT_LUTS } else { 0 }
            + PER_LAYER_LUTS * plan.layers.len() as u32
            + ARGMAX_LUTS,
    }
}
