fn main() {
    let _g = rlx_lang::rlx! {
        graph g;
        input x: f32[B, 4];
        param w: f32[4, 4];
        param w: f32[4, 8];
        out x @ w;
    };
}
