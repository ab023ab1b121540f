#[rlx_macros::rlx_model]
struct Mlp {
    #[param(name = "fc.weight")]
    w: rlx_tensor::Tensor,
}

fn main() {}
