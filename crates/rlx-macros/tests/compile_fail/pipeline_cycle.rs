// load waits on store, which waits on compute, which waits on load.
rlx_macros::pipeline_schedule! {
    Loop {
        load    => [store],
        compute => [load],
        store   => [compute],
        report  => [],
    }
}

fn main() {}
