//! Host speed of the int8 `conv2d` / `dense` kernels (rlx-cortexm's
//! portable path) against RLX's float CPU path on the same layers, at the
//! digits CNN's sizes. Prints median times and the ratio; asserts nothing.
//!
//! `cargo run --release -p rlx-quant-int8 --example int8_bench`
use rlx_cortexm::{conv2d, dense, ChannelQuant, Conv2dGeometry, QParams};
use rlx_ir::{DType, Graph, GraphExt, Shape};
use rlx_runtime::{Device, Session};
use std::time::Instant;

const ITERS: usize = 200;

fn median_us(mut f: impl FnMut()) -> f64 {
    for _ in 0..10 {
        f();
    }
    let mut t: Vec<f64> = (0..ITERS)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[ITERS / 2]
}

fn pattern(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| (((i * 37 + seed * 11) % 23) as f32 - 11.0) / 16.0)
        .collect()
}

const Q: QParams = QParams {
    input_zero_point: -3,
    output_zero_point: 5,
    activation_min: -128,
    activation_max: 127,
};

/// (float us, int8 us) of an NCHW conv 3x3 pad 1 on `batch` images.
fn conv(batch: usize, c: usize, hw: usize, o: usize) -> (f64, f64) {
    let mut g = Graph::new("conv");
    let x = g.input("x", Shape::new(&[batch, c, hw, hw], DType::F32));
    let w = g.param("w", Shape::new(&[o, c, 3, 3], DType::F32));
    let b = g.param("b", Shape::new(&[o], DType::F32));
    let y = GraphExt::conv2d(&mut g, x, w, Some(b), [1, 1], [1, 1]);
    g.set_outputs(vec![y]);
    let mut cg = Session::new(Device::Cpu).compile(g);
    cg.set_param("w", &pattern(o * c * 9, 1));
    cg.set_param("b", &pattern(o, 2));
    let xv = pattern(batch * c * hw * hw, 3);
    let float = median_us(|| {
        std::hint::black_box(cg.run(&[("x", &xv)]));
    });
    let geom = Conv2dGeometry {
        in_h: hw,
        in_w: hw,
        in_c: c,
        out_c: o,
        k_h: 3,
        k_w: 3,
        stride_h: 1,
        stride_w: 1,
        pad_top: 1,
        pad_bottom: 1,
        pad_left: 1,
        pad_right: 1,
    };
    let xq: Vec<i8> = (0..batch * c * hw * hw)
        .map(|i| (i * 7 % 255) as i8)
        .collect();
    let wq: Vec<i8> = (0..o * 9 * c).map(|i| (i * 13 % 255) as i8).collect();
    let bias = vec![100; o];
    let (m, s) = (vec![1 << 30; o], vec![-8; o]);
    let cq = ChannelQuant {
        multiplier: &m,
        shift: &s,
    };
    let mut out = vec![0i8; batch * geom.output_len()];
    let int8 = median_us(|| {
        conv2d(&xq, &wq, &bias, batch, &geom, &Q, &cq, &mut out).unwrap();
        std::hint::black_box(&out);
    });
    (float, int8)
}

/// (float us, int8 us) of `[batch, depth] @ [depth, units] + bias`.
fn fc(batch: usize, depth: usize, units: usize) -> (f64, f64) {
    let mut g = Graph::new("dense");
    let x = g.input("x", Shape::new(&[batch, depth], DType::F32));
    let w = g.param("w", Shape::new(&[depth, units], DType::F32));
    let b = g.param("b", Shape::new(&[units], DType::F32));
    let y = g.mm(x, w);
    let y = g.add(y, b);
    g.set_outputs(vec![y]);
    let mut cg = Session::new(Device::Cpu).compile(g);
    cg.set_param("w", &pattern(depth * units, 1));
    cg.set_param("b", &pattern(units, 2));
    let xv = pattern(batch * depth, 3);
    let float = median_us(|| {
        std::hint::black_box(cg.run(&[("x", &xv)]));
    });
    let xq: Vec<i8> = (0..batch * depth).map(|i| (i * 7 % 255) as i8).collect();
    let wq: Vec<i8> = (0..units * depth).map(|i| (i * 13 % 255) as i8).collect();
    let bias = vec![100; units];
    let (m, s) = (vec![1 << 30; units], vec![-8; units]);
    let cq = ChannelQuant {
        multiplier: &m,
        shift: &s,
    };
    let mut out = vec![0i8; batch * units];
    let int8 = median_us(|| {
        dense(&xq, &wq, &bias, batch, depth, units, &Q, &cq, &mut out).unwrap();
        std::hint::black_box(&out);
    });
    (float, int8)
}

fn main() {
    println!(
        "| layer (digits CNN) | batch | float CPU (us) | int8 rlx-cortexm (us) | int8 speed-up |"
    );
    println!("|---|---|---|---|---|");
    for batch in [1, 64] {
        let rows = [
            ("conv2d 8x8x1 -> 8, 3x3 p1", conv(batch, 1, 8, 8)),
            ("conv2d 4x4x8 -> 16, 3x3 p1", conv(batch, 8, 4, 16)),
            ("dense 64 -> 10", fc(batch, 64, 10)),
        ];
        for (name, (f, q)) in rows {
            println!("| {name} | {batch} | {f:.2} | {q:.2} | {:.2}x |", f / q);
        }
    }
}
