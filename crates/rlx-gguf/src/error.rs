//! [`GgufError`]: every way reading, writing or converting GGUF data can fail.

use crate::types::GgmlType;
use crate::value::ValueType;
use std::path::PathBuf;
use thiserror::Error;

/// The crate's result type.
pub type Result<T, E = GgufError> = std::result::Result<T, E>;

/// An error from the GGUF reader, writer or codecs.
///
/// Parse errors name the byte offset where the bad field starts (and the
/// tensor or key it belongs to where there is one), so a hostile or corrupt
/// file can be diagnosed with a hex dump.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum GgufError {
    /// The OS refused to open, map, read or write a file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Writing to a caller-provided sink failed.
    #[error("writing GGUF data: {0}")]
    Write(#[source] std::io::Error),
    /// The first four bytes are not `GGUF`.
    #[error("not a GGUF file: magic at offset 0 is {found:02x?}, expected \"GGUF\" (47 47 55 46)")]
    BadMagic {
        /// The bytes found (fewer than four when the file is shorter).
        found: Vec<u8>,
    },
    /// A version other than 1, 2 or 3.
    #[error("unsupported GGUF version {version} at offset 4 (supported: 1, 2, 3)")]
    UnsupportedVersion {
        /// The version read (little-endian).
        version: u32,
    },
    /// A big-endian GGUF file (its version field reads as `version << 24`).
    #[error("big-endian GGUF (version {version}) is not supported; convert it to little-endian")]
    BigEndian {
        /// The version, read big-endian.
        version: u32,
    },
    /// A field runs past the end of the data.
    #[error(
        "truncated GGUF: {what} at offset {offset} needs {needed} bytes, only {available} remain"
    )]
    Truncated {
        /// The field being read.
        what: String,
        /// Where it starts.
        offset: u64,
        /// Bytes it needs.
        needed: u64,
        /// Bytes left in the file from `offset`.
        available: u64,
    },
    /// A count or length cannot fit in the bytes that remain (checked before
    /// anything is allocated for it).
    #[error("{what} at offset {offset} is {count}, which needs at least {min_bytes} bytes but only {available} remain")]
    CountTooLarge {
        /// What is counted (`tensor count`, `string length of key 'x'`, ...).
        what: String,
        /// Where the count is stored.
        offset: u64,
        /// The count read.
        count: u64,
        /// The least number of bytes that many items take.
        min_bytes: u128,
        /// Bytes left in the file.
        available: u64,
    },
    /// A metadata value type id outside 0..=12.
    #[error("unknown metadata value type id {id} at offset {offset} (key '{key}')")]
    UnknownValueType {
        /// The id read.
        id: u32,
        /// Where it is stored.
        offset: u64,
        /// The key whose value it types.
        key: String,
    },
    /// A tensor type id this crate does not know.
    #[error("tensor '{tensor}': unknown ggml type id {id} at offset {offset}{}", removed.map(|n| format!(" ({n}, removed from ggml; re-convert the model)")).unwrap_or_default())]
    UnknownTensorType {
        /// The id read.
        id: u32,
        /// The tensor.
        tensor: String,
        /// Where the id is stored.
        offset: u64,
        /// The old name if ggml used and removed this id.
        removed: Option<&'static str>,
    },
    /// A string that is not UTF-8.
    #[error("{what} at offset {offset} is not valid UTF-8")]
    InvalidUtf8 {
        /// Which string.
        what: String,
        /// Where its bytes start.
        offset: u64,
    },
    /// A bool byte other than 0 or 1.
    #[error("bool value {value} at offset {offset} (key '{key}') is neither 0 nor 1")]
    InvalidBool {
        /// The byte.
        value: u8,
        /// Where it is.
        offset: u64,
        /// The key.
        key: String,
    },
    /// Arrays nested deeper than the reader allows.
    #[error("metadata array at offset {offset} (key '{key}') is nested deeper than {max} levels")]
    NestingTooDeep {
        /// Where the too-deep array starts.
        offset: u64,
        /// The key.
        key: String,
        /// The limit.
        max: usize,
    },
    /// A metadata key appears twice.
    #[error("duplicate metadata key '{key}'{}", offset.map(|o| format!(" at offset {o}")).unwrap_or_default())]
    DuplicateKey {
        /// The key.
        key: String,
        /// Where the second copy starts (when read from a file).
        offset: Option<u64>,
    },
    /// A tensor name appears twice.
    #[error("duplicate tensor name '{name}'{}", offset.map(|o| format!(" at offset {o}")).unwrap_or_default())]
    DuplicateTensor {
        /// The name.
        name: String,
        /// Where the second copy's info starts (when read from a file).
        offset: Option<u64>,
    },
    /// `general.alignment` is not a non-zero power-of-two `u32`.
    #[error("invalid general.alignment: {reason}")]
    BadAlignment {
        /// What is wrong with it.
        reason: String,
    },
    /// A tensor's dims are unusable (too many, too large, not whole blocks).
    #[error("tensor '{tensor}': dims {dims:?} (ne order): {reason}")]
    BadDims {
        /// The tensor.
        tensor: String,
        /// Its dims, innermost first as stored.
        dims: Vec<u64>,
        /// What is wrong.
        reason: String,
    },
    /// A tensor's data offset is not a multiple of the alignment.
    #[error(
        "tensor '{tensor}': data offset {offset} is not a multiple of the alignment {alignment}"
    )]
    MisalignedTensor {
        /// The tensor.
        tensor: String,
        /// Its offset, relative to the data section.
        offset: u64,
        /// The file's alignment.
        alignment: u64,
    },
    /// A tensor's bytes end past the end of the file.
    #[error("tensor '{tensor}': bytes {start}..{end} (absolute) lie outside the file of {file_len} bytes")]
    TensorOutOfFile {
        /// The tensor.
        tensor: String,
        /// Absolute start.
        start: u128,
        /// Absolute end.
        end: u128,
        /// File length.
        file_len: u64,
    },
    /// Two tensors' byte ranges overlap.
    #[error("tensors '{first}' (bytes {first_start}..{first_end}) and '{second}' (from byte {second_start}) overlap")]
    OverlappingTensors {
        /// The tensor with the lower offset.
        first: String,
        /// Its relative start.
        first_start: u64,
        /// Its relative end.
        first_end: u64,
        /// The tensor that starts inside it.
        second: String,
        /// Its relative start.
        second_start: u64,
    },
    /// No tensor of that name.
    #[error("no tensor named '{name}'")]
    TensorNotFound {
        /// The name asked for.
        name: String,
    },
    /// No metadata key of that name.
    #[error("no metadata key '{key}'")]
    MissingKey {
        /// The key asked for.
        key: String,
    },
    /// A metadata value has another type than the one asked for.
    #[error("metadata key '{key}' is {found}, expected {expected}")]
    MetadataType {
        /// The key.
        key: String,
        /// What the caller wanted.
        expected: String,
        /// The stored type.
        found: ValueType,
    },
    /// An array whose elements are not all of its element type.
    #[error("metadata array of {expected} holds a {found} at index {index}")]
    MixedArray {
        /// The declared element type.
        expected: ValueType,
        /// The offending element's type.
        found: ValueType,
        /// Its index.
        index: usize,
    },
    /// This crate cannot (de)quantize the type.
    #[error("{op} is not implemented for ggml type {ty} (id {}){}", ty.id(), if reason.is_empty() { String::new() } else { format!(": {reason}") })]
    UnsupportedType {
        /// The type.
        ty: GgmlType,
        /// `"dequantize"` or `"quantize"`.
        op: &'static str,
        /// Why, or what to do instead.
        reason: &'static str,
    },
    /// An element count that is not a whole number of blocks.
    #[error("{ty}: {n} elements is not a multiple of the block size {block}")]
    NotBlockMultiple {
        /// The type.
        ty: GgmlType,
        /// The count.
        n: usize,
        /// Its block size.
        block: usize,
    },
    /// Data of the wrong length for its type and element count.
    #[error("{what}: expected {expected} bytes, given {given}")]
    DataLength {
        /// What the data is.
        what: String,
        /// Bytes needed.
        expected: usize,
        /// Bytes given.
        given: usize,
    },
    /// Split (sharded) files that do not fit together.
    #[error("split GGUF {path}: {reason}")]
    Split {
        /// The shard (or first shard) concerned.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Anything else the writer refuses (bad dims, bad version, ...).
    #[error("GGUF writer: {0}")]
    Invalid(String),
    /// Building a [`rlx_ir::HostTensor`] failed.
    #[error(transparent)]
    Ir(#[from] rlx_ir::IrError),
}
