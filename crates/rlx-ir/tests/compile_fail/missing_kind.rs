// An op table without an entry for every `OpKind` does not compile: a new
// `Op` / `OpKind` variant added without its table entry fails here (E0004).
use rlx_ir::op_table::{Arity, OpInfo, Rule};
use rlx_ir::OpKind;

rlx_ir::op_table! {
    fn info_of;
    const KINDS;

    Input => OpInfo { kind: OpKind::Input, name: "input", family: "leaf", summary: "a named graph input",
        arity: Arity::exactly(0), attrs: &[], composite: false, declared_shape: true,
        vjp: Rule::Leaf, jvp: Rule::Leaf, vmap: Rule::Leaf },
}

fn main() {
    let _ = (info_of(OpKind::Input), KINDS);
}
