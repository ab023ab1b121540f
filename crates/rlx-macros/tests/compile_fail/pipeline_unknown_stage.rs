rlx_macros::pipeline_schedule! {
    Attention {
        q_proj  => [],
        scores  => [q_proj, k_proj],
    }
}

fn main() {}
