#[rlx_macros::rlx_model]
struct Mlp(rlx_tensor::Tensor);

fn main() {}
