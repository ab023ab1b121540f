//! Hostile saved states: 3,000 deterministic mutants of a valid saved state
//! (bytes flipped, inserted, deleted; numbers replaced by extremes) are
//! parsed, loaded into every optimizer and stepped. Nothing may panic; bad
//! ones must come back as errors. (The cargo-fuzz target in fuzz/ runs the
//! same check unbounded: tools/fuzz_optim.sh.)

#[path = "common/hostile.rs"]
mod hostile;

use hostile::{exercise, optimizers, Reached};
use rlx_optim::*;

fn seed_state() -> String {
    // A real state: every optimizer's buffers for a matrix and a vector.
    let mut params = std::collections::BTreeMap::new();
    for mut opt in optimizers() {
        let (mut w, mut b) = (vec![0.1f64, -0.2, 0.3, 0.4, 0.5, -0.6], vec![1.0f64, 2.0]);
        let (gw, gb) = (vec![0.5f64; 6], vec![-0.5f64; 2]);
        for _ in 0..3 {
            let _ = opt.step_f64("w", &[3, 2], &mut w, &gw);
            let _ = opt.step_f64("b", &[2], &mut b, &gb);
            opt.end_iteration();
        }
        for (k, v) in opt.save_state().params {
            let e: &mut SavedParam = params.entry(k).or_insert_with(|| v.clone());
            e.buffers.extend(v.buffers);
            e.scalars.extend(v.scalars);
        }
    }
    OptimState {
        optimizer: "Adam".into(),
        iteration: 3,
        lr: 0.01,
        params,
    }
    .to_json()
}

#[test]
fn mutated_states_never_panic() {
    let seed = seed_state();
    // tools/fuzz_optim.sh seeds its corpus with this state.
    if let Ok(path) = std::env::var("RLX_OPTIM_SEED_OUT") {
        std::fs::write(path, &seed).unwrap();
    }
    let mut r = Reached::default();
    exercise(&seed, &mut r);
    let bytes = seed.as_bytes();
    let extremes = [
        "1e308",
        "-1e308",
        "0",
        "-0",
        "18446744073709551615",
        "4294967296",
        "\"NaN\"",
        "\"inf\"",
        "[]",
        "{}",
        "null",
    ];
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..3000 {
        let mut m = bytes.to_vec();
        for _ in 0..1 + next() % 4 {
            let at = (next() as usize) % m.len().max(1);
            match next() % 4 {
                0 => m[at] = (next() & 0x7f) as u8,
                1 => {
                    m.remove(at);
                }
                2 => m.insert(at, b"0123456789-.e,[]{}\":"[(next() % 20) as usize]),
                _ => {
                    // Replace the number that starts near `at` by an extreme.
                    let s = String::from_utf8_lossy(&m).to_string();
                    if let Some(pos) = s[at.min(s.len())..].find(|c: char| c.is_ascii_digit()) {
                        let start = at + pos;
                        let end = s[start..]
                            .find(|c: char| !(c.is_ascii_digit() || "eE+-.".contains(c)))
                            .map_or(s.len(), |e| start + e);
                        let rep = extremes[(next() % extremes.len() as u64) as usize];
                        m = format!("{}{}{}", &s[..start], rep, &s[end..]).into_bytes();
                    }
                }
            }
        }
        if let Ok(text) = std::str::from_utf8(&m) {
            exercise(text, &mut r);
        }
    }
    // The mutants must reach the optimizers, and some must be refused there.
    assert!(
        r.parsed > 300 && r.loaded > 3000 && r.steps_ok > 3000 && r.steps_err > 300,
        "{r:?}"
    );
}
