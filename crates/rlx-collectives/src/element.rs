//! Element types the collectives move and reduce: f16, f32, f64, i32.

use crate::error::{CollectiveError, Result};
use half::f16;

/// The element type of a collective's buffer, sent with every payload so
/// that ranks passing different types get an error instead of garbage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE binary16.
    F16,
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
    /// Two's-complement 32-bit integer (sums wrap).
    I32,
}

impl DType {
    /// Lower-case name (`"f32"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::F16 => "f16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I32 => "i32",
        }
    }

    fn code(self) -> u8 {
        match self {
            DType::F16 => 1,
            DType::F32 => 2,
            DType::F64 => 3,
            DType::I32 => 4,
        }
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for half::f16 {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for i32 {}
}

/// A buffer element: its wire encoding and the arithmetic the reductions use.
///
/// Floating sums in [`ReduceMode::Ring`](crate::ReduceMode::Ring) round to
/// the element type at every hop (an f16 + f16 is formed exactly in f64 and
/// rounded once). [`ReduceMode::Deterministic`](crate::ReduceMode::Deterministic)
/// sums exactly and rounds once (values via [`Element::to_f64`]). Max / min propagate NaN.
/// `i32` sums wrap; `i32` has no mean.
pub trait Element:
    sealed::Sealed + Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static
{
    /// The element's [`DType`].
    const DTYPE: DType;
    /// Bytes per element on the wire.
    const SIZE: usize;
    /// The additive identity (what `ppermute` leaves in a rank nobody sends to).
    const ZERO: Self;
    /// Appends the little-endian bytes of `self`.
    fn put(self, out: &mut Vec<u8>);
    /// Writes the little-endian bytes of `self` into exactly
    /// [`Element::SIZE`] bytes.
    fn write_to(self, out: &mut [u8]);
    /// Reads one element from exactly [`Element::SIZE`] little-endian bytes.
    fn get(bytes: &[u8]) -> Self;
    /// `self + other` rounded to the element type (wrapping for `i32`).
    fn add(self, other: Self) -> Self;
    /// The larger value; NaN if either is NaN.
    fn max(self, other: Self) -> Self;
    /// The smaller value; NaN if either is NaN.
    fn min(self, other: Self) -> Self;
    /// `self / n` rounded to the element type, or `None` when the type has no mean.
    fn div_count(self, n: usize) -> Option<Self>;
    /// The value as f64 (exact for every supported type).
    fn to_f64(self) -> f64;
    /// The f64 rounded to nearest-even in the element type (for `i32`: wrapping
    /// conversion of an integral value).
    fn from_f64(v: f64) -> Self;
    /// `input` and `output` as a [`NativeBuf`] a transport can reduce
    /// itself, if the type has one (f32, f64, i32; not f16).
    fn native<'a>(input: &'a [Self], output: &'a mut [Self]) -> Option<NativeBuf<'a>>;
}

/// A buffer handed to a transport's own sum (see
/// [`ProcessGroup::native_sum`](crate::ProcessGroup::native_sum)).
#[derive(Debug)]
pub enum NativeBuf<'a> {
    /// f32 elements: this rank's input, and where the sum goes.
    F32(&'a [f32], &'a mut [f32]),
    /// f64 elements: this rank's input, and where the sum goes.
    F64(&'a [f64], &'a mut [f64]),
    /// i32 elements: this rank's input, and where the sum goes.
    I32(&'a [i32], &'a mut [i32]),
}

macro_rules! float_minmax {
    () => {
        fn max(self, other: Self) -> Self {
            if self.is_nan() || other.is_nan() {
                return Self::NAN;
            }
            if other > self {
                other
            } else {
                self
            }
        }
        fn min(self, other: Self) -> Self {
            if self.is_nan() || other.is_nan() {
                return Self::NAN;
            }
            if other < self {
                other
            } else {
                self
            }
        }
    };
}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
    const SIZE: usize = 4;
    const ZERO: Self = 0.0;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn write_to(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        f32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
    fn add(self, other: Self) -> Self {
        self + other
    }
    float_minmax!();
    fn div_count(self, n: usize) -> Option<Self> {
        Some(self / n as f32)
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn native<'a>(input: &'a [Self], output: &'a mut [Self]) -> Option<NativeBuf<'a>> {
        Some(NativeBuf::F32(input, output))
    }
}

impl Element for f64 {
    const DTYPE: DType = DType::F64;
    const SIZE: usize = 8;
    const ZERO: Self = 0.0;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn write_to(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[..8]);
        f64::from_le_bytes(a)
    }
    fn add(self, other: Self) -> Self {
        self + other
    }
    float_minmax!();
    fn div_count(self, n: usize) -> Option<Self> {
        Some(self / n as f64)
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(v: f64) -> Self {
        v
    }
    fn native<'a>(input: &'a [Self], output: &'a mut [Self]) -> Option<NativeBuf<'a>> {
        Some(NativeBuf::F64(input, output))
    }
}

impl Element for f16 {
    const DTYPE: DType = DType::F16;
    const SIZE: usize = 2;
    const ZERO: Self = f16::ZERO;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn write_to(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        f16::from_le_bytes([b[0], b[1]])
    }
    fn add(self, other: Self) -> Self {
        // Exact in f64 (two f16 need at most 40 significant bits), rounded once.
        f16::from_f64(self.to_f64() + other.to_f64())
    }
    float_minmax!();
    fn div_count(self, n: usize) -> Option<Self> {
        Some(f16::from_f64(self.to_f64() / n as f64))
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
    fn native<'a>(_input: &'a [Self], _output: &'a mut [Self]) -> Option<NativeBuf<'a>> {
        None
    }
}

impl Element for i32 {
    const DTYPE: DType = DType::I32;
    const SIZE: usize = 4;
    const ZERO: Self = 0;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn write_to(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        i32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
    fn add(self, other: Self) -> Self {
        self.wrapping_add(other)
    }
    fn max(self, other: Self) -> Self {
        Ord::max(self, other)
    }
    fn min(self, other: Self) -> Self {
        Ord::min(self, other)
    }
    fn div_count(self, _n: usize) -> Option<Self> {
        None
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        (v as i64) as i32
    }
    fn native<'a>(input: &'a [Self], output: &'a mut [Self]) -> Option<NativeBuf<'a>> {
        Some(NativeBuf::I32(input, output))
    }
}

/// A buffer as a payload without copying it where the host's layout is
/// the wire's (little-endian): the dtype byte, then the element bytes.
pub(crate) struct Wire<'a> {
    head: [u8; 1],
    body: std::borrow::Cow<'a, [u8]>,
}

impl<'a> Wire<'a> {
    /// Views `data` as a payload (copies only on a big-endian host).
    pub(crate) fn new<T: Element>(data: &'a [T]) -> Self {
        #[cfg(target_endian = "little")]
        // SAFETY: `Element` is sealed to f16 / f32 / f64 / i32: plain
        // numbers with no padding and no invalid bit patterns for u8, whose
        // in-memory bytes on a little-endian host are their wire bytes;
        // u8 has alignment 1 and the length covers exactly the slice.
        let body = std::borrow::Cow::Borrowed(unsafe {
            std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data))
        });
        #[cfg(not(target_endian = "little"))]
        let body = std::borrow::Cow::Owned(encode(data)[1..].to_vec());
        Wire {
            head: [T::DTYPE.code()],
            body,
        }
    }

    /// The payload as the pieces to send one after the other.
    pub(crate) fn parts(&self) -> [&[u8]; 2] {
        [&self.head, &self.body]
    }
}

/// Encodes a buffer as a payload: one dtype byte, then the elements.
pub(crate) fn encode<T: Element>(data: &[T]) -> Vec<u8> {
    let mut out = vec![0u8; 1 + data.len() * T::SIZE];
    out[0] = T::DTYPE.code();
    for (dst, &x) in out[1..].chunks_exact_mut(T::SIZE).zip(data) {
        x.write_to(dst);
    }
    out
}

/// The element bytes of a payload from `peer`, after checking its dtype
/// byte and, when given, its element count.
fn payload_body<'b, T: Element>(
    op: &'static str,
    peer: usize,
    bytes: &'b [u8],
    expected: Option<usize>,
) -> Result<&'b [u8]> {
    let Some((&code, body)) = bytes.split_first() else {
        return Err(CollectiveError::CorruptFrame {
            peer,
            reason: format!("{op}: empty payload"),
        });
    };
    if code != T::DTYPE.code() {
        return Err(CollectiveError::CorruptFrame {
            peer,
            reason: format!(
                "{op}: dtype code {code} where {} was expected",
                T::DTYPE.name()
            ),
        });
    }
    if body.len() % T::SIZE != 0 {
        return Err(CollectiveError::CorruptFrame {
            peer,
            reason: format!(
                "{op}: {} bytes is not a whole number of {}",
                body.len(),
                T::DTYPE.name()
            ),
        });
    }
    let n = body.len() / T::SIZE;
    if let Some(e) = expected {
        if e != n {
            return Err(CollectiveError::LengthMismatch {
                op,
                peer,
                expected: e,
                got: n,
            });
        }
    }
    Ok(body)
}

/// Decodes a payload from `peer`, checking its dtype byte and, when given,
/// its element count.
pub(crate) fn decode<T: Element>(
    op: &'static str,
    peer: usize,
    bytes: &[u8],
    expected: Option<usize>,
) -> Result<Vec<T>> {
    let body = payload_body::<T>(op, peer, bytes, expected)?;
    Ok(body.chunks_exact(T::SIZE).map(T::get).collect())
}

/// Folds a payload from `peer` of exactly `dst.len()` elements into `dst`
/// without an intermediate buffer: `dst[i] = f(payload[i], old[i])`, where
/// `old` is `dst` itself or, if given, another slice of the same length
/// (so a fold can read the caller's input instead of a copy of it).
pub(crate) fn decode_fold<T: Element>(
    op: &'static str,
    peer: usize,
    bytes: &[u8],
    old: Option<&[T]>,
    dst: &mut [T],
    f: impl Fn(T, T) -> T,
) -> Result<()> {
    let body = payload_body::<T>(op, peer, bytes, Some(dst.len()))?;
    let values = body.chunks_exact(T::SIZE).map(T::get);
    match old {
        Some(old) => {
            debug_assert_eq!(old.len(), dst.len());
            for ((d, v), &o) in dst.iter_mut().zip(values).zip(old) {
                *d = f(v, o);
            }
        }
        None => {
            for (d, v) in dst.iter_mut().zip(values) {
                *d = f(v, *d);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_checks() {
        let v = [1.5f32, -2.0, f32::MAX];
        let b = encode(&v);
        assert_eq!(decode::<f32>("t", 1, &b, Some(3)).unwrap(), v);
        assert!(matches!(
            decode::<f32>("t", 1, &b, Some(2)),
            Err(CollectiveError::LengthMismatch { got: 3, .. })
        ));
        assert!(matches!(
            decode::<i32>("t", 1, &b, None),
            Err(CollectiveError::CorruptFrame { .. })
        ));
        assert!(matches!(
            decode::<f32>("t", 1, &[], None),
            Err(CollectiveError::CorruptFrame { .. })
        ));
    }

    #[test]
    fn wire_view_equals_the_encoding() {
        fn check<T: Element>(v: &[T]) {
            let w = Wire::new(v);
            assert_eq!(w.parts().concat(), encode(v), "{}", T::DTYPE.name());
        }
        check(&[1.5f32, -2.0, f32::MAX, f32::NAN]);
        check(&[1.5f64, -0.0]);
        check(&[i32::MIN, 7]);
        check(&[f16::from_f32(0.5), f16::INFINITY]);
        check::<f32>(&[]);
    }

    #[test]
    fn decode_fold_combines_in_place() {
        let b = encode(&[1.5f64, -2.0, 4.0]);
        let mut acc = [1.0f64, 1.0, 1.0];
        decode_fold("t", 1, &b, None, &mut acc, |v, old| v + old).unwrap();
        assert_eq!(acc, [2.5, -1.0, 5.0]);
        let mut out = [0.0f64; 3];
        decode_fold("t", 1, &b, Some(&[2.0, 2.0, 2.0]), &mut out, |v, old| {
            v * old
        })
        .unwrap();
        assert_eq!(out, [3.0, -4.0, 8.0]);
        assert!(matches!(
            decode_fold("t", 1, &b, None, &mut acc[..2], |v, _| v),
            Err(CollectiveError::LengthMismatch {
                got: 3,
                expected: 2,
                ..
            })
        ));
        assert_eq!(acc, [2.5, -1.0, 5.0], "untouched on error");
    }

    #[test]
    fn f16_add_rounds_once() {
        // 2048 + 1 is a tie in f16 (spacing 2): nearest-even keeps 2048.
        let a = f16::from_f32(2048.0);
        assert_eq!(a.add(f16::ONE), a);
        assert!(Element::max(f32::NAN, 1.0).is_nan());
    }
}
