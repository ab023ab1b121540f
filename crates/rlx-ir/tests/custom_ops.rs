//! Custom ops in the IR: the registry is idempotent and thread-safe, names
//! are checked, an unregistered op is an error naming it, and the textual
//! IR round-trips every attribute type.

use rlx_ir::custom::{
    lookup_op, register_op, registered_ops, CustomAttr, CustomAttrs, CustomOp, OpExtension,
};
use rlx_ir::{parse_graph, Arity, DType, Graph, Shape};

fn same(op: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    op.attrs.bool_or("flag", false)?;
    Ok(s[0].clone())
}

fn ext(name: &str) -> OpExtension {
    OpExtension::new(name, "identity for tests", Arity::exactly(1), same)
}

#[test]
fn registration_is_idempotent_and_thread_safe() {
    let added: Vec<bool> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8)
            .map(|_| s.spawn(|| register_op(ext("irtest.threads")).unwrap()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(added.iter().filter(|&&a| a).count(), 1, "{added:?}");
    assert!(!register_op(ext("irtest.threads")).unwrap());
    assert!(lookup_op("irtest.threads").is_some());
    assert!(registered_ops().contains(&"irtest.threads".to_string()));
}

#[test]
fn bad_names_are_refused() {
    for bad in ["noNamespace", "a..b", "1a.b", "a.b-c", "a.", ".b", ""] {
        let e = register_op(ext(bad)).unwrap_err().to_string();
        assert!(e.contains("namespace.op"), "{bad}: {e}");
    }
}

#[test]
fn unregistered_op_is_an_error_naming_it() {
    let mut g = Graph::new("g");
    let x = g.input("x", Shape::new(&[2], DType::F32));
    let e = g
        .custom(CustomOp::new("irtest.nowhere", CustomAttrs::new()), &[x])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("irtest.nowhere") && e.contains("not registered"),
        "{e}"
    );
    let text = "graph \"g\" {\n  %0 = input \"x\" : f32[2]\n  %1 = custom.irtest.nowhere %0 : f32[2]\n  return %1\n}\n";
    let e = parse_graph(text).unwrap_err().to_string();
    assert!(e.contains("irtest.nowhere"), "{e}");
}

#[test]
fn arity_and_attribute_types_are_checked() {
    register_op(ext("irtest.checked")).unwrap();
    let mut g = Graph::new("g");
    let x = g.input("x", Shape::new(&[2], DType::F32));
    let e = g
        .custom(CustomOp::new("irtest.checked", CustomAttrs::new()), &[x, x])
        .unwrap_err()
        .to_string();
    assert!(e.contains("expects 1 inputs, given 2"), "{e}");
    let bad = CustomAttrs::new().with("flag", CustomAttr::Int(3));
    let e = g
        .custom(CustomOp::new("irtest.checked", bad), &[x])
        .unwrap_err()
        .to_string();
    assert!(e.contains("`flag` must be a bool"), "{e}");
}

#[test]
fn text_round_trips_every_attribute_type() {
    register_op(ext("irtest.attrs")).unwrap();
    let mut g = Graph::new("g");
    let x = g.input("x", Shape::new(&[2, 3], DType::F64));
    let attrs = CustomAttrs::new()
        .with("flag", CustomAttr::Bool(true))
        .with("k", CustomAttr::Int(-3))
        .with("eps", CustomAttr::Float(1e-7))
        .with("one", CustomAttr::Float(1.0))
        .with("nan", CustomAttr::Float(f64::NAN))
        .with("mode", CustomAttr::Str("a \"quoted\" name".into()))
        .with("axes", CustomAttr::Ints(vec![0, -1]))
        .with("none", CustomAttr::Ints(vec![]))
        .with("ws", CustomAttr::Floats(vec![0.5, -2.0, f64::INFINITY]));
    let y = g
        .custom(CustomOp::new("irtest.attrs", attrs), &[x])
        .unwrap();
    let z = g
        .custom(CustomOp::new("irtest.attrs", CustomAttrs::new()), &[y])
        .unwrap();
    g.set_outputs(vec![z]);
    let text = g.to_text();
    assert!(text.contains("custom.irtest.attrs{axes=i64[0, -1], eps=1e-7, flag=true, k=-3, mode=\"a \\\"quoted\\\" name\", nan=NaN, none=i64[], one=1.0, ws=f64[0.5, -2.0, inf]} %0"), "{text}");
    assert!(text.contains("custom.irtest.attrs %1"), "{text}");
    let back = parse_graph(&text).unwrap();
    assert_eq!(back.to_text(), text);
    let Some(rlx_ir::Op::Custom(c)) = back.nodes().get(1).map(|n| n.op.clone()) else {
        panic!("node 1 is not custom")
    };
    assert_eq!(c.attrs.get("k"), Some(&CustomAttr::Int(-3)));
    assert_eq!(c.attrs.get("one"), Some(&CustomAttr::Float(1.0)));
}
