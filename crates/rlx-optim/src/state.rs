//! Per-parameter optimizer state, keyed by parameter name, and its saved
//! form ([`OptimState`], JSON with exact floats).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::error::{OptimError, Result};
use crate::float::Float;

/// The state of one parameter: its step count, shape, precision and the
/// optimizer's named buffers (moments, preconditioners, ...).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParamState {
    /// Steps taken on this parameter.
    pub step: u64,
    /// The parameter's shape.
    pub shape: Vec<usize>,
    /// `"f32"` or `"f64"`.
    pub dtype: &'static str,
    /// Buffers of an `f32` parameter.
    pub f32: BTreeMap<String, Vec<f32>>,
    /// Buffers of an `f64` parameter.
    pub f64: BTreeMap<String, Vec<f64>>,
    /// Scalars kept between steps (kept as `f64`; each optimizer rounds
    /// them the way its reference stores them).
    pub scalars: BTreeMap<String, f64>,
}

impl ParamState {
    /// Takes buffers out of the state (zeros where absent), to be put back
    /// with [`ParamState::put`]. Every length is checked before anything is
    /// removed, so an error leaves the state as it was.
    pub(crate) fn take_all<T: Float>(&mut self, specs: &[(&str, usize)]) -> Result<Vec<Vec<T>>> {
        for &(key, n) in specs {
            if let Some(v) = T::bufs_ref(self).get(key) {
                if v.len() != n {
                    return Err(OptimError::BadState(format!(
                        "buffer `{key}` has {} elements, expected {n}",
                        v.len()
                    )));
                }
            }
        }
        Ok(specs
            .iter()
            .map(|&(key, n)| {
                T::bufs(self)
                    .remove(key)
                    .unwrap_or_else(|| vec![T::zero(); n])
            })
            .collect())
    }

    /// Puts back what [`ParamState::take_all`] took (same order).
    pub(crate) fn put_all<T: Float>(&mut self, specs: &[(&str, usize)], bufs: Vec<Vec<T>>) {
        for (&(key, _), v) in specs.iter().zip(bufs) {
            self.put(key, v);
        }
    }

    /// Whether buffer `key` exists.
    pub(crate) fn has<T: Float>(&self, key: &str) -> bool {
        T::bufs_ref(self).contains_key(key)
    }

    /// Stores buffer `key`.
    pub(crate) fn put<T: Float>(&mut self, key: &str, v: Vec<T>) {
        T::bufs(self).insert(key.to_string(), v);
    }

    /// Scalar `key`, or `default` if absent.
    pub(crate) fn scalar(&self, key: &str, default: f64) -> f64 {
        self.scalars.get(key).copied().unwrap_or(default)
    }
}

/// The saved state of a whole optimizer: what [`crate::Optimizer::save_state`]
/// returns and [`crate::Optimizer::load_state`] takes. Buffers of `f32`
/// parameters are widened to `f64` (exactly) and narrowed back on load.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OptimState {
    /// Which optimizer wrote it (its type name).
    pub optimizer: String,
    /// Iterations ended (`end_iteration` calls).
    pub iteration: u64,
    /// The learning rate in force.
    pub lr: f64,
    /// Per-parameter state, by name.
    pub params: BTreeMap<String, SavedParam>,
}

/// One parameter's saved state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SavedParam {
    /// Steps taken.
    pub step: u64,
    /// The parameter's shape.
    pub shape: Vec<usize>,
    /// `"f32"` or `"f64"`.
    pub dtype: String,
    /// Named buffers, widened to `f64`.
    pub buffers: BTreeMap<String, Vec<f64>>,
    /// Named scalars.
    pub scalars: BTreeMap<String, f64>,
}

impl SavedParam {
    pub(crate) fn from_state(st: &ParamState) -> Self {
        let mut buffers: BTreeMap<String, Vec<f64>> = st.f64.clone();
        for (k, v) in &st.f32 {
            buffers.insert(k.clone(), v.iter().map(|&x| x as f64).collect());
        }
        SavedParam {
            step: st.step,
            shape: st.shape.clone(),
            dtype: st.dtype.to_string(),
            buffers,
            scalars: st.scalars.clone(),
        }
    }

    pub(crate) fn to_state(&self, name: &str) -> Result<ParamState> {
        let mut st = ParamState {
            step: self.step,
            shape: self.shape.clone(),
            scalars: self.scalars.clone(),
            ..Default::default()
        };
        match self.dtype.as_str() {
            "f32" => {
                st.dtype = "f32";
                for (k, v) in &self.buffers {
                    st.f32
                        .insert(k.clone(), v.iter().map(|&x| x as f32).collect());
                }
            }
            "f64" => {
                st.dtype = "f64";
                st.f64 = self.buffers.clone();
            }
            other => {
                return Err(OptimError::BadState(format!(
                    "parameter `{name}`: dtype `{other}` is neither f32 nor f64"
                )))
            }
        }
        Ok(st)
    }
}

pub(crate) fn num(x: f64) -> Value {
    // JSON has no NaN / infinity: those are written as strings.
    if x.is_finite() {
        json!(x)
    } else {
        json!(format!("{x}"))
    }
}

pub(crate) fn get_num(v: &Value, what: &str) -> Result<f64> {
    match v {
        Value::Number(n) => n
            .as_f64()
            .ok_or_else(|| OptimError::BadState(format!("{what}: not a number"))),
        Value::String(s) => match s.as_str() {
            "NaN" | "nan" => Ok(f64::NAN),
            "inf" | "Infinity" => Ok(f64::INFINITY),
            "-inf" | "-Infinity" => Ok(f64::NEG_INFINITY),
            _ => Err(OptimError::BadState(format!(
                "{what}: `{s}` is not a number"
            ))),
        },
        _ => Err(OptimError::BadState(format!("{what}: not a number"))),
    }
}

pub(crate) fn get<'a>(o: &'a Map<String, Value>, key: &str, what: &str) -> Result<&'a Value> {
    o.get(key)
        .ok_or_else(|| OptimError::BadState(format!("{what}: missing `{key}`")))
}

pub(crate) fn get_u64(o: &Map<String, Value>, key: &str, what: &str) -> Result<u64> {
    get(o, key, what)?
        .as_u64()
        .ok_or_else(|| OptimError::BadState(format!("{what}.{key}: not a non-negative integer")))
}

pub(crate) fn get_obj<'a>(v: &'a Value, what: &str) -> Result<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| OptimError::BadState(format!("{what}: not an object")))
}

pub(crate) fn get_arr<'a>(v: &'a Value, what: &str) -> Result<&'a Vec<Value>> {
    v.as_array()
        .ok_or_else(|| OptimError::BadState(format!("{what}: not an array")))
}

impl OptimState {
    /// The state as a JSON document (floats round-trip exactly).
    pub fn to_json(&self) -> String {
        let params: Map<String, Value> = self
            .params
            .iter()
            .map(|(name, p)| {
                let bufs: Map<String, Value> = p
                    .buffers
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::Array(v.iter().map(|&x| num(x)).collect())))
                    .collect();
                let scalars: Map<String, Value> = p
                    .scalars
                    .iter()
                    .map(|(k, &v)| (k.clone(), num(v)))
                    .collect();
                let entry = json!({
                    "step": p.step, "shape": p.shape, "dtype": p.dtype,
                    "buffers": bufs, "scalars": scalars,
                });
                (name.clone(), entry)
            })
            .collect();
        json!({
            "format": "rlx-optim-state-v1", "optimizer": self.optimizer,
            "iteration": self.iteration, "lr": num(self.lr), "params": params,
        })
        .to_string()
    }

    /// Parses what [`OptimState::to_json`] wrote; a malformed document is an
    /// [`OptimError::BadState`] naming the field.
    pub fn from_json(text: &str) -> Result<Self> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| OptimError::BadState(format!("not JSON: {e}")))?;
        let top = get_obj(&v, "document")?;
        match get(top, "format", "document")?.as_str() {
            Some("rlx-optim-state-v1") => {}
            _ => {
                return Err(OptimError::BadState(
                    "format is not rlx-optim-state-v1".into(),
                ))
            }
        }
        let optimizer = get(top, "optimizer", "document")?
            .as_str()
            .ok_or_else(|| OptimError::BadState("optimizer: not a string".into()))?
            .to_string();
        let mut out = OptimState {
            optimizer,
            iteration: get_u64(top, "iteration", "document")?,
            lr: get_num(get(top, "lr", "document")?, "lr")?,
            params: BTreeMap::new(),
        };
        for (name, pv) in get_obj(get(top, "params", "document")?, "params")? {
            let what = format!("params.{name}");
            let p = get_obj(pv, &what)?;
            let shape = get_arr(get(p, "shape", &what)?, &what)?
                .iter()
                .map(|d| d.as_u64().map(|d| d as usize))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| OptimError::BadState(format!("{what}.shape: not integers")))?;
            let dtype = get(p, "dtype", &what)?
                .as_str()
                .ok_or_else(|| OptimError::BadState(format!("{what}.dtype: not a string")))?
                .to_string();
            let mut buffers = BTreeMap::new();
            for (k, bv) in get_obj(get(p, "buffers", &what)?, &what)? {
                let bw = format!("{what}.buffers.{k}");
                let xs = get_arr(bv, &bw)?
                    .iter()
                    .map(|x| get_num(x, &bw))
                    .collect::<Result<Vec<_>>>()?;
                buffers.insert(k.clone(), xs);
            }
            let mut scalars = BTreeMap::new();
            for (k, sv) in get_obj(get(p, "scalars", &what)?, &what)? {
                scalars.insert(k.clone(), get_num(sv, &format!("{what}.scalars.{k}"))?);
            }
            let step = get_u64(p, "step", &what)?;
            out.params.insert(
                name.clone(),
                SavedParam {
                    step,
                    shape,
                    dtype,
                    buffers,
                    scalars,
                },
            );
        }
        Ok(out)
    }
}
