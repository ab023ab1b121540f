//! # rlx-gguf-convert — safetensors / ONNX to GGUF
//!
//! Converts the tensors of a `.safetensors` file (or, with the `onnx`
//! feature, an ONNX model's initializers) into a GGUF file, quantizing each
//! tensor with `rlx-gguf`'s codecs (ggml's reference quantizers):
//!
//! - a default type ([`rlx_ir::quant::QuantScheme`] or any encodable
//!   [`GgmlType`]), per-name, glob and predicate overrides; tensors of
//!   fewer than two dims stay F32, as llama.cpp's converter keeps them
//!   (see [`Converter`] for the order of the rules);
//! - a tensor whose rows do not fill whole blocks of its type is written
//!   as F16 instead and reported;
//! - source metadata passes through, user key/values and the alignment are
//!   set on the output;
//! - a [`ConvertReport`] gives per tensor the shape, the type and why,
//!   bytes before / after and the cosine between the source and the
//!   dequantized output; it prints as a table.
//!
//! ```no_run
//! use rlx_gguf_convert::{Converter, GgmlType};
//! use rlx_ir::quant::QuantScheme;
//! let report = Converter::new(QuantScheme::GgufQ4K)
//!     .override_pattern("*.attn_v.weight", GgmlType::Q6_K)
//!     .override_name("token_embd.weight", GgmlType::Q8_0)
//!     .metadata("general.name", "my-model")
//!     .convert_safetensors_file("model.safetensors", "model.gguf")?;
//! println!("{report}");
//! # Ok::<(), rlx_gguf_convert::ConvertError>(())
//! ```
//!
//! Layout is kept as the source has it: a GGUF tensor's `ne` is the
//! source's row-major shape reversed, and blocks run along the innermost
//! (last) dim.
#![deny(missing_docs)]

mod convert;
mod error;
#[cfg(feature = "onnx")]
mod onnx_source;
mod options;
mod pattern;
mod report;
mod safetensors_source;

pub use convert::{cosine, Conversion, GGML_QUANT_VERSION};
pub use error::{ConvertError, Result};
pub use options::{parse_type, Converter, TypePredicate};
pub use pattern::NamePattern;
pub use report::{Choice, ConvertReport, TensorReport};
pub use rlx_gguf::{GgmlType, Value};

use std::path::Path;

impl Converter {
    /// Converts `input` by its extension (`.safetensors`, or `.onnx` with
    /// the `onnx` feature) and writes the GGUF file `output`.
    pub fn convert_file(
        &self,
        input: impl AsRef<Path>,
        output: impl AsRef<Path>,
    ) -> Result<ConvertReport> {
        let input = input.as_ref();
        match input.extension().and_then(|e| e.to_str()) {
            Some("safetensors") => self.convert_safetensors_file(input, output),
            #[cfg(feature = "onnx")]
            Some("onnx") => self.convert_onnx_file(input, output),
            _ => Err(ConvertError::Io {
                path: input.to_path_buf(),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    if cfg!(feature = "onnx") {
                        "expected a .safetensors or .onnx file"
                    } else {
                        "expected a .safetensors file (.onnx needs the `onnx` feature)"
                    },
                ),
            }),
        }
    }
}
