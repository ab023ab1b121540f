//! Times `delaunay` on N uniform random points (default 1,000,000).
//!
//! `cargo run --release -p rlx-geo --example delaunay_bench -- [N] [POINTS.f64]`:
//! with a file of N*2 little-endian f64 (as `tools/bench_geo.py` writes
//! for scipy's run on the same points) it reads the points from there.

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let points: Vec<[f64; 2]> = match args.get(2) {
        Some(path) => std::fs::read(path)
            .expect("points file")
            .chunks_exact(16)
            .map(|c| {
                let f = |b: &[u8]| f64::from_le_bytes(b.try_into().expect("8 bytes"));
                [f(&c[..8]), f(&c[8..])]
            })
            .collect(),
        None => {
            // xorshift64*: reproducible points without a dependency
            let mut s = 0x9E37_79B9_7F4A_7C15u64;
            let mut next = || {
                s ^= s >> 12;
                s ^= s << 25;
                s ^= s >> 27;
                (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
            };
            (0..n).map(|_| [next(), next()]).collect()
        }
    };
    let mut best = f64::INFINITY;
    let mut count = 0;
    for _ in 0..3 {
        let t = Instant::now();
        let tri = rlx_geo::delaunay(&points).expect("delaunay");
        best = best.min(t.elapsed().as_secs_f64());
        count = tri.triangles.len();
    }
    println!(
        "rlx-geo delaunay: {} points, {count} triangles, best of 3: {best:.3} s",
        points.len()
    );
}
