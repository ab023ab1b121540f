//! Compiling copies no weights: every pass rebuilds the graph, and a
//! constant that comes through unchanged is the same allocation as the one
//! the caller's graph holds (`ConstBytes` handles, not bytes, are copied).

use rlx_compile::{lower, LowerOptions};
use rlx_ir::{ConstBytes, DType, Graph, GraphExt, HostTensor, Op, Shape};

fn constant_of_len(g: &Graph, len: usize) -> ConstBytes {
    g.nodes()
        .iter()
        .find_map(|n| match &n.op {
            Op::Constant { bytes } if bytes.len() == len => Some(bytes.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no constant of {len} bytes in\n{g}"))
}

#[test]
fn lowering_shares_the_weights_of_the_input_graph() {
    let (k, n) = (64, 48);
    let w: Vec<f32> = (0..k * n).map(|i| (i % 17) as f32 * 0.25 - 2.0).collect();
    let t = HostTensor::from_vec(w, &[k, n]).unwrap();
    let mut g = Graph::new("mlp");
    let x = g.input("x", Shape::new(&[8, k], DType::F32));
    let c = g.constant_tensor(&t);
    let y = g.mm(x, c);
    let z = g.relu(y);
    let z = g.exp(z);
    g.set_outputs(vec![z]);

    let given = constant_of_len(&g, k * n * 4);
    assert!(
        ConstBytes::ptr_eq(&given, t.shared_bytes()),
        "a graph constant made from a tensor shares its bytes"
    );
    let lir = lower(&g, &|_| true, &LowerOptions::default()).unwrap();
    assert!(lir.passes.len() > 3, "several passes rebuilt the graph");
    let compiled = constant_of_len(&lir.graph, k * n * 4);
    assert!(
        ConstBytes::ptr_eq(&given, &compiled),
        "the weight was copied by a pass"
    );
    assert_eq!(compiled.as_slice(), t.bytes());
}
