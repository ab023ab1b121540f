#[rlx_macros::rlx_model]
struct Mlp {
    #[param(shape = [4, 2], init = zeros)]
    w: rlx_tensor::Tensor,
}

fn main() {}
