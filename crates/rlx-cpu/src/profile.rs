//! Per-node timing of a [`crate::CpuExecutable`], switched on by the
//! `RLX_CPU_PROFILE` environment variable (read through `rlx_ir::env` when
//! the executable is built): each scheduled node's kernel time is summed by
//! its op mnemonic and output dims, and the table goes to stderr, largest
//! first, when the executable is dropped.

use std::collections::HashMap;
use std::time::Duration;

/// Summed kernel time per (op, output dims).
#[derive(Default)]
pub(crate) struct Profile {
    by_op: HashMap<String, (usize, Duration)>,
    runs: usize,
}

impl Profile {
    /// A profile when `RLX_CPU_PROFILE` is set to anything but `0` / empty.
    pub(crate) fn from_env() -> Option<Profile> {
        let on = rlx_ir::env::vars::CPU_PROFILE.get().ok().flatten() == Some(true);
        on.then(Profile::default)
    }

    /// Adds one kernel call.
    pub(crate) fn record(&mut self, key: impl FnOnce() -> String, took: Duration) {
        let e = self.by_op.entry(key()).or_default();
        e.0 += 1;
        e.1 += took;
    }

    /// Counts one `run`.
    pub(crate) fn end_run(&mut self) {
        self.runs += 1;
    }
}

impl Drop for Profile {
    fn drop(&mut self) {
        let runs = self.runs.max(1) as f64;
        let total: Duration = self.by_op.values().map(|v| v.1).sum();
        let mut rows: Vec<_> = self.by_op.iter().collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.1 .1));
        eprintln!(
            "RLX_CPU_PROFILE: {} runs, {:.3} ms of kernels per run",
            self.runs,
            total.as_secs_f64() * 1e3 / runs
        );
        for (op, (calls, t)) in rows {
            eprintln!(
                "{:>9.3} ms/run {:>5.1}% {:>6} calls/run  {op}",
                t.as_secs_f64() * 1e3 / runs,
                100.0 * t.as_secs_f64() / total.as_secs_f64().max(1e-12),
                *calls as f64 / runs,
            );
        }
    }
}
