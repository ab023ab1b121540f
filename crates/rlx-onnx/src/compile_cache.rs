//! The process-wide compiled-graph cache: a model loaded again (the same
//! bytes, the same options, the same device) reuses the decoded protobuf
//! and every specialisation an earlier load compiled, instead of decoding,
//! importing and compiling again.
//!
//! Models are keyed by a 128-bit xxh3 hash of their bytes (external data
//! files are not hashed: their directory is part of the key), a
//! specialisation by that, the options, the device and its input dims /
//! baked input values. The cache keeps the [`CACHED_MODELS`] most recently
//! loaded models (their weights stay in memory while cached);
//! [`clear_compile_cache`] empties it and `OnnxOptions::compile_cache(false)`
//! keeps a model out of it.

use crate::import::Imported;
use crate::proto::ModelProto;
use rlx_runtime::CompiledGraph;
use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Models the cache holds at most (least recently loaded dropped first).
pub const CACHED_MODELS: usize = 4;

/// One specialisation: the imported graph and its compiled form, shared by
/// every model loaded from the same bytes with the same options.
pub(crate) struct Specialised {
    pub imported: Imported,
    pub compiled: Mutex<CompiledGraph>,
}

impl Specialised {
    /// The compiled graph, locked for a run (a poisoned lock is still
    /// usable: a failed run leaves the executable valid).
    pub fn compiled(&self) -> MutexGuard<'_, CompiledGraph> {
        self.compiled.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Which model: the hash of its bytes and where its external data lives.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ModelKey {
    hash: u128,
    base_dir: Option<PathBuf>,
}

impl ModelKey {
    /// The key of a model read from `bytes`.
    pub fn of(bytes: &[u8], base_dir: Option<PathBuf>) -> ModelKey {
        ModelKey {
            hash: xxhash_rust::xxh3::xxh3_128(bytes),
            base_dir,
        }
    }

    /// The key of the model in the file at `path`, hashed as it streams
    /// through a small buffer (equal to [`ModelKey::of`] its bytes): a
    /// cached model is found without reading the file into memory.
    pub fn of_file(path: &Path, base_dir: Option<PathBuf>) -> std::io::Result<ModelKey> {
        let mut file = std::fs::File::open(path)?;
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            hasher.update(&buf[..n]);
        }
        Ok(ModelKey {
            hash: hasher.digest128(),
            base_dir,
        })
    }
}

/// One specialisation of a model: the options and device (as text, the
/// options hold a map) and the input dims / baked values.
pub(crate) type SpecKey = (String, crate::onnx_model::Key);

struct Entry {
    model: ModelKey,
    proto: Arc<ModelProto>,
    specialised: HashMap<SpecKey, Arc<Specialised>>,
}

fn cache() -> MutexGuard<'static, VecDeque<Entry>> {
    static CACHE: Mutex<VecDeque<Entry>> = Mutex::new(VecDeque::new());
    CACHE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// True when a cached model was loaded with external data in `base_dir`
/// (a model from another directory cannot be one of them).
pub(crate) fn holds_dir(base_dir: &Option<PathBuf>) -> bool {
    cache().iter().any(|e| &e.model.base_dir == base_dir)
}

/// The decoded model of `key` when it is cached (it becomes the most
/// recently loaded).
pub(crate) fn cached_proto(key: &ModelKey) -> Option<Arc<ModelProto>> {
    let mut c = cache();
    let at = c.iter().position(|e| &e.model == key)?;
    // Most recently loaded last: eviction drops the front.
    let e = c.remove(at).expect("found");
    let proto = e.proto.clone();
    c.push_back(e);
    Some(proto)
}

/// The decoded model of `key`, decoding it with `decode` (and caching it)
/// when it is not cached.
pub(crate) fn proto(
    key: &ModelKey,
    decode: impl FnOnce() -> crate::Result<ModelProto>,
) -> crate::Result<Arc<ModelProto>> {
    if let Some(proto) = cached_proto(key) {
        return Ok(proto);
    }
    // Decode without holding the lock; a model decoded twice meanwhile
    // keeps the first entry.
    let proto = Arc::new(decode()?);
    let mut c = cache();
    if let Some(e) = c.iter().find(|e| &e.model == key) {
        return Ok(e.proto.clone());
    }
    if c.len() == CACHED_MODELS {
        c.pop_front();
    }
    c.push_back(Entry {
        model: key.clone(),
        proto: proto.clone(),
        specialised: HashMap::new(),
    });
    Ok(proto)
}

/// Lookups of a specialisation that found / did not find it.
static HITS: AtomicUsize = AtomicUsize::new(0);
static MISSES: AtomicUsize = AtomicUsize::new(0);

/// A cached specialisation, if any.
pub(crate) fn specialised(model: &ModelKey, spec: &SpecKey) -> Option<Arc<Specialised>> {
    let found = cache()
        .iter()
        .find(|e| &e.model == model)
        .and_then(|e| e.specialised.get(spec).cloned());
    let counter = if found.is_some() { &HITS } else { &MISSES };
    counter.fetch_add(1, Relaxed);
    found
}

/// How the cache has served this process: specialisations found in it
/// (imports and compiles saved), and those compiled afresh.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheStats {
    /// Specialisations taken from the cache.
    pub hits: usize,
    /// Specialisations looked up and not found (then compiled).
    pub misses: usize,
}

/// The cache's counters since the process started.
pub fn cache_stats() -> CacheStats {
    CacheStats {
        hits: HITS.load(Relaxed),
        misses: MISSES.load(Relaxed),
    }
}

/// Caches a specialisation (a no-op once its model has left the cache).
pub(crate) fn insert(model: &ModelKey, spec: SpecKey, s: Arc<Specialised>) {
    if let Some(e) = cache().iter_mut().find(|e| &e.model == model) {
        e.specialised.entry(spec).or_insert(s);
    }
}

/// Empties the compiled-graph cache (models loaded already keep what they
/// compiled).
pub fn clear_compile_cache() {
    cache().clear();
}

/// Models the compiled-graph cache holds now.
pub fn cached_models() -> usize {
    cache().len()
}

#[cfg(test)]
mod tests {
    use super::ModelKey;

    /// Streaming the file through the hasher gives the key of its bytes
    /// (xxh3-128 of the whole), across the buffer's boundaries.
    #[test]
    fn file_key_equals_bytes_key() {
        let bytes: Vec<u8> = (0..(3usize << 20) + 12345)
            .map(|i| (i * 7919 % 251) as u8)
            .collect();
        let path = std::env::temp_dir().join(format!("rlx-onnx-key-{}.bin", std::process::id()));
        std::fs::write(&path, &bytes).unwrap();
        let from_file = ModelKey::of_file(&path, None).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(from_file, ModelKey::of(&bytes, None));
        assert_ne!(from_file, ModelKey::of(&bytes[1..], None));
    }
}
