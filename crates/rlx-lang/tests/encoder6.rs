//! A 6-layer MiniLM-style encoder in `rlx!` (also the input of
//! `tools/bench_rlx_lang_expansion.sh`): it verifies, has the per-layer
//! params `layers.{i}.*`, and keeps `[B, S, 32]` through the stack.

use rlx_ir::{verify_all, Dim};

#[test]
fn six_layer_encoder_builds_and_verifies() {
    let g = rlx_lang::rlx! {
        graph encoder6;
        input x: f32[B, S, 32];
        const HEADS = 4;
        const DH = 8;
        fn heads(t) = transpose(reshape(t, [B, S, HEADS, DH]), [0, 2, 1, 3]);
        fn merge(t) = reshape(transpose(t, [0, 2, 1, 3]), [B, S, 32]);
        let h = x;
        repeat 6 {
            param wq: f32[32, 32];
            param bq: f32[32];
            param wk: f32[32, 32];
            param bk: f32[32];
            param wv: f32[32, 32];
            param bv: f32[32];
            param wo: f32[32, 32];
            param bo: f32[32];
            param ln1_g: f32[32];
            param ln1_b: f32[32];
            param w1: f32[32, 64];
            param b1: f32[64];
            param w2: f32[64, 32];
            param b2: f32[32];
            param ln2_g: f32[32];
            param ln2_b: f32[32];
            let q = heads(h @ wq + bq);
            let k = heads(h @ wk + bk);
            let v = heads(h @ wv + bv);
            let p = softmax(q @ swapaxes(k, -1, -2) / DH ** 0.5, axis=-1);
            let a = layer_norm(h + merge(p @ v) @ wo + bo, ln1_g, ln1_b, eps=1e-12);
            let h = layer_norm(a + gelu(a @ w1 + b1) @ w2 + b2, ln2_g, ln2_b, eps=1e-12);
        }
        out h;
    };
    let errs = verify_all(&g);
    assert!(errs.is_empty(), "{errs:?}");
    let params = g.params();
    assert_eq!(params.len(), 6 * 16);
    assert_eq!(params[0].1, "layers.0.wq");
    assert_eq!(params[95].1, "layers.5.ln2_b");
    let out = g.shape(g.outputs()[0]);
    let want = [Dim::sym("B"), Dim::sym("S"), Dim::Static(32)];
    assert_eq!(out.dims(), &want);
}
