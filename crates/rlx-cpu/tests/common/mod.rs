//! Helpers shared by this crate's integration tests.

// Each test binary uses a part of it (nchwc_chain: `values` / `floats` only).
#[allow(dead_code)]
pub mod yolo_net;

// Used by the NCHWc layout tests only.
#[allow(dead_code)]
pub mod nchwc;

use rlx_ir::op::Window;

/// The window of a `k` x `k` conv of stride `stride` and padding `k / 2`
/// on both spatial dims (the fixture scripts' convs).
pub fn conv_window(k: usize, stride: usize) -> Window {
    Window {
        kernel: vec![],
        stride: vec![stride; 2],
        padding: vec![(k / 2, k / 2); 2],
        dilation: vec![1, 1],
    }
}
