//! `umap.knn` as a custom op (rlx-ir's registry): exact k nearest
//! neighbours inside a compiled graph, with a CPU kernel over [`knn_query`].
//!
//! Inputs: `data [n, d]` alone (each row's neighbours among the rows,
//! itself included) or `queries [m, d], data [n, d]`; f32 or f64. Attrs:
//! `k`, `output` (0: indices, 1: euclidean distances) and for the indices
//! `index_dtype` (`"i32"` / `"i64"`). The distances have the input's dtype.
//! With attr `source = "distances"` the one input is a pairwise distance
//! matrix `[m, n]` and each row's `k` smallest entries are selected.
//! The outputs are a selection, so there is no derivative rule (a `grad`
//! through the op is refused naming it).

use crate::{knn_from_distances, knn_query};
use rlx_ir::custom::{
    register_op, CustomAttr, CustomAttrs, CustomOp, KernelArg, KernelOut, OpExtension,
};
use rlx_ir::{Arity, DType, Graph, IrError, NodeId, Shape};

/// The op's registered name.
pub const KNN: &str = "umap.knn";

/// Which of the two results a `umap.knn` node yields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnnOutput {
    /// Neighbour indices, nearest first (ties: smaller index first).
    Indices,
    /// Euclidean distances in the same order.
    Distances,
}

fn matrix_dims(s: &Shape, what: &str) -> Result<(usize, usize), String> {
    if !matches!(s.dtype(), DType::F32 | DType::F64) {
        return Err(format!("{what} must be f32 / f64, given {s}"));
    }
    match s.static_dims().as_deref() {
        Some(&[n, d]) => Ok((n, d)),
        _ => Err(format!(
            "{what} must be a static [rows, features] tensor, given {s}"
        )),
    }
}

fn output_of(op: &CustomOp) -> Result<KnnOutput, String> {
    match op.attrs.int_or("output", 0)? {
        0 => Ok(KnnOutput::Indices),
        1 => Ok(KnnOutput::Distances),
        o => Err(format!(
            "attr output must be 0 (indices) or 1 (distances), given {o}"
        )),
    }
}

fn index_dtype(op: &CustomOp) -> Result<DType, String> {
    match op.attrs.get("index_dtype") {
        None => Ok(DType::I64),
        Some(CustomAttr::Str(s)) if s == "i64" => Ok(DType::I64),
        Some(CustomAttr::Str(s)) if s == "i32" => Ok(DType::I32),
        Some(other) => Err(format!(
            "attr index_dtype must be \"i32\" or \"i64\", given {other:?}"
        )),
    }
}

/// Whether the input is a precomputed distance matrix.
fn from_distances(op: &CustomOp) -> Result<bool, String> {
    match op.attrs.get("source") {
        None => Ok(false),
        Some(CustomAttr::Str(s)) if s == "points" => Ok(false),
        Some(CustomAttr::Str(s)) if s == "distances" => Ok(true),
        Some(other) => Err(format!(
            "attr source must be \"points\" or \"distances\", given {other:?}"
        )),
    }
}

fn knn_shape(op: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    if from_distances(op)? && s.len() != 1 {
        return Err(format!("a distance matrix is one input, given {}", s.len()));
    }
    let data = s[s.len() - 1];
    let (n, d) = matrix_dims(data, "data")?;
    let (m, n) = if from_distances(op)? {
        (n, d)
    } else if s.len() == 2 {
        let (m, dq) = matrix_dims(s[0], "queries")?;
        if dq != d || s[0].dtype() != data.dtype() {
            return Err(format!(
                "queries {} and data {data} differ in features or dtype",
                s[0]
            ));
        }
        (m, n)
    } else {
        (n, n)
    };
    let k = op.attrs.int_or("k", -1)?;
    if k < 1 || k as usize > n {
        return Err(format!(
            "attr k must be in 1..={n} (the candidates per row), given {k}"
        ));
    }
    let dtype = match output_of(op)? {
        KnnOutput::Indices => index_dtype(op)?,
        KnnOutput::Distances => data.dtype(),
    };
    Ok(Shape::new(&[m, k as usize], dtype))
}

fn read(a: &KernelArg) -> Result<Vec<f64>, String> {
    match a.dtype {
        DType::F64 => Ok(a
            .bytes
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            .collect()),
        DType::F32 => Ok(a
            .bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap_or([0; 4])) as f64)
            .collect()),
        d => Err(format!("unsupported dtype {d}")),
    }
}

fn knn_kernel(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    let data = &ins[ins.len() - 1];
    let d = data.dims[1];
    let k = op.attrs.int_or("k", -1)? as usize;
    let points = read(data)?;
    let r = if from_distances(op)? {
        knn_from_distances(&points, d, k)
    } else if ins.len() == 2 {
        knn_query(&read(&ins[0])?, &points, d, k)
    } else {
        knn_query(&points, &points, d, k)
    }
    .map_err(|e| e.to_string())?;
    let bytes: Vec<u8> = match (output_of(op)?, out.dtype) {
        (KnnOutput::Indices, DType::I32) => {
            let too_big = r.indices.iter().any(|&i| i > i32::MAX as usize);
            if too_big {
                return Err("indices exceed i32; use index_dtype \"i64\"".into());
            }
            r.indices
                .iter()
                .flat_map(|&i| (i as i32).to_le_bytes())
                .collect()
        }
        (KnnOutput::Indices, _) => r
            .indices
            .iter()
            .flat_map(|&i| (i as i64).to_le_bytes())
            .collect(),
        (KnnOutput::Distances, DType::F32) => r
            .distances
            .iter()
            .flat_map(|&v| (v as f32).to_le_bytes())
            .collect(),
        (KnnOutput::Distances, _) => r.distances.iter().flat_map(|v| v.to_le_bytes()).collect(),
    };
    if bytes.len() != out.bytes.len() {
        return Err(format!(
            "output holds {} bytes, the result {}",
            out.bytes.len(),
            bytes.len()
        ));
    }
    out.bytes.copy_from_slice(&bytes);
    Ok(())
}

/// Registers `umap.knn` (idempotent, thread-safe; the builders call it).
pub fn register() {
    let ext = OpExtension::new(
        KNN,
        "exact k nearest neighbours (euclidean), ties by index: indices or distances [m, k]",
        Arity::range(1, 2),
        knn_shape,
    )
    .with_kernel("cpu", knn_kernel);
    // A name registered twice keeps the first; it is ours.
    let _ = register_op(ext);
}

fn node(
    g: &mut Graph,
    inputs: &[NodeId],
    k: usize,
    output: KnnOutput,
    index_dtype: DType,
    input: &str,
) -> Result<NodeId, IrError> {
    register();
    let mut attrs = CustomAttrs::new()
        .with("k", CustomAttr::Int(k as i64))
        .with("source", CustomAttr::Str(input.into()));
    attrs = match output {
        KnnOutput::Indices => {
            let t = if index_dtype == DType::I32 {
                "i32"
            } else {
                "i64"
            };
            attrs
                .with("output", CustomAttr::Int(0))
                .with("index_dtype", CustomAttr::Str(t.into()))
        }
        KnnOutput::Distances => attrs.with("output", CustomAttr::Int(1)),
    };
    g.custom(CustomOp::new(KNN, attrs), inputs)
}

/// `(indices, distances)` of the `k` rows of `data` nearest to each row of
/// `data`; `index_dtype` is `DType::I32` or `DType::I64` (anything else
/// means I64).
pub fn knn_node(
    g: &mut Graph,
    data: NodeId,
    k: usize,
    index_dtype: DType,
) -> Result<(NodeId, NodeId), IrError> {
    let i = node(g, &[data], k, KnnOutput::Indices, index_dtype, "points")?;
    let d = node(g, &[data], k, KnnOutput::Distances, index_dtype, "points")?;
    Ok((i, d))
}

/// `(indices, distances)` of the `k` rows of `data` nearest to each row of
/// `queries`.
pub fn knn_query_node(
    g: &mut Graph,
    queries: NodeId,
    data: NodeId,
    k: usize,
    index_dtype: DType,
) -> Result<(NodeId, NodeId), IrError> {
    let i = node(
        g,
        &[queries, data],
        k,
        KnnOutput::Indices,
        index_dtype,
        "points",
    )?;
    let d = node(
        g,
        &[queries, data],
        k,
        KnnOutput::Distances,
        index_dtype,
        "points",
    )?;
    Ok((i, d))
}

/// `(indices, distances)` of the `k` smallest entries of each row of the
/// pairwise distance matrix `distances` (`[m, n]`).
pub fn knn_from_distances_node(
    g: &mut Graph,
    distances: NodeId,
    k: usize,
    index_dtype: DType,
) -> Result<(NodeId, NodeId), IrError> {
    let i = node(
        g,
        &[distances],
        k,
        KnnOutput::Indices,
        index_dtype,
        "distances",
    )?;
    let d = node(
        g,
        &[distances],
        k,
        KnnOutput::Distances,
        index_dtype,
        "distances",
    )?;
    Ok((i, d))
}
