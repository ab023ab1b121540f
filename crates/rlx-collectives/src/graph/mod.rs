//! In-graph collectives: custom ops (`collectives.*`, see `rlx_ir::custom`)
//! that run a collective on a bound [`ProcessGroup`](crate::ProcessGroup)
//! when the compiled graph executes, with shape rules, textual IR and
//! derivative / batching rules, so `grad`, `jvp` and `vmap` of a
//! distributed graph are again distributed graphs.
//!
//! | builder | op | result on rank `r` | vjp (cotangent `c`) |
//! |---|---|---|---|
//! | [`all_reduce_op_mode`] | `all_reduce{group, kind, mode}` | reduction over ranks | sum / mean: same reduction of `c`; max / min: `c`'s sum routed to the ranks holding the extremum, split between ties |
//! | [`all_gather_op`] | `all_gather{group, axis, world}` | concatenation along `axis` in rank order | `reduce_scatter` (sum) of `c` |
//! | [`reduce_scatter_op`] | `reduce_scatter{group, axis, world, kind, mode}` | chunk `r` (along `axis`) of the reduction | sum: `all_gather` of `c`; mean: `all_gather(c) / world` |
//! | [`broadcast_op`] | `broadcast{group, root}` | `root`'s value | [`reduce_op`] (sum) of `c` to `root` |
//! | [`reduce_op`] | `reduce{group, root, kind, mode}` | reduction on `root`, zeros elsewhere | sum: `broadcast` of `c` from `root` |
//! | [`all_to_all_op`] | `all_to_all{group, split_axis, concat_axis, world}` | chunk `r` of every rank's split, concatenated | `all_to_all` with the axes swapped |
//! | [`ppermute_op`] | `ppermute{group, perm}` | the value of the rank that sends to `r` (zeros if none) | `ppermute` with the pairs reversed |
//! | [`megatron_f`] | `megatron_f{group}` | identity | all-reduce (sum) of `c` |
//! | [`megatron_g`] | `megatron_g{group}` | all-reduce (sum) | identity |
//! | [`send_op`] | `send{group, peer, tag}` | its input (sent to `peer`) | none (a named error) |
//! | [`recv_op`] | `recv{group, peer, tag, dims, dtype}` | what `peer` sent | none |
//!
//! Forward-mode rules are the ops themselves applied to the tangent (all are
//! linear), except max / min reductions (the tangent of the extremum,
//! averaged over ties). Batching rules run the op on the batched value with
//! the axes shifted by one. Element types: f16, f32, f64, i32 (no mean for i32).
//!
//! A graph names its group by [`GroupId`] (0 is the world); the kernel finds
//! the group in the [`GroupRegistry`](crate::GroupRegistry) bound with
//! [`bind_groups`] (this thread, e.g. one loopback rank per thread) or
//! [`bind_process_groups`] (the whole process, e.g. one MPI rank). Every rank
//! runs the same graph, so the collectives meet in the same order.
//!
//! ```
//! use rlx_collectives::{all_reduce_op_mode, GroupId, ReduceKind, ReduceMode};
//! use rlx_ir::{DType, Graph, Shape};
//! let mut g = Graph::new("dp");
//! let grad = g.input("grad", Shape::new(&[4], DType::F32));
//! let mean = all_reduce_op_mode(&mut g, grad, GroupId(0), ReduceKind::Mean, ReduceMode::Deterministic).unwrap();
//! assert_eq!(
//!     g.node(mean).op.mnemonic(),
//!     r#"custom.collectives.all_reduce{group=0, kind="mean", mode="deterministic"}"#
//! );
//! ```

mod attrs;
mod binding;
mod kernels;
mod layout;
mod rules;
mod shapes;

pub use binding::{bind_groups, bind_process_groups, unbind_process_groups, GroupsBinding};

use crate::collectives::{ReduceKind, ReduceMode};
use crate::group::GroupId;
use rlx_ir::custom::{register_op, CustomAttr, CustomAttrs, CustomOp, OpExtension};
use rlx_ir::{Arity, DType, Graph, IrError, NodeId};
use std::sync::Once;

/// `collectives.all_reduce`.
pub const ALL_REDUCE: &str = "collectives.all_reduce";
/// `collectives.all_gather`.
pub const ALL_GATHER: &str = "collectives.all_gather";
/// `collectives.reduce_scatter`.
pub const REDUCE_SCATTER: &str = "collectives.reduce_scatter";
/// `collectives.broadcast`.
pub const BROADCAST: &str = "collectives.broadcast";
/// `collectives.reduce`.
pub const REDUCE: &str = "collectives.reduce";
/// `collectives.all_to_all`.
pub const ALL_TO_ALL: &str = "collectives.all_to_all";
/// `collectives.ppermute`.
pub const PPERMUTE: &str = "collectives.ppermute";
/// `collectives.megatron_f`.
pub const MEGATRON_F: &str = "collectives.megatron_f";
/// `collectives.megatron_g`.
pub const MEGATRON_G: &str = "collectives.megatron_g";
/// `collectives.send`.
pub const SEND: &str = "collectives.send";
/// `collectives.recv`.
pub const RECV: &str = "collectives.recv";

/// Registers every `collectives.*` op with its CPU kernel and rules
/// (idempotent, thread-safe; every builder calls it).
pub fn register() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let exts = [
            OpExtension::new(
                ALL_REDUCE,
                "reduction over the ranks of a group (attrs group, kind, mode)",
                Arity::exactly(1),
                shapes::reduction,
            )
            .with_kernel("cpu", kernels::all_reduce)
            .with_vjp(rules::all_reduce_vjp)
            .with_jvp(rules::all_reduce_jvp)
            .with_vmap(rules::same_op_vmap),
            OpExtension::new(
                ALL_GATHER,
                "concatenation of every rank's value along an axis, in rank order",
                Arity::exactly(1),
                shapes::all_gather,
            )
            .with_kernel("cpu", kernels::all_gather)
            .with_vjp(rules::all_gather_vjp)
            .with_jvp(rules::linear_jvp)
            .with_vmap(rules::axis_op_vmap),
            OpExtension::new(
                REDUCE_SCATTER,
                "chunk `rank` (along an axis) of the reduction over the ranks",
                Arity::exactly(1),
                shapes::reduce_scatter,
            )
            .with_kernel("cpu", kernels::reduce_scatter)
            .with_vjp(rules::reduce_scatter_vjp)
            .with_jvp(rules::linear_reduction_jvp)
            .with_vmap(rules::axis_op_vmap),
            OpExtension::new(
                BROADCAST,
                "the root rank's value on every rank",
                Arity::exactly(1),
                shapes::same,
            )
            .with_kernel("cpu", kernels::broadcast)
            .with_vjp(rules::broadcast_vjp)
            .with_jvp(rules::linear_jvp)
            .with_vmap(rules::same_op_vmap),
            OpExtension::new(
                REDUCE,
                "the reduction over the ranks on the root rank, zeros elsewhere",
                Arity::exactly(1),
                shapes::reduction,
            )
            .with_kernel("cpu", kernels::reduce)
            .with_vjp(rules::reduce_vjp)
            .with_jvp(rules::linear_reduction_jvp)
            .with_vmap(rules::same_op_vmap),
            OpExtension::new(
                ALL_TO_ALL,
                "split along one axis, chunk j to rank j, concatenated along another",
                Arity::exactly(1),
                shapes::all_to_all,
            )
            .with_kernel("cpu", kernels::all_to_all)
            .with_vjp(rules::all_to_all_vjp)
            .with_jvp(rules::linear_jvp)
            .with_vmap(rules::axis_op_vmap),
            OpExtension::new(
                PPERMUTE,
                "collective permutation: (src, dst) pairs, zeros where nobody sends",
                Arity::exactly(1),
                shapes::same,
            )
            .with_kernel("cpu", kernels::ppermute)
            .with_vjp(rules::ppermute_vjp)
            .with_jvp(rules::linear_jvp)
            .with_vmap(rules::same_op_vmap),
            OpExtension::new(
                MEGATRON_F,
                "identity forward, all-reduce (sum) of the cotangent",
                Arity::exactly(1),
                shapes::same,
            )
            .with_kernel("cpu", kernels::identity)
            .with_vjp(rules::megatron_f_vjp)
            .with_jvp(rules::megatron_f_jvp)
            .with_vmap(rules::same_op_vmap),
            OpExtension::new(
                MEGATRON_G,
                "all-reduce (sum) forward, identity cotangent",
                Arity::exactly(1),
                shapes::same,
            )
            .with_kernel("cpu", kernels::megatron_g)
            .with_vjp(rules::megatron_g_vjp)
            .with_jvp(rules::megatron_g_jvp)
            .with_vmap(rules::same_op_vmap),
            OpExtension::new(
                SEND,
                "sends its input to a peer rank and passes it through",
                Arity::exactly(1),
                shapes::same,
            )
            .with_kernel("cpu", kernels::send),
            OpExtension::new(
                RECV,
                "receives a tensor (attrs dims, dtype) from a peer rank",
                Arity::exactly(0),
                shapes::recv,
            )
            .with_kernel("cpu", kernels::recv),
        ];
        for ext in exts {
            register_op(ext).expect("collectives op names are well formed");
        }
    });
}

fn int(v: usize) -> CustomAttr {
    CustomAttr::Int(v as i64)
}

fn group_attr(group: GroupId) -> CustomAttr {
    CustomAttr::Int(i64::from(group.0))
}

fn kind_attr(kind: ReduceKind) -> CustomAttr {
    CustomAttr::Str(kind.name().into())
}

fn mode_attr(mode: ReduceMode) -> CustomAttr {
    CustomAttr::Str(
        match mode {
            ReduceMode::Ring => "ring",
            ReduceMode::Deterministic => "deterministic",
        }
        .into(),
    )
}

fn build(g: &mut Graph, name: &str, attrs: CustomAttrs, x: &[NodeId]) -> Result<NodeId, IrError> {
    register();
    g.custom(CustomOp::new(name, attrs), x)
}

/// All-reduce of `x` over group `group` with [`ReduceMode::Ring`].
pub fn all_reduce_op(
    g: &mut Graph,
    x: NodeId,
    group: GroupId,
    kind: ReduceKind,
) -> Result<NodeId, IrError> {
    all_reduce_op_mode(g, x, group, kind, ReduceMode::Ring)
}

/// All-reduce of `x` over group `group` with an explicit [`ReduceMode`]
/// (`Deterministic` gives bitwise identical results whatever the transport
/// and arrival order).
pub fn all_reduce_op_mode(
    g: &mut Graph,
    x: NodeId,
    group: GroupId,
    kind: ReduceKind,
    mode: ReduceMode,
) -> Result<NodeId, IrError> {
    let attrs = CustomAttrs::new()
        .with("group", group_attr(group))
        .with("kind", kind_attr(kind))
        .with("mode", mode_attr(mode));
    build(g, ALL_REDUCE, attrs, &[x])
}

/// Concatenation of every rank's `x` along `axis` (rank order); `world` is
/// the group's size (checked when the graph runs), so the shape is static.
pub fn all_gather_op(
    g: &mut Graph,
    x: NodeId,
    group: GroupId,
    axis: usize,
    world: usize,
) -> Result<NodeId, IrError> {
    let attrs = CustomAttrs::new()
        .with("group", group_attr(group))
        .with("axis", int(axis))
        .with("world", int(world));
    build(g, ALL_GATHER, attrs, &[x])
}

/// Reduces `x` over the group and keeps this rank's chunk along `axis`
/// (whose length must be a multiple of `world`).
pub fn reduce_scatter_op(
    g: &mut Graph,
    x: NodeId,
    group: GroupId,
    axis: usize,
    world: usize,
    kind: ReduceKind,
    mode: ReduceMode,
) -> Result<NodeId, IrError> {
    let attrs = CustomAttrs::new()
        .with("group", group_attr(group))
        .with("axis", int(axis))
        .with("world", int(world))
        .with("kind", kind_attr(kind))
        .with("mode", mode_attr(mode));
    build(g, REDUCE_SCATTER, attrs, &[x])
}

/// Rank `root`'s `x` on every rank.
pub fn broadcast_op(
    g: &mut Graph,
    x: NodeId,
    group: GroupId,
    root: usize,
) -> Result<NodeId, IrError> {
    let attrs = CustomAttrs::new()
        .with("group", group_attr(group))
        .with("root", int(root));
    build(g, BROADCAST, attrs, &[x])
}

/// The reduction of `x` over the group on rank `root`; zeros on the others.
pub fn reduce_op(
    g: &mut Graph,
    x: NodeId,
    group: GroupId,
    root: usize,
    kind: ReduceKind,
    mode: ReduceMode,
) -> Result<NodeId, IrError> {
    let attrs = CustomAttrs::new()
        .with("group", group_attr(group))
        .with("root", int(root))
        .with("kind", kind_attr(kind))
        .with("mode", mode_attr(mode));
    build(g, REDUCE, attrs, &[x])
}

/// JAX's `all_to_all`: splits `x` into `world` chunks along `split_axis`,
/// sends chunk `j` to rank `j`, and concatenates what arrives along
/// `concat_axis` in rank order.
pub fn all_to_all_op(
    g: &mut Graph,
    x: NodeId,
    group: GroupId,
    split_axis: usize,
    concat_axis: usize,
    world: usize,
) -> Result<NodeId, IrError> {
    let attrs = CustomAttrs::new()
        .with("group", group_attr(group))
        .with("split_axis", int(split_axis))
        .with("concat_axis", int(concat_axis))
        .with("world", int(world));
    build(g, ALL_TO_ALL, attrs, &[x])
}

/// JAX's `ppermute`: for each `(src, dst)`, rank `src`'s `x` becomes rank
/// `dst`'s result; a rank nobody sends to gets zeros.
pub fn ppermute_op(
    g: &mut Graph,
    x: NodeId,
    group: GroupId,
    perm: &[(usize, usize)],
) -> Result<NodeId, IrError> {
    let flat = perm
        .iter()
        .flat_map(|&(s, d)| [s as i64, d as i64])
        .collect();
    let attrs = CustomAttrs::new()
        .with("group", group_attr(group))
        .with("perm", CustomAttr::Ints(flat));
    build(g, PPERMUTE, attrs, &[x])
}

/// Megatron's `f`: identity forward, all-reduce (sum) of the cotangent
/// (enters a tensor-parallel region).
pub fn megatron_f(g: &mut Graph, x: NodeId, group: GroupId) -> Result<NodeId, IrError> {
    build(
        g,
        MEGATRON_F,
        CustomAttrs::new().with("group", group_attr(group)),
        &[x],
    )
}

/// Megatron's `g`: all-reduce (sum) forward, identity cotangent (leaves a
/// tensor-parallel region).
pub fn megatron_g(g: &mut Graph, x: NodeId, group: GroupId) -> Result<NodeId, IrError> {
    build(
        g,
        MEGATRON_G,
        CustomAttrs::new().with("group", group_attr(group)),
        &[x],
    )
}

/// Sends `x` to rank `peer` with user tag `tag`; the result is `x` itself,
/// so keep it (e.g. as an output) for the send to stay in the graph.
pub fn send_op(
    g: &mut Graph,
    x: NodeId,
    group: GroupId,
    peer: usize,
    tag: u32,
) -> Result<NodeId, IrError> {
    let attrs = CustomAttrs::new()
        .with("group", group_attr(group))
        .with("peer", int(peer))
        .with("tag", CustomAttr::Int(i64::from(tag)));
    build(g, SEND, attrs, &[x])
}

/// Receives a `dims`-shaped `dtype` tensor sent by rank `peer` with user tag `tag`.
pub fn recv_op(
    g: &mut Graph,
    group: GroupId,
    peer: usize,
    tag: u32,
    dims: &[usize],
    dtype: DType,
) -> Result<NodeId, IrError> {
    let attrs = CustomAttrs::new()
        .with("group", group_attr(group))
        .with("peer", int(peer))
        .with("tag", CustomAttr::Int(i64::from(tag)))
        .with(
            "dims",
            CustomAttr::Ints(dims.iter().map(|&d| d as i64).collect()),
        )
        .with("dtype", CustomAttr::Str(dtype.to_string()));
    build(g, RECV, attrs, &[])
}
