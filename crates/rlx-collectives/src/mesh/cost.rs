//! Closed-form communication costs.

/// A network link: bandwidth in bytes per second and one-way latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkSpec {
    /// Sustained bandwidth of one link, in bytes per second.
    pub bandwidth_bytes_per_s: f64,
    /// One-way latency of one message, in seconds.
    pub latency_s: f64,
}

impl LinkSpec {
    /// A link of `gbit_per_s` gigabits per second and `latency_us` microseconds.
    pub fn gbit(gbit_per_s: f64, latency_us: f64) -> Self {
        LinkSpec {
            bandwidth_bytes_per_s: gbit_per_s * 1e9 / 8.0,
            latency_s: latency_us * 1e-6,
        }
    }

    /// Seconds to send `bytes` point to point: latency + bytes / bandwidth.
    pub fn send_seconds(&self, bytes: f64) -> f64 {
        if bytes <= 0.0 {
            return 0.0;
        }
        self.latency_s + bytes / self.bandwidth_bytes_per_s
    }
}

/// Seconds for a ring all-reduce of `bytes` over `ranks` ranks.
///
/// A ring reduce-scatter then all-gather: `2(n-1)` steps, each moving
/// `bytes / n` per rank, so `2(n-1)/n · bytes / bandwidth + 2(n-1) · latency`.
/// One rank (or nothing to send) costs nothing.
pub fn ring_all_reduce_seconds(bytes: f64, ranks: usize, link: &LinkSpec) -> f64 {
    if ranks <= 1 || bytes <= 0.0 {
        return 0.0;
    }
    let n = ranks as f64;
    let steps = 2.0 * (n - 1.0);
    steps / n * bytes / link.bandwidth_bytes_per_s + steps * link.latency_s
}
