//! Split (sharded) GGUF models: `model-00001-of-00003.gguf`, ... as written
//! by llama.cpp's `gguf-split` and gguf-py, read as one [`GgufSplit`].

use crate::error::{GgufError, Result};
use crate::parse::TensorInfo;
use crate::reader::{dequantized_tensor, host_tensor, tensor_bytes, GgufReader};
use crate::value::Metadata;
use memmap2::Mmap;
use rlx_ir::HostTensor;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// `split.no`: this shard's 0-based index (u16).
pub const KEY_SPLIT_NO: &str = "split.no";
/// `split.count`: the number of shards (u16).
pub const KEY_SPLIT_COUNT: &str = "split.count";
/// `split.tensors.count`: the number of tensors over all shards (i32).
pub const KEY_SPLIT_TENSORS_COUNT: &str = "split.tensors.count";

/// The path of shard `no` (1-based) of `count` for a model at `path`:
/// `dir/model.gguf` -> `dir/model-00002-of-00003.gguf`.
pub fn shard_path(path: &Path, no: usize, count: usize) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!("{stem}-{no:05}-of-{count:05}.gguf"))
}

/// Splits a shard file name `prefix-NNNNN-of-MMMMM.gguf` into
/// (`prefix` with its directory, `NNNNN`, `MMMMM`).
pub fn parse_shard_path(path: &Path) -> Option<(PathBuf, usize, usize)> {
    let name = path.file_name()?.to_str()?;
    let base = name.strip_suffix(".gguf")?;
    let (rest, count) = base.rsplit_once("-of-")?;
    let (prefix, no) = rest.rsplit_once('-')?;
    let digits = |s: &str| s.len() == 5 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(no) || !digits(count) || prefix.is_empty() {
        return None;
    }
    let (no, count): (usize, usize) = (no.parse().ok()?, count.parse().ok()?);
    if no == 0 || no > count {
        return None;
    }
    Some((path.with_file_name(prefix), no, count))
}

/// A model made of one or more GGUF shards, with one tensor namespace.
///
/// Metadata comes from the first shard (the others carry only `split.*`
/// keys). Opening checks that every shard's `split.no` / `split.count`
/// match its place, that `split.tensors.count` equals the tensors found, and
/// that no tensor name appears in two shards.
#[derive(Debug)]
pub struct GgufSplit<D = Mmap> {
    shards: Vec<GgufReader<D>>,
    paths: Vec<PathBuf>,
    index: HashMap<String, (usize, usize)>,
    order: Vec<(usize, usize)>,
}

impl GgufSplit<Mmap> {
    /// Opens a model from any of its shards' paths (or a single unsplit file).
    ///
    /// A path named `prefix-NNNNN-of-MMMMM.gguf` opens all `MMMMM` shards; any
    /// other path is one file, which must not declare `split.count` > 1.
    pub fn open(path: impl AsRef<Path>) -> Result<GgufSplit<Mmap>> {
        let path = path.as_ref();
        let paths = match parse_shard_path(path) {
            Some((prefix, _, count)) => {
                let prefix = prefix.into_os_string();
                (1..=count)
                    .map(|i| {
                        let mut p = prefix.clone();
                        p.push(format!("-{i:05}-of-{count:05}.gguf"));
                        PathBuf::from(p)
                    })
                    .collect()
            }
            None => vec![path.to_path_buf()],
        };
        let mut shards = Vec::with_capacity(paths.len());
        for p in &paths {
            shards.push(GgufReader::open(p)?);
        }
        GgufSplit::from_shards_with_paths(shards, paths)
    }
}

impl<D: AsRef<[u8]>> GgufSplit<D> {
    /// Joins already-parsed shards, given in shard order.
    pub fn from_shards(shards: Vec<GgufReader<D>>) -> Result<GgufSplit<D>> {
        let paths = (1..=shards.len())
            .map(|i| PathBuf::from(format!("<shard {i}>")))
            .collect();
        GgufSplit::from_shards_with_paths(shards, paths)
    }

    fn from_shards_with_paths(shards: Vec<GgufReader<D>>, paths: Vec<PathBuf>) -> Result<Self> {
        let n = shards.len();
        if n == 0 {
            return Err(GgufError::Split {
                path: PathBuf::new(),
                reason: "no shards".into(),
            });
        }
        let err = |i: usize, reason: String| GgufError::Split {
            path: paths[i].clone(),
            reason,
        };
        let mut declared_total = None;
        for (i, s) in shards.iter().enumerate() {
            let m = s.metadata();
            let count = if m.contains_key(KEY_SPLIT_COUNT) {
                m.get_u64(KEY_SPLIT_COUNT)
                    .map_err(|e| err(i, e.to_string()))?
            } else {
                1
            };
            if count != n as u64 && !(n == 1 && count <= 1) {
                return Err(err(
                    i,
                    format!("split.count is {count} but {n} shard(s) were given"),
                ));
            }
            if m.contains_key(KEY_SPLIT_NO) {
                let no = m.get_u64(KEY_SPLIT_NO).map_err(|e| err(i, e.to_string()))?;
                if no != i as u64 {
                    return Err(err(i, format!("split.no is {no}, expected {i}")));
                }
            } else if n > 1 {
                return Err(err(i, "shard has no split.no".into()));
            }
            if i == 0 && m.contains_key(KEY_SPLIT_TENSORS_COUNT) {
                declared_total = Some(
                    m.get_u64(KEY_SPLIT_TENSORS_COUNT)
                        .map_err(|e| err(i, e.to_string()))?,
                );
            }
        }
        let mut index = HashMap::new();
        let mut order = Vec::new();
        for (si, s) in shards.iter().enumerate() {
            for (ti, t) in s.tensors().iter().enumerate() {
                if let Some(&(other, _)) = index.get(t.name()) {
                    return Err(err(
                        si,
                        format!("tensor '{}' is also in shard {}", t.name(), other + 1),
                    ));
                }
                index.insert(t.name().to_owned(), (si, ti));
                order.push((si, ti));
            }
        }
        if let Some(total) = declared_total {
            if total != order.len() as u64 {
                return Err(err(
                    0,
                    format!(
                        "split.tensors.count is {total} but the shards hold {} tensors",
                        order.len()
                    ),
                ));
            }
        }
        Ok(GgufSplit {
            shards,
            paths,
            index,
            order,
        })
    }

    /// The shards, in order.
    pub fn shards(&self) -> &[GgufReader<D>] {
        &self.shards
    }

    /// The shards' paths (placeholders for [`Self::from_shards`]).
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// The model's metadata (the first shard's).
    pub fn metadata(&self) -> &Metadata {
        self.shards[0].metadata()
    }

    /// Every tensor info, shard by shard in file order.
    pub fn tensors(&self) -> impl Iterator<Item = &TensorInfo> + '_ {
        self.order
            .iter()
            .map(|&(s, t)| &self.shards[s].tensors()[t])
    }

    /// Number of tensors over all shards.
    pub fn tensor_count(&self) -> usize {
        self.order.len()
    }

    fn locate(&self, name: &str) -> Result<(&GgufReader<D>, &TensorInfo)> {
        let &(s, t) = self
            .index
            .get(name)
            .ok_or_else(|| GgufError::TensorNotFound { name: name.into() })?;
        Ok((&self.shards[s], &self.shards[s].tensors()[t]))
    }

    /// The info of a tensor and the shard index holding it.
    pub fn tensor_info(&self, name: &str) -> Option<(usize, &TensorInfo)> {
        self.index
            .get(name)
            .map(|&(s, t)| (s, &self.shards[s].tensors()[t]))
    }

    /// A tensor's raw bytes.
    pub fn tensor_data(&self, name: &str) -> Result<&[u8]> {
        let (shard, info) = self.locate(name)?;
        Ok(tensor_bytes(shard.bytes(), info))
    }

    /// A plain-typed tensor (see [`GgufReader::tensor`]).
    pub fn tensor(&self, name: &str) -> Result<HostTensor> {
        let (shard, info) = self.locate(name)?;
        host_tensor(info, tensor_bytes(shard.bytes(), info))
    }

    /// A tensor decoded to F32 (see [`GgufReader::dequantize`]).
    pub fn dequantize(&self, name: &str) -> Result<HostTensor> {
        let (shard, info) = self.locate(name)?;
        dequantized_tensor(info, tensor_bytes(shard.bytes(), info))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_names() {
        let p = shard_path(Path::new("/m/llama.gguf"), 2, 3);
        assert_eq!(p, Path::new("/m/llama-00002-of-00003.gguf"));
        let (prefix, no, count) = parse_shard_path(&p).unwrap();
        assert_eq!((prefix, no, count), (PathBuf::from("/m/llama"), 2, 3));
        assert!(parse_shard_path(Path::new("/m/llama.gguf")).is_none());
        assert!(parse_shard_path(Path::new("x-00004-of-00003.gguf")).is_none());
        assert!(parse_shard_path(Path::new("x-1-of-3.gguf")).is_none());
    }
}
