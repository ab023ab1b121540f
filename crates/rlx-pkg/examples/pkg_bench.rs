//! `.rlxp` speed against the safetensors file it is packed from, in one
//! run (issue 24's rows in BENCHMARKS.md): open (TOC only) vs safetensors'
//! header parse, checksum verification and warm-tier (zstd) decoding rates,
//! the package sizes, and MiniLM-L6 (b1 s128) from file to first output:
//! `compile_rlxp` against building + compiling + loading it from the
//! safetensors directory (`BertEncoder`), alternated run by run.
//!
//! `cargo run --release -p rlx-pkg --example pkg_bench` (MiniLM-L6 from
//! `tools/fetch_models.sh`; `RLX_MODELS` overrides `~/.cache/rlx-models`).

use rlx_ir::HostTensor;
use rlx_models::bert::{graph_param, BertEncoder, TokenBatch};
use rlx_pkg::{compile_rlxp, open_rlxp, Package, Tier};
use rlx_runtime::{BytesWeightLoader, Device, Session};
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

/// CPU time this thread has run (Linux `/proc/thread-self/schedstat`): a
/// per-core rate that other load on the machine does not inflate. `None`
/// elsewhere.
fn thread_cpu_time() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// Median CPU time of `reps` calls of `f` (`None` without a CPU clock).
fn cpu_timed<R>(reps: usize, mut f: impl FnMut() -> Res<R>) -> Res<Option<Duration>> {
    let mut t = Vec::with_capacity(reps);
    for _ in 0..reps {
        let Some(t0) = thread_cpu_time() else {
            return Ok(None);
        };
        std::hint::black_box(f()?);
        t.push(thread_cpu_time().unwrap_or(t0).saturating_sub(t0));
    }
    Ok(Some(median(t)))
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
    let model_dir = models.join("all-MiniLM-L6-v2");
    let st = model_dir.join("model.safetensors");
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
    let verify_warm_cpu = cpu_timed(5, || Ok(open_rlxp(&warm)?.verify()?))?;
    // Decompression alone: checksums already verified and the file's pages
    // mapped by a first pass, no warm cache, so every pass decodes again.
    let warm_pkg = open_rlxp(&warm)?;
    warm_pkg.verify()?;
    warm_pkg.set_warm_budget(0);
    let names = warm_pkg.tensor_names();
    let decode_all = || -> Res<usize> {
        let mut n = 0;
        for name in &names {
            n += warm_pkg.tensor_bytes(name)?.len();
        }
        Ok(n)
    };
    let decode_warm = timed(5, decode_all)?;
    let decode_warm_cpu = cpu_timed(5, decode_all)?;
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
        "verify, warm tier (zstd decode + XXH3) {:>7.2} GB/s of decoded tensors{}",
        gbps(tensor_bytes, verify_warm),
        verify_warm_cpu.map_or(String::new(), |t| format!(
            " ({:.2} GB/s per CPU-second of this thread)",
            gbps(tensor_bytes, t)
        ))
    );
    println!(
        "warm tier, zstd decode only            {:>7.2} GB/s of decoded tensors{}",
        gbps(tensor_bytes, decode_warm),
        decode_warm_cpu.map_or(String::new(), |t| format!(
            " ({:.2} GB/s per CPU-second of this thread)",
            gbps(tensor_bytes, t)
        ))
    );
    println!(
        "size: hot {:.3}x, warm {:.3}x of the safetensors file",
        hot_len as f64 / st_len as f64,
        warm_len as f64 / st_len as f64
    );
    first_output(&model_dir, &dir)
}

/// Token ids for one 128-token sequence (any ids inside the vocabulary).
fn tokens() -> TokenBatch {
    let seq = 128;
    TokenBatch {
        batch: 1,
        seq,
        ids: (0..seq as i64).map(|i| 101 + (i * 37) % 20_000).collect(),
        mask: vec![1; seq],
        type_ids: vec![0; seq],
    }
}

/// MiniLM-L6 b1 s128 from file to first output, both ways, alternated:
/// the safetensors directory (graph built, compiled, params loaded with the
/// Linear weights transposed) against a package holding that graph and its
/// params as compiled (`compile_rlxp`).
fn first_output(model_dir: &std::path::Path, dir: &std::path::Path) -> Res<()> {
    let batch = tokens();
    let mut enc = BertEncoder::from_dir(model_dir, Device::Cpu)?;
    let reference = enc.run(&batch)?.sentence_embedding.to_vec::<f32>()?;
    let built = rlx_models::bert::encoder_graph(enc.config(), 1, batch.seq)?;
    let c = enc.compiled(1, batch.seq)?;
    let mut b = Package::builder().graph(built.graph);
    let loader = BytesWeightLoader::open(model_dir.join("model.safetensors"))?;
    for name in c.param_names() {
        b = b.tensor(&name, &graph_param(&loader, &name, &built.transposed)?);
    }
    let pkg_path = dir.join("minilm-b1s128.rlxp");
    b.write(&pkg_path)?;
    std::fs::read(&pkg_path)?;

    let inputs = batch.tensors()?;
    let feed: Vec<(&str, &HostTensor)> = inputs.iter().map(|(n, t)| (*n, t)).collect();
    let (mut st_compile, mut st_first, mut pkg_compile, mut pkg_first) =
        (vec![], vec![], vec![], vec![]);
    for _ in 0..7 {
        let t0 = Instant::now();
        let mut enc = BertEncoder::from_dir(model_dir, Device::Cpu)?;
        enc.compiled(1, batch.seq)?;
        st_compile.push(t0.elapsed());
        let out = enc.run(&batch)?;
        st_first.push(t0.elapsed());
        std::hint::black_box(out);

        let t0 = Instant::now();
        let mut c = compile_rlxp(&Session::new(Device::Cpu), &pkg_path)?;
        pkg_compile.push(t0.elapsed());
        let outs = c.try_run_typed(&feed)?;
        pkg_first.push(t0.elapsed());
        let got = outs[1].to_vec::<f32>()?;
        let worst = got
            .iter()
            .zip(&reference)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        if worst > 1e-5 {
            return Err(format!(
                "the package's embedding differs from the safetensors one by {worst}"
            )
            .into());
        }
    }
    let (sc, sf, pc, pf) = (
        median(st_compile),
        median(st_first),
        median(pkg_compile),
        median(pkg_first),
    );
    println!(
        "MiniLM b1 s128 compile: compile_rlxp {:>8.1} ms   safetensors dir {:>8.1} ms   ratio {:.2}",
        pc.as_secs_f64() * 1e3,
        sc.as_secs_f64() * 1e3,
        pc.as_secs_f64() / sc.as_secs_f64()
    );
    println!(
        "MiniLM b1 s128 file -> first output: .rlxp {:>8.1} ms   safetensors dir {:>8.1} ms   ratio {:.2}",
        pf.as_secs_f64() * 1e3,
        sf.as_secs_f64() * 1e3,
        pf.as_secs_f64() / sf.as_secs_f64()
    );
    Ok(())
}
