//! `graph::detach`: the value passes through bit for bit, the gradient is
//! zero. Checked on values across the f32 / f64 exponent range.

use rlx_autodiff::grad_with_loss;
use rlx_ir::{Graph, GraphExt, HostTensor, Shape};
use rlx_peft::graph::detach;
use rlx_runtime::{Device, Session};

fn check(values: HostTensor) {
    let n = values.numel();
    let dtype = values.dtype();
    let mut g = Graph::new("detach");
    let v = g.input("v", Shape::new(&[n], dtype));
    let d = detach(&mut g, v).unwrap();
    // loss = sum(detach(v) * v): its gradient is detach(v) = v, only through the second factor.
    let p = g.mul(d, v);
    let loss = g.sum(p, &[0], false);
    g.set_outputs(vec![loss, d]);
    let dg = grad_with_loss(&g, &[v]).unwrap();
    let mut exe = Session::new(Device::Cpu).try_compile(dg).unwrap();
    let out = exe.try_run_typed(&[("v", &values)]).unwrap();
    assert_eq!(
        out[2].bytes(),
        values.bytes(),
        "{dtype}: detach(v) is v bit for bit"
    );
    assert_eq!(
        out[1].bytes(),
        values.bytes(),
        "{dtype}: d/dv sum(detach(v) v) = v"
    );
}

fn magnitudes() -> Vec<f64> {
    let mut v = vec![0.0, 1.0, 0.999_999_9, 1.000_000_1, 3.0, 7.25];
    for e in [-30, -10, -3, -1, 2, 5, 12, 30] {
        for m in [1.0, 1.2345678, 1.9999999, std::f64::consts::PI] {
            v.push(m * 10f64.powi(e));
        }
    }
    v
}

#[test]
fn detach_is_exact_and_blocks_the_gradient_in_f32() {
    let v: Vec<f32> = magnitudes().iter().map(|&x| x as f32).collect();
    let n = v.len();
    check(HostTensor::from_vec(v, &[n]).unwrap());
}

#[test]
fn detach_is_exact_and_blocks_the_gradient_in_f64() {
    let v = magnitudes();
    let n = v.len();
    check(HostTensor::from_vec(v, &[n]).unwrap());
}
