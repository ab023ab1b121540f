//! Fuzzes saved optimizer states: parse arbitrary bytes as an `OptimState`;
//! when they parse, load them into every optimizer and step each small
//! parameter they name. Must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/common/hostile.rs"]
mod hostile;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        hostile::exercise(text, &mut hostile::Reached::default());
    }
});
