//! A bounded, seeded fuzz run in the normal suite (the cargo-fuzz target in
//! fuzz/ explores further; see tools/fuzz_gguf_convert.sh): mutants of the
//! safetensors and ONNX fixtures are converted; nothing may panic, and
//! whatever converts must give a GGUF file our reader accepts.

use rlx_gguf::{GgmlType, GgufReader};
use rlx_gguf_convert::{Conversion, Converter};

/// SplitMix64, so the test needs no extra crates.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, base: &[u8], hot: usize) -> Vec<u8> {
    let mut b = base.to_vec();
    for _ in 0..1 + rng.below(3) {
        // Mostly the header (shapes, offsets, dtypes), sometimes anywhere.
        let span = if rng.below(4) == 0 {
            b.len()
        } else {
            hot.min(b.len())
        };
        if span == 0 {
            break;
        }
        let at = rng.below(span);
        match rng.below(5) {
            0 => b[at] ^= 1 << rng.below(8),
            1 => b[at] = [0u8, 0xff, 0x7f, 0x80, b'9', b'"', b','][rng.below(7)],
            2 => b.truncate(at),
            3 => {
                let n = 1 + rng.below(8);
                b.drain(at..(at + n).min(b.len()));
            }
            _ => {
                let v = [u64::MAX, 1 << 40, 0xffff_ffff, 0][rng.below(4)].to_le_bytes();
                for (k, byte) in v.iter().enumerate().take(8) {
                    if at + k < b.len() {
                        b[at + k] = *byte;
                    }
                }
            }
        }
    }
    b
}

fn check(result: rlx_gguf_convert::Result<Conversion>) -> bool {
    let Ok(conv) = result else { return false };
    let bytes = conv.to_bytes().unwrap();
    let r = GgufReader::new(&bytes[..]).unwrap();
    assert_eq!(r.tensors().len(), conv.report.tensors.len());
    true
}

#[test]
fn mutated_sources_never_panic() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/");
    let st = std::fs::read(format!("{dir}source.safetensors")).unwrap();
    let onnx = std::fs::read(format!("{dir}source.onnx")).unwrap();
    let st_header = 8 + u64::from_le_bytes(st[..8].try_into().unwrap()) as usize;
    let c = Converter::new(GgmlType::Q4_K).override_pattern("*attn*", GgmlType::Q8_0);
    let mut rng = Rng(0xc0_2e_27);
    let (mut ok, mut total) = (0, 0);
    for _ in 0..1500 {
        ok += usize::from(check(
            c.convert_safetensors_bytes(&mutate(&mut rng, &st, st_header)),
        ));
        total += 1;
    }
    for _ in 0..1500 {
        ok += usize::from(check(
            c.convert_onnx_bytes(&mutate(&mut rng, &onnx, onnx.len()), None),
        ));
        total += 1;
    }
    eprintln!("converted {ok} of {total}");
    assert_eq!(total, 3000);
    // Only meaningful if mutants get past the parsers.
    assert!(ok > 100, "only {ok} of {total} mutants converted");
}
