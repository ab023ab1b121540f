//! `.rlxp` speed against the safetensors file it is packed from, in one
//! run (issue 24's rows in BENCHMARKS.md): open (TOC only) vs safetensors'
//! header parse, checksum verification and warm-tier (zstd) decoding rates,
//! and the package sizes.
//!
//! `cargo run --release -p rlx-pkg --example pkg_bench` (MiniLM-L6 from
//! `tools/fetch_models.sh`; `RLX_MODELS` overrides `~/.cache/rlx-models`).

use rlx_pkg::{open_rlxp, Package, Tier};
use std::path::PathBuf;
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn timed<R>(reps: usize, mut f: impl FnMut() -> Res<R>) -> Res<Duration> {
    let mut t = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t0 = Instant::now();
        std::hint::black_box(f()?);
        t.push(t0.elapsed());
    }
    Ok(median(t))
}

fn gbps(bytes: u64, t: Duration) -> f64 {
    bytes as f64 / t.as_secs_f64() / 1e9
}

fn main() -> Res<()> {
    let models = std::env::var_os("RLX_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/rlx-models")
        });
    let st = models.join("all-MiniLM-L6-v2/model.safetensors");
    if !st.exists() {
        return Err(format!("{} is missing: run tools/fetch_models.sh", st.display()).into());
    }
    let dir = std::env::temp_dir().join("rlx-pkg-bench");
    std::fs::create_dir_all(&dir)?;
    let (hot, warm) = (dir.join("minilm-hot.rlxp"), dir.join("minilm-warm.rlxp"));
    Package::builder().safetensors(&st).write(&hot)?;
    Package::builder()
        .default_tier(Tier::Warm)
        .safetensors(&st)
        .write(&warm)?;
    let size = |p: &PathBuf| std::fs::metadata(p).map(|m| m.len());
    let (st_len, hot_len, warm_len) = (size(&st)?, size(&hot)?, size(&warm)?);
    let tensor_bytes: u64 = open_rlxp(&hot)?.entries().iter().map(|e| e.len).sum();

    // Warm the page cache for both files so only parsing / hashing counts.
    std::fs::read(&st)?;
    std::fs::read(&hot)?;
    std::fs::read(&warm)?;

    let open_pkg = timed(200, || Ok(open_rlxp(&hot)?))?;
    let open_st = timed(200, || {
        let file = std::fs::File::open(&st)?;
        // SAFETY: read-only map of a file this process does not modify.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        let (n, meta) = safetensors::SafeTensors::read_metadata(&map[..])?;
        Ok((n, meta.tensors().len()))
    })?;
    // A package remembers which spans it has checked: open afresh each time.
    let verify_hot = timed(9, || Ok(open_rlxp(&hot)?.verify()?))?;
    let verify_warm = timed(5, || Ok(open_rlxp(&warm)?.verify()?))?;
    let file = std::fs::File::open(&hot)?;
    // SAFETY: read-only map of a file this process does not modify.
    let map = unsafe { memmap2::Mmap::map(&file)? };
    let hash_only = timed(9, || Ok(xxhash_rust::xxh3::xxh3_64(&map[..])))?;

    println!("MiniLM-L6 safetensors {st_len} B, {tensor_bytes} B of tensors");
    println!(
        "open_rlxp (TOC only)           {:>9.3} ms   safetensors mmap + header {:>7.3} ms   ratio {:.2}",
        open_pkg.as_secs_f64() * 1e3,
        open_st.as_secs_f64() * 1e3,
        open_pkg.as_secs_f64() / open_st.as_secs_f64()
    );
    println!(
        "verify, hot tier (XXH3 every tensor)   {:>7.2} GB/s   (bare XXH3 over the mapped file: {:.2} GB/s)",
        gbps(tensor_bytes, verify_hot),
        gbps(hot_len, hash_only)
    );
    println!(
        "verify, warm tier (zstd decode + XXH3) {:>7.2} GB/s of decoded tensors",
        gbps(tensor_bytes, verify_warm)
    );
    println!(
        "size: hot {:.3}x, warm {:.3}x of the safetensors file",
        hot_len as f64 / st_len as f64,
        warm_len as f64 / st_len as f64
    );
    Ok(())
}
