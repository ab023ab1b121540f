fn main() {
    let _g = rlx_lang::rlx! {
        graph g;
        input a: f32[B, 4];
        input b: f32[S, 4];
        out a * b;
    };
}
