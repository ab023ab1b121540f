//! A backend registered at run time (here: the CPU's kernels under the
//! `gpu` device) is in the manifest, the candidates and the fallback path.

mod device_fixture;

use device_fixture::{assert_close, feeds, mlp};
use rlx_compile::LirModule;
use rlx_driver::{registry, Backend, BackendError, Device, Executable};
use rlx_ir::Op;
use rlx_runtime::*;
use std::sync::Arc;

/// The CPU backend's kernels, registered as the `gpu` device.
struct HostAsGpu;

impl Backend for HostAsGpu {
    fn device(&self) -> Device {
        Device::Gpu
    }
    fn name(&self) -> &'static str {
        "host-as-gpu"
    }
    fn claims(&self, op: &Op) -> bool {
        rlx_cpu::CpuBackend.claims(op)
    }
    fn compile(&self, lir: LirModule) -> Result<Box<dyn Executable>, BackendError> {
        rlx_cpu::CpuBackend.compile(lir)
    }
}

#[test]
fn a_registered_backend_joins_the_manifest_and_the_chain() {
    registry::register_backend(Arc::new(HostAsGpu));
    let m = BackendsManifest::current();
    let gpu = m.status(Device::Gpu).unwrap();
    assert!(
        gpu.compiled_in && gpu.available && gpu.reason.is_none(),
        "{gpu:?}"
    );
    // The static cost model ranks a GPU before the CPU.
    assert_eq!(m.available, vec![Device::Gpu, Device::Cpu]);

    let mlp = mlp();
    let chain = [Device::Cuda(0), Device::Gpu, Device::Cpu];
    let (d, out) = run_with_fallback(&mlp.graph, &chain, &mlp.params(), &mlp.inputs()).unwrap();
    assert_eq!(d, Device::Gpu);
    assert_close(&out[0], &mlp.want, 1e-5);
    let no_gpu = DevicePolicy::default().deny(Device::Gpu);
    let (d, _) =
        run_with_policy(&mlp.graph, &chain, &no_gpu, &mlp.params(), &mlp.inputs()).unwrap();
    assert_eq!(d, Device::Cpu);

    let owned = mlp.host_tensors();
    let rows = benchmark_devices(&mlp.graph, &feeds(&owned)).unwrap();
    assert!(rows
        .iter()
        .any(|r| r.candidate == DeviceCandidate::new(Device::Gpu)));
    assert_eq!(rows.len(), DeviceCandidate::available().len());

    // A session moves between the two backends with identical outputs.
    let mut s = FlexibleSession::new(mlp.graph.clone(), Device::Gpu.into()).unwrap();
    for (name, v) in mlp.params() {
        s.set_param(name, v).unwrap();
    }
    let on_gpu = s.run(&mlp.inputs()).unwrap();
    s.move_to(Device::Cpu.into()).unwrap();
    assert_eq!(s.run(&mlp.inputs()).unwrap(), on_gpu);
}
