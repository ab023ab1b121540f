//! How many threads the kernels split work over: the limit of the
//! executable running on this thread when it has one
//! ([`rlx_driver::Executable::limit_threads`]), else `RLX_NUM_THREADS`,
//! else the available cores.
//!
//! The limit is per run, not per process, so two executables of one
//! process (a 1-thread and an all-cores "device") keep their own counts.

use std::cell::Cell;

thread_local! {
    /// The limit of the executable running on this thread, if any.
    static LIMIT: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Worker threads for the CPU kernels: the running executable's limit,
/// else `RLX_NUM_THREADS` when set to a positive integer, else the
/// available cores. Read on every call (tests and benchmarks change the
/// variable in process); a bad value falls back to the cores here and is
/// reported by `RlxEnv::current`.
pub fn num_threads() -> usize {
    LIMIT.with(Cell::get).unwrap_or_else(|| {
        rlx_ir::env::vars::NUM_THREADS
            .get()
            .ok()
            .flatten()
            .unwrap_or_else(cores)
    })
}

/// The available cores, asked once: `available_parallelism` reads the
/// cgroup's CPU quota files on every call (tens of microseconds), and
/// kernels ask for the thread count on every call (a tenth of a ResNet-18
/// run went there).
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Runs `f` with the kernels of this thread limited to `limit` threads
/// (`None`: no limit of its own, the enclosing one stays), restoring the
/// enclosing limit afterwards, also when `f` panics.
pub(crate) fn with_limit<R>(limit: Option<usize>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<usize>);
    impl Drop for Restore {
        fn drop(&mut self) {
            LIMIT.with(|l| l.set(self.0));
        }
    }
    let Some(n) = limit else { return f() };
    let _restore = Restore(LIMIT.with(|l| l.replace(Some(n))));
    f()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::team;
    use std::collections::HashSet;
    use std::sync::Mutex;

    /// The threads that ran the parts of one 64-part job.
    fn threads_of_a_job() -> usize {
        let seen = Mutex::new(HashSet::new());
        team::parallel_for(64, |_| {
            // Long enough parts that a free worker joins in.
            std::thread::sleep(std::time::Duration::from_micros(200));
            seen.lock().unwrap().insert(std::thread::current().id());
        });
        let n = seen.lock().unwrap().len();
        n
    }

    #[test]
    fn a_limit_holds_for_its_scope_and_nests() {
        let outside = num_threads();
        with_limit(Some(1), || {
            assert_eq!(num_threads(), 1);
            // A limit of one runs every part on the calling thread.
            assert_eq!(threads_of_a_job(), 1);
            with_limit(Some(3), || assert_eq!(num_threads(), 3));
            with_limit(None, || assert_eq!(num_threads(), 1));
            assert_eq!(num_threads(), 1);
        });
        assert_eq!(num_threads(), outside);
        let r = std::panic::catch_unwind(|| with_limit(Some(2), || panic!("inside")));
        assert!(r.is_err());
        assert_eq!(num_threads(), outside, "restored after a panic");
    }
}
