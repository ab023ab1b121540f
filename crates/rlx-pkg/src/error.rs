//! [`PkgError`]: every way reading, writing or compiling a package fails,
//! each naming the offending byte offset, field or tensor.

use rlx_ir::ParseError;
use rlx_runtime::RuntimeError;
use thiserror::Error;

/// An error from a `.rlxp` package (see `docs/rlxp.md`, "What a reader
/// must check", for the order the checks run in).
#[derive(Debug, Error)]
pub enum PkgError {
    /// The file could not be opened, read, mapped or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The file ends before a part the header says is there.
    #[error("truncated package: {what} needs bytes {start}..{end}, the file has {file_len}")]
    Truncated {
        /// The part that does not fit.
        what: String,
        /// Its first byte.
        start: u64,
        /// One past its last byte.
        end: u64,
        /// The file length.
        file_len: u64,
    },
    /// The first 8 bytes are not the `.rlxp` magic.
    #[error("not an .rlxp package: bytes 0..8 are {found:02x?}, expected {expected:02x?}")]
    BadMagic {
        /// The bytes found.
        found: [u8; 8],
        /// The magic.
        expected: [u8; 8],
    },
    /// A major version this reader does not know.
    #[error("package version {major}.{minor} (bytes 8..12) is not supported: this reader reads major version {supported}")]
    UnsupportedVersion {
        /// The file's major version.
        major: u16,
        /// The file's minor version.
        minor: u16,
        /// The major version this reader reads.
        supported: u16,
    },
    /// Reserved header flags are set.
    #[error("header flags {flags:#010x} (bytes 12..16) are reserved and must be 0")]
    UnsupportedFlags {
        /// The flags found.
        flags: u32,
    },
    /// The header checksum does not match bytes 0..56.
    #[error(
        "header checksum mismatch (bytes 56..64): stored {stored:016x}, computed {computed:016x}"
    )]
    HeaderChecksum {
        /// The stored value.
        stored: u64,
        /// The value of the bytes read.
        computed: u64,
    },
    /// The TOC checksum does not match the TOC bytes.
    #[error("table-of-contents checksum mismatch (TOC at bytes {offset}..{end}): stored {stored:016x}, computed {computed:016x}")]
    TocChecksum {
        /// The TOC's first byte.
        offset: u64,
        /// One past its last byte.
        end: u64,
        /// The stored value.
        stored: u64,
        /// The value of the bytes read.
        computed: u64,
    },
    /// An offset + length that overflows u64.
    #[error("{what}: offset {offset} + length {len} overflows")]
    LengthOverflow {
        /// The header field or tensor.
        what: String,
        /// The offset.
        offset: u64,
        /// The length.
        len: u64,
    },
    /// Header fields that contradict each other.
    #[error("bad layout: {reason}")]
    BadLayout {
        /// What is wrong, with the offsets.
        reason: String,
    },
    /// The TOC is not the JSON `docs/rlxp.md` describes.
    #[error("bad table of contents: {reason}")]
    BadToc {
        /// The field and what is wrong with it.
        reason: String,
    },
    /// A tensor entry with an unknown or inconsistent field.
    #[error("tensor \"{name}\": {reason}")]
    BadTensor {
        /// The tensor.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// Two entries of the same name.
    #[error("{kind} \"{name}\" appears twice in the table of contents")]
    DuplicateName {
        /// `tensor` or `blob`.
        kind: &'static str,
        /// The name.
        name: String,
    },
    /// Dims whose element count (or byte count) overflows u64.
    #[error("tensor \"{name}\": dims {dims:?} of {dtype} overflow a 64-bit byte count")]
    DimsOverflow {
        /// The tensor.
        name: String,
        /// Its dims.
        dims: Vec<u64>,
        /// Its dtype (or quant scheme).
        dtype: String,
    },
    /// A stored length other than the dims / dtype imply.
    #[error("tensor \"{name}\": {expected} bytes expected from its dtype and dims, the entry says {found}")]
    SizeMismatch {
        /// The tensor.
        name: String,
        /// Bytes its dtype and dims hold.
        expected: u64,
        /// Bytes the entry says.
        found: u64,
    },
    /// A span not on a 64-byte boundary.
    #[error("{kind} \"{name}\": offset {offset} is not a multiple of 64")]
    Misaligned {
        /// `tensor` or `blob`.
        kind: &'static str,
        /// The name.
        name: String,
        /// The offset (from the data section's start).
        offset: u64,
    },
    /// A span past the end of the data section.
    #[error("{kind} \"{name}\": bytes {offset}..{end} of the data section are out of range (it holds {data_len} bytes, from file offset {data_offset})")]
    OutOfRange {
        /// `tensor` or `blob`.
        kind: &'static str,
        /// The name.
        name: String,
        /// First byte (from the data section's start).
        offset: u64,
        /// One past the last byte.
        end: u64,
        /// Bytes in the data section.
        data_len: u64,
        /// Where the data section starts in the file.
        data_offset: u64,
    },
    /// Two spans that share bytes.
    #[error("\"{first}\" (data bytes {first_start}..{first_end}) overlaps \"{second}\" (data bytes {second_start}..{second_end})")]
    Overlap {
        /// The span that starts first.
        first: String,
        /// Its first byte.
        first_start: u64,
        /// One past its last byte.
        first_end: u64,
        /// The span that starts inside it.
        second: String,
        /// Its first byte.
        second_start: u64,
        /// One past its last byte.
        second_end: u64,
    },
    /// zstd block sizes that are inconsistent or out of bounds.
    #[error("tensor \"{name}\": bad zstd blocks: {reason}")]
    BadBlocks {
        /// The tensor.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A bad placement table.
    #[error("bad placement: {reason}")]
    BadPlacement {
        /// What is wrong (the rank and tensor).
        reason: String,
    },
    /// The stored bytes of a tensor or blob do not match its checksum.
    #[error("{kind} \"{name}\" (file bytes {offset}..{end}): checksum mismatch: stored {stored:016x}, computed {computed:016x}")]
    TensorChecksum {
        /// `tensor` or `blob`.
        kind: &'static str,
        /// The name.
        name: String,
        /// First file byte.
        offset: u64,
        /// One past the last.
        end: u64,
        /// The checksum in the TOC.
        stored: u64,
        /// The checksum of the bytes read.
        computed: u64,
    },
    /// A zstd block that does not decode to its stated length.
    #[error(
        "tensor \"{name}\": block {block} (file offset {offset}) does not decompress: {reason}"
    )]
    Decompress {
        /// The tensor.
        name: String,
        /// The block index.
        block: usize,
        /// Its first file byte.
        offset: u64,
        /// What went wrong.
        reason: String,
    },
    /// The stored graph text does not parse.
    #[error("the package's graph does not parse: {source}")]
    GraphParse {
        /// The parser's error (with line and column).
        #[source]
        source: ParseError,
    },
    /// A weights-only package (its `graph` is empty) asked for its graph.
    #[error("{path}: the package holds weights only (no graph)")]
    NoGraph {
        /// The package.
        path: String,
    },
    /// The graph and the stored tensors disagree.
    #[error("graph param \"{param}\": {reason}")]
    GraphMismatch {
        /// The param.
        param: String,
        /// What does not match.
        reason: String,
    },
    /// No tensor / blob of that name.
    #[error("no {kind} \"{name}\" in the package ({count} stored)")]
    NotFound {
        /// `tensor` or `blob`.
        kind: &'static str,
        /// The name asked for.
        name: String,
        /// How many there are.
        count: usize,
    },
    /// A rank the placement does not list.
    #[error("rank {rank} is not in the placement (ranks: {known:?})")]
    UnknownRank {
        /// The rank asked for.
        rank: u32,
        /// The ranks listed.
        known: Vec<u32>,
    },
    /// A package that cannot be written as asked.
    #[error("cannot write package: {reason}")]
    Write {
        /// Why.
        reason: String,
    },
    /// Compiling the graph or binding its params failed.
    #[error("compiling the package's graph: {source}")]
    Runtime {
        /// The runtime's error.
        #[source]
        source: RuntimeError,
    },
}

impl PkgError {
    /// The variant's name (`"BadMagic"`, `"Overlap"`, ...): a stable word
    /// for scripts and tests.
    pub fn kind(&self) -> &'static str {
        match self {
            PkgError::Io { .. } => "Io",
            PkgError::Truncated { .. } => "Truncated",
            PkgError::BadMagic { .. } => "BadMagic",
            PkgError::UnsupportedVersion { .. } => "UnsupportedVersion",
            PkgError::UnsupportedFlags { .. } => "UnsupportedFlags",
            PkgError::HeaderChecksum { .. } => "HeaderChecksum",
            PkgError::TocChecksum { .. } => "TocChecksum",
            PkgError::LengthOverflow { .. } => "LengthOverflow",
            PkgError::BadLayout { .. } => "BadLayout",
            PkgError::BadToc { .. } => "BadToc",
            PkgError::BadTensor { .. } => "BadTensor",
            PkgError::DuplicateName { .. } => "DuplicateName",
            PkgError::DimsOverflow { .. } => "DimsOverflow",
            PkgError::SizeMismatch { .. } => "SizeMismatch",
            PkgError::Misaligned { .. } => "Misaligned",
            PkgError::OutOfRange { .. } => "OutOfRange",
            PkgError::Overlap { .. } => "Overlap",
            PkgError::BadBlocks { .. } => "BadBlocks",
            PkgError::BadPlacement { .. } => "BadPlacement",
            PkgError::TensorChecksum { .. } => "TensorChecksum",
            PkgError::Decompress { .. } => "Decompress",
            PkgError::GraphParse { .. } => "GraphParse",
            PkgError::NoGraph { .. } => "NoGraph",
            PkgError::GraphMismatch { .. } => "GraphMismatch",
            PkgError::NotFound { .. } => "NotFound",
            PkgError::UnknownRank { .. } => "UnknownRank",
            PkgError::Write { .. } => "Write",
            PkgError::Runtime { .. } => "Runtime",
        }
    }
}

impl From<RuntimeError> for PkgError {
    fn from(source: RuntimeError) -> Self {
        PkgError::Runtime { source }
    }
}

/// Result of the package API.
pub type Result<T, E = PkgError> = std::result::Result<T, E>;
