fn main() {
    let _g = rlx_lang::rlx! {
        graph g;
        input x: f32[B, 6];
        out reshape(x, [B, 4]);
    };
}
