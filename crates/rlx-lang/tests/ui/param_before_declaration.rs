fn main() {
    let _g = rlx_lang::rlx! {
        graph g;
        input x: f32[B, 4];
        let h = x @ w;
        param w: f32[4, 4];
        out h;
    };
}
