//! The [`BitGenerator`] trait: the raw-bit interface numpy's distributions
//! are written against (`bitgen_t`: `next_uint32`, `next_uint64`,
//! `next_double`), implemented by [`Mt19937`](crate::Mt19937) and
//! [`Pcg64`](crate::Pcg64).

/// A source of raw random bits, as numpy's `bitgen_t`.
///
/// Each generator keeps numpy's exact conversions: for example
/// [`Pcg64::next_u32`](crate::Pcg64) returns the low half of a 64-bit draw
/// and buffers the high half for the next call, as numpy does.
pub trait BitGenerator {
    /// numpy's `next_uint32`.
    fn next_u32(&mut self) -> u32;
    /// numpy's `next_uint64`.
    fn next_u64(&mut self) -> u64;
    /// numpy's `next_double`: a uniform float64 in `[0, 1)` with 53 random bits.
    fn next_f64(&mut self) -> f64;
    /// numpy's `next_float`: `(next_uint32 >> 8) * 2^-24`, a uniform float32 in `[0, 1)`.
    fn next_f32(&mut self) -> f32 {
        (self.next_u32() >> 8) as f32 * (1.0 / 16_777_216.0)
    }
}
