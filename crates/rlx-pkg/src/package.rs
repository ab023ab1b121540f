//! [`Package`]: an open `.rlxp` file, checked at open, its tensors handed
//! out by tier (and through [`WeightLoader`]).

use crate::error::{PkgError, Result};
use crate::format::{checksum, Header, HEADER_LEN};
use crate::graph_check;
use crate::options::options_from_json;
use crate::placement::Placement;
use crate::source::{MaterializeMode, Source, TensorBytes};
use crate::toc::{BlobEntry, Encoding, TensorEntry, Tier, Toc};
use crate::warm::{block_ranges, BlockDecoder, WarmCache, DEFAULT_WARM_BUDGET};
use crate::writer::PackageBuilder;
use memmap2::Mmap;
use rlx_ir::{ErrorSource, Graph, HostTensor};
use rlx_runtime::{CompileOptions, PieceSink, TensorMeta, WeightError, WeightLoader};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// An open `.rlxp` package (`docs/rlxp.md`). Opening checks the header,
/// the TOC, every span, the placement and the graph against the tensors;
/// a tensor's checksum is checked before its bytes are first handed out.
pub struct Package {
    path: String,
    mode: MaterializeMode,
    source: Source,
    header: Header,
    toc: Toc,
    graph: Option<Graph>,
    options: CompileOptions,
    index: HashMap<String, usize>,
    copied: Vec<Option<Vec<u8>>>,
    verified: Vec<AtomicBool>,
    warm: Mutex<WarmCache>,
}

impl std::fmt::Debug for Package {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Package")
            .field("path", &self.path)
            .field("mode", &self.mode)
            .field("tensors", &self.toc.tensors.len())
            .finish()
    }
}

impl Package {
    /// A builder for a new package.
    pub fn builder() -> PackageBuilder {
        PackageBuilder::default()
    }

    /// Opens the package at `path` with a memory map ([`MaterializeMode::Mmap`]).
    pub fn open(path: impl AsRef<Path>) -> Result<Package> {
        Package::open_with(path, MaterializeMode::Mmap)
    }

    /// Opens the package at `path` in `mode`.
    ///
    /// With [`MaterializeMode::Mmap`], as with every memory map, the file
    /// must not be truncated or rewritten while the package is open.
    pub fn open_with(path: impl AsRef<Path>, mode: MaterializeMode) -> Result<Package> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let io = |source| PkgError::Io {
            path: name.clone(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let source = match mode {
            MaterializeMode::Mmap => {
                // SAFETY: a read-only private map; views never outlive
                // `self`, and every span is checked against its length.
                let map = unsafe { Mmap::map(&file) }.map_err(io)?;
                Source::Mapped(map)
            }
            MaterializeMode::Copy | MaterializeMode::Lazy => Source::File(Mutex::new(file)),
        };
        let file_len = match &source {
            Source::Mapped(m) => m.len() as u64,
            _ => std::fs::metadata(path).map_err(io)?.len(),
        };
        let mut pkg = Package::new(name, mode, source, file_len)?;
        if mode == MaterializeMode::Copy {
            pkg.copy_resident()?;
        }
        Ok(pkg)
    }

    /// Checks a package held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Package> {
        let len = bytes.len() as u64;
        Package::new(
            "<bytes>".into(),
            MaterializeMode::Mmap,
            Source::Owned(bytes),
            len,
        )
    }

    fn new(path: String, mode: MaterializeMode, source: Source, file_len: u64) -> Result<Package> {
        let head = source.read(&path, 0, file_len.min(HEADER_LEN))?;
        let header = Header::decode(&head, file_len)?;
        drop(head);
        let range = header.toc_range();
        let toc_bytes = source.read(&path, range.start as u64, range.end as u64)?;
        let computed = checksum(&toc_bytes);
        if computed != header.toc_checksum {
            return Err(PkgError::TocChecksum {
                offset: range.start as u64,
                end: range.end as u64,
                stored: header.toc_checksum,
                computed,
            });
        }
        let toc = Toc::parse(&toc_bytes, header.data_offset, header.data_len)?;
        drop(toc_bytes);
        let options = options_from_json(&toc.options)?;
        let index: HashMap<String, usize> = toc
            .tensors
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        let graph = graph_check::parse(&toc.graph)?;
        if let Some(g) = &graph {
            graph_check::check_params(g, |n| index.get(n).map(|&i| &toc.tensors[i]))?;
        }
        let n = toc.tensors.len();
        Ok(Package {
            path,
            mode,
            source,
            header,
            toc,
            graph,
            options,
            index,
            copied: (0..n).map(|_| None).collect(),
            verified: (0..n).map(|_| AtomicBool::new(false)).collect(),
            warm: Mutex::new(WarmCache::new(DEFAULT_WARM_BUDGET)),
        })
    }

    /// Copy mode: reads (and verifies) the stored bytes of every hot and
    /// warm tensor.
    fn copy_resident(&mut self) -> Result<()> {
        for i in 0..self.toc.tensors.len() {
            if self.toc.tensors[i].tier == Tier::Cold {
                continue;
            }
            let bytes = self.stored(i)?.to_vec();
            self.copied[i] = Some(bytes);
        }
        Ok(())
    }

    /// The file's path (or `<bytes>`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// How the package was opened.
    pub fn mode(&self) -> MaterializeMode {
        self.mode
    }

    /// The file's `(major, minor)` version.
    pub fn version(&self) -> (u16, u16) {
        (self.header.major, self.header.minor)
    }

    /// The stored graph (parsed and checked against the tensors at open);
    /// [`PkgError::NoGraph`] for a weights-only package.
    pub fn graph(&self) -> Result<&Graph> {
        self.graph.as_ref().ok_or_else(|| PkgError::NoGraph {
            path: self.path.clone(),
        })
    }

    /// Whether the package holds a graph (else weights only).
    pub fn has_graph(&self) -> bool {
        self.graph.is_some()
    }

    /// The stored compile options.
    pub fn options(&self) -> &CompileOptions {
        &self.options
    }

    /// The placement table.
    pub fn placement(&self) -> &Placement {
        &self.toc.placement
    }

    /// The metadata strings.
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.toc.metadata
    }

    /// Every tensor entry, in TOC order.
    pub fn entries(&self) -> &[TensorEntry] {
        &self.toc.tensors
    }

    /// Every blob entry, in TOC order.
    pub fn blob_entries(&self) -> &[BlobEntry] {
        &self.toc.blobs
    }

    /// The entry of tensor `name`.
    pub fn entry(&self, name: &str) -> Result<&TensorEntry> {
        self.index_of(name).map(|i| &self.toc.tensors[i])
    }

    /// The tensor names in TOC order.
    pub fn tensor_names(&self) -> Vec<String> {
        self.toc.tensors.iter().map(|t| t.name.clone()).collect()
    }

    fn index_of(&self, name: &str) -> Result<usize> {
        self.index
            .get(name)
            .copied()
            .ok_or_else(|| PkgError::NotFound {
                kind: "tensor",
                name: name.to_string(),
                count: self.toc.tensors.len(),
            })
    }

    /// File byte range of a span of the data section.
    fn file_range(&self, offset: u64, len: u64) -> (u64, u64) {
        // In range: checked at open.
        let start = self.header.data_offset + offset;
        (start, start + len)
    }

    /// The stored bytes of tensor `i`, checksum verified once.
    fn stored(&self, i: usize) -> Result<TensorBytes<'_>> {
        let t = &self.toc.tensors[i];
        let (start, end) = self.file_range(t.offset, t.len);
        let bytes: TensorBytes<'_> = match &self.copied[i] {
            Some(v) => TensorBytes::Borrowed(v),
            None => self.source.read(&self.path, start, end)?.into(),
        };
        if !self.verified[i].load(Ordering::Acquire) {
            let computed = checksum(&bytes);
            if computed != t.checksum {
                return Err(PkgError::TensorChecksum {
                    kind: "tensor",
                    name: t.name.clone(),
                    offset: start,
                    end,
                    stored: t.checksum,
                    computed,
                });
            }
            self.verified[i].store(true, Ordering::Release);
        }
        Ok(bytes)
    }

    /// The decoded bytes of tensor `name` (little-endian, its dtype):
    /// in place for a raw tensor held in memory, from the warm cache (or
    /// decoded now and cached within the budget) for a zstd one.
    pub fn tensor_bytes(&self, name: &str) -> Result<TensorBytes<'_>> {
        let i = self.index_of(name)?;
        let t = &self.toc.tensors[i];
        if t.encoding == Encoding::Raw {
            return self.stored(i);
        }
        let mut cache = self.warm.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = cache.get(i) {
            return Ok(TensorBytes::Shared(v));
        }
        drop(cache);
        let v = Arc::new(self.decode(i)?);
        if t.tier == Tier::Warm {
            let mut cache = self.warm.lock().unwrap_or_else(|p| p.into_inner());
            cache.insert(i, v.clone());
        }
        Ok(TensorBytes::Shared(v))
    }

    /// Decodes every zstd block of tensor `i`.
    fn decode(&self, i: usize) -> Result<Vec<u8>> {
        let t = &self.toc.tensors[i];
        let stored = self.stored(i)?;
        // nbytes: at most MAX_RATIO times the stored bytes (checked at open).
        let mut out = Vec::with_capacity(t.nbytes as usize);
        let base = self.header.data_offset + t.offset;
        let mut dec = BlockDecoder::new();
        for (k, r) in block_ranges(t) {
            dec.decode(t, k, &stored[r.clone()], base + r.start as u64, &mut out)?;
        }
        Ok(out)
    }

    /// The bytes of a raw hot tensor, in place (zero-copy), when the
    /// package is mapped, in memory or copied; `None` otherwise (a zstd
    /// tensor, a lazily read one). Checksum verified on first use.
    pub fn view(&self, name: &str) -> Result<Option<&[u8]>> {
        let i = self.index_of(name)?;
        let t = &self.toc.tensors[i];
        if t.encoding != Encoding::Raw || !(self.source.in_memory() || self.copied[i].is_some()) {
            return Ok(None);
        }
        match self.stored(i)? {
            TensorBytes::Borrowed(b) => Ok(Some(b)),
            _ => Ok(None),
        }
    }

    /// A copy of tensor `name` as a [`HostTensor`] (a quantized weight as
    /// its `u8` blocks).
    pub fn tensor(&self, name: &str) -> Result<HostTensor> {
        let t = self.entry(name)?;
        let bytes = self.tensor_bytes(name)?;
        Ok(
            HostTensor::from_bytes(t.dtype, &t.dims, bytes.to_vec())
                .expect("sizes checked at open"),
        )
    }

    /// The bytes of blob `name`, checksum verified.
    pub fn blob(&self, name: &str) -> Result<Vec<u8>> {
        let b = self
            .toc
            .blobs
            .iter()
            .find(|b| b.name == name)
            .ok_or_else(|| PkgError::NotFound {
                kind: "blob",
                name: name.to_string(),
                count: self.toc.blobs.len(),
            })?;
        let (start, end) = self.file_range(b.offset, b.len);
        let bytes = self.source.read(&self.path, start, end)?;
        let computed = checksum(&bytes);
        if computed != b.checksum {
            return Err(PkgError::TensorChecksum {
                kind: "blob",
                name: name.to_string(),
                offset: start,
                end,
                stored: b.checksum,
                computed,
            });
        }
        Ok(bytes.into_owned())
    }

    /// The stored `tokenizer.json` blob, if any.
    pub fn tokenizer_json(&self) -> Result<Option<String>> {
        if !self.toc.blobs.iter().any(|b| b.name == "tokenizer.json") {
            return Ok(None);
        }
        let bytes = self.blob("tokenizer.json")?;
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|e| PkgError::BadToc {
                reason: format!("blob \"tokenizer.json\" is not UTF-8: {e}"),
            })
    }

    /// Checks every tensor's and blob's checksum and decodes every zstd
    /// block (without caching), cold ones included.
    pub fn verify(&self) -> Result<()> {
        for i in 0..self.toc.tensors.len() {
            self.stored(i)?;
            if self.toc.tensors[i].encoding == Encoding::Zstd {
                self.decode(i)?;
            }
        }
        for b in &self.toc.blobs {
            self.blob(&b.name)?;
        }
        Ok(())
    }

    /// Sets the warm cache's byte budget (default 256 MiB), evicting the
    /// least recently used tensors above it.
    pub fn set_warm_budget(&self, bytes: usize) {
        self.warm
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .set_budget(bytes);
    }

    /// Bytes of decoded tensors the warm cache holds now.
    pub fn warm_cached_bytes(&self) -> usize {
        self.warm.lock().unwrap_or_else(|p| p.into_inner()).used()
    }

    fn weight_error(&self, e: PkgError) -> WeightError {
        match e {
            PkgError::NotFound { name, count, .. } => WeightError::NotFound {
                source_name: self.path.clone(),
                name,
                count,
            },
            e => WeightError::Malformed {
                source_name: self.path.clone(),
                reason: e.to_string(),
                source: Some(ErrorSource::new(e)),
            },
        }
    }
}

/// Hot tensors are handed out in place ([`WeightLoader::read_pieces`] gives
/// slices of the map); zstd tensors are decoded a block at a time there, so
/// loading a warm weight never holds more than one decoded block.
impl WeightLoader for Package {
    fn names(&self) -> Vec<String> {
        let mut names = self.tensor_names();
        names.sort();
        names
    }

    fn meta(&self, name: &str) -> std::result::Result<TensorMeta, WeightError> {
        let t = self.entry(name).map_err(|e| self.weight_error(e))?;
        Ok(TensorMeta {
            name: name.to_string(),
            dtype: t.dtype,
            dims: t.dims.clone(),
        })
    }

    fn get(&self, name: &str) -> std::result::Result<HostTensor, WeightError> {
        self.tensor(name).map_err(|e| self.weight_error(e))
    }

    fn read_pieces(&self, name: &str, sink: PieceSink<'_>) -> rlx_runtime::Result<()> {
        const PIECE: usize = 1 << 20;
        let i = self.index_of(name).map_err(|e| self.weight_error(e))?;
        let t = &self.toc.tensors[i];
        let stored = self.stored(i).map_err(|e| self.weight_error(e))?;
        if t.encoding == Encoding::Raw {
            for (k, piece) in stored.chunks(PIECE).enumerate() {
                sink(k * PIECE, piece)?;
            }
            return Ok(());
        }
        let base = self.header.data_offset + t.offset;
        let mut at = 0usize;
        let mut block = Vec::new();
        let mut dec = BlockDecoder::new();
        for (k, r) in block_ranges(t) {
            block.clear();
            dec.decode(t, k, &stored[r.clone()], base + r.start as u64, &mut block)
                .map_err(|e| self.weight_error(e))?;
            sink(at, &block)?;
            at += block.len();
        }
        Ok(())
    }
}
