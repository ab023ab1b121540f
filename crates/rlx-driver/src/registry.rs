//! The process-wide backend registry. Builtin backends are registered by
//! `rlx-runtime` on first use; extra backends call [`register_backend`].

use crate::{Backend, Device};
use std::sync::{Arc, OnceLock, RwLock};

fn registry() -> &'static RwLock<Vec<Arc<dyn Backend>>> {
    static R: OnceLock<RwLock<Vec<Arc<dyn Backend>>>> = OnceLock::new();
    R.get_or_init(|| RwLock::new(Vec::new()))
}

/// Registers a backend; a later registration for the same device replaces the earlier one.
pub fn register_backend(b: Arc<dyn Backend>) {
    let mut r = registry().write().unwrap_or_else(|p| p.into_inner());
    r.retain(|x| x.device() != b.device());
    r.push(b);
}

/// The backend registered for `device`.
pub fn backend_for(device: Device) -> Option<Arc<dyn Backend>> {
    let r = registry().read().unwrap_or_else(|p| p.into_inner());
    r.iter().find(|b| b.device() == device).cloned()
}

/// Devices with a registered backend.
pub fn registered_devices() -> Vec<Device> {
    let r = registry().read().unwrap_or_else(|p| p.into_inner());
    r.iter().map(|b| b.device()).collect()
}
