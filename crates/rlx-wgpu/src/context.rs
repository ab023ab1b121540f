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
    /// True when WGSL `f16` is available (`shader-f16`, requested at device
    /// creation): elementwise and matmul kernels then compute f16 natively.
    pub shader_f16: bool,
    /// The one bind group layout of every kernel: the arena, read-write.
    pub(crate) arena_layout: wgpu::BindGroupLayout,
    pub(crate) pipeline_layout: wgpu::PipelineLayout,
    /// Compiled kernels by WGSL source: a shape seen before costs nothing.
    pub(crate) pipelines: Mutex<HashMap<String, Arc<wgpu::ComputePipeline>>>,
    /// Errors no scope caught, and why the device was lost: kept here (wgpu's
    /// default handler panics) and reported by the next run.
    pub(crate) faults: Arc<Mutex<Vec<String>>>,
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
            // Native f16 kernels where the adapter has them (see `F16Mode`).
            required_features: if shader_f16 {
                wgpu::Features::SHADER_F16
            } else {
                wgpu::Features::empty()
            },
            required_limits: limits.clone(),
            ..Default::default()
        })
        .await
        .map_err(|e| format!("adapter {} refused a device: {e}", info.name))?;
    let faults = Arc::new(Mutex::new(Vec::new()));
    let sink = faults.clone();
    device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
        push_fault(&sink, format!("uncaptured wgpu error: {e}"));
    }));
    let sink = faults.clone();
    device.set_device_lost_callback(move |reason, message| {
        push_fault(
            &sink,
            format!("the GPU device was lost ({reason:?}): {message}"),
        );
    });
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
        faults,
        device,
        queue,
        info,
        limits,
        shader_f16,
    })
}

fn push_fault(sink: &Mutex<Vec<String>>, message: String) {
    sink.lock().unwrap_or_else(|p| p.into_inner()).push(message);
}

impl GpuContext {
    /// Runs `f` (buffer, bind group, pipeline creation, encoding, submits)
    /// inside out-of-memory, validation and internal error scopes: what
    /// wgpu reports there, or an earlier uncaptured error / device loss,
    /// is `Err(message)` instead of wgpu's panic.
    pub fn checked<T>(&self, f: impl FnOnce() -> T) -> Result<T, String> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let internal = self.device.push_error_scope(wgpu::ErrorFilter::Internal);
        let value = f();
        // Innermost first.
        let popped = [internal.pop(), validation.pop(), oom.pop()];
        let mut errors: Vec<String> = popped
            .into_iter()
            .filter_map(pollster::block_on)
            .map(|e| e.to_string())
            .collect();
        errors.extend(self.take_faults());
        if errors.is_empty() {
            Ok(value)
        } else {
            Err(errors.join("; "))
        }
    }

    /// The uncaptured errors and device-loss reports since the last call.
    pub(crate) fn take_faults(&self) -> Vec<String> {
        std::mem::take(&mut *self.faults.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// A buffer of `size` bytes, or wgpu's reason there is none (too large
    /// for the adapter, out of memory).
    pub fn create_buffer(
        &self,
        label: &str,
        size: u64,
        usage: wgpu::BufferUsages,
    ) -> Result<wgpu::Buffer, String> {
        self.checked(|| {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: false,
            })
        })
        .map_err(|e| format!("creating the {size}-byte buffer \"{label}\": {e}"))
    }

    /// The pipeline of `source`, compiled once per process; a shader the
    /// device refuses is an error carrying wgpu's message.
    pub(crate) fn pipeline(&self, source: &str) -> Result<Arc<wgpu::ComputePipeline>, String> {
        let mut cache = self.pipelines.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = cache.get(source) {
            return Ok(p.clone());
        }
        let pipeline = self
            .checked(|| {
                let module = self
                    .device
                    .create_shader_module(wgpu::ShaderModuleDescriptor {
                        label: None,
                        source: wgpu::ShaderSource::Wgsl(source.into()),
                    });
                self.device
                    .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                        label: None,
                        layout: Some(&self.pipeline_layout),
                        module: &module,
                        entry_point: Some("main"),
                        compilation_options: Default::default(),
                        cache: None,
                    })
            })
            .map_err(|e| format!("the device refused a generated kernel: {e}"))?;
        let p = Arc::new(pipeline);
        cache.insert(source.to_string(), p.clone());
        Ok(p)
    }
}
