//! The LoRA example as a test: adapters trained on all ten digits lift a
//! model pretrained on 0-6 from ~67% to >= 90% while its base weights stay
//! frozen (checked inside the example), and the adapter saved in PEFT's
//! format loads back.
#![cfg(all(feature = "peft", feature = "optim"))]

#[path = "../examples/lora_digits.rs"]
mod lora_digits;

#[test]
fn lora_adapts_a_pretrained_mlp_to_new_classes() {
    let (pre_a, pre_b, lora_b, lora_a) = lora_digits::run().unwrap();
    assert!(pre_a >= 0.95, "pretraining on 0-6: {pre_a}");
    assert!(pre_b <= 0.75, "the base model cannot know 7-9: {pre_b}");
    assert!(lora_b >= 0.9, "after LoRA on all digits: {lora_b}");
    assert!(lora_a >= 0.9, "digits 0-6 after LoRA: {lora_a}");
}
