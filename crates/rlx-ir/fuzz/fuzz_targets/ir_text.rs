//! Fuzzes the textual-IR parser: parse arbitrary text; it must never panic,
//! and a text that parses must print (full form) to a text that parses back
//! to the same print.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rlx_ir::parse_graph;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(g) = parse_graph(text) else {
        return;
    };
    let printed = g.to_text();
    let again = parse_graph(&printed).expect("a printed graph parses");
    assert_eq!(again.to_text(), printed);
});
