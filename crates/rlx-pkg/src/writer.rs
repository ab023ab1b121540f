//! [`PackageBuilder`]: writes a `.rlxp` package from a graph, its compile
//! options, weights (from [`HostTensor`]s or any [`WeightLoader`]), a
//! placement table, metadata and blobs.

use crate::error::{PkgError, Result};
use crate::format::{checksum, Header, ALIGN, HEADER_LEN, MAJOR, MAX_RATIO, MINOR, WRITE_BLOCK};
use crate::graph_check;
use crate::options::options_to_json;
use crate::placement::Placement;
use crate::toc::{BlobEntry, Encoding, QuantInfo, TensorEntry, Tier, Toc};
use rlx_ir::quant::QuantScheme;
use rlx_ir::{DType, Graph, HostTensor};
use rlx_runtime::{CompileOptions, WeightLoader};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

struct Pending {
    name: String,
    dtype: DType,
    dims: Vec<usize>,
    bytes: Vec<u8>,
    tier: Option<Tier>,
    quant: Option<QuantInfo>,
}

/// Builds a package ([`crate::Package::builder`]).
///
/// ```
/// use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
/// use rlx_pkg::{Package, Tier};
/// let mut g = Graph::new("lin");
/// let x = g.input("x", Shape::new(&[1, 2], DType::F32));
/// let w = g.param("w", Shape::new(&[2, 2], DType::F32));
/// let y = g.mm(x, w);
/// g.set_outputs(vec![y]);
/// let w = HostTensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
/// let bytes = Package::builder()
///     .graph(g)
///     .tensor_in("w", &w, Tier::Warm)
///     .metadata("source", "doc example")
///     .to_bytes()
///     .unwrap();
/// let pkg = Package::from_bytes(bytes).unwrap();
/// assert_eq!(pkg.tensor("w").unwrap(), w);
/// assert_eq!(pkg.metadata()["source"], "doc example");
/// ```
pub struct PackageBuilder {
    graph: Option<Graph>,
    options: CompileOptions,
    tensors: Vec<Pending>,
    tiers: HashMap<String, Tier>,
    default_tier: Tier,
    placement: Option<Placement>,
    metadata: BTreeMap<String, String>,
    blobs: Vec<(String, Vec<u8>)>,
    zstd_level: i32,
    error: Option<PkgError>,
}

impl Default for PackageBuilder {
    fn default() -> Self {
        PackageBuilder {
            graph: None,
            options: CompileOptions::default(),
            tensors: Vec::new(),
            tiers: HashMap::new(),
            default_tier: Tier::Hot,
            placement: None,
            metadata: BTreeMap::new(),
            blobs: Vec::new(),
            zstd_level: 3,
            error: None,
        }
    }
}

impl PackageBuilder {
    /// The graph the package runs (without one, a weights-only package).
    pub fn graph(mut self, g: Graph) -> Self {
        self.graph = Some(g);
        self
    }

    /// The graph with its constants of at least `min_bytes` bytes stored
    /// as tensors in the default tier ([`crate::lift_constants`]): the way
    /// to package an imported ONNX model, whose initializers are constants.
    pub fn graph_lifting_constants(mut self, g: &Graph, min_bytes: usize) -> Self {
        let (lifted, values) = crate::lift::lift_constants(g, min_bytes);
        for (name, t) in &values {
            self = self.tensor(name, t);
        }
        self.graph(lifted)
    }

    /// The options the graph is compiled with (default: `CompileOptions::default()`).
    pub fn options(mut self, opts: CompileOptions) -> Self {
        self.options = opts;
        self
    }

    /// The tier of tensors given no tier of their own (default [`Tier::Hot`]).
    pub fn default_tier(mut self, tier: Tier) -> Self {
        self.default_tier = tier;
        self
    }

    /// Sets the tier of tensor `name` (given before or after this call).
    pub fn tier(mut self, name: &str, tier: Tier) -> Self {
        self.tiers.insert(name.to_string(), tier);
        self
    }

    /// The zstd level of the warm / cold compressed tiers (default 3).
    pub fn zstd_level(mut self, level: i32) -> Self {
        self.zstd_level = level;
        self
    }

    /// Adds tensor `name` in the default tier.
    pub fn tensor(mut self, name: &str, t: &HostTensor) -> Self {
        self.push(
            name,
            t.dtype(),
            t.dims().to_vec(),
            t.bytes().to_vec(),
            None,
            None,
        );
        self
    }

    /// Adds tensor `name` in `tier`.
    pub fn tensor_in(mut self, name: &str, t: &HostTensor, tier: Tier) -> Self {
        let (dtype, dims, bytes) = (t.dtype(), t.dims().to_vec(), t.bytes().to_vec());
        self.push(name, dtype, dims, bytes, Some(tier), None);
        self
    }

    /// Adds a GGUF block-quantized weight as its blocks (`bytes`), with its
    /// logical `dims`; it is a `u8 [bytes.len()]` tensor to the graph.
    pub fn quantized(
        mut self,
        name: &str,
        scheme: QuantScheme,
        dims: &[usize],
        bytes: Vec<u8>,
    ) -> Self {
        let quant = QuantInfo {
            scheme,
            dims: dims.to_vec(),
        };
        self.push(name, DType::U8, vec![bytes.len()], bytes, None, Some(quant));
        self
    }

    /// Adds every tensor of `loader` (in the default tier), in its stored
    /// dtype and bytes.
    pub fn weights_from(mut self, loader: &dyn WeightLoader) -> Self {
        for name in loader.names() {
            match loader.get(&name) {
                Ok(t) => self = self.tensor(&name, &t),
                Err(e) => {
                    self.fail(PkgError::Write {
                        reason: format!("reading tensor \"{name}\": {e}"),
                    });
                    break;
                }
            }
        }
        self
    }

    /// Adds every tensor of the safetensors file at `path` (see
    /// [`Self::weights_from`]) and records it as the `source` metadata.
    pub fn safetensors(self, path: impl AsRef<Path>) -> Self {
        let path = path.as_ref();
        match rlx_runtime::BytesWeightLoader::open(path) {
            Ok(l) => self
                .weights_from(&l)
                .metadata("source", &path.display().to_string())
                .metadata("source_format", "safetensors"),
            Err(e) => {
                let mut s = self;
                s.fail(PkgError::Write {
                    reason: e.to_string(),
                });
                s
            }
        }
    }

    /// Adds every tensor of the GGUF file at `path`: block-quantized ones
    /// as their blocks, unchanged ([`Self::quantized`], row-major dims),
    /// plain ones in their dtype; records the `source` metadata. (The GGUF
    /// key / value metadata is not carried over.)
    pub fn gguf(mut self, path: impl AsRef<Path>) -> Self {
        let path = path.as_ref();
        let reader = match rlx_gguf::GgufReader::open(path) {
            Ok(r) => r,
            Err(e) => {
                self.fail(PkgError::Write {
                    reason: format!("{}: {e}", path.display()),
                });
                return self;
            }
        };
        for info in reader.tensors() {
            let name = info.name();
            let read = match info.ggml_type().quant_scheme() {
                Some(scheme) => reader.tensor_data(name).map(|b| {
                    (
                        Some(scheme),
                        HostTensor::from_bytes(DType::U8, &[b.len()], b.to_vec()),
                    )
                }),
                None => reader.tensor(name).map(|t| (None, Ok(t))),
            };
            match read {
                Ok((Some(scheme), Ok(t))) => {
                    self = self.quantized(name, scheme, &info.shape(), t.into_bytes())
                }
                Ok((None, Ok(t))) => self = self.tensor(name, &t),
                Ok((_, Err(e))) => self.fail(PkgError::Write {
                    reason: format!("tensor \"{name}\": {e}"),
                }),
                Err(e) => self.fail(PkgError::Write {
                    reason: format!("{}: tensor \"{name}\": {e}", path.display()),
                }),
            }
        }
        self.metadata("source", &path.display().to_string())
            .metadata("source_format", "gguf")
    }

    /// The placement table (default: rank 0 on `cpu` needs every tensor).
    pub fn placement(mut self, p: Placement) -> Self {
        self.placement = Some(p);
        self
    }

    /// Sets metadata `key` to `value`.
    pub fn metadata(mut self, key: &str, value: &str) -> Self {
        self.metadata.insert(key.to_string(), value.to_string());
        self
    }

    /// Stores a tokenizer json as the blob `tokenizer.json`.
    pub fn tokenizer_json(self, json: &str) -> Self {
        self.blob("tokenizer.json", json.as_bytes().to_vec())
    }

    /// Stores the named bytes `bytes`.
    pub fn blob(mut self, name: &str, bytes: Vec<u8>) -> Self {
        self.blobs.push((name.to_string(), bytes));
        self
    }

    fn fail(&mut self, e: PkgError) {
        self.error.get_or_insert(e);
    }

    fn push(
        &mut self,
        name: &str,
        dtype: DType,
        dims: Vec<usize>,
        bytes: Vec<u8>,
        tier: Option<Tier>,
        quant: Option<QuantInfo>,
    ) {
        self.tensors.push(Pending {
            name: name.to_string(),
            dtype,
            dims,
            bytes,
            tier,
            quant,
        });
    }

    /// The package as bytes. Fails (writing nothing) on duplicate names, a
    /// graph whose params the tensors do not match, a bad placement or a
    /// quantized weight whose byte count does not fit its scheme and dims.
    pub fn to_bytes(self) -> Result<Vec<u8>> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let mut data: Vec<u8> = Vec::new();
        let mut entries = Vec::with_capacity(self.tensors.len());
        for p in self.tensors {
            let tier = self
                .tiers
                .get(&p.name)
                .copied()
                .or(p.tier)
                .unwrap_or(self.default_tier);
            let nbytes = p.bytes.len() as u64;
            // Byte-shuffle multi-byte elements (not quantized blocks).
            let es = if p.quant.is_none() {
                p.dtype.size_bytes()
            } else {
                1
            };
            let (encoding, blocks, stored) = match tier {
                Tier::Warm => {
                    let (blocks, stored) = compress(&p.bytes, self.zstd_level, es)?;
                    (Encoding::Zstd, blocks, stored)
                }
                Tier::Hot | Tier::Cold => (Encoding::Raw, Vec::new(), p.bytes),
            };
            let offset = align_to(&mut data);
            data.extend_from_slice(&stored);
            entries.push(TensorEntry {
                name: p.name,
                dtype: p.dtype,
                dims: p.dims,
                tier,
                encoding,
                offset,
                len: stored.len() as u64,
                checksum: checksum(&stored),
                shuffle: encoding == Encoding::Zstd && es > 1,
                blocks,
                quant: p.quant,
                nbytes,
            });
        }
        let mut blobs = Vec::with_capacity(self.blobs.len());
        for (name, bytes) in self.blobs {
            let offset = align_to(&mut data);
            data.extend_from_slice(&bytes);
            blobs.push(BlobEntry {
                name,
                offset,
                len: bytes.len() as u64,
                checksum: checksum(&bytes),
            });
        }
        let placement = self
            .placement
            .unwrap_or_else(|| Placement::single("cpu", entries.iter().map(|t| t.name.clone())));
        let mut metadata = self.metadata;
        metadata
            .entry("writer".into())
            .or_insert_with(|| format!("rlx-pkg {}", env!("CARGO_PKG_VERSION")));
        let toc = Toc {
            graph: self.graph.as_ref().map(Graph::to_text).unwrap_or_default(),
            options: options_to_json(&self.options),
            tensors: entries,
            placement,
            metadata,
            blobs,
        };
        let toc_bytes = serde_json::to_vec(&toc.to_json()).map_err(|e| PkgError::Write {
            reason: format!("encoding the TOC: {e}"),
        })?;
        // The reader's checks, run on what we are about to write.
        let data_offset = (HEADER_LEN + toc_bytes.len() as u64).next_multiple_of(ALIGN);
        let checked = Toc::parse(&toc_bytes, data_offset, data.len() as u64)?;
        if let Some(parsed) = graph_check::parse(&checked.graph)? {
            graph_check::check_params(&parsed, |n| checked.tensors.iter().find(|t| t.name == n))?;
        }
        let header = Header {
            major: MAJOR,
            minor: MINOR,
            flags: 0,
            toc_offset: HEADER_LEN,
            toc_len: toc_bytes.len() as u64,
            data_offset,
            data_len: data.len() as u64,
            toc_checksum: checksum(&toc_bytes),
        };
        let mut out = Vec::with_capacity(data_offset as usize + data.len());
        out.extend_from_slice(&header.encode());
        out.extend_from_slice(&toc_bytes);
        out.resize(data_offset as usize, 0);
        out.extend_from_slice(&data);
        Ok(out)
    }

    /// Writes the package to `path`: to a temporary file beside it, then
    /// renamed over `path`, so a failed write leaves no partial package.
    pub fn write(self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let bytes = self.to_bytes()?;
        let tmp = path.with_extension("rlxp.partial");
        let io = |source| PkgError::Io {
            path: path.display().to_string(),
            source,
        };
        std::fs::write(&tmp, &bytes).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io(e)
        })
    }
}

/// Pads `data` to the next multiple of [`ALIGN`] and returns that offset.
fn align_to(data: &mut Vec<u8>) -> u64 {
    let at = (data.len() as u64).next_multiple_of(ALIGN);
    data.resize(at as usize, 0);
    at
}

/// `(stored, raw)` bytes per zstd block.
type Blocks = Vec<(u64, u64)>;

/// zstd blocks of [`WRITE_BLOCK`] raw bytes, byte-shuffled when `es > 1`;
/// a block that does not shrink (or would pass the reader's ratio limit)
/// is kept raw (still shuffled).
fn compress(raw: &[u8], level: i32, es: usize) -> Result<(Blocks, Vec<u8>)> {
    let mut blocks = Vec::new();
    let mut out = Vec::new();
    let mut cctx = zstd::bulk::Compressor::new(level).map_err(|e| PkgError::Write {
        reason: format!("zstd: {e}"),
    })?;
    for chunk in raw.chunks(WRITE_BLOCK) {
        let shuffled;
        let chunk = if es > 1 {
            shuffled = crate::warm::shuffle(chunk, es);
            &shuffled[..]
        } else {
            chunk
        };
        let z = cctx.compress(chunk).map_err(|e| PkgError::Write {
            reason: format!("zstd: {e}"),
        })?;
        let keep = z.len() < chunk.len() && (chunk.len() as u64) <= z.len() as u64 * MAX_RATIO;
        let stored: &[u8] = if keep { &z } else { chunk };
        blocks.push((stored.len() as u64, chunk.len() as u64));
        out.extend_from_slice(stored);
    }
    Ok((blocks, out))
}
