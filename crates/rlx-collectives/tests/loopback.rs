//! The collective suite on the loopback transport, sub-groups, and
//! arrival-order independence of ReduceMode::Deterministic.

mod common;
use common::*;
use rlx_collectives::*;
use std::sync::Arc;
use std::time::Duration;

const T: Duration = Duration::from_secs(10);

#[test]
fn suite_on_1_to_4_ranks() {
    with_deadline(120, || {
        for n in 1..=4 {
            for r in on_loopback(n, T, suite) {
                assert_eq!(r.unwrap(), 24, "world {n}");
            }
        }
    });
}

#[test]
fn deterministic_ignores_arrival_order() {
    with_deadline(120, || {
        for n in 2..=4 {
            let plain = on_loopback(n, T, |pg| det_bits(pg).unwrap());
            // Ranks delayed in a different order before each collective.
            let delayed = on_loopback(n, T, |pg| {
                let d = Duration::from_millis(((pg.rank() * 7 + 3) % 5) as u64);
                let mut out = Vec::new();
                for c in cases(n) {
                    std::thread::sleep(d);
                    if c["dtype"] == "f32" {
                        let x: Vec<f32> = c["inputs"][pg.rank()]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|v| v.as_f64().unwrap() as f32)
                            .collect();
                        let y =
                            all_reduce(pg, &x, ReduceKind::Sum, ReduceMode::Deterministic).unwrap();
                        out.extend(y.iter().map(|v| (*v as f64).to_bits()));
                    }
                }
                out
            });
            assert!(plain.windows(2).all(|w| w[0] == w[1]), "ranks disagree");
            assert!(delayed.windows(2).all(|w| w[0] == w[1]), "ranks disagree");
            assert!(!delayed[0].is_empty());
        }
    });
}

#[test]
fn sub_groups_reduce_their_members_only() {
    // World 4; sub-group [3, 1] runs the 2-rank fixture, [0, 2, 3] the 3-rank one.
    with_deadline(60, || {
        let ranks = LoopbackGroup::new_world(4, T).unwrap();
        let hs: Vec<_> = ranks
            .into_iter()
            .map(|pg| {
                std::thread::spawn(move || {
                    let reg = GroupRegistry::new(Arc::new(pg));
                    let a = reg.new_subgroup(&[3, 1]).unwrap();
                    let b = reg.new_subgroup(&[0, 2, 3]).unwrap();
                    assert_eq!((a, b), (GroupId(1), GroupId(2)));
                    let mut res = Vec::new();
                    for (id, n) in [(a, 2usize), (b, 3)] {
                        match reg.get(id) {
                            Ok(g) => {
                                let c = cases(n)
                                    .into_iter()
                                    .find(|c| c["dtype"] == "f64" && c["len"] == 13)
                                    .unwrap();
                                let num = |v: &serde_json::Value| -> Vec<f64> {
                                    v.as_array()
                                        .unwrap()
                                        .iter()
                                        .map(|v| v.as_f64().unwrap())
                                        .collect()
                                };
                                let x = num(&c["inputs"][g.rank()]);
                                let y =
                                    all_reduce(&*g, &x, ReduceKind::Sum, ReduceMode::Deterministic)
                                        .unwrap();
                                assert_eq!(y, num(&c["det"]["sum"]));
                                let z =
                                    all_reduce(&*g, &x, ReduceKind::Max, ReduceMode::Ring).unwrap();
                                assert_eq!(z, num(&c["exact"]["max"]));
                                res.push(true);
                            }
                            Err(CollectiveError::NotAMember { .. }) => res.push(false),
                            Err(e) => panic!("{e}"),
                        }
                    }
                    assert!(matches!(
                        reg.get(GroupId(9)),
                        Err(CollectiveError::UnknownGroup(9))
                    ));
                    assert!(matches!(
                        reg.new_subgroup(&[0, 0]),
                        Err(CollectiveError::InvalidConfig(_))
                    ));
                    assert!(matches!(
                        reg.new_subgroup(&[5]),
                        Err(CollectiveError::InvalidRank { rank: 5, .. })
                    ));
                    res
                })
            })
            .collect();
        let out: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(
            out,
            vec![
                vec![false, true],
                vec![true, false],
                vec![false, true],
                vec![true, true]
            ]
        );
    });
}

#[test]
fn dropped_rank_is_an_error_not_a_hang() {
    with_deadline(30, || {
        let mut ranks = LoopbackGroup::new_world(3, Duration::from_secs(20)).unwrap();
        drop(ranks.pop());
        let t0 = std::time::Instant::now();
        let out: Vec<_> = std::thread::scope(|s| {
            let hs: Vec<_> = ranks
                .iter()
                .map(|pg| {
                    s.spawn(move || all_reduce(pg, &[1.0f32; 5], ReduceKind::Sum, ReduceMode::Ring))
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(t0.elapsed() < Duration::from_secs(5));
        assert!(
            out.iter()
                .all(|r| matches!(r, Err(CollectiveError::PeerDisconnected { .. }))),
            "{out:?}"
        );
    });
}

#[test]
fn silent_rank_times_out() {
    with_deadline(30, || {
        let t = Duration::from_millis(300);
        let out = on_loopback(2, t, |pg| {
            if pg.rank() == 1 {
                std::thread::sleep(Duration::from_secs(1));
                return Ok(vec![]);
            }
            all_reduce(pg, &[1i32, 2], ReduceKind::Sum, ReduceMode::Deterministic)
        });
        assert!(
            matches!(out[0], Err(CollectiveError::Timeout { peer: 1, .. })),
            "{:?}",
            out[0]
        );
    });
}

#[test]
fn mismatched_inputs_are_named_errors() {
    with_deadline(30, || {
        let t0 = std::time::Instant::now();
        let out = on_loopback(2, T, |pg| {
            let x = vec![1.0f32; 3 + pg.rank()];
            all_reduce(pg, &x, ReduceKind::Sum, ReduceMode::Deterministic)
        });
        assert!(
            matches!(
                out[0],
                Err(CollectiveError::LengthMismatch {
                    peer: 1,
                    expected: 3,
                    got: 4,
                    ..
                })
            ),
            "{:?}",
            out[0]
        );
        // Rank 0 failed the group, so rank 1 learns of it at once, not after T.
        assert!(
            matches!(
                out[1],
                Err(CollectiveError::PeerDisconnected { peer: 0, .. })
            ),
            "{:?}",
            out[1]
        );
        assert!(t0.elapsed() < Duration::from_secs(3));
        let out = on_loopback(2, Duration::from_secs(1), |pg| {
            if pg.rank() == 0 {
                all_gather(pg, &[1.0f32]).map(|_| ())
            } else {
                all_gather(pg, &[1.0f64]).map(|_| ())
            }
        });
        assert!(
            out.iter()
                .all(|r| matches!(r, Err(CollectiveError::CorruptFrame { .. }))),
            "{out:?}"
        );
        let out = on_loopback(2, T, |pg| ppermute(pg, &[1i32], &[(0, 1), (1, 1)]));
        assert!(out
            .iter()
            .all(|r| matches!(r, Err(CollectiveError::InvalidPermutation(_)))));
        let out = on_loopback(2, T, |pg| broadcast(pg, &[1i32], 2));
        assert!(out
            .iter()
            .all(|r| matches!(r, Err(CollectiveError::InvalidRank { rank: 2, world: 2 }))));
    });
}

/// The same 24 values per column (cancellation, magnitudes 1e-30..1e30,
/// -0.0) handed to the ranks of a 24-rank world in four different rank
/// assignments: Deterministic sums are bitwise equal to each other and to
/// the exact sum rounded once (fractions.Fraction, and math.fsum for f64).
#[test]
fn deterministic_sum_depends_only_on_the_values() {
    with_deadline(120, || {
        for case in split_cases() {
            let want = split_want(case);
            for order in 0..SPLIT_ORDERS {
                for got in on_loopback(split_world(case), T, |pg| split_sum_bits(pg, case, order)) {
                    assert_eq!(got, want, "{} order {order}", case["dtype"]);
                }
            }
        }
    });
}

/// `all_reduce_into` writes the caller's buffer: rank r holds `r * 1000 + i`
/// (exact in f32), so the sum and mean over n ranks are known in closed
/// form; a wrong output length is refused before any message moves.
#[test]
fn all_reduce_into_the_callers_buffer() {
    with_deadline(60, || {
        // 700_001 elements: chunks of several ring pieces, so the pieces
        // sent ahead of the fold are exercised.
        for (n, len) in (1..=4).flat_map(|n| [(n, 1001), (n, 700_001)]) {
            for r in on_loopback(n, T, move |pg| {
                let x: Vec<f32> = (0..len).map(|i| (pg.rank() * 1000 + i) as f32).collect();
                let mut out = vec![f32::NAN; len];
                all_reduce_into(pg, &x, &mut out, ReduceKind::Sum, ReduceMode::Ring)?;
                let sum = out.clone();
                all_reduce_into(pg, &x, &mut out, ReduceKind::Mean, ReduceMode::Ring)?;
                let mut short = vec![0f32; len - 1];
                let bad = all_reduce_into(pg, &x, &mut short, ReduceKind::Sum, ReduceMode::Ring);
                Ok::<_, CollectiveError>((sum, out, bad))
            }) {
                let (sum, mean, bad) = r.unwrap();
                let base = (1000 * n * (n - 1) / 2) as f64;
                assert_eq!(sum.len(), len);
                for i in 0..len {
                    let s = base + (n * i) as f64;
                    assert_eq!(sum[i] as f64, s, "world {n} sum [{i}]");
                    assert!(
                        (mean[i] as f64 - s / n as f64).abs() <= 1e-6 * s,
                        "mean [{i}]"
                    );
                }
                assert!(
                    matches!(
                        bad,
                        Err(CollectiveError::OutputLength { input, output, .. })
                            if input == len && output == len - 1
                    ),
                    "{bad:?}"
                );
            }
        }
    });
}

/// Every rank of a `Ring` reduction gets the same bits, also where the
/// combination is not commutative to the bit (max / min of +0 and -0).
#[test]
fn ring_results_are_identical_on_every_rank() {
    with_deadline(60, || {
        for n in 2..=3 {
            for kind in [ReduceKind::Max, ReduceKind::Min, ReduceKind::Sum] {
                let got = on_loopback(n, T, move |pg| {
                    // Rank 0 holds +0 where rank 1 holds -0, and the reverse.
                    let x: Vec<f32> = (0..1000)
                        .map(|i| match (i + pg.rank()) % 3 {
                            0 => 0.0,
                            1 => -0.0,
                            _ => i as f32 * 0.5,
                        })
                        .collect();
                    all_reduce(pg, &x, kind, ReduceMode::Ring).unwrap()
                });
                let bits: Vec<Vec<u32>> = got
                    .iter()
                    .map(|v| v.iter().map(|f| f.to_bits()).collect())
                    .collect();
                assert!(bits.iter().all(|b| *b == bits[0]), "{kind:?} on {n} ranks");
                let want_max = |i: usize| {
                    (0..n)
                        .map(|r| ((i + r) % 3 == 2) as u8 as f32 * i as f32 * 0.5)
                        .fold(f32::MIN, f32::max)
                };
                if kind == ReduceKind::Max {
                    assert!((0..1000).all(|i| got[0][i] == want_max(i)));
                }
            }
        }
    });
}
