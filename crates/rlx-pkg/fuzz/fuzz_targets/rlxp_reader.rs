//! Fuzzes the `.rlxp` reader: open arbitrary bytes; when they open, read
//! every tensor and blob and verify the package. For about half of the
//! inputs (the low bit of the xor of all bytes set; the committed seeds are
//! used unchanged either way) the TOC and header checksums are recomputed
//! first, so mutations reach the TOC parser and the span, block, placement
//! and graph checks.
//! Must never panic, and (with libFuzzer's RSS / malloc limits) never
//! allocate far beyond the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rlx_pkg::format::checksum;
use rlx_pkg::Package;

fn refix(b: &mut [u8]) {
    if b.len() < 64 {
        return;
    }
    let toc_len = u64::from_le_bytes(b[24..32].try_into().unwrap());
    if let Some(end) = 64u64.checked_add(toc_len).filter(|&e| e <= b.len() as u64) {
        let sum = checksum(&b[64..end as usize]);
        b[48..56].copy_from_slice(&sum.to_le_bytes());
    }
    let sum = checksum(&b[0..56]);
    b[56..64].copy_from_slice(&sum.to_le_bytes());
}

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.to_vec();
    if data.iter().fold(0u8, |a, b| a ^ b) & 1 == 1 {
        refix(&mut bytes);
    }
    let Ok(p) = Package::from_bytes(bytes) else {
        return;
    };
    for name in p.tensor_names() {
        let e = p.entry(&name).expect("listed").clone();
        if let Ok(t) = p.tensor(&name) {
            assert_eq!(t.dims(), &e.dims[..]);
            assert_eq!(t.bytes().len() as u64, e.nbytes);
        }
    }
    for b in p.blob_entries().to_vec() {
        let _ = p.blob(&b.name);
    }
    let _ = p.verify();
});
