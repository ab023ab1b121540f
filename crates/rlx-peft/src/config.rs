//! [`AdapterConfig`]: the parts of PEFT's `adapter_config.json` that define
//! the arithmetic, parsed strictly (a missing or mistyped field is an error,
//! a PEFT feature this crate does not implement is `Unsupported`).

use crate::allocator::AllocatorConfig;
use crate::error::{PeftError, Result};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Which adapter family a config describes, with its hyper-parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum AdapterKind {
    /// `peft_type = "LORA"` (DoRA when `use_dora`).
    Lora {
        /// Default rank.
        r: usize,
        /// Default `lora_alpha`.
        lora_alpha: f64,
        /// rsLoRA scaling.
        use_rslora: bool,
        /// DoRA.
        use_dora: bool,
        /// Per-module ranks (`rank_pattern`).
        rank_pattern: BTreeMap<String, usize>,
        /// Per-module alphas (`alpha_pattern`).
        alpha_pattern: BTreeMap<String, f64>,
    },
    /// `peft_type = "ADALORA"`.
    AdaLora {
        /// Initial rank of every module (PEFT's `ranknum`).
        init_r: usize,
        /// `lora_alpha`.
        lora_alpha: f64,
        /// The allocator's schedule.
        allocator: AllocatorConfig,
        /// Kept singular values per module after allocation, if saved.
        rank_pattern: Option<BTreeMap<String, Vec<bool>>>,
    },
    /// `peft_type = "IA3"`.
    Ia3 {
        /// Module-name suffixes whose input (not output) is scaled.
        feedforward_modules: Vec<String>,
    },
    /// `peft_type = "OFT"`.
    Oft {
        /// Number of blocks (0: derived from `oft_block_size`).
        r: usize,
        /// Block size (0: derived from `r`).
        oft_block_size: usize,
        /// Neumann-series Cayley transform.
        use_cayley_neumann: bool,
        /// Terms of the series.
        num_cayley_neumann_terms: usize,
        /// One block shared by all.
        block_share: bool,
    },
}

/// A parsed `adapter_config.json`.
#[derive(Clone, Debug, PartialEq)]
pub struct AdapterConfig {
    /// The adapter family and its hyper-parameters.
    pub kind: AdapterKind,
    /// `peft_version` as saved, if present.
    pub peft_version: Option<String>,
}

struct Fields<'a>(&'a Map<String, Value>);

impl Fields<'_> {
    fn get(&self, key: &str) -> Result<&Value> {
        self.0
            .get(key)
            .ok_or_else(|| PeftError::Config(format!("missing field {key:?}")))
    }

    fn usize(&self, key: &str) -> Result<usize> {
        let v = self.get(key)?;
        v.as_u64()
            .and_then(|u| usize::try_from(u).ok())
            .ok_or_else(|| wrong(key, "a non-negative integer", v))
    }

    fn f64(&self, key: &str) -> Result<f64> {
        let v = self.get(key)?;
        v.as_f64()
            .filter(|f| f.is_finite())
            .ok_or_else(|| wrong(key, "a finite number", v))
    }

    fn bool(&self, key: &str) -> Result<bool> {
        let v = self.get(key)?;
        v.as_bool().ok_or_else(|| wrong(key, "true or false", v))
    }

    fn bool_or(&self, key: &str, default: bool) -> Result<bool> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(_) => self.bool(key),
        }
    }

    /// An optional object field (`null` and absent are empty).
    fn map(&self, key: &str) -> Result<Map<String, Value>> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(Map::new()),
            Some(Value::Object(m)) => Ok(m.clone()),
            Some(v) => Err(wrong(key, "an object", v)),
        }
    }
}

fn wrong(key: &str, expected: &str, given: &Value) -> PeftError {
    let mut shown = given.to_string();
    if shown.len() > 80 {
        shown.truncate(80);
        shown.push('…');
    }
    PeftError::Config(format!("field {key:?}: expected {expected}, given {shown}"))
}

impl AdapterConfig {
    /// Parses the text of `adapter_config.json`.
    pub fn from_json(text: &str) -> Result<AdapterConfig> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| PeftError::Config(format!("not valid JSON: {e}")))?;
        let Value::Object(obj) = value else {
            return Err(PeftError::Config("the top level is not an object".into()));
        };
        let f = Fields(&obj);
        let peft_type = match f.get("peft_type")? {
            Value::String(s) => s.clone(),
            v => return Err(wrong("peft_type", "a string", v)),
        };
        if f.bool_or("fan_in_fan_out", false)? {
            return Err(PeftError::Unsupported(
                "fan_in_fan_out = true (Conv1D-style [in, out] weights)".into(),
            ));
        }
        let kind = match peft_type.as_str() {
            "LORA" => lora_kind(&f)?,
            "ADALORA" => adalora_kind(&f)?,
            "IA3" => ia3_kind(&f)?,
            "OFT" => oft_kind(&f)?,
            other => {
                return Err(PeftError::Unsupported(format!(
                    "peft_type {other:?} (supported: LORA, ADALORA, IA3, OFT)"
                )))
            }
        };
        let peft_version = obj
            .get("peft_version")
            .and_then(Value::as_str)
            .map(str::to_string);
        Ok(AdapterConfig { kind, peft_version })
    }
}

fn check_bias(f: &Fields) -> Result<()> {
    match f.0.get("bias") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(s)) if s == "none" => Ok(()),
        Some(v) => Err(PeftError::Unsupported(format!(
            "bias = {v} (only \"none\": trained base biases are not adapters)"
        ))),
    }
}

fn lora_kind(f: &Fields) -> Result<AdapterKind> {
    check_bias(f)?;
    if f.bool_or("lora_bias", false)? {
        return Err(PeftError::Unsupported("lora_bias = true".into()));
    }
    let mut rank_pattern = BTreeMap::new();
    for (k, v) in f.map("rank_pattern")? {
        let r = v.as_u64().and_then(|u| usize::try_from(u).ok());
        rank_pattern.insert(
            k.clone(),
            r.ok_or_else(|| wrong(&format!("rank_pattern.{k}"), "a rank", &v))?,
        );
    }
    let mut alpha_pattern = BTreeMap::new();
    for (k, v) in f.map("alpha_pattern")? {
        let a = v.as_f64().filter(|a| a.is_finite());
        alpha_pattern.insert(
            k.clone(),
            a.ok_or_else(|| wrong(&format!("alpha_pattern.{k}"), "a number", &v))?,
        );
    }
    Ok(AdapterKind::Lora {
        r: f.usize("r")?,
        lora_alpha: f.f64("lora_alpha")?,
        use_rslora: f.bool_or("use_rslora", false)?,
        use_dora: f.bool_or("use_dora", false)?,
        rank_pattern,
        alpha_pattern,
    })
}

fn adalora_kind(f: &Fields) -> Result<AdapterKind> {
    check_bias(f)?;
    let rank_pattern = match f.0.get("rank_pattern") {
        None | Some(Value::Null) => None,
        Some(_) => {
            let mut out = BTreeMap::new();
            for (k, v) in f.map("rank_pattern")? {
                let bits: Option<Vec<bool>> = v
                    .as_array()
                    .map(|a| a.iter().map(Value::as_bool).collect::<Option<Vec<bool>>>())
                    .unwrap_or(None);
                let key = format!("rank_pattern.{k}");
                out.insert(
                    k,
                    bits.ok_or_else(|| wrong(&key, "a list of booleans", &v))?,
                );
            }
            Some(out)
        }
    };
    Ok(AdapterKind::AdaLora {
        init_r: f.usize("init_r")?,
        lora_alpha: f.f64("lora_alpha")?,
        allocator: AllocatorConfig {
            target_r: f.usize("target_r")?,
            tinit: f.usize("tinit")?,
            tfinal: f.usize("tfinal")?,
            delta_t: f.usize("deltaT")?,
            beta1: f.f64("beta1")?,
            beta2: f.f64("beta2")?,
            total_step: match f.0.get("total_step") {
                None | Some(Value::Null) => 0,
                Some(_) => f.usize("total_step")?,
            },
        },
        rank_pattern,
    })
}

fn ia3_kind(f: &Fields) -> Result<AdapterKind> {
    let feedforward_modules = match f.get("feedforward_modules")? {
        Value::Null => Vec::new(),
        Value::Array(a) => a
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                wrong(
                    "feedforward_modules",
                    "a list of strings",
                    &Value::Array(a.clone()),
                )
            })?,
        // PEFT matches a string with re.fullmatch; a plain name matches itself only.
        Value::String(s) if is_plain_name(s) => vec![s.clone()],
        Value::String(s) => {
            return Err(PeftError::Unsupported(format!(
                "feedforward_modules as a regular expression ({s:?})"
            )))
        }
        v => return Err(wrong("feedforward_modules", "a list of names", v)),
    };
    Ok(AdapterKind::Ia3 {
        feedforward_modules,
    })
}

fn oft_kind(f: &Fields) -> Result<AdapterKind> {
    check_bias(f)?;
    if f.bool_or("coft", false)? {
        return Err(PeftError::Unsupported(
            "coft = true (constrained OFT projects its weights during forward)".into(),
        ));
    }
    Ok(AdapterKind::Oft {
        r: f.usize("r")?,
        oft_block_size: f.usize("oft_block_size")?,
        use_cayley_neumann: f.bool_or("use_cayley_neumann", true)?,
        num_cayley_neumann_terms: match f.0.get("num_cayley_neumann_terms") {
            None | Some(Value::Null) => 5,
            Some(_) => f.usize("num_cayley_neumann_terms")?,
        },
        block_share: f.bool_or("block_share", false)?,
    })
}

/// A module name without regular-expression syntax (dots allowed).
pub(crate) fn is_plain_name(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '-')
}

/// PEFT's `get_pattern_key`: a pattern key applies to `module` when it is
/// the whole name or a dot-separated suffix of it (keys are literal names
/// here; a regular-expression key is `Unsupported`). When several keys
/// match, the first in sorted order wins (PEFT: the first in the file).
pub(crate) fn pattern_value<'a, T>(
    patterns: &'a BTreeMap<String, T>,
    module: &str,
) -> Result<Option<&'a T>> {
    for (key, v) in patterns {
        if !is_plain_name(key) {
            return Err(PeftError::Unsupported(format!(
                "rank_pattern / alpha_pattern key as a regular expression ({key:?})"
            )));
        }
        if module == key || module.ends_with(&format!(".{key}")) {
            return Ok(Some(v));
        }
    }
    Ok(None)
}
