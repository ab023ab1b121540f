//! Seeded mutations of the tiny GGUF's header and metadata through the
//! `llama_load` fuzz body: loading must return errors, never panic. (The
//! cargo-fuzz run is `tools/fuzz_llama.sh`.)

const GGUF: &[u8] = include_bytes!("fixtures/tiny_llama.gguf");

#[test]
fn mutated_headers_never_panic() {
    let data_start = rlx_gguf::GgufReader::new(GGUF)
        .unwrap()
        .content()
        .data_offset() as usize;
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..300 {
        let mut bytes = GGUF.to_vec();
        for _ in 0..1 + next() % 4 {
            let at = (next() as usize) % data_start;
            bytes[at] = match next() % 3 {
                0 => next() as u8,
                1 => bytes[at] ^ (1 << (next() % 8)),
                _ => 0xff,
            };
        }
        rlx_llama::fuzzing::load_and_run(&bytes);
    }
}
