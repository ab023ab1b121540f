use rlx_tensor::Tensor;

#[rlx_macros::rlx_model(crate = ::rlx_tensor)]
struct NoForward {
    #[param(shape = [4, 2])]
    w: Tensor,
}

impl NoForward {
    #[allow(dead_code)]
    fn forwrd(&self, x: &Tensor) -> Tensor {
        x.matmul(&self.w)
    }
}

fn main() {}
