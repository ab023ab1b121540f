//! The dual 16-bit multiply-accumulate behind every inner product.
//!
//! `SMLAD acc, a, b` computes `acc + a.lo * b.lo + a.hi * b.hi` where `a` and
//! `b` each hold two signed 16-bit halves, with a wrapping 32-bit add. On a
//! core with the DSP extension [`smlad`] is that instruction; elsewhere it is
//! an emulation doing the same 32-bit arithmetic, so the pairing (and the
//! order of the additions) is the same on every target and so are the bits.
//! Kernels keep every accumulator within the int32 range (they check the
//! depth and the bias first), where the paired sum equals the plain sum.

/// Two signed 16-bit values in one word: `lo` in bits 0..16, `hi` in 16..32
/// (what `SXTB16` leaves in a register).
#[inline]
pub fn pack_pair(lo: i16, hi: i16) -> u32 {
    (lo as u16 as u32) | ((hi as u16 as u32) << 16)
}

/// `SMLAD`: `acc + lo(a) * lo(b) + hi(a) * hi(b)`, wrapping.
#[cfg(rlx_dsp)]
#[inline]
pub fn smlad(a: u32, b: u32, acc: i32) -> i32 {
    let out: i32;
    // SAFETY: SMLAD only reads and writes the three registers named here.
    unsafe {
        core::arch::asm!(
            "smlad {out}, {a}, {b}, {acc}",
            out = lateout(reg) out,
            a = in(reg) a,
            b = in(reg) b,
            acc = in(reg) acc,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    out
}

/// `SMLAD` emulated: `acc + lo(a) * lo(b) + hi(a) * hi(b)`, wrapping.
#[cfg(not(rlx_dsp))]
#[inline]
pub fn smlad(a: u32, b: u32, acc: i32) -> i32 {
    smlad_portable(a, b, acc)
}

/// The portable `SMLAD` (also what the DSP path is tested against).
#[inline]
pub fn smlad_portable(a: u32, b: u32, acc: i32) -> i32 {
    let lo = (a as u16 as i16 as i32) * (b as u16 as i16 as i32);
    let hi = ((a >> 16) as u16 as i16 as i32) * ((b >> 16) as u16 as i16 as i32);
    // The instruction adds both products to the accumulator in one 32-bit
    // sum; each product fits in 31 bits, their wrapped sum is the same.
    acc.wrapping_add(lo.wrapping_add(hi))
}

/// `acc + sum_i (x[i] + input_offset) * w[i]` over equal-length slices,
/// pairing consecutive elements into [`smlad`] (an odd tail is one scalar
/// product). `input_offset` is minus the input zero point.
#[inline]
pub fn dot_offset(x: &[i8], w: &[i8], input_offset: i32, acc: i32) -> i32 {
    debug_assert_eq!(x.len(), w.len());
    let mut acc = acc;
    let mut xs = x.chunks_exact(2);
    let mut ws = w.chunks_exact(2);
    for (xp, wp) in (&mut xs).zip(&mut ws) {
        let a = pack_pair(
            (xp[0] as i32 + input_offset) as i16,
            (xp[1] as i32 + input_offset) as i16,
        );
        let b = pack_pair(wp[0] as i16, wp[1] as i16);
        acc = smlad(a, b, acc);
    }
    for (&xv, &wv) in xs.remainder().iter().zip(ws.remainder()) {
        acc = acc.wrapping_add((xv as i32 + input_offset) * wv as i32);
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift) for the exhaustive-ish checks.
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn portable_smlad_is_two_products_and_a_wrapping_add() {
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..100_000 {
            let r = next(&mut s);
            let (a0, a1, b0, b1) = (
                r as i16,
                (r >> 16) as i16,
                (r >> 32) as i16,
                (r >> 48) as i16,
            );
            let acc = next(&mut s) as i32;
            let wide = acc as i64 + a0 as i64 * b0 as i64 + a1 as i64 * b1 as i64;
            let got = smlad_portable(pack_pair(a0, a1), pack_pair(b0, b1), acc);
            assert_eq!(got, wide as i32, "{a0} {a1} {b0} {b1} {acc}");
        }
    }

    #[test]
    fn smlad_extremes_wrap_like_the_instruction() {
        // -32768 * -32768 twice = 2^31: the instruction wraps to i32::MIN.
        let m = pack_pair(i16::MIN, i16::MIN);
        assert_eq!(smlad_portable(m, m, 0), i32::MIN);
        assert_eq!(smlad_portable(m, m, -1), i32::MAX);
        assert_eq!(smlad(m, m, 5), smlad_portable(m, m, 5));
    }

    #[test]
    fn paired_dot_equals_the_plain_sum_for_every_length_and_offset() {
        let mut s = 12345u64;
        for len in 0..40usize {
            for &off in &[-127i32, -1, 0, 1, 128] {
                let x: std::vec::Vec<i8> = (0..len).map(|_| next(&mut s) as i8).collect();
                let w: std::vec::Vec<i8> = (0..len).map(|_| next(&mut s) as i8).collect();
                let plain: i64 = x
                    .iter()
                    .zip(&w)
                    .map(|(&a, &b)| (a as i64 + off as i64) * b as i64)
                    .sum();
                assert_eq!(dot_offset(&x, &w, off, 7) as i64, plain + 7);
            }
        }
    }
}
