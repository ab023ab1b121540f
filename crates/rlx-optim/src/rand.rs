//! A small counter-based random stream (SplitMix64 mixing) for the
//! optimizers that draw random numbers (Kron-PSGD): each draw is a pure
//! function of `(seed, a, b, c)`, so a run is reproducible whatever the
//! order in which parameters are stepped, and the stream is easy to
//! reimplement (tools/numpy_optim_ref.py does).

/// SplitMix64's finaliser.
pub(crate) fn mix64(z: u64) -> u64 {
    let mut z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The 64 random bits of draw `(a, b, c)` of stream `seed`.
pub(crate) fn key(seed: u64, a: u64, b: u64, c: u64) -> u64 {
    mix64(mix64(mix64(seed ^ a) ^ b) ^ c)
}

/// A uniform in (0, 1): the top 53 bits, offset by half a step.
pub(crate) fn uniform(seed: u64, a: u64, b: u64, c: u64) -> f64 {
    ((key(seed, a, b, c) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// A standard normal by Box–Muller from draws `2i` and `2i + 1`.
pub(crate) fn normal(seed: u64, a: u64, b: u64, i: u64) -> f64 {
    let u1 = uniform(seed, a, b, 2 * i);
    let u2 = uniform(seed, a, b, 2 * i + 1);
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// FNV-1a of a parameter name: its stream index.
pub(crate) fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
