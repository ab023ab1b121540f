//! Environment variables overlay `CompileOptions` (one test: the overrides
//! are process-wide).

use rlx_compile::DispatchPolicy;
use rlx_driver::Device;
use rlx_ir::{env, DType, Graph, GraphExt, Shape};
use rlx_runtime::{CompileOptions, RuntimeError, Session};

fn graph() -> Graph {
    let mut g = Graph::new("sm");
    let x = g.input("x", Shape::new(&[2, 4], DType::F32));
    let _dead = g.exp(x);
    let p = g.sm(x, -1);
    g.set_outputs(vec![p]);
    g
}

#[test]
fn env_variables_overlay_the_typed_options() {
    let s = Session::new(Device::Cpu);
    let base = CompileOptions::default();
    let composites = |c: &rlx_runtime::CompiledGraph| {
        c.lir()
            .graph
            .nodes()
            .iter()
            .filter(|n| n.op.kind().is_composite())
            .count()
    };
    assert_eq!(composites(&s.compile_with(graph(), &base)), 1);

    env::set("RLX_DISPATCH_POLICY", "decompose-all");
    let o = base.clone().with_env_overlay().unwrap();
    assert_eq!(o.dispatch, DispatchPolicy::DecomposeAll);
    assert_eq!(composites(&s.compile_with(graph(), &base)), 0);
    env::set("RLX_DISPATCH_POLICY", "sometimes");
    let e = s.try_compile_with(graph(), &base).unwrap_err();
    assert!(
        matches!(&e, RuntimeError::Env(env) if env.name == "RLX_DISPATCH_POLICY" && env.value == "sometimes"),
        "{e}"
    );
    env::unset("RLX_DISPATCH_POLICY");

    env::set("RLX_NO_DCE", "1");
    env::set("RLX_ARENA_ALIGN", "128");
    env::set("RLX_ASSERT_FUSION_CLEAN", "1");
    let o = base.clone().with_env_overlay().unwrap();
    assert!(o.lower.keep_dead_code && o.assert_fusion_clean);
    assert_eq!(o.lower.alignment, 128);
    let c = s.compile_with(graph(), &base);
    assert!(c
        .lir()
        .graph
        .nodes()
        .iter()
        .any(|n| n.op.mnemonic() == "exp"));
    assert!(c
        .lir()
        .plan
        .slots
        .iter()
        .flatten()
        .all(|s| s.offset % 128 == 0));
    env::set("RLX_ARENA_ALIGN", "100");
    let e = s.try_compile_with(graph(), &base).unwrap_err();
    assert!(e.to_string().contains("RLX_ARENA_ALIGN"), "{e}");
    for v in ["RLX_NO_DCE", "RLX_ARENA_ALIGN", "RLX_ASSERT_FUSION_CLEAN"] {
        env::unset(v);
    }
    // Without the variables, the typed struct alone decides.
    assert_eq!(base.clone().with_env_overlay().unwrap(), base);
}
