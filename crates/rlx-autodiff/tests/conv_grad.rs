//! The closed-form reverse mode of `Op::Conv` against the gradient of its
//! im2col decomposition (the old path, forced with `prepare_graph_for_ad`),
//! and the memory it saves. Finite-difference checks of the same rule are
//! in `finite_diff.rs` (`convolution_and_pooling`).

use rlx_autodiff::{grad_with_loss, hvp, nth_order_grad, prepare_graph_for_ad, HigherOrderOptions};
use rlx_driver::Device;
use rlx_ir::op::Window;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Op, Shape};
use rlx_runtime::{CompiledGraph, Session};

/// Deterministic values in [-1, 1).
fn values(seed: u64, n: usize) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// One conv case: input, weight (and bias when `bias`) shapes and window.
struct Case {
    name: &'static str,
    x: Vec<usize>,
    w: Vec<usize>,
    bias: bool,
    stride: Vec<usize>,
    padding: Vec<(usize, usize)>,
    dilation: Vec<usize>,
    groups: usize,
}

impl Case {
    /// `loss = sum(tanh(conv(x, w [, b])) * r)`: tanh makes the cotangent
    /// reaching the conv depend on its output.
    fn graph(&self) -> Graph {
        let mut g = Graph::new(self.name);
        let x = g.input("x", Shape::new(&self.x, DType::F64));
        let w = g.input("w", Shape::new(&self.w, DType::F64));
        let b = self
            .bias
            .then(|| g.input("b", Shape::new(&[self.w[0]], DType::F64)));
        let window = Window {
            kernel: vec![],
            stride: self.stride.clone(),
            padding: self.padding.clone(),
            dilation: self.dilation.clone(),
        };
        let y = g.conv(x, w, b, window, self.groups);
        let y = g.tanh(y);
        let yd = g.shape(y).static_dims().unwrap();
        let r = values(7, yd.iter().product());
        let r = g.constant_tensor(&HostTensor::from_vec(r, &yd).unwrap());
        let l = g.mul(y, r);
        let axes: Vec<i64> = (0..yd.len() as i64).collect();
        let loss = g.sum(l, &axes, false);
        g.set_outputs(vec![loss]);
        g
    }

    fn inputs(&self) -> Vec<(&'static str, HostTensor)> {
        let mut v = vec![("x", tensor(1, &self.x)), ("w", tensor(2, &self.w))];
        if self.bias {
            v.push(("b", tensor(3, &[self.w[0]])));
        }
        v
    }
}

fn tensor(seed: u64, d: &[usize]) -> HostTensor {
    HostTensor::from_vec(values(seed, d.iter().product()), d).unwrap()
}

/// The gradient graph of every leaf of `g`.
fn grad_graph(g: &Graph) -> Graph {
    let names = ["x", "w", "b"];
    let wrt: Vec<_> = names.iter().filter_map(|n| g.find_input(n)).collect();
    grad_with_loss(g, &wrt).unwrap_or_else(|e| panic!("{}: {e}", g.name()))
}

fn compile(d: &Graph) -> CompiledGraph {
    Session::new(Device::Cpu)
        .try_compile(d.clone())
        .unwrap_or_else(|e| panic!("compile {}: {e}", d.name()))
}

fn run(c: &mut CompiledGraph, inputs: &[(&'static str, HostTensor)]) -> Vec<Vec<f64>> {
    let refs: Vec<(&str, &HostTensor)> = inputs.iter().map(|(n, t)| (*n, t)).collect();
    c.try_run_typed(&refs)
        .unwrap()
        .iter()
        .map(|t| t.to_f64_lossy())
        .collect()
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "conv1d_s2_d2_g2_bias_odd",
            x: vec![3, 4, 13],
            w: vec![6, 2, 3],
            bias: true,
            stride: vec![2],
            padding: vec![(2, 1)],
            dilation: vec![2],
            groups: 2,
        },
        Case {
            // The last stride leaves 2 input positions unread.
            name: "conv1d_unread_tail",
            x: vec![2, 3, 12],
            w: vec![5, 3, 2],
            bias: false,
            stride: vec![3],
            padding: vec![(0, 0)],
            dilation: vec![1],
            groups: 1,
        },
        Case {
            name: "conv2d_s2_d2_g2_bias_odd",
            x: vec![2, 4, 9, 7],
            w: vec![6, 2, 3, 2],
            bias: true,
            stride: vec![2, 1],
            padding: vec![(1, 2), (0, 1)],
            dilation: vec![2, 1],
            groups: 2,
        },
        Case {
            name: "conv2d_depthwise",
            x: vec![1, 3, 7, 8],
            w: vec![3, 1, 3, 3],
            bias: true,
            stride: vec![2, 2],
            padding: vec![(1, 1), (1, 1)],
            dilation: vec![1, 2],
            groups: 3,
        },
        Case {
            name: "conv3d",
            x: vec![1, 2, 5, 4, 5],
            w: vec![2, 2, 2, 2, 3],
            bias: false,
            stride: vec![1, 2, 2],
            padding: vec![(1, 0), (0, 0), (1, 1)],
            dilation: vec![1, 1, 1],
            groups: 1,
        },
    ]
}

/// Closed form (native conv / conv_transpose) and the im2col gradient
/// agree to rounding in f64.
#[test]
fn closed_form_matches_im2col_gradient() {
    for case in cases() {
        let g = case.graph();
        let inputs = case.inputs();
        let closed = run(&mut compile(&grad_graph(&g)), &inputs);
        let lowered = prepare_graph_for_ad(&g).unwrap();
        let im2col = run(&mut compile(&grad_graph(&lowered)), &inputs);
        assert_close(case.name, &closed, &im2col);
    }
}

/// Every output of `closed` equals `im2col`'s to 1e-12 (relative).
fn assert_close(name: &str, closed: &[Vec<f64>], im2col: &[Vec<f64>]) {
    assert_eq!(closed.len(), im2col.len(), "{name}: outputs");
    for (k, (a, b)) in closed.iter().zip(im2col).enumerate() {
        assert_eq!(a.len(), b.len(), "{name}: output {k}");
        for (j, (p, q)) in a.iter().zip(b).enumerate() {
            assert!(
                (p - q).abs() <= 1e-12 * (1.0 + q.abs()),
                "{name}: output {k}[{j}]: closed form {p}, im2col {q}"
            );
        }
    }
}

/// Second order through the rule (forward or reverse mode over the
/// gradient graph's conv_transpose and swapped conv) equals the im2col
/// path's: Hessian-vector products and `d/dx sum(dL/dx)`.
#[test]
fn hessian_vector_product_matches_im2col() {
    for case in cases().into_iter().take(3) {
        let g = case.graph();
        let mut inputs = case.inputs();
        let tangents: Vec<_> = inputs
            .iter()
            .enumerate()
            .map(|(k, (n, t))| {
                let name: &'static str = match *n {
                    "x" => "tangent_x",
                    "w" => "tangent_w",
                    _ => "tangent_b",
                };
                (name, tensor(11 + k as u64, t.dims()))
            })
            .collect();
        inputs.extend(tangents);
        let h = |g: &Graph| {
            let wrt: Vec<_> = ["x", "w", "b"]
                .iter()
                .filter_map(|n| g.find_input(n))
                .collect();
            let d = hvp(g, &wrt).unwrap_or_else(|e| panic!("{}: {e}", g.name()));
            run(&mut compile(&d), &inputs)
        };
        let lowered = prepare_graph_for_ad(&g).unwrap();
        assert_close(case.name, &h(&g), &h(&lowered));
        let second = |g: &Graph| {
            let d = nth_order_grad(g, "x", 2, &HigherOrderOptions::default())
                .unwrap_or_else(|e| panic!("{}: {e}", g.name()));
            run(&mut compile(&d), &case.inputs())
        };
        assert_close(case.name, &second(&g), &second(&lowered));
    }
}

/// Reverse mode keeps the conv whole: the gradient graph differentiates
/// it with one conv_transpose and one conv, and its buffers shrink by at
/// least the im2col matrix `N * C * K * P` the decomposition materialises
/// (in the forward pass, and again as its cotangent).
#[test]
fn gradient_graph_holds_no_im2col_matrix() {
    let case = Case {
        name: "memory",
        x: vec![2, 8, 33, 31],
        w: vec![16, 4, 3, 3],
        bias: true,
        stride: vec![1, 1],
        padding: vec![(1, 1), (1, 1)],
        dilation: vec![1, 1],
        groups: 2,
    };
    let g = case.graph();
    let (dc, di) = (
        grad_graph(&g),
        grad_graph(&prepare_graph_for_ad(&g).unwrap()),
    );
    let count = |d: &Graph, f: &dyn Fn(&Op) -> bool| d.nodes().iter().filter(|n| f(&n.op)).count();
    assert_eq!(count(&dc, &|op| matches!(op, Op::Conv { .. })), 2);
    assert_eq!(count(&dc, &|op| matches!(op, Op::ConvTranspose { .. })), 1);
    assert_eq!(count(&di, &|op| matches!(op, Op::Conv { .. })), 0);
    let (closed, im2col) = (compile(&dc), compile(&di));
    let matrix_bytes = 2 * 8 * 9 * 33 * 31 * 8;
    let (a, b) = (
        closed.lir().plan.total_buffer_bytes,
        im2col.lir().plan.total_buffer_bytes,
    );
    assert!(
        a + 4 * matrix_bytes <= b,
        "closed form {a} bytes, im2col {b} bytes: saves less than 4 x {matrix_bytes}"
    );
    let (a, b) = (
        closed.lir().plan.peak_live_bytes,
        im2col.lir().plan.peak_live_bytes,
    );
    assert!(
        a + matrix_bytes <= b,
        "closed-form peak {a} bytes, im2col peak {b} bytes"
    );
}
