//! [`Device`] and its text form (`cpu`, `cuda:1`, `metal`, ...).

use std::fmt;
use std::str::FromStr;
use thiserror::Error;

/// A compute device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Device {
    /// The host CPU.
    Cpu,
    /// An NVIDIA GPU (CUDA ordinal).
    Cuda(u32),
    /// An AMD GPU (ROCm ordinal).
    Rocm(u32),
    /// Apple GPU through Metal.
    Metal,
    /// Apple MLX.
    Mlx,
    /// Any GPU through wgpu (Vulkan / DX12 / Metal / WebGPU).
    Gpu,
    /// A Google TPU (PJRT ordinal).
    Tpu(u32),
}

impl Device {
    /// Every device kind (ordinal 0 where there is one).
    pub const KINDS: [Device; 7] = [
        Device::Cpu,
        Device::Cuda(0),
        Device::Rocm(0),
        Device::Metal,
        Device::Mlx,
        Device::Gpu,
        Device::Tpu(0),
    ];

    /// The kind name (`cpu`, `cuda`, ...).
    pub fn kind_name(self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Cuda(_) => "cuda",
            Device::Rocm(_) => "rocm",
            Device::Metal => "metal",
            Device::Mlx => "mlx",
            Device::Gpu => "gpu",
            Device::Tpu(_) => "tpu",
        }
    }

    /// The cargo feature of the `rlx` crate that builds this device's backend.
    pub fn feature(self) -> &'static str {
        self.kind_name()
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cuda(i) | Device::Rocm(i) | Device::Tpu(i) => {
                write!(f, "{}:{i}", self.kind_name())
            }
            d => f.write_str(d.kind_name()),
        }
    }
}

/// Human-readable label: `CPU`, `CUDA:0`, `Metal`, ...
pub fn device_label(d: Device) -> String {
    match d {
        Device::Cpu => "CPU".into(),
        Device::Cuda(i) => format!("CUDA:{i}"),
        Device::Rocm(i) => format!("ROCm:{i}"),
        Device::Metal => "Metal".into(),
        Device::Mlx => "MLX".into(),
        Device::Gpu => "GPU (wgpu)".into(),
        Device::Tpu(i) => format!("TPU:{i}"),
    }
}

/// A device string that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("cannot parse device \"{input}\": {reason} (expected one of cpu, cuda[:N], rocm[:N], metal, mlx, gpu, wgpu, tpu[:N])")]
pub struct ParseDeviceError {
    /// The text given.
    pub input: String,
    /// What was wrong.
    pub reason: String,
}

/// Parses `cpu`, `cuda`, `cuda:1`, `rocm:0`, `metal`, `mlx`, `gpu` / `wgpu`, `tpu:0` (case-insensitive).
pub fn parse_device(s: &str) -> Result<Device, ParseDeviceError> {
    let t = s.trim().to_ascii_lowercase();
    let err = |reason: &str| ParseDeviceError {
        input: s.to_string(),
        reason: reason.to_string(),
    };
    let (kind, ordinal) = match t.split_once(':') {
        Some((k, n)) => (
            k,
            Some(
                n.parse::<u32>()
                    .map_err(|_| err("the ordinal is not a number"))?,
            ),
        ),
        None => (t.as_str(), None),
    };
    let ord = ordinal.unwrap_or(0);
    let no_ordinal = |d: Device| {
        if ordinal.is_some() {
            Err(err("this device takes no ordinal"))
        } else {
            Ok(d)
        }
    };
    match kind {
        "cpu" => no_ordinal(Device::Cpu),
        "cuda" | "nvidia" => Ok(Device::Cuda(ord)),
        "rocm" | "hip" => Ok(Device::Rocm(ord)),
        "metal" | "mps" => no_ordinal(Device::Metal),
        "mlx" => no_ordinal(Device::Mlx),
        "gpu" | "wgpu" => no_ordinal(Device::Gpu),
        "tpu" => Ok(Device::Tpu(ord)),
        "" => Err(err("empty")),
        _ => Err(err("unknown device kind")),
    }
}

/// Parses a comma-separated list (`"cuda:0, cpu"`); empty items are skipped.
pub fn parse_device_list(s: &str) -> Result<Vec<Device>, ParseDeviceError> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(parse_device)
        .collect()
}

impl FromStr for Device {
    type Err = ParseDeviceError;
    fn from_str(s: &str) -> Result<Device, ParseDeviceError> {
        parse_device(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_round_trips_display() {
        for d in [
            Device::Cpu,
            Device::Cuda(3),
            Device::Rocm(1),
            Device::Metal,
            Device::Mlx,
            Device::Gpu,
            Device::Tpu(2),
        ] {
            assert_eq!(parse_device(&d.to_string()).unwrap(), d);
        }
        assert_eq!(parse_device(" CUDA ").unwrap(), Device::Cuda(0));
        assert_eq!(
            parse_device_list("cuda:1, cpu,").unwrap(),
            vec![Device::Cuda(1), Device::Cpu]
        );
    }

    #[test]
    fn bad_device_strings_say_why() {
        let e = parse_device("quantum").unwrap_err();
        assert!(e.to_string().contains("unknown device kind"), "{e}");
        assert!(parse_device("cpu:1")
            .unwrap_err()
            .to_string()
            .contains("no ordinal"));
        assert!(parse_device("cuda:x")
            .unwrap_err()
            .to_string()
            .contains("not a number"));
    }
}
