//! The textual IR through the prelude: a graph written with `to_text` parses
//! back with `parse_graph`, and the parsed graph computes the same values as
//! a hand-written reference.

use rlx::prelude::*;

#[test]
fn text_round_trip_through_the_prelude_runs_like_the_reference() {
    let mut g = Graph::new("affine_relu");
    let x = g.input("x", Shape::new(&[2, 3], DType::F32));
    let w = g.param("w", Shape::new(&[3], DType::F32));
    let scaled = g.mul(x, w);
    let shifted = g.add(scaled, g.constant(-1.0, DType::F32));
    let y = g.relu(shifted);
    g.set_outputs(vec![y]);

    let text = g.to_text();
    let parsed = parse_graph(&text).expect("the printer's text parses");
    assert_eq!(
        parsed.to_text(),
        text,
        "print -> parse -> print is identical"
    );

    let xs = [1.0f32, -2.0, 3.0, 0.5, 4.0, -1.0];
    let ws = [2.0f32, 0.25, -1.0];
    let reference: Vec<f32> = xs
        .iter()
        .enumerate()
        .map(|(i, v)| (v * ws[i % 3] - 1.0).max(0.0))
        .collect();
    let mut compiled = Session::new(Device::Cpu).compile(parsed);
    compiled.set_param("w", &ws);
    assert_eq!(compiled.run(&[("x", &xs)]), vec![reference]);

    let err = parse_graph(&text[..text.len() / 2]).unwrap_err();
    assert!(
        !err.to_string().is_empty(),
        "a truncated text is an error: {err}"
    );
}
