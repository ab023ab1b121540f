//! `geo.delaunay` and `geo.voronoi_grid` as custom ops (rlx-ir's registry):
//! graph builders, shape rules and CPU kernels over the host functions.
//! Their outputs are integer labels, so they have no derivative rules (a
//! `grad` through them is refused naming the op).

use crate::{delaunay, delaunay_i64, voronoi_grid, VoronoiMode};
use rlx_ir::custom::{
    register_op, CustomAttr, CustomAttrs, CustomOp, KernelArg, KernelOut, OpExtension,
};
use rlx_ir::{Arity, DType, Graph, IrError, NodeId, Shape};

/// `geo.delaunay`: points `[n, 2]` (f32 / f64 / i32 / i64) → `[2n, 3]` I32
/// triangles, rows of `-1` after the last one.
pub const DELAUNAY: &str = "geo.delaunay";
/// `geo.voronoi_grid`: sites `[n, 2]` (f32 / f64) with attrs `width`,
/// `height`, `mode` (`"exact"` / `"jump_flood"`) → `[height, width]` I32.
pub const VORONOI_GRID: &str = "geo.voronoi_grid";

fn points_rows(s: &Shape, what: &str) -> Result<usize, String> {
    match s.static_dims().as_deref() {
        Some(&[n, 2]) => Ok(n),
        _ => Err(format!("{what} must be a static [n, 2] tensor, given {s}")),
    }
}

fn delaunay_shape(_: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    if !matches!(
        s[0].dtype(),
        DType::F32 | DType::F64 | DType::I32 | DType::I64
    ) {
        return Err(format!(
            "points must be f32 / f64 / i32 / i64, given {}",
            s[0]
        ));
    }
    let n = points_rows(s[0], "points")?;
    Ok(Shape::new(&[2 * n, 3], DType::I32))
}

fn mode(op: &CustomOp) -> Result<VoronoiMode, String> {
    match op.attrs.get("mode") {
        None => Ok(VoronoiMode::Exact),
        Some(CustomAttr::Str(m)) if m == "exact" => Ok(VoronoiMode::Exact),
        Some(CustomAttr::Str(m)) if m == "jump_flood" => Ok(VoronoiMode::JumpFlood),
        Some(other) => Err(format!(
            "mode must be \"exact\" or \"jump_flood\", given {other:?}"
        )),
    }
}

fn grid_size(op: &CustomOp) -> Result<(usize, usize), String> {
    let get = |k: &str| -> Result<usize, String> {
        let v = op.attrs.int_or(k, -1)?;
        usize::try_from(v).map_err(|_| format!("attr {k} must be a size >= 0, given {v}"))
    };
    Ok((get("width")?, get("height")?))
}

fn voronoi_shape(op: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    if !matches!(s[0].dtype(), DType::F32 | DType::F64) {
        return Err(format!("sites must be f32 / f64, given {}", s[0]));
    }
    points_rows(s[0], "sites")?;
    mode(op)?;
    let (w, h) = grid_size(op)?;
    Ok(Shape::new(&[h, w], DType::I32))
}

fn read_f64(a: &KernelArg) -> Result<Vec<[f64; 2]>, String> {
    let v: Vec<f64> = match a.dtype {
        DType::F64 => a
            .bytes
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            .collect(),
        DType::F32 => a
            .bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap_or([0; 4])) as f64)
            .collect(),
        d => return Err(format!("unsupported dtype {d}")),
    };
    Ok(v.chunks_exact(2).map(|p| [p[0], p[1]]).collect())
}

fn read_i64(a: &KernelArg) -> Result<Vec<[i64; 2]>, String> {
    let v: Vec<i64> = match a.dtype {
        DType::I64 => a
            .bytes
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            .collect(),
        DType::I32 => a
            .bytes
            .chunks_exact(4)
            .map(|b| i32::from_le_bytes(b.try_into().unwrap_or([0; 4])) as i64)
            .collect(),
        d => return Err(format!("unsupported dtype {d}")),
    };
    Ok(v.chunks_exact(2).map(|p| [p[0], p[1]]).collect())
}

fn write_i32(out: &mut KernelOut, v: &[i32]) -> Result<(), String> {
    if out.bytes.len() != v.len() * 4 {
        return Err(format!(
            "output holds {} bytes, the result {}",
            out.bytes.len(),
            v.len() * 4
        ));
    }
    out.bytes
        .chunks_exact_mut(4)
        .zip(v)
        .for_each(|(o, x)| o.copy_from_slice(&x.to_le_bytes()));
    Ok(())
}

fn delaunay_kernel(_: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    let t = match ins[0].dtype {
        DType::I32 | DType::I64 => delaunay_i64(&read_i64(&ins[0])?),
        _ => delaunay(&read_f64(&ins[0])?),
    }
    .map_err(|e| e.to_string())?;
    write_i32(out, &t.padded())
}

fn voronoi_kernel(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    let (w, h) = grid_size(op)?;
    let g = voronoi_grid(&read_f64(&ins[0])?, w, h, mode(op)?).map_err(|e| e.to_string())?;
    write_i32(out, &g)
}

/// Registers both ops (idempotent, thread-safe; the builders call it).
pub fn register() {
    let exts = [
        OpExtension::new(
            DELAUNAY,
            "exact 2D Delaunay triangles, [2n, 3] I32 padded with -1",
            Arity::exactly(1),
            delaunay_shape,
        )
        .with_kernel("cpu", delaunay_kernel),
        OpExtension::new(
            VORONOI_GRID,
            "nearest-site index of every grid pixel, [height, width] I32",
            Arity::exactly(1),
            voronoi_shape,
        )
        .with_kernel("cpu", voronoi_kernel),
    ];
    for e in exts {
        // A name registered twice keeps the first; both are ours.
        let _ = register_op(e);
    }
}

/// Adds `geo.delaunay(points)` to `g`.
pub fn delaunay_node(g: &mut Graph, points: NodeId) -> Result<NodeId, IrError> {
    register();
    g.custom(CustomOp::new(DELAUNAY, CustomAttrs::new()), &[points])
}

/// Adds `geo.voronoi_grid(sites)` over a `height × width` grid to `g`.
pub fn voronoi_grid_node(
    g: &mut Graph,
    sites: NodeId,
    width: usize,
    height: usize,
    mode: VoronoiMode,
) -> Result<NodeId, IrError> {
    register();
    let m = match mode {
        VoronoiMode::Exact => "exact",
        VoronoiMode::JumpFlood => "jump_flood",
    };
    let attrs = CustomAttrs::new()
        .with("width", CustomAttr::Int(width as i64))
        .with("height", CustomAttr::Int(height as i64))
        .with("mode", CustomAttr::Str(m.into()));
    g.custom(CustomOp::new(VORONOI_GRID, attrs), &[sites])
}
