//! The op table is enforced by the compiler: a kind without an entry, or an
//! entry without a rule for each transform, is a compile error. The expected
//! errors are committed next to each case (`tests/compile_fail/*.stderr`);
//! `TRYBUILD=overwrite cargo test -p rlx-ir --test op_table_compile_fail`
//! rewrites them after a compiler upgrade changes their wording.

#[test]
fn op_table_entries_and_rules_are_enforced() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile_fail/*.rs");
}
