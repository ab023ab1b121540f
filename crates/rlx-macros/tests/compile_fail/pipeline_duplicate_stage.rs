rlx_macros::pipeline_schedule! {
    Twice {
        a => [],
        b => [a],
        a => [b],
    }
}

fn main() {}
