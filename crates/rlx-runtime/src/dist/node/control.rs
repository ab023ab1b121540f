//! [`NodeControl`] / [`NodeStopHandle`]: stopping a serving node cleanly
//! from another thread.

use rlx_collectives::{CollectiveError, ProcessGroup};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    group: Mutex<Option<Arc<dyn ProcessGroup>>>,
}

/// What a serving loop checks between messages. A stop also fails the
/// node's process group (its peers learn at once; a receive blocked on it
/// returns), so no loop waits for a timeout to notice.
#[derive(Clone, Default)]
pub struct NodeControl {
    shared: Arc<Shared>,
}

/// Asks the node of a [`NodeControl`] to stop; cheap to clone and send.
#[derive(Clone)]
pub struct NodeStopHandle {
    shared: Arc<Shared>,
}

impl NodeControl {
    /// A control that has not been stopped.
    pub fn new() -> Self {
        Self::default()
    }

    /// A handle another thread can stop this node with.
    pub fn stop_handle(&self) -> NodeStopHandle {
        NodeStopHandle {
            shared: self.shared.clone(),
        }
    }

    /// Whether a stop was requested.
    pub fn is_stopped(&self) -> bool {
        self.shared.stop.load(Ordering::SeqCst)
    }

    /// Attaches the group a stop must interrupt (done by the serve functions).
    pub fn attach(&self, group: Arc<dyn ProcessGroup>) {
        *self.shared.group.lock().unwrap_or_else(|p| p.into_inner()) = Some(group);
        // A stop that came before the group was attached still interrupts it.
        if self.is_stopped() {
            self.stop_handle().stop();
        }
    }
}

impl NodeStopHandle {
    /// Requests the stop: the node's loop returns its report as soon as the
    /// current message is done, or at once if it is waiting for one.
    pub fn stop(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(g) = self
            .shared
            .group
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            g.abort(&CollectiveError::GroupFailed(
                "node stopped by request".into(),
            ));
        }
    }
}
