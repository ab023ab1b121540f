//! [`DeviceRouter`]: sends each request to a device by rule: batch size
//! thresholds, latency measured on earlier requests, availability.

use crate::devices::{is_available, unavailable_reason, DeviceFallbackError};
use crate::{DeviceCandidate, DevicePolicy, GraphDevices};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Weight of the newest sample in a latency estimate (an exponential
/// moving average, so a device that slows down is noticed).
const LATENCY_SMOOTHING: f64 = 0.3;

/// Routes requests to devices.
///
/// Each request has a batch size. The candidates, best first, are those of
/// the [`DeviceRouter::batch_at_least`] rules whose threshold the batch
/// reaches (highest threshold first), then the default chain. Candidates
/// that are not available or that the [`DevicePolicy`] refuses are passed
/// over. With [`DeviceRouter::prefer_measured_latency`], the rules only
/// name the candidates and the measured latency for the request's size
/// class (powers of two) chooses: a candidate not yet measured is tried
/// first, then the fastest.
///
/// ```
/// use rlx_runtime::{DeviceCandidate, DeviceRouter};
/// let one = DeviceCandidate::cpu_threads(1);
/// let all = DeviceCandidate::cpu_threads(2);
/// let router = DeviceRouter::new(vec![one]).batch_at_least(32, all);
/// assert_eq!(router.route(4).unwrap(), one);
/// assert_eq!(router.route(64).unwrap(), all);
/// ```
#[derive(Clone, Debug)]
pub struct DeviceRouter {
    /// `(min_batch, candidate)`, highest threshold first.
    thresholds: Vec<(usize, DeviceCandidate)>,
    default_chain: Vec<DeviceCandidate>,
    policy: DevicePolicy,
    by_latency: bool,
    /// Smoothed latency in ms by candidate and batch size class.
    latency: HashMap<(DeviceCandidate, usize), f64>,
}

impl DeviceRouter {
    /// A router that sends every request to the first usable candidate of
    /// `default_chain` until rules are added.
    pub fn new(default_chain: Vec<DeviceCandidate>) -> DeviceRouter {
        DeviceRouter {
            thresholds: Vec::new(),
            default_chain,
            policy: DevicePolicy::default(),
            by_latency: false,
            latency: HashMap::new(),
        }
    }

    /// Requests of at least `min_batch` go to `to` (when usable).
    pub fn batch_at_least(mut self, min_batch: usize, to: DeviceCandidate) -> DeviceRouter {
        self.thresholds.push((min_batch, to));
        self.thresholds.sort_by_key(|t| std::cmp::Reverse(t.0));
        self
    }

    /// Devices the router may use (denied / not allowed ones are passed
    /// over; with fallback off, a failed run is not retried elsewhere).
    pub fn policy(mut self, policy: DevicePolicy) -> DeviceRouter {
        self.policy = policy;
        self
    }

    /// Lets measured latency choose among the candidates the rules name.
    pub fn prefer_measured_latency(mut self, on: bool) -> DeviceRouter {
        self.by_latency = on;
        self
    }

    fn size_class(batch: usize) -> usize {
        batch.max(1).next_power_of_two()
    }

    /// Records that a request of `batch` took `elapsed` on `candidate`.
    pub fn record(&mut self, candidate: DeviceCandidate, batch: usize, elapsed: Duration) {
        let ms = elapsed.as_secs_f64() * 1e3;
        self.latency
            .entry((candidate, Self::size_class(batch)))
            .and_modify(|m| *m += LATENCY_SMOOTHING * (ms - *m))
            .or_insert(ms);
    }

    /// The smoothed latency measured for `candidate` at `batch`'s size class.
    pub fn measured_ms(&self, candidate: DeviceCandidate, batch: usize) -> Option<f64> {
        self.latency
            .get(&(candidate, Self::size_class(batch)))
            .copied()
    }

    /// The usable candidates for a request of `batch`, best first, and why
    /// each other one was passed over.
    pub fn ranked(&self, batch: usize) -> (Vec<DeviceCandidate>, Vec<(DeviceCandidate, String)>) {
        let named = self
            .thresholds
            .iter()
            .filter(|(min, _)| batch >= *min)
            .map(|&(_, c)| c)
            .chain(self.default_chain.iter().copied());
        let (mut usable, mut skipped) = (Vec::new(), Vec::new());
        for c in named {
            if usable.contains(&c) || skipped.iter().any(|(s, _)| *s == c) {
                continue;
            }
            if let Err(why) = self.policy.check(c.device) {
                skipped.push((c, why));
            } else if !is_available(c.device) {
                skipped.push((c, unavailable_reason(c.device)));
            } else {
                usable.push(c);
            }
        }
        if self.by_latency {
            // Unmeasured first (in rule order: the sort is stable), then fastest.
            let key =
                |c: &DeviceCandidate| self.measured_ms(*c, batch).unwrap_or(f64::NEG_INFINITY);
            usable.sort_by(|a, b| key(a).total_cmp(&key(b)));
        }
        (usable, skipped)
    }

    /// The candidate a request of `batch` goes to; none usable: why each was passed over.
    pub fn route(&self, batch: usize) -> Result<DeviceCandidate, DeviceFallbackError> {
        let (usable, skipped) = self.ranked(batch);
        usable
            .first()
            .copied()
            .ok_or_else(|| fallback_error(skipped, Vec::new()))
    }

    /// Routes a request of `batch` and runs it on `graphs` (compiled there
    /// on first use), timing it for later routing. A failed run moves on to
    /// the next usable candidate unless the policy turns fallback off.
    /// Returns the candidate that ran it and the outputs.
    pub fn run(
        &mut self,
        graphs: &mut GraphDevices,
        batch: usize,
        inputs: &[(&str, &[f32])],
    ) -> Result<(DeviceCandidate, Vec<Vec<f32>>), DeviceFallbackError> {
        let (usable, skipped) = self.ranked(batch);
        let mut failed = Vec::new();
        for c in usable {
            let start = Instant::now();
            match graphs.run_on(c, inputs) {
                Ok(out) => {
                    self.record(c, batch, start.elapsed());
                    return Ok((c, out));
                }
                Err(e) => failed.push((c, e.to_string())),
            }
            if !self.policy.fallback {
                break;
            }
        }
        Err(fallback_error(skipped, failed))
    }
}

fn fallback_error(
    skipped: Vec<(DeviceCandidate, String)>,
    failed: Vec<(DeviceCandidate, String)>,
) -> DeviceFallbackError {
    let mut attempts: Vec<_> = skipped
        .into_iter()
        .chain(failed)
        .map(|(c, why)| c.attempt(why))
        .collect();
    if attempts.is_empty() {
        attempts.push((
            rlx_driver::Device::Cpu,
            "the router has no candidate".into(),
        ));
    }
    DeviceFallbackError { attempts }
}
