//! A persistent team of worker threads that kernels split work over.
//!
//! Waking a parked thread costs tens of microseconds here, more than many
//! kernels of a small model take, so a pool woken per op (rayon's model)
//! loses on small graphs. The team's workers instead spin for a while after
//! each job ([`SPIN`]) and only then park: the jobs of one graph run, and of
//! runs in a loop, find them awake, so a job costs a few atomic operations.
//!
//! A job is `parts` calls of one closure, claimed part by part by whichever
//! thread is free: the caller takes parts too, so a worker that is late (or
//! whose core is busy) delays nothing — the caller simply runs more parts.
//! One job runs at a time: a caller that finds the team busy (another graph
//! running on another thread) or that is itself inside a job runs its parts
//! inline.

use std::cell::Cell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// How long a worker spins for the next job before it parks.
pub(crate) const SPIN: Duration = Duration::from_millis(2);

/// How long a caller spins for the parts other threads hold before it
/// starts yielding its core.
const YIELD_AFTER: Duration = Duration::from_micros(200);

thread_local! {
    /// True on team workers and on a caller while its job runs: a nested
    /// job runs inline.
    static IN_JOB: Cell<bool> = const { Cell::new(false) };
}

/// A type-erased job: `call(data, part)` runs one part.
#[derive(Clone, Copy)]
struct Job {
    data: usize,
    call: usize,
    parts: usize,
}

/// The part field of a claim while the caller is writing the next job.
const CLOSED: u64 = 0xffff_ffff;

struct Shared {
    /// `(job id << 32) | next unclaimed part`: claiming is one CAS, and a
    /// claim can only succeed on the job it read, so a late worker never
    /// runs a part of a job it did not load. Each job takes two ids: one
    /// under which the claim is [`CLOSED`] while its fields are written,
    /// then the one it runs under.
    claim: AtomicU64,
    /// The current job's closure (written before `claim` publishes it).
    data: AtomicUsize,
    call: AtomicUsize,
    parts: AtomicUsize,
    /// Parts of the current job not yet finished.
    remaining: AtomicUsize,
    /// Workers that may join the current job (`RLX_NUM_THREADS` - 1).
    width: AtomicUsize,
    /// Set while a caller owns the team.
    busy: AtomicBool,
    /// The first panic of a part, re-raised on the caller.
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
    sleepers: Vec<(AtomicBool, OnceLock<Thread>)>,
}

/// The process-wide team.
struct Team {
    shared: Arc<Shared>,
}

fn team() -> &'static Team {
    static TEAM: OnceLock<Team> = OnceLock::new();
    TEAM.get_or_init(|| {
        let cores = thread::available_parallelism().map_or(1, |n| n.get());
        let workers = cores.max(super::kernels::gemm::num_threads()) - 1;
        let shared = Arc::new(Shared {
            claim: AtomicU64::new(0),
            data: AtomicUsize::new(0),
            call: AtomicUsize::new(0),
            parts: AtomicUsize::new(0),
            remaining: AtomicUsize::new(0),
            width: AtomicUsize::new(0),
            busy: AtomicBool::new(false),
            panic: Mutex::new(None),
            sleepers: (0..workers)
                .map(|_| (AtomicBool::new(false), OnceLock::new()))
                .collect(),
        });
        for w in 0..workers {
            let s = Arc::clone(&shared);
            let spawned = thread::Builder::new()
                .name(format!("rlx-cpu-{w}"))
                .spawn(move || worker(&s, w));
            // Without the thread the team is just smaller: the caller runs
            // every part itself.
            if let Ok(h) = spawned {
                let _ = shared.sleepers[w].1.set(h.thread().clone());
            }
        }
        Team { shared }
    })
}

fn worker(s: &Shared, me: usize) {
    IN_JOB.with(|f| f.set(true));
    let mut seen = s.claim.load(SeqCst) >> 32;
    let mut idle_since = Instant::now();
    loop {
        let now = s.claim.load(SeqCst);
        if now >> 32 != seen {
            seen = now >> 32;
            if me < s.width.load(SeqCst) {
                run_parts(s, seen);
            }
            idle_since = Instant::now();
            continue;
        }
        if idle_since.elapsed() < SPIN {
            // No yield here: on a loaded machine a yield hands the core to
            // another process for a whole time slice, and the next job
            // would find this worker gone.
            std::hint::spin_loop();
            continue;
        }
        // Park; the caller unparks after publishing a job if it sees us
        // asleep, and we re-check the job after announcing it (no lost wake-up).
        let (sleeping, _) = &s.sleepers[me];
        sleeping.store(true, SeqCst);
        if s.claim.load(SeqCst) >> 32 == seen {
            thread::park_timeout(Duration::from_millis(100));
        }
        sleeping.store(false, SeqCst);
        idle_since = Instant::now();
    }
}

/// Claims and runs parts of job `id` until none is left.
fn run_parts(s: &Shared, id: u64) {
    loop {
        let cur = s.claim.load(SeqCst);
        if cur >> 32 != id {
            return;
        }
        let job = Job {
            data: s.data.load(SeqCst),
            call: s.call.load(SeqCst),
            parts: s.parts.load(SeqCst),
        };
        let part = (cur & 0xffff_ffff) as usize;
        if part >= job.parts {
            return;
        }
        if s.claim
            .compare_exchange(cur, cur + 1, SeqCst, SeqCst)
            .is_err()
        {
            continue;
        }
        // SAFETY: the claim succeeded on job `id`, so the caller is still
        // waiting for this part and `data` / `call` are that job's closure.
        let call: unsafe fn(usize, usize) = unsafe { std::mem::transmute(job.call) };
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| unsafe { call(job.data, part) })) {
            let mut slot = s.panic.lock().unwrap_or_else(|e| e.into_inner());
            slot.get_or_insert(p);
        }
        s.remaining.fetch_sub(1, SeqCst);
    }
}

unsafe fn trampoline<F: Fn(usize) + Sync>(data: usize, part: usize) {
    // SAFETY: `data` is the `&F` the caller published and keeps alive
    // until every part has finished.
    let f = unsafe { &*(data as *const F) };
    f(part)
}

/// Threads a job may use ([`crate::num_threads`]).
pub(crate) fn threads() -> usize {
    super::kernels::gemm::num_threads()
}

/// Runs `f(0) .. f(parts - 1)` over the team and the calling thread, and
/// returns when all have finished. A panic in a part is re-raised here.
pub(crate) fn parallel_for<F: Fn(usize) + Sync>(parts: usize, f: F) {
    if parts == 0 {
        return;
    }
    let threads = threads();
    if parts == 1 || IN_JOB.with(|j| j.get()) || threads <= 1 {
        (0..parts).for_each(f);
        return;
    }
    let t = team();
    let s = &*t.shared;
    if s.sleepers.is_empty() || s.busy.swap(true, SeqCst) {
        (0..parts).for_each(f);
        return;
    }
    assert!(parts < CLOSED as usize, "a job of {parts} parts");
    // Close the claim under a fresh id before the job's fields change: a
    // worker still in the last job may have read the old claim and be about
    // to read `parts`; with the claim closed its compare-exchange fails,
    // where it once claimed a part of this job under the old id (run twice,
    // counted twice: `remaining` wrapped and the caller waited forever).
    let closed = (s.claim.load(SeqCst) >> 32) + 1;
    s.claim.store(closed << 32 | CLOSED, SeqCst);
    s.remaining.store(parts, SeqCst);
    s.width.store(threads - 1, SeqCst);
    s.data.store(&f as *const F as usize, SeqCst);
    s.call
        .store(trampoline::<F> as unsafe fn(usize, usize) as usize, SeqCst);
    s.parts.store(parts, SeqCst);
    let id = closed + 1;
    s.claim.store(id << 32, SeqCst);
    for (sleeping, th) in &s.sleepers {
        if sleeping.load(SeqCst) {
            if let Some(th) = th.get() {
                th.unpark();
            }
        }
    }
    IN_JOB.with(|j| j.set(true));
    run_parts(s, id);
    let waiting = Instant::now();
    while s.remaining.load(SeqCst) != 0 {
        if waiting.elapsed() < YIELD_AFTER {
            std::hint::spin_loop();
        } else {
            // A part is taking long: its thread may have lost its core to
            // another process, and this core may be the one it needs.
            thread::yield_now();
        }
    }
    IN_JOB.with(|j| j.set(false));
    let panic = s.panic.lock().unwrap_or_else(|e| e.into_inner()).take();
    s.busy.store(false, SeqCst);
    if let Some(p) = panic {
        resume_unwind(p);
    }
}

/// [`parallel_for`] over fallible parts: the first error (by part index).
pub(crate) fn try_parallel_for<E: Send, F: Fn(usize) -> Result<(), E> + Sync>(
    parts: usize,
    f: F,
) -> Result<(), E> {
    let errors: Mutex<Vec<(usize, E)>> = Mutex::new(Vec::new());
    parallel_for(parts, |p| {
        if let Err(e) = f(p) {
            errors
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((p, e));
        }
    });
    let errors = errors.into_inner().unwrap_or_else(|e| e.into_inner());
    match errors.into_iter().min_by_key(|(p, _)| *p) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

/// Splits `0..n` into `parts` contiguous ranges whose bounds are multiples
/// of `align` (the last takes the rest); `parts` is capped so none is empty.
pub(crate) fn split(n: usize, parts: usize, align: usize) -> Vec<std::ops::Range<usize>> {
    let align = align.max(1);
    let units = n.div_ceil(align);
    let parts = parts.clamp(1, units.max(1));
    (0..parts)
        .map(|p| {
            let lo = (units * p / parts * align).min(n);
            let hi = (units * (p + 1) / parts * align).min(n);
            lo..hi
        })
        .collect()
}

/// A mutable slice shared by the parts of a job, each writing a disjoint
/// range of it.
pub(crate) struct Disjoint<'a, T> {
    ptr: *mut T,
    len: usize,
    _life: std::marker::PhantomData<&'a mut [T]>,
}

// SAFETY: parts only reach the data through `range`, whose contract is
// that concurrent ranges do not overlap.
unsafe impl<T: Send> Sync for Disjoint<'_, T> {}

impl<'a, T> Disjoint<'a, T> {
    /// Shares `s` among the parts of a job.
    pub(crate) fn new(s: &'a mut [T]) -> Self {
        Disjoint {
            ptr: s.as_mut_ptr(),
            len: s.len(),
            _life: std::marker::PhantomData,
        }
    }

    /// The elements `r`.
    ///
    /// # Safety
    /// No other live slice from this `Disjoint` may overlap `r`.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn range(&self, r: std::ops::Range<usize>) -> &'a mut [T] {
        assert!(
            r.start <= r.end && r.end <= self.len,
            "disjoint range out of bounds"
        );
        // SAFETY: in bounds (checked), and the caller guarantees exclusivity.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(r.start), r.len()) }
    }

    /// The raw base pointer (for strided sub-blocks; same contract as `range`).
    pub(crate) fn as_ptr(&self) -> *mut T {
        self.ptr
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_runs_once_and_results_land() {
        let mut out = vec![0usize; 1000];
        for round in 0..200 {
            let d = Disjoint::new(&mut out);
            let ranges = split(1000, 7, 16);
            parallel_for(ranges.len(), |p| {
                // SAFETY: split's ranges are disjoint.
                let s = unsafe { d.range(ranges[p].clone()) };
                for (i, x) in s.iter_mut().enumerate() {
                    *x = ranges[p].start + i + round;
                }
            });
            assert!(out.iter().enumerate().all(|(i, &x)| x == i + round));
        }
    }

    #[test]
    fn split_covers_aligned() {
        let r = split(100, 3, 16);
        assert_eq!(r.first().unwrap().start, 0);
        assert_eq!(r.last().unwrap().end, 100);
        assert!(r
            .windows(2)
            .all(|w| w[0].end == w[1].start && w[0].end % 16 == 0));
        assert_eq!(split(5, 8, 16), vec![0..5]);
        assert_eq!(split(0, 4, 1), vec![0..0]);
    }

    #[test]
    fn errors_and_panics_reach_the_caller() {
        let e = try_parallel_for(8, |p| {
            if p >= 5 {
                Err(format!("part {p}"))
            } else {
                Ok(())
            }
        });
        assert_eq!(e, Err("part 5".into()));
        let caught = catch_unwind(|| parallel_for(4, |p| assert!(p != 2, "boom")));
        assert!(caught.is_err());
        // The team is usable after a panic.
        let n = AtomicUsize::new(0);
        parallel_for(16, |_| {
            n.fetch_add(1, SeqCst);
        });
        assert_eq!(n.load(SeqCst), 16);
    }

    /// Back-to-back jobs whose part counts alternate: a worker still
    /// inside the last job must never run (or count) a part of the next.
    /// The jobs run under a watchdog, so a caller left waiting for a
    /// miscounted part fails the test instead of hanging it (before the
    /// claim was closed between jobs, this hung within a million jobs).
    #[test]
    fn late_workers_never_touch_the_next_job() {
        let (done, finished) = std::sync::mpsc::channel();
        thread::spawn(move || {
            crate::threads::with_limit(Some(2), || {
                for round in 0..2_000_000usize {
                    let parts = [2, 9, 3, 16][round % 4];
                    let runs: Vec<AtomicUsize> = (0..parts).map(|_| AtomicUsize::new(0)).collect();
                    parallel_for(parts, |p| {
                        runs[p].fetch_add(1, SeqCst);
                    });
                    let counts: Vec<usize> = runs.iter().map(|r| r.load(SeqCst)).collect();
                    if counts.iter().any(|&c| c != 1) {
                        let _ = done.send(Err(format!("round {round}: part runs {counts:?}")));
                        return;
                    }
                }
                let _ = done.send(Ok(()));
            })
        });
        match finished.recv_timeout(Duration::from_secs(120)) {
            Ok(r) => r.unwrap(),
            Err(_) => panic!("a job never finished: its caller waits for a miscounted part"),
        }
    }

    #[test]
    fn concurrent_callers_and_nested_jobs() {
        let total = AtomicUsize::new(0);
        thread::scope(|sc| {
            for _ in 0..4 {
                sc.spawn(|| {
                    for _ in 0..50 {
                        parallel_for(3, |_| {
                            parallel_for(2, |_| {
                                total.fetch_add(1, SeqCst);
                            })
                        });
                    }
                });
            }
        });
        assert_eq!(total.load(SeqCst), 4 * 50 * 6);
    }
}
