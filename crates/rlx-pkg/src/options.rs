//! [`CompileOptions`] <-> the TOC's `options` object (`docs/rlxp.md`).
//!
//! Every key is written; on reading, a missing key takes the default and
//! an unknown key is an error (an option must never be dropped silently).
//! The backend's layout claims, kept stages and sub-graph overrides are not
//! stored: the compiling session decides those.

use crate::error::{PkgError, Result};
use rlx_compile::{DispatchPolicy, FusionOptions, Precision, PrecisionPolicy};
use rlx_ir::{DType, OpKind};
use rlx_runtime::CompileOptions;
use serde_json::{json, Map, Value};

fn bad(reason: String) -> PkgError {
    PkgError::BadToc {
        reason: format!("options: {reason}"),
    }
}

fn precision_name(p: Precision) -> &'static str {
    match p {
        Precision::F32 => "f32",
        Precision::F16 => "f16",
        Precision::BF16 => "bf16",
    }
}

fn kinds_json(kinds: &[OpKind]) -> Value {
    json!(kinds.iter().map(|k| k.info().name).collect::<Vec<_>>())
}

fn policy_json(p: &PrecisionPolicy) -> Value {
    match p {
        PrecisionPolicy::AlwaysF32 => json!("always_f32"),
        PrecisionPolicy::AlwaysF16 => json!("always_f16"),
        PrecisionPolicy::AutoMixedConservative => json!("auto_mixed_conservative"),
        PrecisionPolicy::AutoMixed => json!("auto_mixed"),
        PrecisionPolicy::AutoMixedBf16 => json!("auto_mixed_bf16"),
        PrecisionPolicy::Custom {
            low,
            low_kinds,
            f32_kinds,
        } => json!({
            "low": low.short_name(),
            "low_kinds": kinds_json(low_kinds),
            "f32_kinds": kinds_json(f32_kinds),
        }),
    }
}

fn dispatch_name(d: DispatchPolicy) -> &'static str {
    match d {
        DispatchPolicy::NativeFirst => "native-first",
        DispatchPolicy::DecomposeAll => "decompose-all",
        DispatchPolicy::ErrorOnUnsupported => "error-on-unsupported",
    }
}

fn fusion_json(f: &FusionOptions) -> Value {
    json!({
        "elementwise": f.elementwise,
        "min_region_nodes": f.min_region_nodes,
        "matmul_epilogue": f.matmul_epilogue,
        "add_norm": f.add_norm,
        "gated_matmul": f.gated_matmul,
        "attention": f.attention,
        "gelu": f.gelu,
        "shared_input": f.shared_input,
        "stack_param_weights": f.stack_param_weights,
        "transposed_operands": f.transposed_operands,
    })
}

/// `opts` as the TOC's `options` object.
pub fn options_to_json(opts: &CompileOptions) -> Value {
    let l = &opts.lower;
    let bindings: std::collections::BTreeMap<&String, &usize> = l.bindings.iter().collect();
    json!({
        "precision": precision_name(l.precision),
        "precision_policy": policy_json(&l.precision_policy),
        "decompose_composites": l.decompose_composites,
        "bindings": bindings,
        "alignment": l.alignment,
        "keep_dead_code": l.keep_dead_code,
        "simplify": l.simplify,
        "cse": l.cse,
        "fold_constants": l.fold_constants,
        "fold_max_bytes": l.fold.max_bytes,
        "fusion": fusion_json(&l.fusion),
        "dispatch": dispatch_name(opts.dispatch),
        "assert_fusion_clean": opts.assert_fusion_clean,
        "hoist_params": opts.hoist_params,
    })
}

fn as_bool(v: &Value, key: &str) -> Result<bool> {
    v.as_bool()
        .ok_or_else(|| bad(format!("\"{key}\" is not a boolean")))
}

fn as_usize(v: &Value, key: &str) -> Result<usize> {
    v.as_u64()
        .and_then(|x| usize::try_from(x).ok())
        .ok_or_else(|| bad(format!("\"{key}\" is not an unsigned integer")))
}

fn as_str<'a>(v: &'a Value, key: &str) -> Result<&'a str> {
    v.as_str()
        .ok_or_else(|| bad(format!("\"{key}\" is not a string")))
}

fn parse_kinds(v: &Value, key: &str) -> Result<Vec<OpKind>> {
    let arr = v
        .as_array()
        .ok_or_else(|| bad(format!("\"{key}\" is not an array")))?;
    arr.iter()
        .map(|x| {
            let name = as_str(x, key)?;
            OpKind::ALL
                .iter()
                .copied()
                .find(|k| k.info().name == name)
                .ok_or_else(|| bad(format!("\"{key}\": unknown op kind \"{name}\"")))
        })
        .collect()
}

fn parse_policy(v: &Value) -> Result<PrecisionPolicy> {
    if let Some(s) = v.as_str() {
        return Ok(match s {
            "always_f32" => PrecisionPolicy::AlwaysF32,
            "always_f16" => PrecisionPolicy::AlwaysF16,
            "auto_mixed_conservative" => PrecisionPolicy::AutoMixedConservative,
            "auto_mixed" => PrecisionPolicy::AutoMixed,
            "auto_mixed_bf16" => PrecisionPolicy::AutoMixedBf16,
            other => return Err(bad(format!("unknown precision_policy \"{other}\""))),
        });
    }
    let obj = v
        .as_object()
        .ok_or_else(|| bad("\"precision_policy\" is neither a name nor an object".into()))?;
    for k in obj.keys() {
        if !matches!(k.as_str(), "low" | "low_kinds" | "f32_kinds") {
            return Err(bad(format!("precision_policy: unknown key \"{k}\"")));
        }
    }
    let low_s = as_str(&v["low"], "precision_policy.low")?;
    let low = DType::parse(low_s)
        .filter(|d| matches!(d, DType::F16 | DType::BF16))
        .ok_or_else(|| {
            bad(format!(
                "precision_policy.low \"{low_s}\" is not f16 or bf16"
            ))
        })?;
    Ok(PrecisionPolicy::Custom {
        low,
        low_kinds: parse_kinds(&v["low_kinds"], "precision_policy.low_kinds")?,
        f32_kinds: parse_kinds(&v["f32_kinds"], "precision_policy.f32_kinds")?,
    })
}

fn parse_fusion(v: &Value) -> Result<FusionOptions> {
    let obj = v
        .as_object()
        .ok_or_else(|| bad("\"fusion\" is not an object".into()))?;
    let mut f = FusionOptions::default();
    for (k, x) in obj {
        let key = format!("fusion.{k}");
        match k.as_str() {
            "elementwise" => f.elementwise = as_bool(x, &key)?,
            "min_region_nodes" => f.min_region_nodes = as_usize(x, &key)?,
            "matmul_epilogue" => f.matmul_epilogue = as_bool(x, &key)?,
            "add_norm" => f.add_norm = as_bool(x, &key)?,
            "gated_matmul" => f.gated_matmul = as_bool(x, &key)?,
            "attention" => f.attention = as_bool(x, &key)?,
            "gelu" => f.gelu = as_bool(x, &key)?,
            "shared_input" => f.shared_input = as_bool(x, &key)?,
            "stack_param_weights" => f.stack_param_weights = as_bool(x, &key)?,
            "transposed_operands" => f.transposed_operands = as_bool(x, &key)?,
            _ => return Err(bad(format!("unknown key \"{key}\""))),
        }
    }
    Ok(f)
}

/// The [`CompileOptions`] of a TOC's `options` object.
pub fn options_from_json(v: &Value) -> Result<CompileOptions> {
    let empty = Map::new();
    let obj = v.as_object().unwrap_or(&empty);
    let mut o = CompileOptions::default();
    for (k, x) in obj {
        let l = &mut o.lower;
        match k.as_str() {
            "precision" => {
                l.precision = match as_str(x, k)? {
                    "f32" => Precision::F32,
                    "f16" => Precision::F16,
                    "bf16" => Precision::BF16,
                    p => return Err(bad(format!("unknown precision \"{p}\""))),
                }
            }
            "precision_policy" => l.precision_policy = parse_policy(x)?,
            "decompose_composites" => l.decompose_composites = as_bool(x, k)?,
            "bindings" => {
                let m = x
                    .as_object()
                    .ok_or_else(|| bad("\"bindings\" is not an object".into()))?;
                for (name, size) in m {
                    l.bindings
                        .insert(name.clone(), as_usize(size, &format!("bindings.{name}"))?);
                }
            }
            "alignment" => l.alignment = as_usize(x, k)?,
            "keep_dead_code" => l.keep_dead_code = as_bool(x, k)?,
            "simplify" => l.simplify = as_bool(x, k)?,
            "cse" => l.cse = as_bool(x, k)?,
            "fold_constants" => l.fold_constants = as_bool(x, k)?,
            "fold_max_bytes" => l.fold.max_bytes = as_usize(x, k)?,
            "fusion" => l.fusion = parse_fusion(x)?,
            "dispatch" => o.dispatch = as_str(x, k)?.parse().map_err(bad)?,
            "assert_fusion_clean" => o.assert_fusion_clean = as_bool(x, k)?,
            "hoist_params" => o.hoist_params = as_bool(x, k)?,
            _ => return Err(bad(format!("unknown key \"{k}\""))),
        }
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_default_options_round_trip() {
        let mut opts = CompileOptions::default()
            .precision(Precision::BF16)
            .bind_dim("batch", 8)
            .alignment(128)
            .cse(false)
            .hoist_params(false)
            .dispatch(DispatchPolicy::DecomposeAll)
            .precision_policy(PrecisionPolicy::Custom {
                low: DType::F16,
                low_kinds: vec![OpKind::MatMul],
                f32_kinds: vec![OpKind::Softmax],
            });
        opts.lower.fusion.min_region_nodes = 5;
        opts.lower.fusion.gelu = false;
        opts.lower.fold.max_bytes = 99;
        let back = options_from_json(&options_to_json(&opts)).unwrap();
        assert_eq!(back, opts);
        assert_eq!(
            options_from_json(&json!({})).unwrap(),
            CompileOptions::default()
        );
        let err = options_from_json(&json!({"turbo": true})).unwrap_err();
        assert!(err.to_string().contains("unknown key \"turbo\""), "{err}");
    }
}
