//! Weight references ([`WeightRef`]) and their resolution, with a
//! content-addressed [`WeightCache`].

use super::error::{DistError, DistResult};
use super::wire::{Reader, Writer};
use crate::weights::BytesWeightLoader;
use rlx_ir::HostTensor;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Where a weight's values come from.
#[derive(Debug, Clone, PartialEq)]
pub enum WeightRef {
    /// A URI: `file:///path/model.safetensors#tensor_name`. Resolved by the
    /// receiving rank (it must see the same file system).
    Uri(String),
    /// The values themselves, shipped with the spec.
    Inline(HostTensor),
}

impl WeightRef {
    /// A `file://` reference to tensor `name` of a safetensors file.
    pub fn safetensors(path: impl AsRef<std::path::Path>, name: &str) -> WeightRef {
        WeightRef::Uri(format!("file://{}#{name}", path.as_ref().display()))
    }

    pub(crate) fn write(&self, w: &mut Writer) {
        match self {
            WeightRef::Uri(u) => {
                w.u64(0).str(u);
            }
            WeightRef::Inline(t) => {
                w.u64(1).tensor(t);
            }
        }
    }

    pub(crate) fn read(r: &mut Reader<'_>) -> DistResult<WeightRef> {
        match r.u64()? {
            0 => Ok(WeightRef::Uri(r.str()?)),
            1 => Ok(WeightRef::Inline(r.tensor()?)),
            k => Err(DistError::InvalidSpec(format!(
                "unknown weight reference kind {k}"
            ))),
        }
    }
}

/// Loads the tensor a URI names. Supported: `file://PATH#NAME` (a
/// safetensors file). `.rlxp` packages sit above this crate (`rlx-pkg`
/// depends on `rlx-runtime`): resolve them there and ship the values inline.
pub fn resolve_weight_uri(uri: &str) -> DistResult<HostTensor> {
    let err = |reason: String| DistError::Weight {
        uri: uri.to_string(),
        reason,
    };
    let Some(rest) = uri.strip_prefix("file://") else {
        let scheme = uri.split("://").next().unwrap_or(uri);
        return Err(err(format!(
            "unsupported scheme {scheme:?} (only file://PATH#NAME)"
        )));
    };
    let Some((path, name)) = rest.rsplit_once('#') else {
        return Err(err("no #tensor_name after the path".into()));
    };
    let loader = BytesWeightLoader::open(path).map_err(|e| err(e.to_string()))?;
    let (meta, bytes) = loader.view(name).map_err(|e| err(e.to_string()))?;
    HostTensor::from_bytes(meta.dtype, &meta.dims, bytes.to_vec()).map_err(|e| err(e.to_string()))
}

/// The values of any [`WeightRef`] (no caching).
pub fn resolve_weight_bytes(w: &WeightRef) -> DistResult<HostTensor> {
    match w {
        WeightRef::Uri(u) => resolve_weight_uri(u),
        WeightRef::Inline(t) => Ok(t.clone()),
    }
}

/// A function from a weight reference to its values (what the serve and
/// train entry points take).
pub type Resolver = dyn Fn(&WeightRef) -> DistResult<HostTensor> + Send + Sync;

/// Resolved weights by content hash (BLAKE3 of dtype, dims and bytes), with
/// URIs remembered, so a weight shared by several stages or loaded twice is
/// read and kept once.
#[derive(Default)]
pub struct WeightCache {
    by_hash: Mutex<HashMap<[u8; 32], Arc<HostTensor>>>,
    by_uri: Mutex<HashMap<String, [u8; 32]>>,
}

impl WeightCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The content hash of a tensor.
    pub fn hash(t: &HostTensor) -> [u8; 32] {
        let mut h = blake3::Hasher::new();
        h.update(t.dtype().short_name().as_bytes());
        for &d in t.dims() {
            h.update(&(d as u64).to_le_bytes());
        }
        h.update(t.bytes());
        *h.finalize().as_bytes()
    }

    /// Stores `t` (once per content) and returns its hash.
    pub fn insert(&self, t: HostTensor) -> [u8; 32] {
        let key = Self::hash(&t);
        lock(&self.by_hash)
            .entry(key)
            .or_insert_with(|| Arc::new(t));
        key
    }

    /// The tensor with content hash `key`, if cached.
    pub fn get(&self, key: &[u8; 32]) -> Option<Arc<HostTensor>> {
        lock(&self.by_hash).get(key).cloned()
    }

    /// Number of distinct tensors held.
    pub fn len(&self) -> usize {
        lock(&self.by_hash).len()
    }

    /// Whether the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Resolves `w`, reading a URI at most once.
    pub fn resolve(&self, w: &WeightRef) -> DistResult<Arc<HostTensor>> {
        match w {
            WeightRef::Inline(t) => {
                let key = self.insert(t.clone());
                Ok(self.get(&key).expect("just inserted"))
            }
            WeightRef::Uri(u) => {
                if let Some(t) = lock(&self.by_uri).get(u).and_then(|k| self.get(k)) {
                    return Ok(t);
                }
                let key = self.insert(resolve_weight_uri(u)?);
                lock(&self.by_uri).insert(u.clone(), key);
                Ok(self.get(&key).expect("just inserted"))
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A [`Resolver`] that goes through `cache`.
pub fn uri_resolver(cache: Arc<WeightCache>) -> Box<Resolver> {
    Box::new(move |w| cache.resolve(w).map(|t| (*t).clone()))
}
