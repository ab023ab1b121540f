//! Transforms of custom ops: a missing rule is refused naming the op, a
//! backend without the op's kernel refuses to compile it, and rules written
//! as graph builders that emit other custom ops compose to higher orders
//! (third derivative of `x^3` through two custom ops: `6`, analytically).

use rlx_autodiff::{grad, jvp, nth_order_grad, vmap, AutodiffError, HigherOrderOptions};
use rlx_driver::Device;
use rlx_ir::custom::{register_op, CustomAttrs, CustomOp, KernelArg, KernelOut, OpExtension};
use rlx_ir::op::BinaryOp;
use rlx_ir::{Arity, DType, Graph, GraphExt, HostTensor, IrError, NodeId, Op, Shape};
use rlx_runtime::Session;

fn same(_: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    Ok(s[0].clone())
}

/// `f(x) = c * x^p` elementwise, f64, with `c`, `p` from the attributes.
fn power_kernel(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    let c = op.attrs.float_or("c", 1.0)?;
    let p = op.attrs.int_or("p", 1)? as i32;
    for (o, x) in out
        .bytes
        .chunks_exact_mut(8)
        .zip(ins[0].bytes.chunks_exact(8))
    {
        let x = f64::from_le_bytes(x.try_into().unwrap());
        o.copy_from_slice(&(c * x.powi(p)).to_le_bytes());
    }
    Ok(())
}

fn power(c: f64, p: i64) -> CustomOp {
    CustomOp::new(
        "adtest.power",
        CustomAttrs::new()
            .with("c", rlx_ir::custom::CustomAttr::Float(c))
            .with("p", rlx_ir::custom::CustomAttr::Int(p)),
    )
}

/// d/dx c x^p = (c p) x^(p-1): emits another `adtest.power` node (or the
/// constant `c` for p = 1... = 0 derivative for p = 0).
fn power_vjp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    _y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>, IrError> {
    let bad = |e| IrError::InvalidOp {
        op: "adtest.power".into(),
        reason: e,
    };
    let c = op.attrs.float_or("c", 1.0).map_err(bad)?;
    let p = op.attrs.int_or("p", 1).map_err(bad)?;
    if p == 0 {
        return Ok(vec![None]);
    }
    let d = g.custom(power(c * p as f64, p - 1), &[x[0]])?;
    Ok(vec![Some(g.try_node(
        Op::Binary(BinaryOp::Mul),
        &[d, ct],
        None,
    )?)])
}

fn register() {
    register_op(
        OpExtension::new("adtest.power", "c x^p", Arity::exactly(1), same)
            .with_kernel("cpu", power_kernel)
            .with_vjp(power_vjp),
    )
    .unwrap();
    register_op(
        OpExtension::new(
            "adtest.norule",
            "c x^p without rules",
            Arity::exactly(1),
            same,
        )
        .with_kernel("cpu", power_kernel),
    )
    .unwrap();
    register_op(OpExtension::new(
        "adtest.nokernel",
        "no kernel anywhere",
        Arity::exactly(1),
        same,
    ))
    .unwrap();
}

fn graph_of(name: &str) -> (Graph, NodeId) {
    register();
    let mut g = Graph::new("g");
    let x = g.input("x", Shape::new(&[3], DType::F64));
    let y = g
        .custom(CustomOp::new(name, CustomAttrs::new()), &[x])
        .unwrap();
    let s = g.sum(y, &[0], false);
    g.set_outputs(vec![s]);
    (g, x)
}

fn run(g: Graph, x: &[f64]) -> Vec<Vec<f64>> {
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    let t = HostTensor::from_vec(x.to_vec(), &[x.len()]).unwrap();
    c.try_run_typed(&[("x", &t)])
        .unwrap()
        .iter()
        .map(|t| t.to_f64_lossy())
        .collect()
}

#[test]
fn missing_rules_are_refused_naming_the_op() {
    let (g, x) = graph_of("adtest.norule");
    let reason = |e: AutodiffError| match e {
        AutodiffError::Unsupported {
            transform, reason, ..
        } => format!("{transform}: {reason}"),
        e => panic!("expected Unsupported, got {e}"),
    };
    assert_eq!(
        reason(grad(&g, &[x]).unwrap_err()),
        "vjp: custom op `adtest.norule` registers no vjp rule"
    );
    assert_eq!(
        reason(jvp(&g, &[x]).unwrap_err()),
        "jvp: custom op `adtest.norule` registers no jvp rule"
    );
    assert_eq!(
        reason(vmap(&g, &["x"], 2).unwrap_err()),
        "vmap: custom op `adtest.norule` registers no vmap rule"
    );
}

#[test]
fn a_backend_without_the_kernel_refuses_to_compile() {
    let (g, _) = graph_of("adtest.nokernel");
    let e = match Session::new(Device::Cpu).try_compile(g) {
        Ok(_) => panic!("compile must fail"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains("adtest.nokernel") && e.contains("registers no kernel"),
        "{e}"
    );
}

#[test]
fn rules_emitting_custom_ops_compose_to_higher_orders() {
    register();
    let mut g = Graph::new("cube");
    let x = g.input("x", Shape::new(&[3], DType::F64));
    let y = g.custom(power(1.0, 3), &[x]).unwrap();
    let s = g.sum(y, &[0], false);
    g.set_outputs(vec![s]);
    let xs = [0.5, -1.25, 2.0];
    let forward = run(g.clone(), &xs);
    let want: f64 = xs.iter().map(|v: &f64| v.powi(3)).sum();
    assert!((forward[0][0] - want).abs() < 1e-12);
    let opts = HigherOrderOptions { all_orders: true };
    let d = nth_order_grad(&g, "x", 3, &opts).unwrap();
    let custom_nodes = d
        .nodes()
        .iter()
        .filter(|n| matches!(n.op, Op::Custom(_)))
        .count();
    assert!(custom_nodes >= 3, "the derivatives are custom ops too");
    let outs = run(d, &xs);
    // Orders 1..=3 of sum(x^3): 3x^2, 6x, 6 (each differentiates the sum of the last).
    let exact: [Vec<f64>; 3] = [
        xs.iter().map(|v| 3.0 * v * v).collect(),
        xs.iter().map(|v| 6.0 * v).collect(),
        vec![6.0; 3],
    ];
    let got: Vec<&Vec<f64>> = outs.iter().rev().take(3).rev().collect();
    for (k, (g_k, e_k)) in got.iter().zip(&exact).enumerate() {
        for (a, b) in g_k.iter().zip(e_k) {
            assert!((a - b).abs() < 1e-12, "order {}: {g_k:?} vs {e_k:?}", k + 1);
        }
    }
}
