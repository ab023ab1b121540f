//! [`convert_dtype`]: a loaded tensor in another dtype.

use super::WeightError;
use rlx_ir::{bf16, f16, f8, DType, HostTensor};

/// Converts `t` (the tensor `name`) to `dtype`, as torch's `.to(dtype)`
/// does: the identity, or any real dtype (float, 8-bit float, integer,
/// bool) to a float (F32 / F64 / F16 / BF16) or an 8-bit float
/// ([`rlx_ir::f8`]).
///
/// Every value an 8-bit float, F16 or BF16 holds reaches F32 / F64
/// exactly; an integer becomes the nearest F32 / F64 (one rounding); F16,
/// BF16 and the 8-bit floats are rounded to from the F32 value (to nearest,
/// ties to even; an F64 or a wide integer so rounds twice, as in torch),
/// with each 8-bit format's overflow rule ([`rlx_ir::f8`]). Converting to
/// an integer or from complex is a [`WeightError::Convert`].
pub fn convert_dtype(
    name: &str,
    t: HostTensor,
    dtype: DType,
) -> std::result::Result<HostTensor, WeightError> {
    let from = t.dtype();
    if from == dtype {
        return Ok(t);
    }
    if !(dtype.is_float() || dtype.is_f8()) || from == DType::C64 {
        return Err(WeightError::Convert {
            name: name.to_string(),
            from,
            to: dtype,
        });
    }
    let dims = t.dims().to_vec();
    let out = match dtype {
        DType::F64 => HostTensor::from_vec(t.to_f64_lossy(), &dims),
        DType::F32 => HostTensor::from_vec(to_f32(&t), &dims),
        DType::F16 => {
            HostTensor::from_vec(to_f32(&t).into_iter().map(f16::from_f32).collect(), &dims)
        }
        DType::BF16 => {
            HostTensor::from_vec(to_f32(&t).into_iter().map(bf16::from_f32).collect(), &dims)
        }
        _ => {
            let bytes = to_f32(&t)
                .into_iter()
                .map(|v| f8::encode(dtype, f64::from(v)).expect("an 8-bit float"))
                .collect();
            HostTensor::from_bytes(dtype, &dims, bytes)
        }
    };
    Ok(out.expect("same element count"))
}

/// The values of `t` rounded once to f32 (64-bit integers directly, not
/// through f64).
fn to_f32(t: &HostTensor) -> Vec<f32> {
    match t.dtype() {
        DType::I64 => t
            .to_vec::<i64>()
            .expect("i64")
            .into_iter()
            .map(|v| v as f32)
            .collect(),
        DType::U64 => t
            .to_vec::<u64>()
            .expect("u64")
            .into_iter()
            .map(|v| v as f32)
            .collect(),
        // Every other real dtype is exact in f64.
        _ => t.to_f64_lossy().into_iter().map(|v| v as f32).collect(),
    }
}
