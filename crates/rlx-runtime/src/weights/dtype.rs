//! safetensors dtypes <-> RLX dtypes.
//!
//! Every dtype the format defines maps to a [`DType`] except the packed
//! sub-byte floats (`F4`, `F6_E2M3`, `F6_E3M2`): the format gives only
//! their bit width, not which bits of a byte hold which element (the OCP
//! MX spec defines the element encodings, not a byte layout), torch's
//! `float4_e2m1fn_x2` (what the Python package writes as `F4`, two
//! elements per byte) converts to no other dtype, and no Python library
//! writes the 6-bit ones at all. With no reference for the element order
//! their values cannot be read reliably, so they are refused by name
//! ([`sub_byte_reason`]).

use rlx_ir::DType;
use safetensors::tensor::Dtype as StDtype;

/// Our dtype of a safetensors dtype; `None` for the packed sub-byte floats.
pub(super) fn rlx_dtype(d: StDtype) -> Option<DType> {
    Some(match d {
        StDtype::BOOL => DType::Bool,
        StDtype::U8 => DType::U8,
        StDtype::I8 => DType::I8,
        StDtype::I16 => DType::I16,
        StDtype::U16 => DType::U16,
        StDtype::F16 => DType::F16,
        StDtype::BF16 => DType::BF16,
        StDtype::I32 => DType::I32,
        StDtype::U32 => DType::U32,
        StDtype::F32 => DType::F32,
        StDtype::C64 => DType::C64,
        StDtype::F64 => DType::F64,
        StDtype::I64 => DType::I64,
        StDtype::U64 => DType::U64,
        StDtype::F8_E4M3 => DType::F8E4M3,
        StDtype::F8_E5M2 => DType::F8E5M2,
        StDtype::F8_E8M0 => DType::F8E8M0,
        StDtype::F8_E4M3FNUZ => DType::F8E4M3Fnuz,
        StDtype::F8_E5M2FNUZ => DType::F8E5M2Fnuz,
        StDtype::F4 | StDtype::F6_E2M3 | StDtype::F6_E3M2 => return None,
        // The crate's enum is non-exhaustive: a dtype added after 0.8.
        #[allow(unreachable_patterns)]
        _ => return None,
    })
}

/// The safetensors dtype of one of ours (every [`DType`] has one).
pub(super) fn st_dtype(d: DType) -> StDtype {
    match d {
        DType::Bool => StDtype::BOOL,
        DType::U8 => StDtype::U8,
        DType::I8 => StDtype::I8,
        DType::I16 => StDtype::I16,
        DType::U16 => StDtype::U16,
        DType::F16 => StDtype::F16,
        DType::BF16 => StDtype::BF16,
        DType::I32 => StDtype::I32,
        DType::U32 => StDtype::U32,
        DType::F32 => StDtype::F32,
        DType::C64 => StDtype::C64,
        DType::F64 => StDtype::F64,
        DType::I64 => StDtype::I64,
        DType::U64 => StDtype::U64,
        DType::F8E4M3 => StDtype::F8_E4M3,
        DType::F8E5M2 => StDtype::F8_E5M2,
        DType::F8E8M0 => StDtype::F8_E8M0,
        DType::F8E4M3Fnuz => StDtype::F8_E4M3FNUZ,
        DType::F8E5M2Fnuz => StDtype::F8_E5M2FNUZ,
    }
}

/// Why a safetensors dtype without an RLX dtype is refused.
pub(super) fn sub_byte_reason(d: StDtype) -> String {
    match d {
        StDtype::F4 | StDtype::F6_E2M3 | StDtype::F6_E3M2 => format!(
            "a packed {}-bit float whose order of elements within a byte neither the \
             safetensors format nor torch defines",
            d.bitsize()
        ),
        _ => "a dtype this version of RLX does not know".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_maps_back_to_itself_with_its_width() {
        for d in DType::ALL {
            let st = st_dtype(d);
            assert_eq!(rlx_dtype(st), Some(d));
            assert_eq!(st.bitsize(), d.size_bytes() * 8, "{d}");
        }
    }
}
