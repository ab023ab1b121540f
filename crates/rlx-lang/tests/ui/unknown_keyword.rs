fn main() {
    let _g = rlx_lang::rlx! {
        graph g;
        input x: f32[B, 4];
        out sum(x, dim=1);
    };
}
