//! Loading what PEFT's `save_pretrained` wrote: `adapter_config.json` and
//! `adapter_model.safetensors` (keys `base_model.model.<module>.<tensor>`),
//! into one host adapter per target module.

use crate::adalora::{AdaLoraAdapter, AdaLoraConfig};
use crate::config::{pattern_value, AdapterConfig, AdapterKind};
use crate::error::{PeftError, Result};
use crate::ia3::Ia3Adapter;
use crate::linear::{Adapter, Linear, Merged};
use crate::lora::{DoraAdapter, LoraAdapter, LoraConfig};
use crate::oft::{OftAdapter, OftConfig};
use rlx_ir::{bf16, f16, HostTensor};
use safetensors::{Dtype, SafeTensors};
use std::collections::BTreeMap;
use std::path::Path;

/// The prefix PEFT puts before every module name in the saved keys.
pub const KEY_PREFIX: &str = "base_model.model.";

/// The adapter of one module, whichever family.
#[derive(Clone, Debug, PartialEq)]
pub enum AnyAdapter {
    /// LoRA / rsLoRA.
    Lora(LoraAdapter),
    /// DoRA.
    Dora(DoraAdapter),
    /// IA3.
    Ia3(Ia3Adapter),
    /// AdaLoRA.
    AdaLora(AdaLoraAdapter),
    /// OFT.
    Oft(OftAdapter),
}

impl AnyAdapter {
    fn inner(&self) -> &dyn Adapter {
        match self {
            AnyAdapter::Lora(a) => a,
            AnyAdapter::Dora(a) => a,
            AnyAdapter::Ia3(a) => a,
            AnyAdapter::AdaLora(a) => a,
            AnyAdapter::Oft(a) => a,
        }
    }
}

impl Adapter for AnyAdapter {
    fn forward(&self, x: &HostTensor, base: &Linear) -> Result<HostTensor> {
        self.inner().forward(x, base)
    }

    fn merge(&self, base: &mut Linear) -> Result<Merged> {
        self.inner().merge(base)
    }

    fn unmerge(&self, base: &mut Linear, merged: &Merged) -> Result<()> {
        self.inner().unmerge(base, merged)
    }
}

/// A loaded PEFT adapter: its config, one adapter per module (named as in
/// the base model, e.g. `model.layers.0.self_attn.q_proj`), and the raw
/// tensors under their saved keys (which are the param names the
/// [`crate::graph`] builders use with prefix `base_model.model.<module>`).
#[derive(Clone, Debug)]
pub struct AdapterSet {
    pub(crate) config_json: String,
    config: AdapterConfig,
    modules: BTreeMap<String, AnyAdapter>,
    pub(crate) tensors: BTreeMap<String, HostTensor>,
}

impl AdapterSet {
    /// Loads `dir/adapter_config.json` and `dir/adapter_model.safetensors`.
    pub fn load(dir: impl AsRef<Path>) -> Result<AdapterSet> {
        let dir = dir.as_ref();
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path).map_err(|source| PeftError::Io { path, source })
        };
        let config = read("adapter_config.json")?;
        let config = std::str::from_utf8(&config)
            .map_err(|e| PeftError::Config(format!("not UTF-8: {e}")))?;
        AdapterSet::from_bytes(config, &read("adapter_model.safetensors")?)
    }

    /// From the config's text and the safetensors file's bytes.
    pub fn from_bytes(config_json: &str, safetensors: &[u8]) -> Result<AdapterSet> {
        let config = AdapterConfig::from_json(config_json)?;
        AdapterSet::build(config_json, config, read_tensors(safetensors)?)
    }

    /// From the config's text and f32 tensors under PEFT's keys, e.g. the
    /// trained values of the params a [`crate::graph`] builder made (their
    /// names are the keys when the prefix is `base_model.model.<module>`).
    pub fn from_tensors(
        config_json: &str,
        tensors: BTreeMap<String, HostTensor>,
    ) -> Result<AdapterSet> {
        let config = AdapterConfig::from_json(config_json)?;
        for (key, t) in &tensors {
            if t.dtype() != rlx_ir::DType::F32 {
                return Err(PeftError::DType {
                    what: key.clone(),
                    expected: "f32".into(),
                    given: t.dtype().to_string(),
                });
            }
        }
        AdapterSet::build(config_json, config, tensors)
    }

    fn build(
        config_json: &str,
        config: AdapterConfig,
        tensors: BTreeMap<String, HostTensor>,
    ) -> Result<AdapterSet> {
        if tensors.is_empty() {
            return Err(PeftError::Safetensors("no adapter tensors".into()));
        }
        let by_module = group_by_module(&config.kind, &tensors)?;
        let mut modules = BTreeMap::new();
        for (module, parts) in &by_module {
            modules.insert(module.clone(), build(&config.kind, module, parts)?);
        }
        Ok(AdapterSet {
            config_json: config_json.to_string(),
            config,
            modules,
            tensors,
        })
    }

    /// The text of `adapter_config.json`, as given.
    pub fn config_json(&self) -> &str {
        &self.config_json
    }

    /// The parsed config.
    pub fn config(&self) -> &AdapterConfig {
        &self.config
    }

    /// Every adapted module and its adapter.
    pub fn modules(&self) -> &BTreeMap<String, AnyAdapter> {
        &self.modules
    }

    /// The adapter of `module`.
    pub fn get(&self, module: &str) -> Option<&AnyAdapter> {
        self.modules.get(module)
    }

    /// The saved tensors (f32) under their saved keys.
    pub fn tensors(&self) -> &BTreeMap<String, HostTensor> {
        &self.tensors
    }
}

/// Every tensor of the file, widened to f32.
fn read_tensors(bytes: &[u8]) -> Result<BTreeMap<String, HostTensor>> {
    let st = SafeTensors::deserialize(bytes).map_err(|source| PeftError::SafetensorsCrate {
        context: String::new(),
        source,
    })?;
    let mut out = BTreeMap::new();
    for (name, view) in st.iter() {
        let data = view.data();
        let values: Vec<f32> = match view.dtype() {
            Dtype::F32 => words::<4>(data).map(f32::from_le_bytes).collect(),
            Dtype::F64 => words::<8>(data)
                .map(|w| f64::from_le_bytes(w) as f32)
                .collect(),
            Dtype::F16 => words::<2>(data)
                .map(|w| f16::from_le_bytes(w).to_f32())
                .collect(),
            Dtype::BF16 => words::<2>(data)
                .map(|w| bf16::from_le_bytes(w).to_f32())
                .collect(),
            other => {
                return Err(PeftError::DType {
                    what: name.to_string(),
                    expected: "F32, F64, F16 or BF16".into(),
                    given: format!("{other:?}"),
                })
            }
        };
        let t = HostTensor::from_vec(values, view.shape()).map_err(|source| PeftError::Tensor {
            name: name.to_string(),
            source,
        })?;
        out.insert(name.to_string(), t);
    }
    Ok(out)
}

fn words<const N: usize>(data: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
    data.chunks_exact(N)
        .map(|c| c.try_into().expect("chunks_exact gives N bytes"))
}

/// The tensor names (after `<module>.`) an adapter family saves.
fn suffixes(kind: &AdapterKind) -> &'static [&'static str] {
    match kind {
        AdapterKind::Lora { use_dora: true, .. } => &[
            "lora_A.weight",
            "lora_B.weight",
            "lora_magnitude_vector",
            "lora_magnitude_vector.weight",
        ],
        AdapterKind::Lora { .. } => &["lora_A.weight", "lora_B.weight"],
        AdapterKind::AdaLora { .. } => &["lora_A", "lora_E", "lora_B"],
        AdapterKind::Ia3 { .. } => &["ia3_l"],
        AdapterKind::Oft { .. } => &["oft_R.weight"],
    }
}

type Parts<'a> = BTreeMap<&'static str, (&'a str, &'a HostTensor)>;

fn group_by_module<'a>(
    kind: &AdapterKind,
    tensors: &'a BTreeMap<String, HostTensor>,
) -> Result<BTreeMap<String, Parts<'a>>> {
    let mut out: BTreeMap<String, Parts<'a>> = BTreeMap::new();
    for (key, t) in tensors {
        let rest = key
            .strip_prefix(KEY_PREFIX)
            .ok_or_else(|| PeftError::UnexpectedTensor {
                key: key.clone(),
                reason: format!("PEFT keys start with {KEY_PREFIX:?}"),
            })?;
        let found = suffixes(kind).iter().find_map(|&s| {
            rest.strip_suffix(s)
                .and_then(|m| m.strip_suffix('.'))
                .filter(|m| !m.is_empty())
                .map(|m| (m, s))
        });
        let Some((module, suffix)) = found else {
            return Err(PeftError::UnexpectedTensor {
                key: key.clone(),
                reason: format!("not one of {:?} of a module", suffixes(kind)),
            });
        };
        let suffix = suffix.trim_end_matches(".weight").max(suffix);
        out.entry(module.to_string())
            .or_default()
            .insert(canonical(suffix), (key.as_str(), t));
    }
    Ok(out)
}

/// DoRA's magnitude was saved with and without `.weight` across versions.
fn canonical(suffix: &'static str) -> &'static str {
    if suffix == "lora_magnitude_vector.weight" {
        "lora_magnitude_vector"
    } else {
        suffix
    }
}

fn part<'a>(parts: &Parts<'a>, module: &str, suffix: &str) -> Result<(&'a str, &'a HostTensor)> {
    parts
        .get(suffix)
        .copied()
        .ok_or_else(|| PeftError::MissingTensor {
            key: format!("{KEY_PREFIX}{module}.{suffix}"),
        })
}

/// `t` must have exactly `expected` dims; the error names the saved key.
fn expect_dims(key: &str, t: &HostTensor, expected: &[usize]) -> Result<()> {
    if t.dims() != expected {
        return Err(PeftError::Shape {
            what: key.into(),
            expected: expected.to_vec(),
            given: t.dims().to_vec(),
        });
    }
    Ok(())
}

/// A rank-2 tensor's dims, or a shape error naming the key.
fn dims2(key: &str, t: &HostTensor, rows: Option<usize>) -> Result<[usize; 2]> {
    let d = t.dims();
    let ok = d.len() == 2 && rows.is_none_or(|r| d[0] == r);
    if !ok {
        let cols = if d.len() == 2 {
            d[1]
        } else {
            d.last().copied().unwrap_or(0)
        };
        return Err(PeftError::Shape {
            what: key.into(),
            expected: vec![rows.unwrap_or(d.first().copied().unwrap_or(0)), cols],
            given: d.to_vec(),
        });
    }
    Ok([d[0], d[1]])
}

fn build(kind: &AdapterKind, module: &str, parts: &Parts) -> Result<AnyAdapter> {
    match kind {
        AdapterKind::Lora {
            r,
            lora_alpha,
            use_rslora,
            use_dora,
            rank_pattern,
            alpha_pattern,
        } => {
            let r = pattern_value(rank_pattern, module)?.copied().unwrap_or(*r);
            let alpha = pattern_value(alpha_pattern, module)?
                .copied()
                .unwrap_or(*lora_alpha);
            let (ka, a) = part(parts, module, "lora_A.weight")?;
            let (kb, b) = part(parts, module, "lora_B.weight")?;
            let [_, in_f] = dims2(ka, a, Some(r))?;
            let out_f = b.dims().first().copied().unwrap_or(0);
            expect_dims(kb, b, &[out_f, r])?;
            let _ = in_f;
            let cfg = LoraConfig {
                r,
                lora_alpha: alpha,
                use_rslora: *use_rslora,
            };
            let lora = LoraAdapter::new(cfg, a, b)?;
            if !use_dora {
                return Ok(AnyAdapter::Lora(lora));
            }
            let (km, m) = part(parts, module, "lora_magnitude_vector")?;
            expect_dims(km, m, &[out_f])?;
            Ok(AnyAdapter::Dora(DoraAdapter::new(lora, m)?))
        }
        AdapterKind::AdaLora {
            init_r,
            lora_alpha,
            rank_pattern,
            ..
        } => {
            let (ka, a) = part(parts, module, "lora_A")?;
            let (ke, e) = part(parts, module, "lora_E")?;
            let (kb, b) = part(parts, module, "lora_B")?;
            // PEFT's save cuts the masked triplets: the kept count is the rank.
            let kept = rank_pattern
                .as_ref()
                .and_then(|p| p.get(&format!("{module}.lora_E")))
                .map(|bits| bits.iter().filter(|&&k| k).count());
            let r = kept.unwrap_or(*init_r);
            let [_, _] = dims2(ka, a, Some(r))?;
            expect_dims(ke, e, &[r, 1])?;
            let out_f = b.dims().first().copied().unwrap_or(0);
            expect_dims(kb, b, &[out_f, r])?;
            let cfg = AdaLoraConfig {
                r,
                lora_alpha: *lora_alpha,
                ranknum: *init_r as f64,
            };
            Ok(AnyAdapter::AdaLora(AdaLoraAdapter::new(cfg, a, e, b)?))
        }
        AdapterKind::Ia3 {
            feedforward_modules,
        } => {
            let (k, l) = part(parts, module, "ia3_l")?;
            let is_ff = feedforward_modules
                .iter()
                .any(|f| module.ends_with(f.as_str()));
            let n = l.numel();
            expect_dims(k, l, &Ia3Adapter::shape_for(is_ff, n, n))?;
            Ok(AnyAdapter::Ia3(Ia3Adapter::new(is_ff, l)?))
        }
        AdapterKind::Oft {
            r,
            use_cayley_neumann,
            num_cayley_neumann_terms,
            block_share,
            ..
        } => {
            let (k, w) = part(parts, module, "oft_R.weight")?;
            let [rows, n_el] = dims2(k, w, None)?;
            let bs = block_size_of(n_el).ok_or_else(|| PeftError::Shape {
                what: k.into(),
                expected: vec![rows, 0],
                given: vec![rows, n_el],
            })?;
            let blocks = if *block_share {
                if *r == 0 {
                    return Err(PeftError::Unsupported(format!(
                        "{k}: block_share with r = 0 (the block count needs the base layer)"
                    )));
                }
                expect_dims(k, w, &[1, n_el])?;
                *r
            } else {
                rows
            };
            let cfg = OftConfig {
                r: blocks,
                block_size: bs,
                use_cayley_neumann: *use_cayley_neumann,
                num_cayley_neumann_terms: *num_cayley_neumann_terms,
                block_share: *block_share,
            };
            Ok(AnyAdapter::Oft(OftAdapter::new(cfg, w)?))
        }
    }
}

/// `bs` with `bs (bs - 1) / 2 == n`.
fn block_size_of(n: usize) -> Option<usize> {
    let bs = ((1.0 + (1.0 + 8.0 * n as f64).sqrt()) / 2.0).round() as usize;
    (bs.checked_mul(bs.saturating_sub(1))? / 2 == n).then_some(bs)
}
