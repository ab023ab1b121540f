//! The process-wide wgpu device: found once, shared by every executable.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The adapter, device and queue every executable of this process uses,
/// with the limits and facts reports print.
pub struct GpuContext {
    /// The logical device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// What the adapter says about itself (name, type, driver, backend).
    pub info: wgpu::AdapterInfo,
    /// The limits the device was created with (the adapter's own).
    pub limits: wgpu::Limits,
    /// True when WGSL `f16` is available (`shader-f16`).
    pub shader_f16: bool,
    /// The one bind group layout of every kernel: the arena, read-write.
    pub(crate) arena_layout: wgpu::BindGroupLayout,
    pub(crate) pipeline_layout: wgpu::PipelineLayout,
    /// Compiled kernels by WGSL source: a shape seen before costs nothing.
    pub(crate) pipelines: Mutex<HashMap<String, Arc<wgpu::ComputePipeline>>>,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GpuContext({} [{:?}, {:?}])",
            self.info.name, self.info.device_type, self.info.backend
        )
    }
}

impl GpuContext {
    /// One line naming the adapter: `llvmpipe (LLVM 15, 256 bits) (Cpu, Vulkan)`.
    pub fn describe(&self) -> String {
        format!(
            "{} ({:?}, {:?})",
            self.info.name, self.info.device_type, self.info.backend
        )
    }
}

/// The shared context, or why there is none (no adapter, the device request
/// failed). Looked up once per process; `WGPU_BACKEND` (e.g. `vulkan`) limits
/// the backends tried, `WGPU_ADAPTER_NAME` picks an adapter by name.
pub fn context() -> Result<Arc<GpuContext>, String> {
    static CTX: OnceLock<Result<Arc<GpuContext>, String>> = OnceLock::new();
    CTX.get_or_init(|| pollster::block_on(open()).map(Arc::new))
        .clone()
}

/// Rank of an adapter type: a real GPU first, a software one (lavapipe
/// reports `Cpu`) last but still taken.
fn preference(t: wgpu::DeviceType) -> u8 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    }
}

async fn open() -> Result<GpuContext, String> {
    let desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    let backends = desc.backends;
    let instance = wgpu::Instance::new(desc);
    let mut adapters = instance.enumerate_adapters(backends).await;
    if let Ok(name) = std::env::var("WGPU_ADAPTER_NAME") {
        let want = name.to_ascii_lowercase();
        adapters.retain(|a| a.get_info().name.to_ascii_lowercase().contains(&want));
    }
    adapters.sort_by_key(|a| preference(a.get_info().device_type));
    let Some(adapter) = adapters.into_iter().next() else {
        return Err(format!(
            "no wgpu adapter found (backends tried: {backends:?}; on Linux install a Vulkan driver, e.g. mesa-vulkan-drivers for lavapipe)"
        ));
    };
    let info = adapter.get_info();
    let limits = adapter.limits();
    let shader_f16 = adapter.features().contains(wgpu::Features::SHADER_F16);
    let (device, queue) = adapter
        .request_device(&wgpu::DeviceDescriptor {
            label: Some("rlx-wgpu"),
            required_features: wgpu::Features::empty(),
            required_limits: limits.clone(),
            ..Default::default()
        })
        .await
        .map_err(|e| format!("adapter {} refused a device: {e}", info.name))?;
    let arena_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("rlx arena"),
        entries: &[wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only: false },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        }],
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("rlx kernels"),
        bind_group_layouts: &[Some(&arena_layout)],
        immediate_size: 0,
    });
    Ok(GpuContext {
        arena_layout,
        pipeline_layout,
        pipelines: Mutex::new(HashMap::new()),
        device,
        queue,
        info,
        limits,
        shader_f16,
    })
}

impl GpuContext {
    /// The pipeline of `source`, compiled once per process; a shader the
    /// device refuses is an error carrying wgpu's message.
    pub(crate) fn pipeline(&self, source: &str) -> Result<Arc<wgpu::ComputePipeline>, String> {
        let mut cache = self.pipelines.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = cache.get(source) {
            return Ok(p.clone());
        }
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = self
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: None,
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
        let pipeline = self
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: None,
                layout: Some(&self.pipeline_layout),
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(format!("the device refused a generated kernel: {e}"));
        }
        let p = Arc::new(pipeline);
        cache.insert(source.to_string(), p.clone());
        Ok(p)
    }
}
