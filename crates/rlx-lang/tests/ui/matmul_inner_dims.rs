fn main() {
    let _g = rlx_lang::rlx! {
        graph mlp;
        input x: f32[B, 784];
        param w1: f32[784, 128];
        param w2: f32[64, 10];
        let h = relu(x @ w1);
        out h @ w2;
    };
}
