#!/usr/bin/env bash
# Times rlx-cpu's two depthwise 3x3 f32 kernels on MobileNetV2's planes, 1 thread,
# ReLU6 clamp: the per-plane kernel (kernels/conv_depthwise3x3.rs) against the
# 16-channels-in-lanes one (kernels/conv_depthwise_small.rs), compiled
# standalone from the crate's own files with shims for the crate around them
# (one `rustc -O`, seconds; a release build of the crate takes far longer on
# a loaded 2-vCPU VM), and checks that both give the same bits.
#
#     chrt -f 10 tools/bench_depthwise_kernels.sh
#
# Best of 7 x 20 calls, three rounds alternating the kernels. Needs AVX-512.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
K=$ROOT/crates/rlx-cpu/src/kernels
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
# The test-only whole-conv entry, made reachable from the shim.
sed -z 's/    #\[cfg(test)\]\n    unsafe fn small_direct/    pub(super) unsafe fn small_direct/' \
    "$K/conv_depthwise_small.rs" > "$D/small.rs"
cat > "$D/bench.rs" <<EOF
#![allow(dead_code, unused_imports)]
macro_rules! fail { (\$(\$arg:tt)*) => { ::std::convert::Into::into(::std::format!(\$(\$arg)*)) }; }
mod team {
    pub fn threads() -> usize { 1 }
    pub fn split(n: usize, parts: usize, _a: usize) -> Vec<std::ops::Range<usize>> { let _ = parts; vec![0..n] }
    pub fn try_parallel_for<E, F: Fn(usize) -> Result<(), E>>(parts: usize, f: F) -> Result<(), E> { for p in 0..parts { f(p)?; } Ok(()) }
    pub struct Disjoint<'a, T> { ptr: *mut T, len: usize, _l: std::marker::PhantomData<&'a mut [T]> }
    impl<'a, T> Disjoint<'a, T> { pub fn new(v: &'a mut [T]) -> Self { Disjoint { ptr: v.as_mut_ptr(), len: v.len(), _l: std::marker::PhantomData } }
      pub unsafe fn range(&self, r: std::ops::Range<usize>) -> &'a mut [T] { assert!(r.end <= self.len); unsafe { std::slice::from_raw_parts_mut(self.ptr.add(r.start), r.len()) } } }
}
mod kernels {
    pub type KernelResult = Result<(), String>;
    pub mod scalar {
        pub fn nan_max(a: f32, b: f32) -> f32 { if a.is_nan() || b.is_nan() { f32::NAN } else if a >= b { a } else { b } }
        pub fn nan_min(a: f32, b: f32) -> f32 { if a.is_nan() || b.is_nan() { f32::NAN } else if a <= b { a } else { b } }
    }
    pub mod conv_epilogue {
        pub struct ConvEpilogue;
        pub struct RowChain;
        impl ConvEpilogue { pub fn rows(&self) -> Option<&RowChain> { None } pub fn apply(&self, _: &mut [f32], _: usize, _: std::ops::Range<usize>) -> super::KernelResult { Ok(()) } }
        impl RowChain { pub fn clamp(&self) -> Option<(f32, f32)> { None } pub fn apply(&self, _: &mut [f32], _: usize, _: usize, _: std::ops::Range<usize>, _: std::ops::Range<usize>) {} }
    }
    pub mod conv2d {
        #[derive(Clone, Debug)]
        pub struct Conv2d { pub batch: usize, pub c: usize, pub o: usize, pub groups: usize, pub h: usize, pub w: usize, pub oh: usize, pub ow: usize, pub kh: usize, pub kw: usize, pub s: (usize, usize), pub d: (usize, usize), pub p: (usize, usize) }
        impl Conv2d { pub fn is_depthwise(&self) -> bool { self.groups == self.c && self.groups > 1 } }
    }
    #[path = "$K/conv_depthwise3x3.rs"] pub mod conv_depthwise3x3;
    #[path = "$D/small.rs"] pub mod conv_depthwise_small;
    pub mod bench {
    use super::conv2d::Conv2d;
    pub fn run() {
    for (c, hw, s) in [(960usize, 7usize, 1usize), (576, 14, 2), (384, 14, 1), (576, 14, 1), (192, 28, 2), (192, 28, 1), (144, 56, 1), (144, 56, 2), (32, 112, 1)] {
        let o = (hw - 1) / s + 1;
        let g = Conv2d { batch: 1, c, o: c, groups: c, h: hw, w: hw, oh: o, ow: o, kh: 3, kw: 3, s: (s, s), d: (1, 1), p: (1, 1) };
        let x: Vec<f32> = (0..c * hw * hw).map(|i| ((i * 7) % 23) as f32 / 8.0 - 1.0).collect();
        let w: Vec<f32> = (0..c * 9).map(|i| ((i * 5) % 17) as f32 / 16.0 - 0.5).collect();
        let b: Vec<f32> = (0..c).map(|i| (i % 5) as f32 / 4.0).collect();
        let mut y0 = vec![0f32; c * o * o];
        let mut y1 = y0.clone();
        let clamp = Some((0.0f32, 6.0f32));
        let old = |y: &mut [f32]| for (i, yp) in y.chunks_exact_mut(o * o).enumerate() { g.depthwise3x3_plane(&x[i * hw * hw..][..hw * hw], &w[i * 9..][..9], b[i], yp, clamp); };
        let new = |y: &mut [f32]| unsafe { g.small_direct(&x, &w, &b, clamp, y) };
        let time = |f: &dyn Fn(&mut [f32]), y: &mut [f32]| { let mut best = f64::MAX; for _ in 0..7 { let t = std::time::Instant::now(); for _ in 0..20 { f(y); } best = best.min(t.elapsed().as_secs_f64() / 20.0); } best * 1e3 };
        let (mut ta, mut tb) = (vec![], vec![]);
        for _ in 0..3 { ta.push(time(&old, &mut y0)); tb.push(time(&new, &mut y1)); }
        let same = y0.iter().zip(&y1).all(|(a, b)| a.to_bits() == b.to_bits());
        println!("{c}x{hw}x{hw} s{s}: per-plane {:.3?} ms, small {:.3?} ms, same bits {same}", ta, tb);
    }
}

}
}
fn main() { kernels::bench::run() }
EOF
rustc -O --edition 2021 "$D/bench.rs" -o "$D/bench"
"$D/bench"
