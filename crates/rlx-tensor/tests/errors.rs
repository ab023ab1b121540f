//! Misuse gives a named error, never a panic: broadcasting mismatches, a
//! tensor from another scope or after its scope ended, bad axes / indices,
//! transforms of the wrong kind of function.

use rlx_tensor::{
    attempt, einsum, grad, graph, jit, s, shape, vmap, GraphScope, Tensor, TensorError,
};

fn err_of(r: Result<rlx_tensor::Graph, TensorError>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn broadcast_mismatch_names_op_and_both_shapes() {
    let r = graph("g", |g| {
        let a = g.input("a", shape![2, 3]);
        let b = g.input("b", shape![4]);
        (&a + &b) * 2.0 // the failure flows through `* 2.0`
    });
    let e = r.unwrap_err();
    assert!(matches!(e, TensorError::Broadcast { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "add: shapes f32[2,3] and f32[4] do not broadcast (numpy rules: trailing dims equal or 1)"
    );
}

#[test]
fn first_error_wins_and_try_forms_return_it() {
    let r = graph("g", |g| {
        let a = g.input("a", shape![2, 3]);
        let b = g.input("b", shape![3, 2]);
        let e = a.try_mul(&b).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("mul: shapes f32[2,3] and f32[3,2]"),
            "{e}"
        );
        let bad = a.sum(5, false);
        let _also_bad = a.at(s![7]);
        bad
    });
    assert_eq!(
        err_of(r),
        "sum: axis 5 is out of bounds for a tensor of rank 2"
    );
}

#[test]
fn attempt_returns_the_error_and_leaves_the_scope_clean() {
    let g = graph("g", |g| {
        let a = g.input("a", shape![2, 3]);
        let r = attempt(|| a.matmul(&a));
        assert_eq!(
            r.unwrap_err().to_string(),
            "matmul: contracting dims differ: f32[2,3] @ f32[2,3]"
        );
        a.matmul(&a.T())
    })
    .unwrap();
    assert_eq!(g.outputs().len(), 1);
}

#[test]
fn tensor_of_an_outer_scope_in_an_inner_graph_is_foreign() {
    let outer = graph("outer", |g| {
        let x = g.input("x", shape![3]);
        let inner = graph("inner", |h| {
            let y = h.input("y", shape![3]);
            &y + &x
        });
        let e = inner.unwrap_err();
        assert!(matches!(e, TensorError::ForeignScope { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(msg.starts_with("add: tensor of scope \"outer\""), "{msg}");
        assert!(msg.contains("used in scope \"inner\""), "{msg}");
        x.exp()
    });
    assert!(
        outer.is_ok(),
        "the outer graph is unaffected: {:?}",
        outer.err()
    );
}

#[test]
fn tensor_used_after_its_scope_ended_is_an_error_not_a_panic() {
    let mut escaped: Option<Tensor> = None;
    graph("first", |g| {
        let x = g.input("x", shape![2]);
        escaped = Some(x.clone());
        x
    })
    .unwrap();
    let x = escaped.unwrap();
    // Outside any scope.
    let y = &x + 1.0;
    #[cfg(not(feature = "eval"))]
    assert_eq!(
        y.error().map(|e| e.to_string()).as_deref(),
        Some("add: no graph scope is active on this thread; a Tensor is only usable inside the graph(..) / graph_with(..) closure that made it")
    );
    // With eager mode the thread's eager scope is active instead.
    #[cfg(feature = "eval")]
    assert!(y
        .error()
        .map(|e| e.to_string())
        .unwrap_or_default()
        .starts_with("add: tensor of scope \"first\""));
    // Inside another graph.
    let r = graph("second", |g: &GraphScope| {
        let z = g.input("z", shape![2]);
        z * &x
    });
    let msg = err_of(r);
    assert!(msg.starts_with("mul: tensor of scope \"first\""), "{msg}");
    assert!(msg.contains("used in scope \"second\""), "{msg}");
}

#[test]
fn returning_a_foreign_tensor_as_output_is_an_error() {
    let mut escaped: Option<Tensor> = None;
    graph("a", |g| {
        let x = g.input("x", shape![2]);
        escaped = Some(x.clone());
        x
    })
    .unwrap();
    let x = escaped.unwrap();
    let msg = err_of(graph("b", |_| x.clone()));
    assert!(
        msg.starts_with("graph outputs: tensor of scope \"a\""),
        "{msg}"
    );
}

#[test]
fn indexing_errors_name_the_problem() {
    type Case = (&'static str, Box<dyn Fn(&Tensor) -> Tensor>);
    let cases: Vec<Case> = vec![
        (
            "index: index 7 is out of bounds for axis 0 with size 4",
            Box::new(|x| x.at(s![7])),
        ),
        (
            "index: index -5 is out of bounds for axis 1 with size 3",
            Box::new(|x| x.at(s![.., -5])),
        ),
        (
            "index: too many indices: 3 for a tensor of rank 2 (f32[4,3])",
            Box::new(|x| x.at(s![0, 0, 0])),
        ),
        (
            "index: slice step cannot be zero (axis 0)",
            Box::new(|x| x.at(s![..;0])),
        ),
        (
            "index: an index can only have a single ellipsis ('...')",
            Box::new(|x| x.at(s![..., 0, ...])),
        ),
        (
            "reshape: cannot reshape f32[4,3] into [5, -1]",
            Box::new(|x| x.reshape(&[5, -1])),
        ),
        (
            "squeeze: axis 0 of f32[4,3] has size 4, not 1",
            Box::new(|x| x.squeeze(0)),
        ),
        (
            "transpose: [0, 0] is not a permutation of the 2 axes of f32[4,3]",
            Box::new(|x| x.transpose(&[0, 0])),
        ),
    ];
    for (want, f) in cases {
        let r = graph("g", |g| {
            let x = g.input("x", shape![4, 3]);
            f(&x)
        });
        assert_eq!(err_of(r), want);
    }
}

#[test]
fn einsum_errors() {
    let r = graph("g", |g| {
        let a = g.input("a", shape![2, 3]);
        let b = g.input("b", shape![4, 5]);
        einsum("ij,jk->ik", &[&a, &b])
    });
    assert_eq!(
        err_of(r),
        "einsum: \"ij,jk->ik\": label 'j' has sizes 3 and 4"
    );
    let r = graph("g", |g| {
        let a = g.input("a", shape![3, 3]);
        einsum("ii->", &[&a])
    });
    assert!(err_of(r).contains("repeated label"));
}

#[test]
fn transform_misuse() {
    // grad of a non-scalar function.
    let r = graph("g", |g| {
        let x = g.input("x", shape![3]);
        grad(|x: &Tensor| x * 2.0)(&[&x])
    });
    assert_eq!(
        err_of(r),
        "grad: needs a scalar output, the function returned f32[3]"
    );
    // Wrong number of arguments.
    let r = graph("g", |g| {
        let x = g.input("x", shape![3]);
        grad(|x: &Tensor, y: &Tensor| (x * y).sum(None, false))(&[&x])
    });
    assert_eq!(err_of(r), "grad: the function takes 2 arguments, given 1");
    // vmap batch sizes that differ.
    let r = graph("g", |g| {
        let x = g.input("x", shape![4, 3]);
        let y = g.input("y", shape![5, 3]);
        vmap(|a: &Tensor, b: &Tensor| a + b, &[Some(0), Some(0)], 0)(&[&x, &y]).remove(0)
    });
    assert_eq!(
        err_of(r),
        "vmap: argument 0 has batch size 4 but argument 1 has 5 (shape f32[5,3], axis 0)"
    );
    // A shape error inside a traced function surfaces from the outer graph.
    let r = graph("g", |g| {
        let x = g.input("x", shape![3]);
        grad(|x: &Tensor| (x + x.at(s![..2])).sum(None, false))(&[&x])
    });
    assert!(err_of(r).starts_with("add: shapes f32[3] and f32[2] do not broadcast"));
}

#[test]
fn jit_errors_are_typed() {
    let f = jit(|a: &Tensor, b: &Tensor| a + b);
    let x = rlx_ir::HostTensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let y = rlx_ir::HostTensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    let e = f.call(&[&x, &y]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("add: shapes f32[2] and f32[3] do not broadcast"),
        "{e}"
    );
    let e = f.call(&[&x]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "jit: the function takes 2 arguments, given 1"
    );
    assert_eq!(f.traces(), 0);
}
