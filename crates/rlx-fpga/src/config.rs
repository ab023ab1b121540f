//! Export options: target device family, I/O interface, port names,
//! sideband and quantization scheme.

use crate::FpgaError;

/// The device family the vendor scripts are written for. The RTL itself
/// is the same portable SystemVerilog for all of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HwTarget {
    /// Plain RTL, no vendor script, no memory limit.
    #[default]
    Generic,
    /// Lattice ECP5 (LFE5U-25F): yosys `synth_ecp5` + nextpnr-ecp5.
    Ecp5,
    /// Lattice iCE40 UltraPlus (UP5K): yosys `synth_ice40` + nextpnr-ice40.
    Ice40,
    /// Xilinx 7-series (Artix-7 35T): a Vivado non-project tcl flow.
    Xilinx7,
}

impl HwTarget {
    /// On-chip RAM of the reference part, in bits (`None`: unbounded).
    pub fn memory_bits(self) -> Option<u64> {
        match self {
            HwTarget::Generic => None,
            // 56 sysMEM blocks of 18 Kbit.
            HwTarget::Ecp5 => Some(56 * 18 * 1024),
            // 30 EBR of 4 Kbit plus 4 SPRAM of 256 Kbit.
            HwTarget::Ice40 => Some(30 * 4096 + 4 * 256 * 1024),
            // 50 RAMB36.
            HwTarget::Xilinx7 => Some(50 * 36 * 1024),
        }
    }
}

/// How an image enters the design.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InputIface {
    /// `valid` / `ready` / `data`, one int8 per beat in NHWC order; the
    /// last beat starts the inference.
    #[default]
    Stream,
    /// `we` / `addr` / `data` writes into the input buffer, then a `start` pulse.
    MemoryMapped,
}

/// How the logits leave the design.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputIface {
    /// One `valid` / `index` / `data` beat per logit after the last layer.
    #[default]
    Stream,
    /// An `addr` -> `rdata` read port on the output buffer, valid after `done`.
    MemoryMapped,
}

/// What the design reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputKind {
    /// The int8 logits (through [`OutputIface`]) and the arg-max class.
    #[default]
    Logits,
    /// Only the arg-max class (first maximum), with `done`.
    Argmax,
}

/// The quantization scheme the datapath implements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExportQuantMode {
    /// TFLite / CMSIS-NN int8: per-tensor activations, per-channel
    /// symmetric weights, int32 bias, Q0.31 multiplier + shift with
    /// round-half-away and saturation (the integer reference of `rlx-quant-int8`).
    #[default]
    Int8PerChannel,
}

/// Names of the top module's ports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortNames {
    /// Clock.
    pub clk: String,
    /// Active-low synchronous reset.
    pub rst_n: String,
    /// Input beat valid (stream input).
    pub in_valid: String,
    /// Ready for input.
    pub in_ready: String,
    /// Input value (int8).
    pub in_data: String,
    /// Input write enable (memory-mapped input).
    pub in_we: String,
    /// Input write address (memory-mapped input).
    pub in_addr: String,
    /// Start pulse (memory-mapped input).
    pub start: String,
    /// Output beat valid (stream output).
    pub out_valid: String,
    /// Output index (stream output) or read address (memory-mapped output).
    pub out_index: String,
    /// Output value (int8).
    pub out_data: String,
    /// Arg-max class.
    pub out_class: String,
    /// One-cycle pulse: the inference finished.
    pub done: String,
    /// High while computing.
    pub busy: String,
}

impl Default for PortNames {
    fn default() -> Self {
        let s = |v: &str| v.to_string();
        PortNames {
            clk: s("clk"),
            rst_n: s("rst_n"),
            in_valid: s("in_valid"),
            in_ready: s("in_ready"),
            in_data: s("in_data"),
            in_we: s("in_we"),
            in_addr: s("in_addr"),
            start: s("start"),
            out_valid: s("out_valid"),
            out_index: s("out_index"),
            out_data: s("out_data"),
            out_class: s("out_class"),
            done: s("done"),
            busy: s("busy"),
        }
    }
}

impl PortNames {
    /// All names, for validation.
    pub fn all(&self) -> [&str; 14] {
        [
            &self.clk,
            &self.rst_n,
            &self.in_valid,
            &self.in_ready,
            &self.in_data,
            &self.in_we,
            &self.in_addr,
            &self.start,
            &self.out_valid,
            &self.out_index,
            &self.out_data,
            &self.out_class,
            &self.done,
            &self.busy,
        ]
    }
}

/// A user tag latched with the input and presented with the result
/// (ports `<name>_in` / `<name>_out`), e.g. a frame id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SidebandSpec {
    /// Port name stem.
    pub name: String,
    /// Bits (1 to 64).
    pub width: u32,
}

/// Which graph tensors the ports stand for (recorded in the RTL header;
/// checked against the graph by [`crate::export_graph`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GraphIoBind {
    /// Name of the graph input fed through the input port (`None`: the one input).
    pub input: Option<String>,
    /// Label of the result on the output port (`None`: `logits`).
    pub output: Option<String>,
}

/// The design's I/O.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IoConfig {
    /// Input interface.
    pub input: InputIface,
    /// Output interface (logits).
    pub output: OutputIface,
    /// Reported result.
    pub kind: OutputKind,
    /// Port names.
    pub ports: PortNames,
    /// Optional sideband tag.
    pub sideband: Option<SidebandSpec>,
    /// Graph tensors bound to the ports.
    pub bind: GraphIoBind,
}

/// Everything the exporter needs besides the model.
#[derive(Clone, Debug, PartialEq)]
pub struct FpgaExportConfig {
    /// Device family (vendor script, default memory capacity).
    pub hw_target: HwTarget,
    /// I/O interface.
    pub io: IoConfig,
    /// Quantization scheme.
    pub quant_mode: ExportQuantMode,
    /// Accumulator width in bits (16 to 32).
    pub acc_bits: u32,
    /// On-chip memory available, in bits (`None`: the target's).
    pub memory_bits: Option<u64>,
    /// Top module name (`None`: from the model name).
    pub top_name: Option<String>,
    /// Quantized images the generated testbench feeds (none: no testbench).
    pub testbench_images: Vec<Vec<i8>>,
}

impl Default for FpgaExportConfig {
    fn default() -> Self {
        FpgaExportConfig {
            hw_target: HwTarget::Generic,
            io: IoConfig::default(),
            quant_mode: ExportQuantMode::Int8PerChannel,
            acc_bits: 32,
            memory_bits: None,
            top_name: None,
            testbench_images: Vec::new(),
        }
    }
}

/// `true` for a plain SystemVerilog identifier that is no keyword we emit.
pub(crate) fn is_identifier(name: &str) -> bool {
    const RESERVED: &[&str] = &[
        "module",
        "input",
        "output",
        "logic",
        "int",
        "begin",
        "end",
        "always_ff",
        "always_comb",
        "assign",
        "case",
        "if",
        "else",
        "function",
        "return",
        "initial",
        "endmodule",
        "signed",
        "longint",
        "localparam",
        "default",
        "endcase",
        "endfunction",
        "automatic",
    ];
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !RESERVED.contains(&name)
}

impl FpgaExportConfig {
    /// The memory capacity in force.
    pub fn capacity_bits(&self) -> Option<u64> {
        self.memory_bits.or(self.hw_target.memory_bits())
    }

    /// Checks names and widths.
    pub(crate) fn validate(&self) -> Result<(), FpgaError> {
        let bad = |m: String| Err(FpgaError::InvalidConfig(m));
        if !(16..=32).contains(&self.acc_bits) {
            return bad(format!("acc_bits {} is outside 16..=32", self.acc_bits));
        }
        let mut names: Vec<String> = self.io.ports.all().iter().map(|s| s.to_string()).collect();
        if let Some(sb) = &self.io.sideband {
            if !(1..=64).contains(&sb.width) {
                return bad(format!("sideband width {} is outside 1..=64", sb.width));
            }
            names.push(format!("{}_in", sb.name));
            names.push(format!("{}_out", sb.name));
        }
        if let Some(top) = &self.top_name {
            names.push(top.clone());
        }
        for (i, n) in names.iter().enumerate() {
            if !is_identifier(n) {
                return bad(format!("`{n}` is not a usable SystemVerilog identifier"));
            }
            if names[..i].contains(n) {
                return bad(format!("port name `{n}` is used twice"));
            }
        }
        Ok(())
    }
}
