fn main() {
    let _g = rlx_lang::rlx! {
        graph g;
        input x: f32[B, S, 16];
        param gamma: f32[32];
        out layer_norm(x, gamma);
    };
}
