//! [`ConstBytes`]: the data of an `Op::Constant`, shared between graphs.
//!
//! Every compile pass builds a new graph from the old one, so a constant
//! held by value was copied once per pass (an imported CNN's weights: tens
//! of megabytes, fifteen times). Shared, a pass copies a handle; the bytes
//! are never mutated, so sharing cannot change a result. The content hash
//! is computed once per constant and cached, for CSE and compile
//! fingerprints.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

/// Immutable, reference-counted little-endian bytes of a constant.
///
/// ```
/// use rlx_ir::ConstBytes;
/// let a = ConstBytes::from(vec![1u8, 2, 3]);
/// let b = a.clone(); // a handle: no copy
/// assert!(ConstBytes::ptr_eq(&a, &b));
/// assert_eq!(&a[..], &[1, 2, 3]);
/// assert_eq!(a, ConstBytes::from(vec![1u8, 2, 3]));
/// assert_eq!(a.content_hash(), ConstBytes::from(vec![1u8, 2, 3]).content_hash());
/// ```
#[derive(Clone)]
pub struct ConstBytes(Arc<Shared>);

struct Shared {
    bytes: Storage,
    hash: OnceLock<u64>,
}

/// Who owns the bytes: a vector, or another buffer kept alive (a slice of
/// a model file read once, say), never copied until written.
enum Storage {
    Vec(Vec<u8>),
    Foreign(Box<dyn AsRef<[u8]> + Send + Sync>),
}

impl Storage {
    fn slice(&self) -> &[u8] {
        match self {
            Storage::Vec(v) => v,
            Storage::Foreign(f) => (**f).as_ref(),
        }
    }
}

impl ConstBytes {
    /// Takes ownership of `bytes` (no copy).
    pub fn new(bytes: Vec<u8>) -> ConstBytes {
        ConstBytes::with_storage(Storage::Vec(bytes))
    }

    /// Shares the bytes `owner` holds (no copy; `owner` lives as long as
    /// any handle does). Writing through [`ConstBytes::make_mut`] copies them.
    pub fn from_owner(owner: impl AsRef<[u8]> + Send + Sync + 'static) -> ConstBytes {
        ConstBytes::with_storage(Storage::Foreign(Box::new(owner)))
    }

    fn with_storage(bytes: Storage) -> ConstBytes {
        ConstBytes(Arc::new(Shared {
            bytes,
            hash: OnceLock::new(),
        }))
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        self.0.bytes.slice()
    }

    /// An owned copy of the bytes (moved out without a copy when this is
    /// the only handle).
    pub fn into_vec(self) -> Vec<u8> {
        match Arc::try_unwrap(self.0) {
            Ok(Shared {
                bytes: Storage::Vec(v),
                ..
            }) => v,
            Ok(shared) => shared.bytes.slice().to_vec(),
            Err(arc) => arc.bytes.slice().to_vec(),
        }
    }

    /// The bytes, writable: in place when this is the only handle (the
    /// cached hash is dropped), else after copying them (copy on write).
    pub fn make_mut(&mut self) -> &mut [u8] {
        let owned_vec = matches!(
            Arc::get_mut(&mut self.0),
            Some(Shared {
                bytes: Storage::Vec(_),
                ..
            })
        );
        if !owned_vec {
            *self = ConstBytes::new(self.as_slice().to_vec());
        }
        let shared = Arc::get_mut(&mut self.0).expect("the only handle");
        shared.hash = OnceLock::new();
        match &mut shared.bytes {
            Storage::Vec(v) => v,
            Storage::Foreign(_) => unreachable!("replaced by a vector above"),
        }
    }

    /// The xxh3-64 hash of the bytes, computed on first use and cached
    /// (equal bytes give equal hashes in any process).
    pub fn content_hash(&self) -> u64 {
        *self
            .0
            .hash
            .get_or_init(|| xxhash_rust::xxh3::xxh3_64(self.as_slice()))
    }

    /// True when both handles share one allocation.
    pub fn ptr_eq(a: &ConstBytes, b: &ConstBytes) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

impl Deref for ConstBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for ConstBytes {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl From<Vec<u8>> for ConstBytes {
    fn from(bytes: Vec<u8>) -> ConstBytes {
        ConstBytes::new(bytes)
    }
}

impl From<&[u8]> for ConstBytes {
    fn from(bytes: &[u8]) -> ConstBytes {
        ConstBytes::new(bytes.to_vec())
    }
}

impl PartialEq for ConstBytes {
    fn eq(&self, other: &ConstBytes) -> bool {
        ConstBytes::ptr_eq(self, other)
            || (self.len() == other.len()
                && self.content_hash() == other.content_hash()
                && self.as_slice() == other.as_slice())
    }
}

impl Eq for ConstBytes {}

impl Hash for ConstBytes {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.len().hash(h);
        self.content_hash().hash(h);
    }
}

/// Prints the bytes, as `Vec<u8>` does (the `Op` Debug form is unchanged).
impl fmt::Debug for ConstBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_slice(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::ConstBytes;
    use std::sync::Arc;

    #[test]
    fn equality_is_by_bytes_not_by_handle() {
        let a = ConstBytes::from(vec![0u8; 1000]);
        let mut v = vec![0u8; 1000];
        v[999] = 1;
        let b = ConstBytes::from(v);
        assert_ne!(a, b);
        assert_ne!(a.content_hash(), b.content_hash());
        assert_eq!(a, ConstBytes::from(&[0u8; 1000][..]));
        assert_eq!(format!("{:?}", ConstBytes::from(vec![1u8, 2])), "[1, 2]");
    }

    #[test]
    fn make_mut_copies_a_shared_handle_and_rehashes() {
        let a = ConstBytes::from(vec![1u8, 2, 3]);
        let h = a.content_hash();
        let mut b = a.clone();
        b.make_mut()[0] = 9;
        assert_eq!(&a[..], &[1, 2, 3], "the other handle is unchanged");
        assert_eq!(&b[..], &[9, 2, 3]);
        assert_eq!(a.content_hash(), h);
        assert_ne!(b.content_hash(), h);
        let mut c = b.clone();
        drop(b);
        let before = c.as_ptr();
        c.make_mut()[1] = 0;
        assert_eq!(c.as_ptr(), before, "a sole handle is written in place");
        assert_eq!(c, ConstBytes::from(vec![9u8, 0, 3]));
    }

    #[test]
    fn foreign_bytes_are_shared_until_written() {
        let owner: Arc<[u8]> = Arc::from(&[5u8, 6, 7][..]);
        let mut a = ConstBytes::from_owner(owner.clone());
        assert_eq!(a.as_ptr(), owner.as_ptr(), "no copy");
        assert_eq!(a, ConstBytes::from(vec![5u8, 6, 7]));
        a.make_mut()[0] = 0;
        assert_eq!(&a[..], &[0, 6, 7]);
        assert_eq!(&owner[..], &[5, 6, 7], "the owner is never written");
        assert_eq!(ConstBytes::from_owner(owner).into_vec(), vec![5u8, 6, 7]);
    }

    #[test]
    fn into_vec_moves_a_sole_handle_and_copies_a_shared_one() {
        let a = ConstBytes::from(vec![7u8; 16]);
        let b = a.clone();
        assert_eq!(a.into_vec(), vec![7u8; 16]);
        assert_eq!(b.into_vec(), vec![7u8; 16]);
    }
}
