//! Every `rlx!` error class is a compile error at the offending token;
//! the expected messages are committed next to each case (`ui/*.stderr`).
//! Regenerate after an intended message change with `TRYBUILD=overwrite`.

#[test]
fn compile_errors() {
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}
