//! [`HostTensor`]: the one owned host tensor type that crosses every API.

use crate::element::{from_le_bytes, to_le_bytes};
use crate::{ConstBytes, DType, Element, IrError, Shape};
use std::fmt;

/// An owned, contiguous, row-major host tensor: dtype, static dims and
/// little-endian bytes.
///
/// Typed runs, model loaders and test fixtures all exchange data as
/// `HostTensor`. Build one from a `Vec<T>` of any [`Element`] type and read it
/// back with [`HostTensor::to_vec`]. The bytes are shared copy-on-write
/// ([`ConstBytes`]): a clone, or a graph constant made from a tensor, copies
/// a handle, and a write copies only bytes another handle still reads.
///
/// ```
/// use rlx_ir::{DType, HostTensor};
/// let t = HostTensor::from_vec(vec![1i32, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
/// assert_eq!(t.dtype(), DType::I32);
/// assert_eq!(t.to_vec::<i32>().unwrap()[5], 6);
/// ```
#[derive(Clone, PartialEq)]
pub struct HostTensor {
    dtype: DType,
    dims: Vec<usize>,
    bytes: ConstBytes,
}

impl HostTensor {
    /// A tensor from values and dims; the value count must equal the product of dims.
    pub fn from_vec<T: Element>(values: Vec<T>, dims: &[usize]) -> Result<HostTensor, IrError> {
        Self::from_slice(&values, dims)
    }

    /// A tensor from a slice of values and dims.
    pub fn from_slice<T: Element>(values: &[T], dims: &[usize]) -> Result<HostTensor, IrError> {
        let expected: usize = dims.iter().product();
        if values.len() != expected {
            return Err(IrError::DataLength {
                what: format!("{}{:?}", T::DTYPE, dims),
                expected,
                given: values.len(),
            });
        }
        Ok(HostTensor {
            dtype: T::DTYPE,
            dims: dims.to_vec(),
            bytes: to_le_bytes(values).into(),
        })
    }

    /// A rank-0 tensor.
    pub fn scalar<T: Element>(value: T) -> HostTensor {
        HostTensor {
            dtype: T::DTYPE,
            dims: Vec::new(),
            bytes: to_le_bytes(&[value]).into(),
        }
    }

    /// A tensor from raw little-endian bytes; the length must match.
    pub fn from_bytes(dtype: DType, dims: &[usize], bytes: Vec<u8>) -> Result<HostTensor, IrError> {
        HostTensor::from_shared(dtype, dims, bytes.into())
    }

    /// A tensor over shared bytes (a graph constant's: no copy); the length must match.
    pub fn from_shared(
        dtype: DType,
        dims: &[usize],
        bytes: ConstBytes,
    ) -> Result<HostTensor, IrError> {
        let expected = dims.iter().product::<usize>() * dtype.size_bytes();
        if bytes.len() != expected {
            return Err(IrError::DataLength {
                what: format!("bytes of {dtype}{dims:?}"),
                expected,
                given: bytes.len(),
            });
        }
        Ok(HostTensor {
            dtype,
            dims: dims.to_vec(),
            bytes,
        })
    }

    /// A zero-filled tensor.
    pub fn zeros(dtype: DType, dims: &[usize]) -> HostTensor {
        let n = dims.iter().product::<usize>() * dtype.size_bytes();
        HostTensor {
            dtype,
            dims: dims.to_vec(),
            bytes: vec![0; n].into(),
        }
    }

    /// The dtype.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The dims.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// The [`Shape`] (static dims + dtype).
    pub fn shape(&self) -> Shape {
        Shape::new(&self.dims, self.dtype)
    }

    /// Element count.
    pub fn numel(&self) -> usize {
        self.dims.iter().product()
    }

    /// The little-endian bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The bytes, writable in place (their length is fixed by the dtype and
    /// dims): a run can write an output into a tensor the caller keeps.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.bytes.make_mut()
    }

    /// The bytes as a shared handle (what a graph constant holds).
    pub fn shared_bytes(&self) -> &ConstBytes {
        &self.bytes
    }

    /// Consumes the tensor, returning its bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes.into_vec()
    }

    /// The values as `T`; `T` must be the tensor's dtype.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>, IrError> {
        if T::DTYPE != self.dtype {
            return Err(IrError::DTypeMismatch {
                what: "HostTensor::to_vec".into(),
                expected: self.dtype,
                given: T::DTYPE,
            });
        }
        Ok(from_le_bytes(&self.bytes))
    }

    /// The values converted to `f64` (complex: the real part), whatever the dtype.
    pub fn to_f64_lossy(&self) -> Vec<f64> {
        use half::{bf16, f16};
        let b = &self.bytes;
        match self.dtype {
            DType::F32 => from_le_bytes::<f32>(b).into_iter().map(f64::from).collect(),
            DType::F64 => from_le_bytes::<f64>(b),
            DType::F16 => from_le_bytes::<f16>(b).into_iter().map(f64::from).collect(),
            DType::BF16 => from_le_bytes::<bf16>(b)
                .into_iter()
                .map(f64::from)
                .collect(),
            DType::I8 => from_le_bytes::<i8>(b).into_iter().map(f64::from).collect(),
            DType::I16 => from_le_bytes::<i16>(b).into_iter().map(f64::from).collect(),
            DType::I32 => from_le_bytes::<i32>(b).into_iter().map(f64::from).collect(),
            DType::I64 => from_le_bytes::<i64>(b)
                .into_iter()
                .map(|v| v as f64)
                .collect(),
            DType::U8 => from_le_bytes::<u8>(b).into_iter().map(f64::from).collect(),
            DType::U16 => from_le_bytes::<u16>(b).into_iter().map(f64::from).collect(),
            DType::U32 => from_le_bytes::<u32>(b).into_iter().map(f64::from).collect(),
            DType::U64 => from_le_bytes::<u64>(b)
                .into_iter()
                .map(|v| v as f64)
                .collect(),
            DType::F8E4M3
            | DType::F8E5M2
            | DType::F8E8M0
            | DType::F8E4M3Fnuz
            | DType::F8E5M2Fnuz => b
                .iter()
                .map(|&v| f64::from(crate::f8::decode(self.dtype, v).expect("an 8-bit float")))
                .collect(),
            DType::Bool => b.iter().map(|&v| f64::from(v != 0)).collect(),
            DType::C64 => from_le_bytes::<f32>(b)
                .chunks_exact(2)
                .map(|c| f64::from(c[0]))
                .collect(),
        }
    }

    /// The same bytes under other dims with the same element count.
    pub fn reshape(mut self, dims: &[usize]) -> Result<HostTensor, IrError> {
        let n: usize = dims.iter().product();
        if n != self.numel() {
            return Err(IrError::DataLength {
                what: format!("reshape of {}{:?} to {dims:?}", self.dtype, self.dims),
                expected: self.numel(),
                given: n,
            });
        }
        self.dims = dims.to_vec();
        Ok(self)
    }
}

impl fmt::Debug for HostTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let vals = self.to_f64_lossy();
        let shown: Vec<_> = vals.iter().take(16).collect();
        write!(f, "HostTensor({}{:?}, {:?}", self.dtype, self.dims, shown)?;
        if vals.len() > 16 {
            write!(f, " … {} values", vals.len())?;
        }
        f.write_str(")")
    }
}
