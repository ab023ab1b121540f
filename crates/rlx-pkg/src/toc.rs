//! The table of contents: tensor and blob entries, their JSON form and
//! checks 5 to 8 of `docs/rlxp.md`.

use crate::error::{PkgError, Result};
use crate::format::{ALIGN, MAX_BLOCK, MAX_RATIO};
use crate::placement::Placement;
use rlx_ir::quant::QuantScheme;
use rlx_ir::DType;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashSet};

/// Where a tensor lives once a package is open (`docs/rlxp.md`, `tier`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tier {
    /// Raw bytes used in place from the memory map (zero-copy).
    Hot,
    /// zstd blocks decompressed on first use into a bounded cache.
    Warm,
    /// Not read until asked for by name or rank (raw or zstd).
    Cold,
}

impl Tier {
    /// The TOC name (`hot` / `warm` / `cold`).
    pub fn name(self) -> &'static str {
        match self {
            Tier::Hot => "hot",
            Tier::Warm => "warm",
            Tier::Cold => "cold",
        }
    }
}

/// How a tensor's bytes are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// The tensor's little-endian bytes as they are.
    Raw,
    /// zstd blocks (see [`TensorEntry::blocks`]).
    Zstd,
}

impl Encoding {
    /// The TOC name (`raw` / `zstd`).
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Raw => "raw",
            Encoding::Zstd => "zstd",
        }
    }
}

/// A GGUF block-quantized weight kept as its blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuantInfo {
    /// The block format.
    pub scheme: QuantScheme,
    /// The weight's logical dims (`[rows, cols]`, the last a multiple of
    /// the block size).
    pub dims: Vec<usize>,
}

/// One tensor of the TOC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorEntry {
    /// Its name.
    pub name: String,
    /// Its dtype (`U8` for a quantized weight).
    pub dtype: DType,
    /// Its dims (`[nbytes]` for a quantized weight).
    pub dims: Vec<usize>,
    /// Its tier.
    pub tier: Tier,
    /// How its bytes are stored.
    pub encoding: Encoding,
    /// First stored byte, from the start of the data section.
    pub offset: u64,
    /// Stored bytes.
    pub len: u64,
    /// XXH3-64 of the stored bytes.
    pub checksum: u64,
    /// `(stored, raw)` bytes per zstd block; empty when raw.
    pub blocks: Vec<(u64, u64)>,
    /// zstd blocks hold the tensor's bytes byte-shuffled (all first bytes
    /// of the block's elements, then all second bytes, ...), which
    /// compresses float weights better.
    pub shuffle: bool,
    /// The block format of a quantized weight.
    pub quant: Option<QuantInfo>,
    /// Decoded bytes (`product(dims) * size(dtype)`).
    pub nbytes: u64,
}

/// One named byte span (e.g. `tokenizer.json`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobEntry {
    /// Its name.
    pub name: String,
    /// First byte, from the start of the data section.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// XXH3-64 of the bytes.
    pub checksum: u64,
}

/// The parsed and checked table of contents.
#[derive(Debug, Clone)]
pub struct Toc {
    /// The graph's textual IR.
    pub graph: String,
    /// The stored `options` object.
    pub options: Value,
    /// The tensors, in TOC order.
    pub tensors: Vec<TensorEntry>,
    /// The placement table.
    pub placement: Placement,
    /// Free-form metadata.
    pub metadata: BTreeMap<String, String>,
    /// The blobs.
    pub blobs: Vec<BlobEntry>,
}

/// Formats a checksum as the TOC writes it.
pub(crate) fn hex(sum: u64) -> String {
    format!("{sum:016x}")
}

fn bad_toc(reason: impl Into<String>) -> PkgError {
    PkgError::BadToc {
        reason: reason.into(),
    }
}

fn field<'a>(obj: &'a Value, key: &str, at: &str) -> Result<&'a Value> {
    obj.get(key)
        .ok_or_else(|| bad_toc(format!("{at} has no \"{key}\"")))
}

fn u64_field(obj: &Value, key: &str, at: &str) -> Result<u64> {
    field(obj, key, at)?
        .as_u64()
        .ok_or_else(|| bad_toc(format!("{at}.{key} is not an unsigned integer")))
}

fn str_field<'a>(obj: &'a Value, key: &str, at: &str) -> Result<&'a str> {
    field(obj, key, at)?
        .as_str()
        .ok_or_else(|| bad_toc(format!("{at}.{key} is not a string")))
}

fn checksum_field(obj: &Value, at: &str) -> Result<u64> {
    let s = str_field(obj, "checksum", at)?;
    if s.len() != 16 {
        return Err(bad_toc(format!(
            "{at}.checksum \"{s}\" is not 16 hex digits"
        )));
    }
    u64::from_str_radix(s, 16)
        .map_err(|_| bad_toc(format!("{at}.checksum \"{s}\" is not 16 hex digits")))
}

fn dims_field(obj: &Value, key: &str, at: &str) -> Result<Vec<u64>> {
    field(obj, key, at)?
        .as_array()
        .and_then(|a| a.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>())
        .ok_or_else(|| bad_toc(format!("{at}.{key} is not an array of unsigned integers")))
}

/// `product(dims) * elem`, or `None` on overflow.
fn byte_count(dims: &[u64], elem: u64) -> Option<u64> {
    dims.iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))?
        .checked_mul(elem)
}

fn to_usize_dims(name: &str, dims: &[u64], dtype: &str) -> Result<Vec<usize>> {
    dims.iter()
        .map(|&d| usize::try_from(d).ok())
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| PkgError::DimsOverflow {
            name: name.to_string(),
            dims: dims.to_vec(),
            dtype: dtype.to_string(),
        })
}

/// Checks `offset`, `len` of a span against the data section.
fn check_span(
    kind: &'static str,
    name: &str,
    offset: u64,
    len: u64,
    data_offset: u64,
    data_len: u64,
) -> Result<()> {
    if !offset.is_multiple_of(ALIGN) {
        return Err(PkgError::Misaligned {
            kind,
            name: name.to_string(),
            offset,
        });
    }
    let end = offset
        .checked_add(len)
        .ok_or_else(|| PkgError::LengthOverflow {
            what: format!("{kind} \"{name}\""),
            offset,
            len,
        })?;
    if end > data_len {
        return Err(PkgError::OutOfRange {
            kind,
            name: name.to_string(),
            offset,
            end,
            data_len,
            data_offset,
        });
    }
    Ok(())
}

impl TensorEntry {
    fn parse(e: &Value, i: usize, data_offset: u64, data_len: u64) -> Result<TensorEntry> {
        let at = format!("tensors[{i}]");
        let name = str_field(e, "name", &at)?.to_string();
        if name.is_empty() {
            return Err(bad_toc(format!("{at}.name is empty")));
        }
        let bad = |reason: String| PkgError::BadTensor {
            name: name.clone(),
            reason,
        };
        let dtype_s = str_field(e, "dtype", &at)?;
        let dtype =
            DType::parse(dtype_s).ok_or_else(|| bad(format!("unknown dtype \"{dtype_s}\"")))?;
        let dims64 = dims_field(e, "dims", &at)?;
        let tier = match str_field(e, "tier", &at)? {
            "hot" => Tier::Hot,
            "warm" => Tier::Warm,
            "cold" => Tier::Cold,
            t => return Err(bad(format!("unknown tier \"{t}\""))),
        };
        let encoding = match str_field(e, "encoding", &at)? {
            "raw" => Encoding::Raw,
            "zstd" => Encoding::Zstd,
            t => return Err(bad(format!("unknown encoding \"{t}\""))),
        };
        match (tier, encoding) {
            (Tier::Hot, Encoding::Zstd) => {
                return Err(bad("the hot tier must be stored raw".into()))
            }
            (Tier::Warm, Encoding::Raw) => {
                return Err(bad("the warm tier must be stored as zstd".into()))
            }
            _ => {}
        }
        let offset = u64_field(e, "offset", &at)?;
        let len = u64_field(e, "len", &at)?;
        let checksum = checksum_field(e, &at)?;
        let quant = match e.get("quant") {
            None | Some(Value::Null) => None,
            Some(q) => {
                let qat = format!("{at}.quant");
                let s = str_field(q, "scheme", &qat)?;
                let scheme = QuantScheme::from_name(s)
                    .filter(|s| s.is_gguf())
                    .ok_or_else(|| bad(format!("unknown quant scheme \"{s}\"")))?;
                let qdims = dims_field(q, "dims", &qat)?;
                Some((scheme, qdims))
            }
        };
        let overflow = |dims: &[u64], what: &str| PkgError::DimsOverflow {
            name: name.clone(),
            dims: dims.to_vec(),
            dtype: what.to_string(),
        };
        let nbytes = byte_count(&dims64, dtype.size_bytes() as u64)
            .ok_or_else(|| overflow(&dims64, dtype.short_name()))?;
        let dims = to_usize_dims(&name, &dims64, dtype.short_name())?;
        // Every stored byte must be addressable here.
        usize::try_from(nbytes).map_err(|_| overflow(&dims64, dtype.short_name()))?;
        let quant = match quant {
            None => None,
            Some((scheme, qdims)) => {
                let (bs, bb) = (scheme.block_size() as u64, scheme.gguf_block_bytes() as u64);
                let numel = byte_count(&qdims, 1).ok_or_else(|| overflow(&qdims, scheme.name()))?;
                if qdims.last().is_none_or(|&k| k % bs != 0) {
                    return Err(bad(format!(
                        "quant dims {qdims:?}: the last dim must be a multiple of {}'s block size {bs}",
                        scheme.name()
                    )));
                }
                let expected = (numel / bs)
                    .checked_mul(bb)
                    .ok_or_else(|| overflow(&qdims, scheme.name()))?;
                if dtype != DType::U8 || dims64.len() != 1 {
                    return Err(bad(format!(
                        "a quantized weight is stored as u8 [nbytes], not {dtype_s} {dims64:?}"
                    )));
                }
                if expected != nbytes {
                    return Err(PkgError::SizeMismatch {
                        name: name.clone(),
                        expected,
                        found: nbytes,
                    });
                }
                Some(QuantInfo {
                    scheme,
                    dims: to_usize_dims(&name, &qdims, scheme.name())?,
                })
            }
        };
        if encoding == Encoding::Raw && len != nbytes {
            return Err(PkgError::SizeMismatch {
                name,
                expected: nbytes,
                found: len,
            });
        }
        check_span("tensor", &name, offset, len, data_offset, data_len)?;
        let blocks = match encoding {
            Encoding::Raw => Vec::new(),
            Encoding::Zstd => parse_blocks(e, &at, &name, len, nbytes)?,
        };
        let shuffle = match e.get("shuffle") {
            None | Some(Value::Null) => false,
            Some(v) => v
                .as_bool()
                .ok_or_else(|| bad_toc(format!("{at}.shuffle is not a boolean")))?,
        };
        if shuffle && encoding == Encoding::Raw {
            return Err(bad("shuffle needs the zstd encoding".into()));
        }
        let es = dtype.size_bytes() as u64;
        if let Some(k) = blocks.iter().position(|&(_, r)| shuffle && r % es != 0) {
            return Err(PkgError::BadBlocks {
                name,
                reason: format!(
                    "block {k} of a shuffled tensor holds {} bytes, not whole {es}-byte elements",
                    blocks[k].1
                ),
            });
        }
        Ok(TensorEntry {
            name,
            dtype,
            dims,
            tier,
            encoding,
            offset,
            len,
            checksum,
            blocks,
            shuffle,
            quant,
            nbytes,
        })
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        m.insert("dtype".into(), json!(self.dtype.short_name()));
        m.insert("dims".into(), json!(self.dims));
        m.insert("tier".into(), json!(self.tier.name()));
        m.insert("encoding".into(), json!(self.encoding.name()));
        m.insert("offset".into(), json!(self.offset));
        m.insert("len".into(), json!(self.len));
        m.insert("checksum".into(), json!(hex(self.checksum)));
        if self.encoding == Encoding::Zstd {
            let b: Vec<[u64; 2]> = self.blocks.iter().map(|&(s, r)| [s, r]).collect();
            m.insert("blocks".into(), json!(b));
            if self.shuffle {
                m.insert("shuffle".into(), json!(true));
            }
        }
        if let Some(q) = &self.quant {
            m.insert(
                "quant".into(),
                json!({"scheme": q.scheme.name(), "dims": q.dims}),
            );
        }
        Value::Object(m)
    }
}

fn parse_blocks(e: &Value, at: &str, name: &str, len: u64, nbytes: u64) -> Result<Vec<(u64, u64)>> {
    let bad = |reason: String| PkgError::BadBlocks {
        name: name.to_string(),
        reason,
    };
    let arr = field(e, "blocks", at)?
        .as_array()
        .ok_or_else(|| bad_toc(format!("{at}.blocks is not an array")))?;
    let mut blocks = Vec::with_capacity(arr.len().min(len as usize + 1));
    let (mut stored_sum, mut raw_sum) = (0u64, 0u64);
    for (k, b) in arr.iter().enumerate() {
        let pair = b
            .as_array()
            .filter(|p| p.len() == 2)
            .and_then(|p| Some((p[0].as_u64()?, p[1].as_u64()?)))
            .ok_or_else(|| bad_toc(format!("{at}.blocks[{k}] is not [stored, raw]")))?;
        let (s, r) = pair;
        if s == 0 || r == 0 {
            return Err(bad(format!("block {k} is empty ([{s}, {r}])")));
        }
        if r > MAX_BLOCK {
            return Err(bad(format!(
                "block {k} decodes to {r} bytes, more than the {MAX_BLOCK}-byte limit"
            )));
        }
        if r > s.saturating_mul(MAX_RATIO) {
            return Err(bad(format!(
                "block {k} claims {r} raw bytes from {s} stored, above the {MAX_RATIO}x limit"
            )));
        }
        stored_sum = stored_sum
            .checked_add(s)
            .ok_or_else(|| bad("stored sizes overflow".into()))?;
        raw_sum = raw_sum
            .checked_add(r)
            .ok_or_else(|| bad("raw sizes overflow".into()))?;
        blocks.push(pair);
    }
    if stored_sum != len {
        return Err(bad(format!(
            "blocks hold {stored_sum} stored bytes, the entry's len is {len}"
        )));
    }
    if raw_sum != nbytes {
        return Err(bad(format!(
            "blocks decode to {raw_sum} bytes, the tensor holds {nbytes}"
        )));
    }
    Ok(blocks)
}

impl BlobEntry {
    fn parse(e: &Value, i: usize, data_offset: u64, data_len: u64) -> Result<BlobEntry> {
        let at = format!("blobs[{i}]");
        let name = str_field(e, "name", &at)?.to_string();
        let offset = u64_field(e, "offset", &at)?;
        let len = u64_field(e, "len", &at)?;
        let checksum = checksum_field(e, &at)?;
        check_span("blob", &name, offset, len, data_offset, data_len)?;
        Ok(BlobEntry {
            name,
            offset,
            len,
            checksum,
        })
    }
}

impl Toc {
    /// Parses and checks the TOC bytes of a package whose data section is
    /// `data_len` bytes from file offset `data_offset`.
    pub fn parse(bytes: &[u8], data_offset: u64, data_len: u64) -> Result<Toc> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| {
            bad_toc(format!(
                "not JSON at line {} column {}: {e}",
                e.line(),
                e.column()
            ))
        })?;
        if !v.is_object() {
            return Err(bad_toc("the TOC is not a JSON object"));
        }
        let graph = str_field(&v, "graph", "the TOC")?.to_string();
        let options = field(&v, "options", "the TOC")?.clone();
        if !options.is_object() {
            return Err(bad_toc("\"options\" is not an object"));
        }
        let list = |key: &str| -> Result<&Vec<Value>> {
            field(&v, key, "the TOC")?
                .as_array()
                .ok_or_else(|| bad_toc(format!("\"{key}\" is not an array")))
        };
        let mut tensors = Vec::new();
        let mut names = HashSet::new();
        for (i, e) in list("tensors")?.iter().enumerate() {
            let t = TensorEntry::parse(e, i, data_offset, data_len)?;
            if !names.insert(t.name.clone()) {
                return Err(PkgError::DuplicateName {
                    kind: "tensor",
                    name: t.name,
                });
            }
            tensors.push(t);
        }
        let mut blobs = Vec::new();
        let mut blob_names = HashSet::new();
        for (i, e) in list("blobs")?.iter().enumerate() {
            let b = BlobEntry::parse(e, i, data_offset, data_len)?;
            if !blob_names.insert(b.name.clone()) {
                return Err(PkgError::DuplicateName {
                    kind: "blob",
                    name: b.name,
                });
            }
            blobs.push(b);
        }
        check_overlaps(&tensors, &blobs)?;
        let placement = Placement::from_json(field(&v, "placement", "the TOC")?)?;
        placement.check(&|n| names.contains(n))?;
        let metadata = field(&v, "metadata", "the TOC")?
            .as_object()
            .ok_or_else(|| bad_toc("\"metadata\" is not an object"))?
            .iter()
            .map(|(k, x)| {
                x.as_str()
                    .map(|s| (k.clone(), s.to_string()))
                    .ok_or_else(|| bad_toc(format!("metadata \"{k}\" is not a string")))
            })
            .collect::<Result<BTreeMap<_, _>>>()?;
        Ok(Toc {
            graph,
            options,
            tensors,
            placement,
            metadata,
            blobs,
        })
    }

    /// The TOC as the JSON it is written as.
    pub fn to_json(&self) -> Value {
        json!({
            "graph": self.graph,
            "options": self.options,
            "tensors": self.tensors.iter().map(TensorEntry::to_json).collect::<Vec<_>>(),
            "placement": self.placement.to_json(),
            "metadata": self.metadata,
            "blobs": self.blobs.iter().map(|b| json!({
                "name": b.name, "offset": b.offset, "len": b.len, "checksum": hex(b.checksum),
            })).collect::<Vec<_>>(),
        })
    }
}

/// Check 7: no two spans share a byte (empty spans share none).
fn check_overlaps(tensors: &[TensorEntry], blobs: &[BlobEntry]) -> Result<()> {
    let mut spans: Vec<(u64, u64, &str)> = tensors
        .iter()
        .map(|t| (t.offset, t.offset + t.len, t.name.as_str()))
        .chain(
            blobs
                .iter()
                .map(|b| (b.offset, b.offset + b.len, b.name.as_str())),
        )
        .filter(|s| s.1 > s.0)
        .collect();
    spans.sort_unstable();
    for w in spans.windows(2) {
        let (a, b) = (w[0], w[1]);
        if b.0 < a.1 {
            return Err(PkgError::Overlap {
                first: a.2.to_string(),
                first_start: a.0,
                first_end: a.1,
                second: b.2.to_string(),
                second_start: b.0,
                second_end: b.1,
            });
        }
    }
    Ok(())
}
