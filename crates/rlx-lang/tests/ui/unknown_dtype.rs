fn main() {
    let _g = rlx_lang::rlx! {
        graph g;
        input x: float[B, 4];
        out x;
    };
}
