//! The README's main job as a test: the digits MLP reaches >= 95% test
//! accuracy (the example itself fails below that).

#[path = "../examples/train_digits.rs"]
mod train_digits;

#[test]
fn digits_mlp_reaches_95_percent() {
    train_digits::main().unwrap();
}
