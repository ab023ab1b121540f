//! CPU kernels: read the input bytes, run the host collective on the bound
//! group, write the result.

use super::{attrs, binding, layout};
use crate::collectives as host;
use crate::collectives::ReduceKind;
use crate::element::Element;
use crate::error::CollectiveError;
use crate::group::ProcessGroup;
use crate::ReduceMode;
use half::f16;
use rlx_ir::custom::{CustomOp, KernelArg, KernelOut};
use rlx_ir::DType;
use std::sync::Arc;

type KResult = Result<(), String>;

macro_rules! by_dtype {
    ($dtype:expr, $f:ident ( $($a:expr),* )) => {
        match $dtype {
            DType::F16 => $f::<f16>($($a),*),
            DType::F32 => $f::<f32>($($a),*),
            DType::F64 => $f::<f64>($($a),*),
            DType::I32 => $f::<i32>($($a),*),
            other => Err(format!("dtype {other} is not supported by collectives")),
        }
    };
}

fn read<T: Element>(b: &[u8]) -> Vec<T> {
    b.chunks_exact(T::SIZE).map(T::get).collect()
}

fn write<T: Element>(v: &[T], out: &mut KernelOut) -> KResult {
    let mut buf = Vec::with_capacity(v.len() * T::SIZE);
    for &x in v {
        x.put(&mut buf);
    }
    if buf.len() != out.bytes.len() {
        return Err(format!(
            "the collective returned {} elements, the output {:?} holds {}",
            v.len(),
            out.dims,
            out.bytes.len() / T::SIZE
        ));
    }
    out.bytes.copy_from_slice(&buf);
    Ok(())
}

fn err(e: CollectiveError) -> String {
    e.to_string()
}

fn group(op: &CustomOp) -> Result<Arc<dyn ProcessGroup>, String> {
    binding::lookup(attrs::group(op)?)
}

/// The group, checked to have the `world` size the op's shape was built for.
fn sized_group(op: &CustomOp) -> Result<(Arc<dyn ProcessGroup>, usize), String> {
    let pg = group(op)?;
    let world = attrs::count(op, "world")?;
    if pg.world_size() != world {
        return Err(format!(
            "group {} has {} ranks, the op was built for world = {world}",
            pg.group_id().0,
            pg.world_size()
        ));
    }
    Ok((pg, world))
}

fn input<'a>(ins: &'a [KernelArg<'a>]) -> Result<&'a KernelArg<'a>, String> {
    ins.first().ok_or_else(|| "expected one input".to_string())
}

pub(crate) fn all_reduce(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> KResult {
    by_dtype!(out.dtype, all_reduce_t(op, ins, out))
}

fn all_reduce_t<T: Element>(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> KResult {
    let pg = group(op)?;
    let x = read::<T>(input(ins)?.bytes);
    let r = host::all_reduce(&*pg, &x, attrs::kind(op)?, attrs::mode(op)?).map_err(err)?;
    write(&r, out)
}

pub(crate) fn reduce(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> KResult {
    by_dtype!(out.dtype, reduce_t(op, ins, out))
}

fn reduce_t<T: Element>(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> KResult {
    let pg = group(op)?;
    let root = attrs::count(op, "root")?;
    if root >= pg.world_size() {
        return Err(err(CollectiveError::InvalidRank {
            rank: root,
            world: pg.world_size(),
        }));
    }
    let x = read::<T>(input(ins)?.bytes);
    let mut r = host::all_reduce(&*pg, &x, attrs::kind(op)?, attrs::mode(op)?).map_err(err)?;
    if pg.rank() != root {
        r.iter_mut().for_each(|v| *v = T::ZERO);
    }
    write(&r, out)
}

pub(crate) fn megatron_g(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> KResult {
    by_dtype!(out.dtype, megatron_g_t(op, ins, out))
}

fn megatron_g_t<T: Element>(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> KResult {
    let pg = group(op)?;
    let x = read::<T>(input(ins)?.bytes);
    let r = host::all_reduce(&*pg, &x, ReduceKind::Sum, ReduceMode::Ring).map_err(err)?;
    write(&r, out)
}

pub(crate) fn all_gather(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> KResult {
    by_dtype!(out.dtype, all_gather_t(op, ins, out))
}

fn all_gather_t<T: Element>(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> KResult {
    let (pg, n) = sized_group(op)?;
    let x = input(ins)?;
    let (outer, c, inner) = layout::around(x.dims, attrs::count(op, "axis")?);
    let gathered = host::all_gather(&*pg, &read::<T>(x.bytes)).map_err(err)?;
    write(&layout::join_blocks(&gathered, outer, n, c, inner), out)
}

pub(crate) fn reduce_scatter(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> KResult {
    by_dtype!(out.dtype, reduce_scatter_t(op, ins, out))
}

fn reduce_scatter_t<T: Element>(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> KResult {
    let (pg, n) = sized_group(op)?;
    let x = input(ins)?;
    let (outer, len, inner) = layout::around(x.dims, attrs::count(op, "axis")?);
    let blocks = layout::split_blocks(&read::<T>(x.bytes), outer, n, len / n, inner);
    let r = host::reduce_scatter(&*pg, &blocks, attrs::kind(op)?, attrs::mode(op)?).map_err(err)?;
    write(&r, out)
}

pub(crate) fn all_to_all(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> KResult {
    by_dtype!(out.dtype, all_to_all_t(op, ins, out))
}

fn all_to_all_t<T: Element>(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> KResult {
    let (pg, n) = sized_group(op)?;
    let x = input(ins)?;
    let (split, concat) = (
        attrs::count(op, "split_axis")?,
        attrs::count(op, "concat_axis")?,
    );
    let (outer, len, inner) = layout::around(x.dims, split);
    let blocks = layout::split_blocks(&read::<T>(x.bytes), outer, n, len / n, inner);
    let got = host::all_to_all(&*pg, &blocks).map_err(err)?;
    let mut chunk = x.dims.to_vec();
    chunk[split] /= n;
    let (outer, c, inner) = layout::around(&chunk, concat);
    write(&layout::join_blocks(&got, outer, n, c, inner), out)
}

pub(crate) fn broadcast(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> KResult {
    by_dtype!(out.dtype, broadcast_t(op, ins, out))
}

fn broadcast_t<T: Element>(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> KResult {
    let pg = group(op)?;
    let x = read::<T>(input(ins)?.bytes);
    let r = host::broadcast(&*pg, &x, attrs::count(op, "root")?).map_err(err)?;
    write(&r, out)
}

pub(crate) fn ppermute(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> KResult {
    by_dtype!(out.dtype, ppermute_t(op, ins, out))
}

fn ppermute_t<T: Element>(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> KResult {
    let pg = group(op)?;
    let x = read::<T>(input(ins)?.bytes);
    let r = host::ppermute(&*pg, &x, &attrs::perm(op)?).map_err(err)?;
    write(&r, out)
}

pub(crate) fn identity(_: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> KResult {
    out.bytes.copy_from_slice(input(ins)?.bytes);
    Ok(())
}

fn tag(op: &CustomOp) -> Result<u32, String> {
    let t = attrs::count(op, "tag")?;
    u32::try_from(t).map_err(|_| format!("attribute `tag` = {t} does not fit in u32"))
}

pub(crate) fn send(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> KResult {
    by_dtype!(out.dtype, send_t(op, ins, out))
}

fn send_t<T: Element>(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> KResult {
    let pg = group(op)?;
    let x = input(ins)?;
    host::send(
        &*pg,
        attrs::count(op, "peer")?,
        tag(op)?,
        &read::<T>(x.bytes),
    )
    .map_err(err)?;
    out.bytes.copy_from_slice(x.bytes);
    Ok(())
}

pub(crate) fn recv(op: &CustomOp, _: &[KernelArg], out: &mut KernelOut) -> KResult {
    by_dtype!(out.dtype, recv_t(op, out))
}

fn recv_t<T: Element>(op: &CustomOp, out: &mut KernelOut) -> KResult {
    let pg = group(op)?;
    let got = host::recv::<T>(&*pg, attrs::count(op, "peer")?, tag(op)?).map_err(err)?;
    write(&got, out)
}
