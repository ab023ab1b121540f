//! The transport-independent test suite: every collective against the numpy
//! fixtures of tools/gen_collective_fixtures.py, plus runners with hard
//! deadlines.
#![allow(dead_code)]

use half::f16;
use rlx_collectives::*;
use serde_json::Value;
use std::result::Result;
use std::sync::OnceLock;
use std::time::Duration;

/// The fixture file, parsed once.
pub fn fixtures() -> &'static Value {
    static FX: OnceLock<Value> = OnceLock::new();
    FX.get_or_init(|| {
        let text = include_str!("../fixtures/collectives.json");
        serde_json::from_str(text).expect("fixture JSON")
    })
}

/// The fixture cases for world size `n`.
pub fn cases(n: usize) -> Vec<&'static Value> {
    fixtures()["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter(|c| c["world"].as_u64() == Some(n as u64))
        .collect()
}

fn vals<T: Element>(v: &Value) -> Vec<T> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| T::from_f64(x.as_f64().expect("number")))
        .collect()
}

fn bits<T: Element>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_f64().to_bits()).collect()
}

fn same<T: Element>(what: &str, got: &[T], want: &[T]) -> Result<(), String> {
    if bits(got) != bits(want) {
        return Err(format!("{what}: got {got:?}, want {want:?}"));
    }
    Ok(())
}

fn eps<T: Element>() -> f64 {
    match T::DTYPE {
        DType::F16 => 2f64.powi(-10),
        DType::F32 => 2f64.powi(-23),
        DType::F64 => 2f64.powi(-52),
        DType::I32 => 0.0,
    }
}

/// Ring results: within n * eps * sum|x| of the exact f64 reference.
fn close<T: Element>(
    what: &str,
    got: &[T],
    exact: &[f64],
    abs_sum: &[f64],
    n: usize,
    scale: f64,
) -> Result<(), String> {
    if got.len() != exact.len() {
        return Err(format!(
            "{what}: {} elements, want {}",
            got.len(),
            exact.len()
        ));
    }
    for i in 0..got.len() {
        let tol = (n as f64 + 1.0) * eps::<T>() * abs_sum[i] * scale + f64::MIN_POSITIVE;
        let err = (got[i].to_f64() - exact[i]).abs();
        if err > tol {
            return Err(format!(
                "{what}[{i}]: got {:?}, want {} (err {err:e} > tol {tol:e})",
                got[i], exact[i]
            ));
        }
    }
    Ok(())
}

const KINDS: [(&str, ReduceKind); 4] = [
    ("sum", ReduceKind::Sum),
    ("mean", ReduceKind::Mean),
    ("max", ReduceKind::Max),
    ("min", ReduceKind::Min),
];

fn run_case<T: Element>(pg: &dyn ProcessGroup, c: &Value) -> Result<(), String> {
    let (n, r) = (pg.world_size(), pg.rank());
    let len = c["len"].as_u64().unwrap() as usize;
    let name = format!("n={n} rank={r} {} len={len}", c["dtype"]);
    let inputs: Vec<Vec<T>> = c["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(vals::<T>)
        .collect();
    let x = &inputs[r];
    let abs_sum: Vec<f64> = (0..len)
        .map(|i| inputs.iter().map(|v| v[i].to_f64().abs()).sum())
        .collect();
    let is_int = T::DTYPE == DType::I32;
    let e = |e: CollectiveError| format!("{name}: {e}");

    for (kname, kind) in KINDS {
        if is_int && kind == ReduceKind::Mean {
            for mode in [ReduceMode::Ring, ReduceMode::Deterministic] {
                match all_reduce(pg, x, kind, mode) {
                    Err(CollectiveError::UnsupportedReduce { .. }) => {}
                    other => return Err(format!("{name}: i32 mean gave {other:?}")),
                }
            }
            continue;
        }
        let det = all_reduce(pg, x, kind, ReduceMode::Deterministic).map_err(e)?;
        same(
            &format!("{name} all_reduce {kname} det"),
            &det,
            &vals::<T>(&c["det"][kname]),
        )?;
        let ring = all_reduce(pg, x, kind, ReduceMode::Ring).map_err(e)?;
        let what = format!("{name} all_reduce {kname} ring");
        if is_int || matches!(kind, ReduceKind::Max | ReduceKind::Min) {
            same(&what, &ring, &vals::<T>(&c["exact"][kname]))?;
        } else {
            let exact: Vec<f64> = vals::<f64>(&c["exact"][kname]);
            let scale = if kind == ReduceKind::Mean {
                1.0 / n as f64
            } else {
                1.0
            };
            close(&what, &ring, &exact, &abs_sum, n, scale)?;
        }
    }

    same(
        &format!("{name} all_gather"),
        &all_gather(pg, x).map_err(e)?,
        &vals::<T>(&c["all_gather"]),
    )?;

    if len.is_multiple_of(n) {
        let ch = len / n;
        for (kname, kind) in KINDS {
            if is_int && kind == ReduceKind::Mean {
                continue;
            }
            let det = reduce_scatter(pg, x, kind, ReduceMode::Deterministic).map_err(e)?;
            same(
                &format!("{name} reduce_scatter {kname} det"),
                &det,
                &vals::<T>(&c["det"][kname])[r * ch..(r + 1) * ch],
            )?;
            let ring = reduce_scatter(pg, x, kind, ReduceMode::Ring).map_err(e)?;
            let what = format!("{name} reduce_scatter {kname} ring");
            if is_int || matches!(kind, ReduceKind::Max | ReduceKind::Min) {
                same(
                    &what,
                    &ring,
                    &vals::<T>(&c["exact"][kname])[r * ch..(r + 1) * ch],
                )?;
            } else {
                let exact: Vec<f64> = vals::<f64>(&c["exact"][kname]);
                let scale = if kind == ReduceKind::Mean {
                    1.0 / n as f64
                } else {
                    1.0
                };
                close(
                    &what,
                    &ring,
                    &exact[r * ch..(r + 1) * ch],
                    &abs_sum[r * ch..(r + 1) * ch],
                    n,
                    scale,
                )?;
            }
        }
        let a2a = all_to_all(pg, x).map_err(e)?;
        same(
            &format!("{name} all_to_all"),
            &a2a,
            &vals::<T>(&c["all_to_all"][r]),
        )?;
    } else {
        match reduce_scatter(pg, x, ReduceKind::Sum, ReduceMode::Ring) {
            Err(CollectiveError::NotDivisible { .. }) => {}
            other => return Err(format!("{name}: reduce_scatter of {len} gave {other:?}")),
        }
        match all_to_all(pg, x) {
            Err(CollectiveError::NotDivisible { .. }) => {}
            other => return Err(format!("{name}: all_to_all of {len} gave {other:?}")),
        }
    }

    let root = c["broadcast_root"].as_u64().unwrap() as usize;
    same(
        &format!("{name} broadcast"),
        &broadcast(pg, x, root).map_err(e)?,
        &vals::<T>(&c["broadcast"]),
    )?;

    for p in c["ppermute"].as_array().unwrap() {
        let perm: Vec<(usize, usize)> = p["perm"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| {
                (
                    q[0].as_u64().unwrap() as usize,
                    q[1].as_u64().unwrap() as usize,
                )
            })
            .collect();
        let got = ppermute(pg, x, &perm).map_err(e)?;
        same(
            &format!("{name} ppermute {perm:?}"),
            &got,
            &vals::<T>(&p["out"][r]),
        )?;
    }

    send(pg, (r + 1) % n, 7, x).map_err(e)?;
    let left = (r + n - 1) % n;
    same(
        &format!("{name} send/recv"),
        &recv::<T>(pg, left, 7).map_err(e)?,
        &inputs[left],
    )?;
    Ok(())
}

/// Runs every fixture case of this world size on `pg`.
pub fn suite(pg: &dyn ProcessGroup) -> Result<usize, String> {
    let mut count = 0;
    for c in cases(pg.world_size()) {
        match c["dtype"].as_str().unwrap() {
            "f16" => run_case::<f16>(pg, c)?,
            "f32" => run_case::<f32>(pg, c)?,
            "f64" => run_case::<f64>(pg, c)?,
            "i32" => run_case::<i32>(pg, c)?,
            d => return Err(format!("unknown dtype {d}")),
        }
        count += 1;
    }
    Ok(count)
}

/// Deterministic all-reduce sums of every fixture case, as bits (to compare
/// across transports).
pub fn det_bits(pg: &dyn ProcessGroup) -> Result<Vec<u64>, String> {
    let mut out = Vec::new();
    for c in cases(pg.world_size()) {
        let r = pg.rank();
        macro_rules! go {
            ($t:ty) => {{
                let x = vals::<$t>(&c["inputs"][r]);
                let y = all_reduce(pg, &x, ReduceKind::Sum, ReduceMode::Deterministic)
                    .map_err(|e| e.to_string())?;
                out.extend(bits(&y));
            }};
        }
        match c["dtype"].as_str().unwrap() {
            "f16" => go!(f16),
            "f32" => go!(f32),
            "f64" => go!(f64),
            _ => go!(i32),
        }
    }
    Ok(out)
}

/// Runs `f` in a thread and fails the test if it takes longer than `secs`.
pub fn with_deadline<R: Send + 'static>(secs: u64, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(Ok(r)) => r,
        Ok(Err(p)) => std::panic::resume_unwind(p),
        Err(_) => panic!("test exceeded its hard deadline of {secs} s"),
    }
}

/// Runs `f` on every rank of a loopback group of `n`, one thread each.
pub fn on_loopback<R: Send>(
    n: usize,
    timeout: Duration,
    f: impl Fn(&dyn ProcessGroup) -> R + Sync,
) -> Vec<R> {
    let ranks = LoopbackGroup::new_world(n, timeout).unwrap();
    std::thread::scope(|s| {
        let hs: Vec<_> = ranks.iter().map(|pg| s.spawn(|| f(pg))).collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Forms a TCP group of `n` ranks (threads), each configured by `cfg`, and
/// runs `f` on every rank that joined. Returns each rank's outcome.
pub fn on_tcp<R: Send>(
    n: usize,
    cfg: impl Fn(TcpConfig) -> TcpConfig + Sync,
    f: impl Fn(&dyn ProcessGroup) -> R + Sync,
) -> Vec<Result<R, CollectiveError>> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let mut listener = Some(listener);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|r| {
                let c = cfg(TcpConfig::new(addr.clone(), r, n, b"test secret"));
                let l = if r == 0 { listener.take() } else { None };
                let f = &f;
                s.spawn(move || {
                    let pg = match l {
                        Some(l) => TcpGroup::join_with_listener(c, l)?,
                        None => TcpGroup::join(c)?,
                    };
                    Ok(f(&pg))
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Short timeouts for tests.
pub fn quick(c: TcpConfig) -> TcpConfig {
    c.timeout(Duration::from_secs(5))
        .rendezvous_timeout(Duration::from_secs(20))
}

/// The `split` fixtures: 24 rows of 8 hard columns and their exact sums.
pub fn split_cases() -> &'static [Value] {
    fixtures()["split"].as_array().expect("split")
}

/// World size of a split case: one rank per row.
pub fn split_world(case: &Value) -> usize {
    case["rows"].as_array().expect("rows").len()
}

/// How many rank assignments [`split_sum_bits`] knows.
pub const SPLIT_ORDERS: usize = 4;

/// The row rank `r` of `n` holds under assignment `order`.
fn split_row(order: usize, r: usize, n: usize) -> usize {
    match order {
        0 => r,
        1 => n - 1 - r,
        2 => (r + 5) % n,
        _ => (r * 7) % n,
    }
}

/// Deterministic Sum of the split case's rows, this rank holding the row of
/// `order`; the result's bits.
pub fn split_sum_bits(pg: &dyn ProcessGroup, case: &Value, order: usize) -> Vec<u64> {
    fn run<E: Element>(pg: &dyn ProcessGroup, row: &Value) -> Vec<u64> {
        let x: Vec<E> = vals(row);
        let got = all_reduce(pg, &x, ReduceKind::Sum, ReduceMode::Deterministic).unwrap();
        bits(&got)
    }
    let row = &case["rows"][split_row(order, pg.rank(), pg.world_size())];
    match case["dtype"].as_str() {
        Some("f32") => run::<f32>(pg, row),
        _ => run::<f64>(pg, row),
    }
}

/// The fixture's exact sums as bits of the case's dtype; for f64 also checks
/// they equal math.fsum (which differs only on the sign of an all -0.0 sum).
pub fn split_want(case: &Value) -> Vec<u64> {
    if case["dtype"] == "f32" {
        return bits(&vals::<f32>(&case["sum"]));
    }
    let want = vals::<f64>(&case["sum"]);
    assert_eq!(want, vals::<f64>(&case["fsum"]), "exact sum vs math.fsum");
    bits(&want)
}
