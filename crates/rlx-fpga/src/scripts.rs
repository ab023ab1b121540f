//! Vendor build scripts, as text (the tools are not needed to export).

use crate::config::HwTarget;

/// `(file name, contents)` of the build script for `target`, if it has one.
/// The scripts run from the export directory, where the `.mem` files are.
pub(crate) fn vendor_script(target: HwTarget, top: &str) -> Option<(String, String)> {
    match target {
        HwTarget::Generic => None,
        HwTarget::Ecp5 => Some((
            format!("{top}_ecp5.sh"),
            format!(
                "#!/bin/sh\n# ECP5 (LFE5U-25F, CABGA256) build of {top} with yosys + nextpnr-ecp5 + ecppack.\nset -e\ncd \"$(dirname \"$0\")\"\nyosys -p 'read_verilog -sv {top}.sv; synth_ecp5 -top {top} -json {top}.json' \nnextpnr-ecp5 --25k --package CABGA256 --json {top}.json --textcfg {top}.config --report {top}_report.json\necppack {top}.config {top}.bit\n"
            ),
        )),
        HwTarget::Ice40 => Some((
            format!("{top}_ice40.sh"),
            format!(
                "#!/bin/sh\n# iCE40 UltraPlus (UP5K, SG48) build of {top} with yosys + nextpnr-ice40 + icepack.\nset -e\ncd \"$(dirname \"$0\")\"\nyosys -p 'read_verilog -sv {top}.sv; synth_ice40 -dsp -top {top} -json {top}.json'\nnextpnr-ice40 --up5k --package sg48 --json {top}.json --asc {top}.asc --report {top}_report.json\nicepack {top}.asc {top}.bin\n"
            ),
        )),
        HwTarget::Xilinx7 => Some((
            format!("{top}_vivado.tcl"),
            format!(
                "# Artix-7 (xc7a35tcsg324-1) out-of-context build of {top}; run from this directory:\n#   vivado -mode batch -source {top}_vivado.tcl\nread_verilog -sv {top}.sv\nadd_files [glob *.mem]\nsynth_design -top {top} -part xc7a35tcsg324-1 -mode out_of_context\nopt_design\nplace_design\nroute_design\nreport_utilization -file {top}_utilization.rpt\nreport_timing_summary -file {top}_timing.rpt\nwrite_checkpoint -force {top}.dcp\n"
            ),
        )),
    }
}
