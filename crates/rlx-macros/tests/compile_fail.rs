//! Every error class of `#[rlx_model]` and `pipeline_schedule!` is a
//! compile error with a message naming the problem at its span. The
//! expected errors are committed next to each case
//! (`tests/compile_fail/*.stderr`); `TRYBUILD=overwrite cargo test -p
//! rlx-macros --test compile_fail` rewrites them after a compiler upgrade
//! changes their wording (review the diff).

#[test]
fn macro_misuse_is_a_compile_error() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile_fail/*.rs");
}
