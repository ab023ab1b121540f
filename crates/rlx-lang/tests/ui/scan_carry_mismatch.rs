fn main() {
    let _g = rlx_lang::rlx! {
        graph g;
        input h0: f32[3];
        input xs: f32[5, 3];
        let (h, hs) = scan(h0, xs) |h, x| {
            let s = h * x;
            (sum(s), s)
        };
        out h;
    };
}
