//! The seed's pattern-1 quickstart: build, compile and run a small graph.
//!
//! `cargo run -p rlx --example quickstart`
use rlx::prelude::*;

fn main() -> rlx::Result<()> {
    let mut g = Graph::new("hello");
    let x = g.input("x", Shape::new(&[1, 4], DType::F32));
    let w = g.param("w", Shape::new(&[4, 2], DType::F32));
    let y = g.matmul(x, w, Shape::new(&[1, 2], DType::F32));
    let scaled = g.mul(x, g.constant(2.0, DType::F32));
    g.set_outputs(vec![y, scaled]);
    println!("{g}");

    let mut compiled = Session::new(Device::Cpu).try_compile(g)?;
    compiled.try_set_param("w", &[1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0])?;
    let out = compiled.try_run(&[("x", &[1.0, 2.0, 3.0, 4.0])])?;
    println!("y = {}", list(&out[0]));
    println!("scaled = {}", list(&out[1]));
    Ok(())
}

/// `[4, 6]`: numbers as `Display` prints them (no trailing `.0`).
fn list(v: &[f32]) -> String {
    let items: Vec<String> = v.iter().map(f32::to_string).collect();
    format!("[{}]", items.join(", "))
}
