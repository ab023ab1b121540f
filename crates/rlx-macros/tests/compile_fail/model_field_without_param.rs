#[rlx_macros::rlx_model]
struct Mlp {
    #[param(shape = [4, 2])]
    w: rlx_tensor::Tensor,
    bias: rlx_tensor::Tensor,
}

fn main() {}
