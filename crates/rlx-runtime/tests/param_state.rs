//! Params as persistent state: `write_param_bytes` (rows written in place)
//! and `share_param_from` (one buffer read by two compiled graphs, copied
//! on a later write).

use rlx_driver::Device;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
use rlx_runtime::{CompiledGraph, RuntimeError, Session};

/// `x (op) p` for `x`, `p` of `[2, 3]` f32 (`p` a param).
fn compile(mul: bool, p_dims: &[usize]) -> CompiledGraph {
    let mut g = Graph::new("state");
    let x = g.input("x", Shape::new(&[2, 3], DType::F32));
    let p = g.param("p", Shape::new(p_dims, DType::F32));
    let y = if mul { g.mul(x, p) } else { g.add(x, p) };
    g.set_outputs(vec![y]);
    Session::new(Device::Cpu).try_compile(g).unwrap()
}

fn run(c: &mut CompiledGraph) -> Vec<f32> {
    let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    c.try_run(&[("x", &x)]).unwrap().remove(0)
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|f| f.to_le_bytes()).collect()
}

#[test]
fn write_param_bytes_updates_rows_in_place() {
    let mut c = compile(false, &[2, 3]);
    assert!(matches!(
        c.write_param_bytes("p", 0, &bytes(&[1.0])),
        Err(RuntimeError::ParamNotSet { .. })
    ));
    c.set_param("p", &[0.0; 6]);
    c.write_param_bytes("p", 12, &bytes(&[10.0, 20.0, 30.0]))
        .unwrap();
    assert_eq!(run(&mut c), [1.0, 2.0, 3.0, 14.0, 25.0, 36.0]);
    c.write_param_bytes("p", 4, &bytes(&[-2.0])).unwrap();
    assert_eq!(run(&mut c), [1.0, 0.0, 3.0, 14.0, 25.0, 36.0]);
    // Past the end: an error naming the param, nothing written.
    let e = c.write_param_bytes("p", 22, &bytes(&[7.0])).unwrap_err();
    assert!(e.to_string().contains("past the end"), "{e}");
    assert!(matches!(
        c.write_param_bytes("q", 0, &[]),
        Err(RuntimeError::UnknownParam { .. })
    ));
    assert_eq!(run(&mut c), [1.0, 0.0, 3.0, 14.0, 25.0, 36.0]);
}

#[test]
fn shared_params_are_read_by_both_and_copied_on_write() {
    let mut owner = compile(false, &[2, 3]);
    let mut reader = compile(true, &[2, 3]);
    assert!(
        reader.share_param_from("p", &owner, "p").is_err(),
        "an unset param cannot be shared"
    );
    owner.set_param("p", &[1.0, 1.0, 1.0, 2.0, 2.0, 2.0]);
    reader.share_param_from("p", &owner, "p").unwrap();
    assert_eq!(run(&mut reader), [1.0, 2.0, 3.0, 8.0, 10.0, 12.0]);
    // A write to the reader's param leaves the owner's bytes alone.
    reader.write_param_bytes("p", 0, &bytes(&[0.0])).unwrap();
    assert_eq!(run(&mut reader), [0.0, 2.0, 3.0, 8.0, 10.0, 12.0]);
    assert_eq!(run(&mut owner), [2.0, 3.0, 4.0, 6.0, 7.0, 8.0]);
    // Another shape: a typed error, the param keeps its value.
    let mut other = compile(true, &[3]);
    let x = HostTensor::from_vec(vec![1f32; 6], &[2, 3]).unwrap();
    other.set_param("p", &[5.0; 3]);
    assert!(matches!(
        other.share_param_from("p", &owner, "p"),
        Err(RuntimeError::Shape { .. })
    ));
    let y = other.try_run_typed(&[("x", &x)]).unwrap();
    assert_eq!(y[0].to_vec::<f32>().unwrap(), [5.0; 6]);
}

/// `x · pᵀ` (the transpose of the param is hoisted into the param
/// prelude), or `x · p` (no prelude).
fn compile_matmul(transposed: bool) -> CompiledGraph {
    let mut g = Graph::new("hoisted");
    let x = g.input("x", Shape::new(&[2, 3], DType::F32));
    let mut p = g.param("p", Shape::new(&[3, 3], DType::F32));
    if transposed {
        // relu keeps the test's values (0 and 1); the param-only chain is
        // hoisted (a bare transpose would be read in place by the matmul).
        let t = g.transpose_(p, &[1, 0]);
        p = g.relu(t);
    }
    let y = g.mm(x, p);
    g.set_outputs(vec![y]);
    Session::new(Device::Cpu).try_compile(g).unwrap()
}

#[test]
fn writes_and_shares_reach_the_param_prelude() {
    let mut c = compile_matmul(true);
    assert!(c.prelude_lir().is_some(), "the transpose should be hoisted");
    c.set_param("p", &[0.0; 9]);
    assert_eq!(run(&mut c), [0.0; 6]);
    // Row 1 of p = [1, 1, 1]: y[:, 1] = row sums of x.
    c.write_param_bytes("p", 12, &bytes(&[1.0, 1.0, 1.0]))
        .unwrap();
    assert_eq!(run(&mut c), [0.0, 6.0, 0.0, 0.0, 15.0, 0.0]);
    let mut d = compile_matmul(true);
    d.share_param_from("p", &c, "p").unwrap();
    assert_eq!(run(&mut d), [0.0, 6.0, 0.0, 0.0, 15.0, 0.0]);
    // The plain graph has no prelude route for p: sharing into a graph
    // that hoists from it is refused, and changes nothing.
    let mut plain = compile_matmul(false);
    assert!(plain.prelude_lir().is_none());
    plain.set_param("p", &[1.0; 9]);
    let mut e = compile_matmul(true);
    e.set_param("p", &[0.0; 9]);
    let err = e.share_param_from("p", &plain, "p").unwrap_err();
    assert!(err.to_string().contains("prelude"), "{err}");
    assert_eq!(run(&mut e), [0.0; 6]);
}
