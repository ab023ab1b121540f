//! Writes tests/fixtures/rust_written.gguf (or the path given), the file
//! tools/check_gguf_roundtrip.py reads back with gguf-py.
//!
//! `cargo run -p rlx-gguf --example write_fixture [-- PATH]`

#[path = "../tests/common/rust_fixture.rs"]
mod rust_fixture;

fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/rust_written.gguf"
        )
        .to_string()
    });
    let w = rust_fixture::build();
    w.write_file(&path).unwrap_or_else(|e| panic!("{e}"));
    println!("wrote {path} ({} tensors)", w.tensor_count());
}
