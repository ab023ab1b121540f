//! [`Converter`]: the conversion settings (default type, overrides, 1-D
//! rule, fallback, metadata, alignment) and the per-tensor type choice.

use crate::error::{ConvertError, Result};
use crate::pattern::NamePattern;
use crate::report::Choice;
use rlx_gguf::{codecs, GgmlType, Metadata, Value};
use std::collections::HashMap;
use std::fmt;

/// A per-tensor rule: given the name and the row-major shape, the type to
/// use, or `None` to leave the decision to the later rules.
pub type TypePredicate = Box<dyn Fn(&str, &[usize]) -> Option<GgmlType> + Send + Sync>;

/// Conversion settings. Build one, then call a `convert_*` method.
///
/// A float tensor's type is chosen by the first rule that applies:
/// 1. an exact-name override ([`Converter::override_name`]);
/// 2. the first matching glob override ([`Converter::override_pattern`]),
///    in the order added;
/// 3. the first predicate that returns `Some` ([`Converter::override_if`]);
/// 4. tensors with fewer than two dims (norms, biases) stay F32, as
///    llama.cpp's converter keeps them ([`Converter::keep_1d_f32`]);
/// 5. the default type.
///
/// If the chosen type is a block type and the row (innermost dim) is not a
/// whole number of its blocks, the tensor is stored as the fallback type
/// (F16 unless [`Converter::fallback_type`] says otherwise) and the report
/// marks it. Integer tensors are stored as they are.
///
/// ```
/// use rlx_gguf::GgmlType;
/// use rlx_gguf_convert::Converter;
/// use rlx_ir::{quant::QuantScheme, HostTensor};
/// let w: Vec<f32> = (0..4 * 64).map(|i| (i as f32 * 0.1).sin()).collect();
/// let tensors = vec![
///     ("w".to_string(), HostTensor::from_vec(w, &[4, 64]).unwrap()),
///     ("norm".to_string(), HostTensor::from_vec(vec![1f32; 64], &[64]).unwrap()),
/// ];
/// let conv = Converter::new(QuantScheme::GgufQ8_0)
///     .metadata("general.name", "tiny")
///     .convert_tensors(tensors)
///     .unwrap();
/// assert_eq!(conv.report.tensors[0].ty, GgmlType::Q8_0);
/// assert_eq!(conv.report.tensors[1].ty, GgmlType::F32);
/// assert!(conv.report.tensors[0].cosine > 0.9999);
/// ```
pub struct Converter {
    pub(crate) default: GgmlType,
    pub(crate) exact: HashMap<String, GgmlType>,
    pub(crate) patterns: Vec<(NamePattern, GgmlType)>,
    pub(crate) predicates: Vec<TypePredicate>,
    pub(crate) keep_1d_f32: bool,
    pub(crate) fallback: GgmlType,
    pub(crate) metadata: Metadata,
    pub(crate) passthrough: bool,
    pub(crate) alignment: Option<u32>,
}

impl fmt::Debug for Converter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Converter")
            .field("default", &self.default)
            .field("exact", &self.exact)
            .field("patterns", &self.patterns)
            .field("predicates", &self.predicates.len())
            .field("keep_1d_f32", &self.keep_1d_f32)
            .field("fallback", &self.fallback)
            .field("metadata", &self.metadata)
            .field("passthrough", &self.passthrough)
            .field("alignment", &self.alignment)
            .finish()
    }
}

/// Parses a type name as ggml spells it (case-insensitive): `F16`, `Q8_0`,
/// `q4_k`, ...
pub fn parse_type(name: &str) -> Result<GgmlType> {
    GgmlType::from_name(name.trim()).ok_or_else(|| ConvertError::UnknownTypeName {
        given: name.to_string(),
    })
}

impl Converter {
    /// Settings with `default` for every float tensor of two or more dims.
    /// Accepts a [`GgmlType`] or an [`rlx_ir::quant::QuantScheme`].
    pub fn new(default: impl Into<GgmlType>) -> Converter {
        Converter {
            default: default.into(),
            exact: HashMap::new(),
            patterns: Vec::new(),
            predicates: Vec::new(),
            keep_1d_f32: true,
            fallback: GgmlType::F16,
            metadata: Metadata::new(),
            passthrough: true,
            alignment: None,
        }
    }

    /// Stores the tensor named exactly `name` as `ty`.
    pub fn override_name(mut self, name: &str, ty: impl Into<GgmlType>) -> Converter {
        self.exact.insert(name.to_string(), ty.into());
        self
    }

    /// Stores tensors whose name matches the glob `pattern` (see
    /// [`NamePattern`]) as `ty`; earlier patterns win.
    pub fn override_pattern(mut self, pattern: &str, ty: impl Into<GgmlType>) -> Converter {
        self.patterns.push((NamePattern::new(pattern), ty.into()));
        self
    }

    /// Adds `NAME=TYPE` (the CLI's form): a glob if `NAME` has `*` or `?`,
    /// else an exact name.
    pub fn override_spec(self, spec: &str) -> Result<Converter> {
        let Some((name, ty)) = spec.rsplit_once('=') else {
            return Err(ConvertError::UnknownTypeName {
                given: format!("{spec} (expected NAME=TYPE)"),
            });
        };
        let ty = parse_type(ty)?;
        Ok(if NamePattern::is_glob(name) {
            self.override_pattern(name, ty)
        } else {
            self.override_name(name, ty)
        })
    }

    /// Adds a rule over name and row-major shape; the first rule returning
    /// `Some` wins.
    pub fn override_if(
        mut self,
        rule: impl Fn(&str, &[usize]) -> Option<GgmlType> + Send + Sync + 'static,
    ) -> Converter {
        self.predicates.push(Box::new(rule));
        self
    }

    /// Whether float tensors of fewer than two dims stay F32 (default true).
    pub fn keep_1d_f32(mut self, keep: bool) -> Converter {
        self.keep_1d_f32 = keep;
        self
    }

    /// The type for tensors whose rows do not fill whole blocks of the
    /// chosen type (default F16; must be a plain float type).
    pub fn fallback_type(mut self, ty: GgmlType) -> Converter {
        self.fallback = ty;
        self
    }

    /// Adds (or replaces) a metadata key of the output; user keys win over
    /// keys passed through from the source.
    pub fn metadata(mut self, key: &str, value: impl Into<Value>) -> Converter {
        self.metadata.set(key, value);
        self
    }

    /// Whether the source's own metadata (safetensors `__metadata__`, ONNX
    /// `metadata_props`) is copied as `safetensors.<key>` / `onnx.<key>`
    /// strings (default true).
    pub fn passthrough_metadata(mut self, on: bool) -> Converter {
        self.passthrough = on;
        self
    }

    /// The data alignment of the output (a power of two; written as
    /// `general.alignment`). Default: GGUF's 32.
    pub fn alignment(mut self, alignment: u32) -> Converter {
        self.alignment = Some(alignment);
        self
    }

    /// Checks every configured type before anything is converted.
    pub(crate) fn validate(&self) -> Result<()> {
        let refuse = |context: String, ty: GgmlType, reason: String| {
            Err(ConvertError::CannotQuantize {
                context,
                ty,
                reason,
            })
        };
        if self.fallback.block_size() != 1 || !codecs::can_quantize(self.fallback) {
            return refuse(
                "fallback type".into(),
                self.fallback,
                "the fallback must be a plain float type (F32, F16, BF16)".into(),
            );
        }
        let mut configured = vec![("default type".to_string(), self.default)];
        configured.extend(
            self.exact
                .iter()
                .map(|(n, &t)| (format!("override '{n}'"), t)),
        );
        configured.extend(
            self.patterns
                .iter()
                .map(|(p, t)| (format!("override '{}'", p.as_str()), *t)),
        );
        for (context, ty) in configured {
            check_target(&context, ty)?;
        }
        Ok(())
    }

    /// The type a float tensor asks for, and which rule chose it.
    pub(crate) fn requested(&self, name: &str, shape: &[usize]) -> Result<(GgmlType, Choice)> {
        if let Some(&ty) = self.exact.get(name) {
            return Ok((ty, Choice::Exact));
        }
        if let Some((p, ty)) = self.patterns.iter().find(|(p, _)| p.matches(name)) {
            return Ok((*ty, Choice::Pattern(p.as_str().to_string())));
        }
        for (i, rule) in self.predicates.iter().enumerate() {
            if let Some(ty) = rule(name, shape) {
                check_target(&format!("tensor '{name}' (predicate {i})"), ty)?;
                return Ok((ty, Choice::Predicate(i)));
            }
        }
        if self.keep_1d_f32 && shape.len() < 2 {
            return Ok((GgmlType::F32, Choice::OneDimensional));
        }
        Ok((self.default, Choice::Default))
    }
}

/// A float target must be a type this crate can encode.
fn check_target(context: &str, ty: GgmlType) -> Result<()> {
    if codecs::can_quantize(ty) {
        return Ok(());
    }
    let reason = match codecs::quantize(ty, &vec![0.0; ty.block_size()]) {
        Err(e) => e.to_string(),
        Ok(_) => "not encodable".into(),
    };
    Err(ConvertError::CannotQuantize {
        context: context.to_string(),
        ty,
        reason,
    })
}
