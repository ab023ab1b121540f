//! Fuzzes model and tokenizer loading from a GGUF file: when the bytes
//! parse, build the config, the tokenizer (and encode / decode a string),
//! the model, and run one token. Must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rlx_llama::fuzzing::load_and_run(data));
