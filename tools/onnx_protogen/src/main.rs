//! Compiles `crates/rlx-onnx/proto/onnx.proto` with protox (pure Rust) and
//! writes prost types to `crates/rlx-onnx/src/proto/onnx.rs`.

use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crates/rlx-onnx");
    let proto_dir = root.join("proto");
    let out_dir = root.join("src/proto");
    std::fs::create_dir_all(&out_dir)?;
    let fds = protox::compile([proto_dir.join("onnx.proto")], [&proto_dir])?;
    prost_build::Config::new()
        .out_dir(&out_dir)
        // Tensor data as `Bytes`: decoded from a `Bytes` buffer it is a
        // slice of the file, shared with the imported constants (no copy).
        .bytes([".onnx.TensorProto.raw_data"])
        .compile_fds(fds)?;
    println!("wrote {}", out_dir.join("onnx.rs").display());
    Ok(())
}
