//! On a machine without the NVIDIA driver (this project's CI and build
//! machines): the probe says so, naming the library and the files tried,
//! and opening a device is an error, not a panic. On a machine with a
//! driver these checks do not apply and are skipped with a message.

use rlx_cuda::gpu::{CudaGpu, GpuError};
use rlx_cuda::libs::CudaLib;
use rlx_cuda::{is_available, probe, CudaUnavailable};

#[test]
fn without_libcuda_the_probe_names_it_and_nothing_panics() {
    if CudaLib::Driver.present() {
        eprintln!("skipped: libcuda loads on this machine");
        return;
    }
    assert!(!is_available());
    let err = probe().unwrap_err();
    let CudaUnavailable::LibraryMissing { library, tried } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(*library, CudaLib::Driver);
    assert!(tried.iter().any(|t| t == "libcuda.so.1"), "{tried:?}");
    assert!(err.to_string().contains("libcuda.so.1"), "{err}");
    // Asked twice: the cached answer, still no panic.
    assert_eq!(probe().unwrap_err(), err);
    match CudaGpu::new(0) {
        Err(GpuError::Unavailable(e)) => assert_eq!(e, err),
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("opened a device without a driver"),
    }
}
