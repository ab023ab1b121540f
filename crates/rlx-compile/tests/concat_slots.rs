//! Concats joined in place: the rule (`concat_slots::decide_joins`) on
//! each reason to keep the copy, the plan's carved parts and their
//! liveness, `check_plan` refusing plans that break a joined concat's
//! invariants, and the LIR text naming the carved parts.

use rlx_compile::concat_slots::{decide_joins, part_offsets, KeepCopy};
use rlx_compile::memory::{check_plan, plan_memory, MemoryPlan, Slot};
use rlx_compile::{lir_text, lower, FusionOptions, LowerOptions};
use rlx_ir::{DType, Dim, Graph, GraphExt, NodeId, Shape};

/// `[1, c, 4]` f32: 16 bytes per channel, so 4 channels fill 64 bytes.
fn input(g: &mut Graph, name: &str, c: usize) -> NodeId {
    g.input(name, Shape::new(&[1, c, 4], DType::F32))
}

/// The decision for concat `c` of `g` at 64-byte alignment.
fn decision(g: &Graph, c: NodeId) -> Result<Vec<usize>, KeepCopy> {
    decide_joins(g, 64).decisions[c.index()].clone().unwrap()
}

/// `x -> exp / neg -> concat(axis 1) -> exp` (the concat read by a node,
/// not an output), its parts 4 channels (64 bytes) each.
fn joinable() -> (Graph, [NodeId; 3]) {
    let mut g = Graph::new("joinable");
    let x = input(&mut g, "x", 4);
    let a = g.exp(x);
    let b = g.neg(x);
    let c = g.concat_(&[a, b], 1);
    let y = g.exp(c);
    g.set_outputs(vec![y]);
    (g, [a, b, c])
}

#[test]
fn a_channel_concat_at_batch_one_joins() {
    let (g, [a, b, c]) = joinable();
    let joins = decide_joins(&g, 64);
    assert_eq!(joins.decisions[c.index()], Some(Ok(vec![0, 64])));
    assert_eq!(joins.part_of[a.index()], Some((c.index(), 0)));
    assert_eq!(joins.part_of[b.index()], Some((c.index(), 64)));
}

#[test]
fn each_reason_to_keep_the_copy() {
    // Batch 2: the parts' rows interleave.
    let mut g = Graph::new("batch2");
    let x = g.input("x", Shape::new(&[2, 4, 4], DType::F32));
    let (a, b) = (g.exp(x), g.neg(x));
    let c = g.concat_(&[a, b], 1);
    let y = g.exp(c);
    g.set_outputs(vec![y]);
    assert_eq!(decision(&g, c), Err(KeepCopy::LeadingDims));

    // A graph input, a constant.
    let mut g = Graph::new("leaves");
    let x = input(&mut g, "x", 4);
    let a = g.exp(x);
    let c1 = g.concat_(&[x, a], 1);
    let k = g.constant_tensor(&rlx_ir::HostTensor::from_slice(&[0f32; 16], &[1, 4, 4]).unwrap());
    let c2 = g.concat_(&[a, k], 1);
    let (y1, y2) = (g.exp(c1), g.exp(c2));
    g.set_outputs(vec![y1, y2]);
    assert_eq!(
        decision(&g, c1),
        Err(KeepCopy::PartIsInput { part: x.index() })
    );
    assert_eq!(
        decision(&g, c2),
        Err(KeepCopy::PartIsLeaf { part: k.index() })
    );

    // A part that is a graph output; a concat that is one.
    let mut g = Graph::new("outputs");
    let x = input(&mut g, "x", 4);
    let (a, b) = (g.exp(x), g.neg(x));
    let c1 = g.concat_(&[a, b], 1);
    let d = g.sin(x);
    let c2 = g.concat_(&[a, d], 1);
    let y = g.exp(c2);
    g.set_outputs(vec![c1, b, y]);
    assert_eq!(decision(&g, c1), Err(KeepCopy::ConcatIsOutput));
    let (g2, c2) = {
        let mut g = Graph::new("part_out");
        let x = input(&mut g, "x", 4);
        let (a, b) = (g.exp(x), g.neg(x));
        let c = g.concat_(&[a, b], 1);
        let y = g.exp(c);
        g.set_outputs(vec![y, b]);
        (g, (c, b))
    };
    assert_eq!(
        decision(&g2, c2.0),
        Err(KeepCopy::PartIsOutput { part: c2.1.index() })
    );

    // A view of another node's bytes; a part twice; a part too small to
    // keep the next one aligned.
    let mut g = Graph::new("views");
    let x = input(&mut g, "x", 4);
    let a = g.exp(x);
    let r = g.reshape_(a, &[1, 4, 4]);
    let r = g.reshape_(r, &[1, 4, 4]);
    let c1 = g.concat_(&[r, a], 1);
    let c2 = g.concat_(&[a, a], 1);
    let y = g.add(c1, c2);
    g.set_outputs(vec![y]);
    assert_eq!(
        decision(&g, c1),
        Err(KeepCopy::PartIsView { part: r.index() })
    );
    assert_eq!(
        decision(&g, c2),
        Err(KeepCopy::RepeatedPart { part: a.index() })
    );
    let mut g = Graph::new("misaligned");
    let x = input(&mut g, "x", 1);
    let (a, b) = (g.exp(x), g.neg(x));
    let c = g.concat_(&[a, b], 1);
    let y = g.exp(c);
    g.set_outputs(vec![y]);
    assert_eq!(
        decision(&g, c),
        Err(KeepCopy::Misaligned {
            part: b.index(),
            offset: 16
        })
    );

    // A part of an earlier joined concat; a joined concat as a part.
    let mut g = Graph::new("shared");
    let x = input(&mut g, "x", 4);
    let (a, b, d) = (g.exp(x), g.neg(x), g.sin(x));
    let c1 = g.concat_(&[a, b], 1);
    let c2 = g.concat_(&[a, d], 1);
    let c3 = g.concat_(&[c1, d], 1);
    let (y2, y3) = (g.exp(c2), g.exp(c3));
    g.set_outputs(vec![y2, y3]);
    let joins = decide_joins(&g, 64);
    assert!(joins.is_joined(c1.index()));
    assert_eq!(
        joins.decisions[c2.index()],
        Some(Err(KeepCopy::PartOfAnotherConcat {
            part: a.index(),
            concat: c1.index()
        }))
    );
    assert_eq!(
        joins.decisions[c3.index()],
        Some(Err(KeepCopy::PartIsJoinedConcat { part: c1.index() }))
    );

    // Symbolic dims: no byte offsets.
    let mut g = Graph::new("symbolic");
    let x = g.input(
        "x",
        Shape::from_dims(
            vec![Dim::Static(1), Dim::Static(4), Dim::sym("n")],
            DType::F32,
        ),
    );
    let (a, b) = (g.exp(x), g.neg(x));
    let c = g.concat_(&[a, b], 1);
    let y = g.exp(c);
    g.set_outputs(vec![y]);
    assert_eq!(decision(&g, c), Err(KeepCopy::Unsized));
    assert_eq!(part_offsets(&g, a), Err(KeepCopy::NotAConcat));
}

#[test]
fn parts_are_carved_from_the_concat_slot_and_live_with_it() {
    let (g, [a, b, c]) = joinable();
    let plan = plan_memory(&g, 64).unwrap();
    check_plan(&g, &plan).unwrap();
    let sc = plan.slots[c.index()].unwrap();
    assert!(plan.is_joined(c.index()) && plan.runs_nothing(c.index()));
    assert_eq!(plan.carved_into(a.index()), Some(c.index()));
    assert_eq!(
        plan.slots[a.index()],
        Some(Slot {
            offset: sc.offset,
            size: 64
        })
    );
    assert_eq!(
        plan.slots[b.index()],
        Some(Slot {
            offset: sc.offset + 64,
            size: 64
        })
    );
    // The input (64 B) and the concat (128 B); the final exp overwrites
    // the concat in place (it reads no part of it).
    assert_eq!(plan.arena_bytes, 192);
    assert_eq!(plan.in_place_of(c.index() + 1), Some(c.index()));
}

#[test]
fn a_part_read_after_the_concat_keeps_its_bytes_alive() {
    // b is read again after the concat's last reader: the concat's slot
    // (which holds b) lives until then, and nothing reuses it before.
    let mut g = Graph::new("late_reader");
    let x = input(&mut g, "x", 4);
    let (a, b) = (g.exp(x), g.neg(x));
    let c = g.concat_(&[a, b], 1);
    let s = g.sum(c, &[1], true);
    let t = g.exp(s); // new buffers while b must stay intact
    let u = g.mul(b, t);
    g.set_outputs(vec![u]);
    let plan = plan_memory(&g, 64).unwrap();
    check_plan(&g, &plan).unwrap();
    assert!(plan.is_joined(c.index()));
    assert_eq!(plan.last_use[c.index()], u.index());
}

#[test]
fn an_elementwise_node_reading_a_part_does_not_overwrite_the_concat() {
    // y = concat(a, b) + a (a broadcast over the channels): y may not
    // run over the concat's bytes while it still reads a from them.
    let mut g = Graph::new("reads_part");
    let x = g.input("x", Shape::new(&[1, 1, 4], DType::F32));
    let z = g.input("z", Shape::new(&[1, 3, 4], DType::F32));
    let a = g.exp(x);
    let b = g.neg(z);
    let c = g.concat_(&[a, b], 1);
    let y = g.add(c, a);
    g.set_outputs(vec![y]);
    let plan = plan_memory(&g, 16).unwrap();
    check_plan(&g, &plan).unwrap();
    assert!(plan.is_joined(c.index()));
    assert_eq!(plan.in_place_of(y.index()), None);
    // Forcing it in place is refused by the checker.
    let mut bad = plan.clone();
    bad.in_place[y.index()] = Some(c.index());
    bad.slots[y.index()] = bad.slots[c.index()];
    assert!(check_plan(&g, &bad).is_err());
}

/// `check_plan` must refuse `plan` after `mutate`.
fn refused(g: &Graph, plan: &MemoryPlan, mutate: impl FnOnce(&mut MemoryPlan)) -> String {
    let mut bad = plan.clone();
    mutate(&mut bad);
    check_plan(g, &bad).expect_err("a broken joined concat passed the check")
}

#[test]
fn check_plan_proves_joined_concats() {
    let (g, [a, b, c]) = joinable();
    let plan = plan_memory(&g, 64).unwrap();
    // A part off its offset (overlapping its neighbour).
    let e = refused(&g, &plan, |p| {
        p.slots[b.index()].as_mut().unwrap().offset -= 64
    });
    assert!(e.contains("not carved"), "{e}");
    // The concat's bytes dying before a part's last reader.
    let e = refused(&g, &plan, |p| p.last_use[a.index()] = g.len());
    assert!(e.contains("outlives"), "{e}");
    // A part claiming a concat that is not joined.
    let e = refused(&g, &plan, |p| p.joined[c.index()] = false);
    assert!(e.contains("not a joined concat"), "{e}");
    // A node that is not a concat marked joined.
    let e = refused(&g, &plan, |p| p.joined[a.index()] = true);
    assert!(e.contains("NotAConcat"), "{e}");
    // A part overwriting its input in place.
    let e = refused(&g, &plan, |p| p.in_place[b.index()] = Some(0));
    assert!(e.contains("in place"), "{e}");
    // At batch 2 the same placement is wrong: the checker re-derives it.
    let mut g2 = Graph::new("batch2");
    let x = g2.input("x", Shape::new(&[2, 4, 4], DType::F32));
    let (a2, b2) = (g2.exp(x), g2.neg(x));
    let c2 = g2.concat_(&[a2, b2], 1);
    let y2 = g2.exp(c2);
    g2.set_outputs(vec![y2]);
    let plan2 = plan_memory(&g2, 64).unwrap();
    assert!(!plan2.is_joined(c2.index()));
    let e = refused(&g2, &plan2, |p| {
        let sc = p.slots[c2.index()].unwrap();
        p.joined[c2.index()] = true;
        p.part_of[a2.index()] = Some(c2.index());
        p.part_of[b2.index()] = Some(c2.index());
        p.in_place[a2.index()] = None;
        p.in_place[b2.index()] = None;
        p.slots[a2.index()] = Some(Slot {
            offset: sc.offset,
            size: 128,
        });
        p.slots[b2.index()] = Some(Slot {
            offset: sc.offset + 128,
            size: 128,
        });
    });
    assert!(e.contains("LeadingDims"), "{e}");
}

#[test]
fn lir_text_names_the_carved_parts() {
    let (g, _) = joinable();
    let opts = LowerOptions {
        fusion: FusionOptions::disabled(),
        ..LowerOptions::default()
    };
    let lir = lower(&g, &|_| true, &opts).unwrap();
    assert_eq!(
        lir_text(&lir),
        "lir \"joinable\" (arena 192 B) {
  @0+64            %0 = input \"x\" : f32[1,4,4]
  @64+64 in %3 at +0 %1 = exp %0 : f32[1,4,4]
  @128+64 in %3 at +64 %2 = neg %0 : f32[1,4,4]
  joined@64+128    %3 = concat{axis=1} %1, %2 : f32[1,8,4]
  @64+128          %4 = exp %3 : f32[1,8,4]
  return %4
}"
    );
}
