#[rlx_macros::rlx_model]
struct Mlp {
    #[param(shape = 784)]
    w: rlx_tensor::Tensor,
}

fn main() {}
