//! Is CUDA usable here? Libraries first (by file name, no cudarc call),
//! then the driver (`cuInit`, device count, each device's name and
//! capability). The answer is computed once per process.

use crate::libs::CudaLib;
use cudarc::driver::{result, sys};
use std::sync::OnceLock;
use thiserror::Error;

/// Why CUDA cannot be used on this machine.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum CudaUnavailable {
    /// A library did not load under any of the names cudarc tries.
    #[error("{library} not found (tried {})", tried.join(", "))]
    LibraryMissing {
        /// The library.
        library: CudaLib,
        /// The file names tried.
        tried: Vec<String>,
    },
    /// The driver loaded but `cuInit` or a device query failed.
    #[error("the CUDA driver failed at {call}: {message}")]
    Driver {
        /// The driver call.
        call: &'static str,
        /// The driver's error.
        message: String,
    },
    /// The driver works but sees no device.
    #[error("the CUDA driver reports no device")]
    NoDevice,
}

/// One CUDA device as the driver reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaDeviceInfo {
    /// Its ordinal (`Device::Cuda(ordinal)`).
    pub ordinal: usize,
    /// The device name (`NVIDIA H200`, ...).
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
    /// Global memory in bytes.
    pub total_memory: usize,
}

/// What [`probe`] found on a machine where CUDA is usable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaInfo {
    /// The driver's CUDA version (`12080` for 12.8).
    pub driver_version: i32,
    /// Every device, by ordinal.
    pub devices: Vec<CudaDeviceInfo>,
}

/// This process's answer (computed on first call).
pub fn probe() -> Result<CudaInfo, CudaUnavailable> {
    static ANSWER: OnceLock<Result<CudaInfo, CudaUnavailable>> = OnceLock::new();
    ANSWER
        .get_or_init(|| probe_with(&|lib| lib.present()))
        .clone()
}

/// True when [`probe`] finds a usable device.
pub fn is_available() -> bool {
    probe().is_ok()
}

/// [`probe`] with library presence decided by `present` (tests inject a
/// machine where some library is missing). The driver is only called when
/// `present` says every library loads.
pub fn probe_with(present: &dyn Fn(CudaLib) -> bool) -> Result<CudaInfo, CudaUnavailable> {
    if let Some(library) = CudaLib::ALL.into_iter().find(|&l| !present(l)) {
        return Err(CudaUnavailable::LibraryMissing {
            library,
            tried: library.candidates(),
        });
    }
    query_driver()
}

fn driver_err(call: &'static str) -> impl Fn(result::DriverError) -> CudaUnavailable {
    move |e| CudaUnavailable::Driver {
        call,
        message: e.to_string(),
    }
}

/// Asks the driver; only called once `libcuda` is known to load.
fn query_driver() -> Result<CudaInfo, CudaUnavailable> {
    result::init().map_err(driver_err("cuInit"))?;
    let mut driver_version = 0;
    // SAFETY: the driver is initialised and the pointer is to a live i32.
    unsafe { sys::cuDriverGetVersion(&mut driver_version) }
        .result()
        .map_err(driver_err("cuDriverGetVersion"))?;
    let count = result::device::get_count().map_err(driver_err("cuDeviceGetCount"))?;
    if count <= 0 {
        return Err(CudaUnavailable::NoDevice);
    }
    let devices = (0..count)
        .map(|i| {
            let dev = result::device::get(i).map_err(driver_err("cuDeviceGet"))?;
            let attr = |a| {
                // SAFETY: `dev` is a valid device handle from cuDeviceGet.
                unsafe { result::device::get_attribute(dev, a) }
                    .map_err(driver_err("cuDeviceGetAttribute"))
            };
            let major =
                attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
            let minor =
                attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
            Ok(CudaDeviceInfo {
                ordinal: i as usize,
                name: result::device::get_name(dev).map_err(driver_err("cuDeviceGetName"))?,
                compute_capability: (major, minor),
                // SAFETY: as above.
                total_memory: unsafe { result::device::total_mem(dev) }
                    .map_err(driver_err("cuDeviceTotalMem"))?,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(CudaInfo {
        driver_version,
        devices,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_named_with_the_files_tried_and_the_driver_is_not_called() {
        for missing in CudaLib::ALL {
            let err = probe_with(&|l| l != missing).unwrap_err();
            let CudaUnavailable::LibraryMissing { library, tried } = &err else {
                panic!("{err:?}");
            };
            assert_eq!(*library, missing);
            let text = err.to_string();
            assert!(
                text.contains(&format!("lib{}.so", missing.stem())),
                "{text}"
            );
            assert!(tried.len() > 3, "{tried:?}");
        }
    }

    #[test]
    fn the_first_missing_library_in_check_order_is_reported() {
        let err = probe_with(&|_| false).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("the CUDA driver library (libcuda"),
            "{err}"
        );
    }
}
