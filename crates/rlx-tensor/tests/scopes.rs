//! Scopes: nesting, options, the recorded error, JAX's dtype rules.

use rlx_tensor::{graph, graph_with, np, shape, DType, ScopeOptions, Tensor};

#[test]
fn nested_graph_scopes_build_independent_graphs() {
    let outer = graph("outer", |g| {
        let x = g.input("x", shape![2, 3]);
        let inner = graph("inner", |h| h.input("y", shape![4]).exp()).unwrap();
        assert_eq!(inner.name(), "inner");
        assert_eq!(inner.inputs().len(), 1);
        // Back in the outer scope: operations go to the outer graph again.
        x.sum(1, false)
    })
    .unwrap();
    assert_eq!(outer.inputs().len(), 1);
    assert_eq!(outer.shape(outer.outputs()[0]), &shape![2]);
}

#[test]
fn float_dtype_option_sets_created_floats() {
    let g = graph_with(
        ScopeOptions {
            name: "f64".into(),
            float_dtype: DType::F64,
            verify: true,
        },
        |g| {
            let i = g.input("i", shape![I32; 3]);
            let z = np::zeros(&[3]);
            assert_eq!(z.dtype(), DType::F64);
            assert_eq!(
                (&i / 2).dtype(),
                DType::F64,
                "true division of ints is float"
            );
            &i + z
        },
    )
    .unwrap();
    assert_eq!(g.shape(g.outputs()[0]).dtype(), DType::F64);
}

#[test]
fn jax_promotion_and_weak_scalars() {
    graph("p", |g| {
        let i = g.input("i", shape![I32; 3]);
        let h = g.input("h", shape![F16; 3]);
        let f = g.input("f", shape![3]);
        assert_eq!(
            (&i + 2).dtype(),
            DType::I32,
            "an integral literal keeps int"
        );
        assert_eq!(
            (&i + 2.5).dtype(),
            DType::F32,
            "a fractional literal lifts to float"
        );
        assert_eq!(
            (&h * 3.0).dtype(),
            DType::F16,
            "a literal takes the tensor's dtype"
        );
        assert_eq!(
            (&i + &f).dtype(),
            DType::F32,
            "int with f32 is f32 (JAX, not numpy's f64)"
        );
        assert_eq!((&h + &f).dtype(), DType::F32);
        assert_eq!(i.gt(1).dtype(), DType::Bool);
        assert_eq!(i.sum(None, false).dtype(), DType::I32);
        assert_eq!(i.mean(None, false).dtype(), DType::F32);
        f
    })
    .unwrap();
}

#[test]
fn scope_records_the_first_error() {
    let r = graph("e", |g| {
        let x = g.input("x", shape![2]);
        let _ = x.reshape(&[3]);
        let _ = x.sum(4, false);
        assert!(g.error().unwrap().to_string().starts_with("reshape:"));
        x
    });
    assert!(r
        .unwrap_err()
        .to_string()
        .starts_with("reshape: cannot reshape f32[2]"));
}

#[test]
fn duplicate_input_names_are_errors() {
    let r = graph("d", |g| {
        let a = g.input("x", shape![2]);
        let b = g.input("x", shape![2]);
        a + b
    });
    assert!(r
        .unwrap_err()
        .to_string()
        .contains("duplicate input name \"x\""));
}

#[test]
fn symbolic_dims_flow_through_elementwise_ops() {
    let g = graph("sym", |g| {
        let x = g.input("x", shape![batch, 4]);
        let b = g.param("b", shape![4]);
        let y: Tensor = (&x + &b).relu();
        assert!(!y.shape().is_static());
        y
    })
    .unwrap();
    assert_eq!(g.symbols(), vec!["batch".to_string()]);
}
