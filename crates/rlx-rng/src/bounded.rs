//! numpy's bounded integer samplers (`distributions.c` /
//! `_bounded_integers.pyx`): the masked rejection method (legacy
//! `RandomState`) and Lemire's multiply-shift method (`Generator`), for
//! 64, 32, 16 and 8-bit outputs. The 8 and 16-bit samplers slice one
//! 32-bit draw into several values through a buffer that lives for one
//! fill call; the 32-bit sampler calls the bit generator's own (for PCG64
//! buffered) `next_u32`.

use crate::bit_generator::BitGenerator;

/// The smallest all-ones mask `>= max`.
pub(crate) fn gen_mask(max: u64) -> u64 {
    let mut m = max;
    m |= m >> 1;
    m |= m >> 2;
    m |= m >> 4;
    m |= m >> 8;
    m |= m >> 16;
    m |= m >> 32;
    m
}

/// numpy's `shuffle(x)`: Fisher-Yates from the end with
/// [`random_interval`] indices (the order both `Generator` and
/// `RandomState` draw in).
pub(crate) fn shuffle<T, B: BitGenerator + ?Sized>(b: &mut B, x: &mut [T]) {
    for i in (1..x.len()).rev() {
        let j = random_interval(b, i as u64) as usize;
        x.swap(i, j);
    }
}

/// `random_interval(max)`: uniform in `[0, max]` by masked rejection, with
/// 32-bit draws while `max` fits in 32 bits (the shuffle primitive).
pub(crate) fn random_interval<B: BitGenerator + ?Sized>(b: &mut B, max: u64) -> u64 {
    if max == 0 {
        return 0;
    }
    let mask = gen_mask(max);
    if max <= 0xffff_ffff {
        loop {
            let v = (b.next_u32() as u64) & mask;
            if v <= max {
                return v;
            }
        }
    } else {
        loop {
            let v = b.next_u64() & mask;
            if v <= max {
                return v;
            }
        }
    }
}

fn masked_u64<B: BitGenerator + ?Sized>(b: &mut B, rng: u64, mask: u64) -> u64 {
    loop {
        let v = b.next_u64() & mask;
        if v <= rng {
            return v;
        }
    }
}

fn lemire_u64<B: BitGenerator + ?Sized>(b: &mut B, rng: u64) -> u64 {
    let excl = rng + 1;
    let mut m = (b.next_u64() as u128) * excl as u128;
    let mut leftover = m as u64;
    if leftover < excl {
        let threshold = (u64::MAX - rng) % excl;
        while leftover < threshold {
            m = (b.next_u64() as u128) * excl as u128;
            leftover = m as u64;
        }
    }
    (m >> 64) as u64
}

fn masked_u32<B: BitGenerator + ?Sized>(b: &mut B, rng: u32, mask: u32) -> u32 {
    loop {
        let v = b.next_u32() & mask;
        if v <= rng {
            return v;
        }
    }
}

fn lemire_u32<B: BitGenerator + ?Sized>(b: &mut B, rng: u32) -> u32 {
    let excl = rng + 1;
    let mut m = (b.next_u32() as u64) * excl as u64;
    let mut leftover = m as u32;
    if leftover < excl {
        let threshold = (u32::MAX - rng) % excl;
        while leftover < threshold {
            m = (b.next_u32() as u64) * excl as u64;
            leftover = m as u32;
        }
    }
    (m >> 32) as u32
}

/// The 32-bit buffer numpy's 8 / 16-bit samplers slice values out of.
struct Buf32 {
    buf: u32,
    left: u32,
}

impl Buf32 {
    fn new() -> Self {
        Buf32 { buf: 0, left: 0 }
    }

    /// `buffered_uint16` (`bits = 16`) / `buffered_uint8` (`bits = 8`).
    fn take<B: BitGenerator + ?Sized>(&mut self, b: &mut B, bits: u32) -> u32 {
        if self.left == 0 {
            self.buf = b.next_u32();
            self.left = 32 / bits - 1;
        } else {
            self.buf >>= bits;
            self.left -= 1;
        }
        self.buf & ((1u32 << bits) - 1)
    }
}

/// `random_bounded_uint64(off, rng, use_masked)`: one value in
/// `off + [0, rng]`.
pub(crate) fn bounded_u64<B: BitGenerator + ?Sized>(
    b: &mut B,
    off: u64,
    rng: u64,
    masked: bool,
) -> u64 {
    let v = if rng == 0 {
        0
    } else if rng <= 0xffff_ffff {
        if rng == 0xffff_ffff {
            b.next_u32() as u64
        } else if masked {
            masked_u32(b, rng as u32, gen_mask(rng) as u32) as u64
        } else {
            lemire_u32(b, rng as u32) as u64
        }
    } else if rng == u64::MAX {
        b.next_u64()
    } else if masked {
        masked_u64(b, rng, gen_mask(rng))
    } else {
        lemire_u64(b, rng)
    };
    off.wrapping_add(v)
}

/// `random_bounded_uint64_fill`.
pub(crate) fn fill_u64<B: BitGenerator + ?Sized>(
    b: &mut B,
    off: u64,
    rng: u64,
    n: usize,
    masked: bool,
) -> Vec<u64> {
    (0..n).map(|_| bounded_u64(b, off, rng, masked)).collect()
}

/// `random_bounded_uint32_fill`.
pub(crate) fn fill_u32<B: BitGenerator + ?Sized>(
    b: &mut B,
    off: u32,
    rng: u32,
    n: usize,
    masked: bool,
) -> Vec<u32> {
    let mask = gen_mask(rng as u64) as u32;
    (0..n)
        .map(|_| {
            let v = if rng == 0 {
                0
            } else if rng == u32::MAX {
                b.next_u32()
            } else if masked {
                masked_u32(b, rng, mask)
            } else {
                lemire_u32(b, rng)
            };
            off.wrapping_add(v)
        })
        .collect()
}

/// `random_bounded_uint16_fill` (`bits = 16`) and `random_bounded_uint8_fill`
/// (`bits = 8`); values are returned widened to `u32`.
pub(crate) fn fill_small<B: BitGenerator + ?Sized>(
    b: &mut B,
    off: u32,
    rng: u32,
    n: usize,
    masked: bool,
    bits: u32,
) -> Vec<u32> {
    let full = (1u32 << bits) - 1;
    let mask = gen_mask(rng as u64) as u32;
    let mut buf = Buf32::new();
    (0..n)
        .map(|_| {
            let v = if rng == 0 {
                0
            } else if rng == full {
                buf.take(b, bits)
            } else if masked {
                loop {
                    let v = buf.take(b, bits) & mask;
                    if v <= rng {
                        break v;
                    }
                }
            } else {
                // Lemire in 2 * bits wide arithmetic
                let excl = rng + 1;
                let mut m = buf.take(b, bits) * excl;
                let mut leftover = m & full;
                if leftover < excl {
                    let threshold = (full - rng) % excl;
                    while leftover < threshold {
                        m = buf.take(b, bits) * excl;
                        leftover = m & full;
                    }
                }
                m >> bits
            };
            off.wrapping_add(v) & full
        })
        .collect()
}

/// `random_bounded_bool_fill`: one bit per value from a 32-bit buffer.
pub(crate) fn fill_bool<B: BitGenerator + ?Sized>(
    b: &mut B,
    off: bool,
    rng: bool,
    n: usize,
) -> Vec<bool> {
    let (mut buf, mut left) = (0u32, 0u32);
    (0..n)
        .map(|_| {
            if !rng {
                return off;
            }
            if left == 0 {
                buf = b.next_u32();
                left = 31;
            } else {
                buf >>= 1;
                left -= 1;
            }
            buf & 1 != 0
        })
        .collect()
}

mod sealed {
    pub trait Sealed {}
}

/// An output dtype of numpy's bounded integer sampling (`integers`,
/// `randint`): `i8` .. `i64`, `u8` .. `u64` and `bool`. Each width has
/// its own sampler in numpy, and so its own stream.
pub trait NumpyInt: Copy + sealed::Sealed {
    /// numpy's name of the dtype (`"int64"`, ...).
    const NAME: &'static str;
    /// The smallest value of the dtype.
    const MIN: i128;
    /// The largest value of the dtype.
    const MAX: i128;
    /// Draws `n` values in the closed range `[low, high]` (already checked
    /// to lie in the dtype).
    #[doc(hidden)]
    fn fill<B: BitGenerator + ?Sized>(
        b: &mut B,
        low: i128,
        high: i128,
        n: usize,
        masked: bool,
    ) -> Vec<Self>;
}

macro_rules! numpy_int {
    ($t:ty, $name:literal, |$b:ident, $off:ident, $rng:ident, $n:ident, $masked:ident| $body:expr) => {
        impl sealed::Sealed for $t {}
        impl NumpyInt for $t {
            const NAME: &'static str = $name;
            const MIN: i128 = <$t>::MIN as i128;
            const MAX: i128 = <$t>::MAX as i128;
            fn fill<B: BitGenerator + ?Sized>(
                $b: &mut B,
                low: i128,
                high: i128,
                $n: usize,
                $masked: bool,
            ) -> Vec<Self> {
                // two's complement: offset and range as unsigned words of the width
                let $off = low as u64;
                let $rng = (high - low) as u64;
                $body
            }
        }
    };
}

numpy_int!(i64, "int64", |b, off, rng, n, masked| fill_u64(
    b, off, rng, n, masked
)
.into_iter()
.map(|v| v as i64)
.collect());
numpy_int!(u64, "uint64", |b, off, rng, n, masked| fill_u64(
    b, off, rng, n, masked
));
numpy_int!(i32, "int32", |b, off, rng, n, masked| fill_u32(
    b, off as u32, rng as u32, n, masked
)
.into_iter()
.map(|v| v as i32)
.collect());
numpy_int!(u32, "uint32", |b, off, rng, n, masked| fill_u32(
    b, off as u32, rng as u32, n, masked
));
numpy_int!(i16, "int16", |b, off, rng, n, masked| fill_small(
    b,
    off as u32 & 0xffff,
    rng as u32,
    n,
    masked,
    16
)
.into_iter()
.map(|v| v as u16 as i16)
.collect());
numpy_int!(u16, "uint16", |b, off, rng, n, masked| fill_small(
    b,
    off as u32 & 0xffff,
    rng as u32,
    n,
    masked,
    16
)
.into_iter()
.map(|v| v as u16)
.collect());
numpy_int!(i8, "int8", |b, off, rng, n, masked| fill_small(
    b,
    off as u32 & 0xff,
    rng as u32,
    n,
    masked,
    8
)
.into_iter()
.map(|v| v as u8 as i8)
.collect());
numpy_int!(u8, "uint8", |b, off, rng, n, masked| fill_small(
    b,
    off as u32 & 0xff,
    rng as u32,
    n,
    masked,
    8
)
.into_iter()
.map(|v| v as u8)
.collect());

impl sealed::Sealed for bool {}
impl NumpyInt for bool {
    const NAME: &'static str = "bool";
    const MIN: i128 = 0;
    const MAX: i128 = 1;
    fn fill<B: BitGenerator + ?Sized>(
        b: &mut B,
        low: i128,
        high: i128,
        n: usize,
        _masked: bool,
    ) -> Vec<Self> {
        fill_bool(b, low != 0, high != low, n)
    }
}

/// The checks and dispatch of numpy's `_rand_<dtype>`: `[low, high)` (or
/// `[low, high]` when `closed`) into `n` values of `T`.
pub(crate) fn integers<T: NumpyInt, B: BitGenerator + ?Sized>(
    b: &mut B,
    low: i128,
    high: i128,
    n: usize,
    closed: bool,
    masked: bool,
) -> crate::Result<Vec<T>> {
    let high_incl = if closed { high } else { high - 1 };
    if low < T::MIN {
        return Err(crate::RngError::BoundOutOfRange {
            which: "low",
            value: low,
            dtype: T::NAME,
        });
    }
    if high_incl > T::MAX {
        return Err(crate::RngError::BoundOutOfRange {
            which: "high",
            value: high,
            dtype: T::NAME,
        });
    }
    if low > high_incl {
        return Err(crate::RngError::EmptyRange { low, high, closed });
    }
    Ok(T::fill(b, low, high_incl, n, masked))
}
