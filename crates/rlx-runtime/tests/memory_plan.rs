//! Memory-plan views: reshapes and contiguous narrows alias their input
//! (no copy, no bytes of their own), strided slices do not; values are
//! checked against host arithmetic and every plan against `check_plan`.

use rlx_compile::check_plan;
use rlx_driver::Device;
use rlx_ir::{DType, Graph, GraphExt, NodeId, Op, Shape};
use rlx_runtime::{CompileOptions, Session};

fn node_of(g: &Graph, pred: impl Fn(&Op) -> bool) -> Vec<NodeId> {
    g.ids().filter(|&i| pred(&g.node(i).op)).collect()
}

#[test]
fn reshape_and_narrow_are_views_strided_slices_are_not() {
    let mut g = Graph::new("views");
    let x = g.input("x", Shape::new(&[6, 4], DType::F32));
    let e = g.exp(x); // an arena buffer to view
    let r = g.reshape_(e, &[3, 8]); // view
    let top = g.narrow_(r, 0, 1, 2); // rows 1..3 of [3, 8]: contiguous -> view
    let cols = g.narrow_(e, 1, 1, 2); // columns: strided -> copy
    let every_other = g.slice_(e, 0, 0, 6, 2); // step 2 -> copy
    let a = g.neg(top);
    let b = g.neg(cols);
    let c = g.neg(every_other);
    g.set_outputs(vec![a, b, c]);
    let opts = CompileOptions::default().fusion(false);
    let mut compiled = Session::new(Device::Cpu).compile_with(g, &opts);
    let lir = compiled.lir().clone();
    check_plan(&lir.graph, &lir.plan).unwrap();
    let views: Vec<NodeId> = lir
        .graph
        .ids()
        .filter(|i| lir.plan.is_view(i.index()))
        .collect();
    let reshapes = node_of(&lir.graph, |op| matches!(op, Op::Reshape));
    assert_eq!(reshapes.len(), 1);
    assert!(
        views.contains(&reshapes[0]),
        "{}",
        rlx_compile::lir_text(&lir)
    );
    let slices = node_of(&lir.graph, |op| matches!(op, Op::Slice(_)));
    assert_eq!(slices.len(), 3);
    assert_eq!(views.len(), 2, "{}", rlx_compile::lir_text(&lir));

    let x: Vec<f32> = (0..24).map(|i| (i as f32 - 12.0) / 8.0).collect();
    let out = compiled.run(&[("x", &x)]);
    let e: Vec<f64> = x.iter().map(|&v| (v as f64).exp()).collect();
    let close = |got: &[f32], want: &[f64]| {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!(
                (*g as f64 - w).abs() <= 1e-6 * w.abs().max(1.0),
                "{g} vs {w}"
            );
        }
    };
    // rows 1..3 of the [3, 8] reshape = flat elements 8..24
    close(&out[0], &e[8..24].iter().map(|v| -v).collect::<Vec<_>>());
    let cols: Vec<f64> = (0..6)
        .flat_map(|r| [-e[r * 4 + 1], -e[r * 4 + 2]])
        .collect();
    close(&out[1], &cols);
    let rows: Vec<f64> = [0, 2, 4]
        .iter()
        .flat_map(|&r| (0..4).map(move |c| r * 4 + c))
        .map(|i| -e[i])
        .collect();
    close(&out[2], &rows);
}

#[test]
fn a_view_keeps_its_owner_alive() {
    // The owner's last direct reader comes early; the view is read late. If the
    // owner were released at its own last use, the tanh below would reuse its
    // bytes and corrupt the view.
    let mut g = Graph::new("lifetime");
    let x = g.input("x", Shape::new(&[64], DType::F32));
    let owner = g.exp(x);
    let view = g.reshape_(owner, &[8, 8]);
    let early = g.sum(owner, &[0], false);
    let mut t = g.tanh(x);
    for _ in 0..4 {
        t = g.sin(t);
    }
    let t = g.reshape_(t, &[8, 8]);
    let late = g.add(view, t);
    let late = g.add(late, early);
    g.set_outputs(vec![late]);
    let mut c = Session::new(Device::Cpu).compile_with(g, &CompileOptions::default().fusion(false));
    check_plan(&c.lir().graph, &c.lir().plan).unwrap();
    let x: Vec<f32> = (0..64).map(|i| (i as f32) / 32.0 - 1.0).collect();
    let out = c.run(&[("x", &x)]);
    let early: f64 = x.iter().map(|&v| (v as f64).exp()).sum();
    for (i, &got) in out[0].iter().enumerate() {
        let mut t = (x[i] as f64).tanh();
        for _ in 0..4 {
            t = t.sin();
        }
        let want = (x[i] as f64).exp() + t + early;
        assert!((got as f64 - want).abs() < 1e-4, "{i}: {got} vs {want}");
    }
}

/// `a = exp(x); b = tanh(a); c = a * b`: `b` cannot overwrite `a` (the mul
/// still reads it), `c` may overwrite `a` or `b` (both die there).
fn in_place_graph() -> Graph {
    let mut g = Graph::new("in_place");
    let x = g.input("x", Shape::new(&[64], DType::F32));
    let a = g.exp(x);
    let b = g.tanh(a);
    let c = g.mul(a, b);
    g.set_outputs(vec![c]);
    g
}

#[test]
fn in_place_reuse_only_over_dying_inputs_and_the_checker_rejects_the_rest() {
    let opts = CompileOptions::default().fusion(false);
    let mut compiled = Session::new(Device::Cpu).compile_with(in_place_graph(), &opts);
    let lir = compiled.lir().clone();
    check_plan(&lir.graph, &lir.plan).unwrap();
    let (a, b, c) = (1usize, 2usize, 3usize);
    assert!(matches!(lir.graph.node(NodeId(c as u32)).op, Op::Binary(_)));
    // exp overwrites the dying input x; tanh cannot take a; mul takes a.
    assert_eq!(lir.plan.in_place_of(a), Some(0));
    assert_eq!(lir.plan.in_place_of(b), None);
    assert_eq!(lir.plan.in_place_of(c), Some(a));
    let x: Vec<f32> = (0..64).map(|i| i as f32 / 32.0 - 1.0).collect();
    let out = compiled.run(&[("x", &x)]);
    for (i, &v) in x.iter().enumerate() {
        let e = (v as f64).exp();
        let want = e * e.tanh();
        assert!(
            (out[0][i] as f64 - want).abs() <= 1e-6 * want.abs().max(1.0),
            "{i}"
        );
    }
    // A plan that lets tanh overwrite a (still read by the mul) is rejected.
    let mut bad = lir.plan.clone();
    bad.slots[b] = bad.slots[a];
    bad.in_place[b] = Some(a);
    let e = check_plan(&lir.graph, &bad).unwrap_err();
    assert!(e.contains("in place"), "{e}");
    // So is an in-place claim on an op that is not elementwise.
    let mut g = Graph::new("mm");
    let x = g.input("x", Shape::new(&[4, 4], DType::F32));
    let e = g.exp(x);
    let m = g.mm(e, e);
    g.set_outputs(vec![m]);
    let lir = Session::new(Device::Cpu)
        .compile_with(g, &opts)
        .lir()
        .clone();
    let mut bad = lir.plan.clone();
    bad.slots[m.index()] = bad.slots[e.index()];
    bad.in_place[m.index()] = Some(e.index());
    assert!(check_plan(&lir.graph, &bad).is_err());
}
