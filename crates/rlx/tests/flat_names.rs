//! The spec's flat names (`rlx::grad_with_loss`, `rlx::FusionPolicy`,
//! `rlx::graph_param_names`, ...) and prelude names resolve and work.

use rlx::prelude::*;

#[test]
fn flat_autodiff_names_differentiate_a_graph() {
    // loss = sum(x * x * w) -> d/dx = 2 x w, checked by hand.
    let mut g = Graph::new("sq");
    let x = g.input("x", Shape::new(&[3], DType::F32));
    let w = g.param("w", Shape::new(&[3], DType::F32));
    let xx = g.mul(x, x);
    let y = g.mul(xx, w);
    let loss = g.sum(y, &[0], false);
    g.set_outputs(vec![loss]);
    assert_eq!(rlx::graph_param_names(&g), ["w"]);
    let dg: Graph = rlx::grad_with_loss(&g, &[x]).unwrap();
    let _: Option<rlx::AutodiffError> = None;
    let opts =
        rlx::compile::CompileOptions::default().fusion_policy(rlx::compile::FusionPolicy::Off);
    let mut c = Session::new(Device::Cpu).compile_with(dg, &opts);
    c.set_param("w", &[1.0, 2.0, -3.0]);
    let out = c.run(&[("x", &[0.5, -1.0, 2.0])]);
    assert_eq!(out[0], [0.25 + 2.0 - 12.0]);
    assert_eq!(out[1], [1.0, -4.0, -12.0]);
    let _policies: [FusionPolicy; 3] = FusionPolicy::ALL;
    let _ = (
        ChainOperand::Input(0),
        std::marker::PhantomData::<(ChainStep, QuantMap)>,
    );
}
