fn main() {
    let _g = rlx_lang::rlx! {
        graph g;
        input x: f32[B, 4];
        let h = x;
        repeat 2 {
            param w: f32[4, 4] as "shared.w";
            let h = h @ w;
        }
        out h;
    };
}
