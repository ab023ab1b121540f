//! Which [`GroupRegistry`] the collective kernels use: the one bound on
//! this thread (one loopback rank per thread), else the process's.

use crate::error::CollectiveError;
use crate::group::{GroupId, ProcessGroup};
use crate::registry::GroupRegistry;
use std::cell::RefCell;
use std::sync::{Arc, RwLock};

thread_local! {
    static THREAD: RefCell<Vec<Arc<GroupRegistry>>> = const { RefCell::new(Vec::new()) };
}

static PROCESS: RwLock<Option<Arc<GroupRegistry>>> = RwLock::new(None);

/// Binds `groups` for the collective ops run on this thread until the
/// returned guard drops (bindings nest; the innermost wins).
#[must_use = "the binding ends when the guard drops"]
pub fn bind_groups(groups: Arc<GroupRegistry>) -> GroupsBinding {
    THREAD.with(|t| t.borrow_mut().push(groups));
    GroupsBinding {
        _not_send: std::marker::PhantomData,
    }
}

/// Binds `groups` for every thread of the process that has no binding of
/// its own (one rank per process: MPI, TCP). Replaces an earlier one.
pub fn bind_process_groups(groups: Arc<GroupRegistry>) {
    *PROCESS.write().unwrap_or_else(|p| p.into_inner()) = Some(groups);
}

/// Removes the process-wide binding.
pub fn unbind_process_groups() {
    *PROCESS.write().unwrap_or_else(|p| p.into_inner()) = None;
}

/// Keeps a [`bind_groups`] binding alive; dropping it restores the previous one.
pub struct GroupsBinding {
    // Bound to the thread whose stack it pops.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Drop for GroupsBinding {
    fn drop(&mut self) {
        THREAD.with(|t| {
            t.borrow_mut().pop();
        });
    }
}

/// The group `id` of the innermost binding.
pub(crate) fn lookup(id: GroupId) -> Result<Arc<dyn ProcessGroup>, String> {
    let bound = THREAD
        .with(|t| t.borrow().last().cloned())
        .or_else(|| PROCESS.read().unwrap_or_else(|p| p.into_inner()).clone());
    let Some(groups) = bound else {
        return Err(format!(
            "no process group is bound for group {}: call rlx_collectives::bind_groups \
             (this thread) or bind_process_groups (this process) before running the graph",
            id.0
        ));
    };
    groups.get(id).map_err(|e: CollectiveError| e.to_string())
}
