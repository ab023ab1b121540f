#[rlx_macros::rlx_model]
fn mlp(x: f32) -> f32 {
    x
}

fn main() {}
