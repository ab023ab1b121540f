// An op table entry must say how every transform treats the op: an entry
// without its vjp rule (a `Rule`, or an explicit `Rule::NotDifferentiable`
// with its reason) does not compile (E0063).
use rlx_ir::op_table::{Arity, OpInfo, Rule};
use rlx_ir::OpKind;

const NEW_OP: OpInfo = OpInfo {
    kind: OpKind::Unary,
    name: "my_op",
    family: "elementwise",
    summary: "an op added without its reverse-mode rule",
    arity: Arity::exactly(1),
    attrs: &[],
    composite: false,
    declared_shape: false,
    jvp: Rule::Own,
    vmap: Rule::Own,
};

fn main() {
    let _ = NEW_OP;
}
