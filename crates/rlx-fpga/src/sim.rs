//! Running the exported design through the HDL tools installed on the
//! host: Verilator lint and an iverilog simulation of the testbench.

use crate::{ExportedArtifacts, FpgaError};
use std::process::Command;

/// One image's result as the testbench printed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimImage {
    /// The arg-max class.
    pub class: usize,
    /// Cycles from start to `done`, inclusive.
    pub cycles: u64,
    /// The sideband tag that came out with it (0 without sideband).
    pub tag: u64,
    /// The int8 logits (empty for `OutputKind::Argmax`).
    pub logits: Vec<i8>,
}

/// `true` when `tool` (`iverilog`, `vvp`, `verilator`) can be started.
pub fn tool_available(tool: &str) -> bool {
    Command::new(tool).arg("-V").output().is_ok()
}

fn run(tool: &str, cmd: &mut Command) -> Result<String, FpgaError> {
    let out = cmd.output().map_err(|e| FpgaError::Tool {
        tool: tool.into(),
        detail: format!("could not run: {e}"),
    })?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        return Err(FpgaError::Tool {
            tool: tool.into(),
            detail: text,
        });
    }
    Ok(text)
}

/// `verilator --lint-only -Wall` on the design; `Ok` only without any warning.
pub fn verilator_lint(arts: &ExportedArtifacts) -> Result<(), FpgaError> {
    let text = run(
        "verilator",
        Command::new("verilator")
            .current_dir(&arts.dir)
            .args(["--lint-only", "-Wall", "--top-module", &arts.top])
            .arg(format!("{}.sv", arts.top)),
    )?;
    if text.contains("%Warning") || text.contains("%Error") {
        return Err(FpgaError::Tool {
            tool: "verilator".into(),
            detail: text,
        });
    }
    Ok(())
}

fn parse_line(line: &str) -> Option<SimImage> {
    let mut it = line.split_whitespace();
    let mut field = |name: &str| -> Option<u64> {
        (it.next()? == name).then_some(())?;
        it.next()?.parse().ok()
    };
    field("IMAGE")?;
    let class = field("CLASS")? as usize;
    let cycles = field("CYCLES")?;
    let tag = field("TAG")?;
    (it.next()? == "LOGITS").then_some(())?;
    let logits = it
        .map(|v| v.parse::<i8>().ok())
        .collect::<Option<Vec<_>>>()?;
    Some(SimImage {
        class,
        cycles,
        tag,
        logits,
    })
}

/// Compiles the design and its testbench with iverilog, runs `vvp` in the
/// export directory and parses one [`SimImage`] per test image.
pub fn simulate_iverilog(arts: &ExportedArtifacts) -> Result<Vec<SimImage>, FpgaError> {
    if arts.testbench().is_none() {
        return Err(FpgaError::InvalidConfig(
            "the export has no testbench (no testbench_images)".into(),
        ));
    }
    let sim = format!("{}_sim", arts.top);
    run(
        "iverilog",
        Command::new("iverilog")
            .current_dir(&arts.dir)
            .args(["-g2012", "-o", &sim])
            .arg(format!("{}_tb.sv", arts.top))
            .arg(format!("{}.sv", arts.top)),
    )?;
    let text = run(
        "vvp",
        Command::new("vvp")
            .current_dir(&arts.dir)
            .args(["-n", &sim]),
    )?;
    let images: Vec<SimImage> = text.lines().filter_map(parse_line).collect();
    if images.len() != arts.testbench_images {
        return Err(FpgaError::Tool {
            tool: "vvp".into(),
            detail: format!(
                "expected {} result lines, got {}:\n{text}",
                arts.testbench_images,
                images.len()
            ),
        });
    }
    Ok(images)
}
