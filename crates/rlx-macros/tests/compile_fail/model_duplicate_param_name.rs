#[rlx_macros::rlx_model]
struct Mlp {
    #[param(shape = [4, 2], name = "w")]
    w1: rlx_tensor::Tensor,
    #[param(shape = [2, 2], name = "w")]
    w2: rlx_tensor::Tensor,
}

fn main() {}
