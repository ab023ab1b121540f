rlx_macros::pipeline_schedule! {
    Selfish {
        a => [],
        b => [a, b],
    }
}

fn main() {}
