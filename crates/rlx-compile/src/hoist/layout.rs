//! Param-only values that only move bytes: a reshape, a concat, a unit-step
//! slice of params (the stacked Q / K / V weights, the leading rows of a
//! position table). Such a value is its params' bytes in another order, so
//! the runtime can write each param's bytes straight to their place in it
//! when the param is set, instead of keeping the param and computing the
//! value in the prelude (which holds the bytes twice).

use rlx_ir::{Graph, NodeId, Op};
use std::ops::Range;

/// A run of bytes of one param.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Run {
    /// The param node.
    pub(crate) param: NodeId,
    /// Its bytes, in the param's row-major layout.
    pub(crate) bytes: Range<usize>,
}

/// Most runs a value may be assembled from; past it (a concat along an
/// inner axis of a tall matrix), the prelude computes it instead.
const MAX_RUNS: usize = 4096;

/// For each node, the param bytes its value is made of, in order, when it
/// only moves bytes of params (`None` otherwise). Only the nodes `wanted`
/// selects (and params) are looked at.
pub(crate) fn param_runs(g: &Graph, wanted: &[bool]) -> Vec<Option<Vec<Run>>> {
    let mut runs: Vec<Option<Vec<Run>>> = vec![None; g.len()];
    for id in g.ids() {
        let n = g.node(id);
        let out = if matches!(n.op, Op::Param { .. }) {
            n.shape.size_bytes().map(|len| {
                vec![Run {
                    param: id,
                    bytes: 0..len,
                }]
            })
        } else if wanted[id.index()] {
            let inputs: Option<Vec<&Vec<Run>>> =
                n.inputs.iter().map(|i| runs[i.index()].as_ref()).collect();
            inputs.and_then(|inputs| moved(g, id, &inputs))
        } else {
            None
        };
        runs[id.index()] = out.filter(|r| r.len() <= MAX_RUNS);
    }
    runs
}

/// The runs of node `id` from its inputs' runs, for the ops that only move bytes.
fn moved(g: &Graph, id: NodeId, inputs: &[&Vec<Run>]) -> Option<Vec<Run>> {
    let n = g.node(id);
    let elem = n.shape.dtype().size_bytes();
    let dims = n.shape.static_dims()?;
    match &n.op {
        Op::Reshape => Some(inputs[0].clone()),
        Op::Concat { axis } => {
            let outer: usize = dims[..*axis].iter().product();
            let chunks: Option<Vec<usize>> = n
                .inputs
                .iter()
                .map(|&i| {
                    let d = g.shape(i).static_dims()?;
                    Some(d[*axis..].iter().product::<usize>() * elem)
                })
                .collect();
            let chunks = chunks?;
            if outer.checked_mul(inputs.len())? > MAX_RUNS {
                return None;
            }
            let mut out = Vec::new();
            for o in 0..outer {
                for (runs, &chunk) in inputs.iter().zip(&chunks) {
                    append(&mut out, runs, o * chunk..(o + 1) * chunk);
                }
            }
            Some(out)
        }
        Op::Slice(spec) if spec.steps.iter().all(|&s| s == 1) => {
            let in_dims = g.shape(n.inputs[0]).static_dims()?;
            // Byte stride of each input axis.
            let mut stride = vec![elem; in_dims.len()];
            for a in (0..in_dims.len().saturating_sub(1)).rev() {
                stride[a] = stride[a + 1] * in_dims[a + 1];
            }
            // Axes after `j` are whole, so each index of the axes up to `j`
            // reads one contiguous run of `dims[j]` rows.
            let Some(j) = (0..dims.len()).rev().find(|&a| dims[a] != in_dims[a]) else {
                return Some(inputs[0].clone());
            };
            let len = dims[j] * stride[j];
            let outer: usize = dims[..j].iter().product();
            if outer > MAX_RUNS {
                return None;
            }
            let mut out = Vec::new();
            let mut index = vec![0usize; j];
            for _ in 0..outer {
                let start: usize = (0..=j)
                    .map(|a| (spec.starts[a] + index.get(a).copied().unwrap_or(0)) * stride[a])
                    .sum();
                append(&mut out, inputs[0], start..start + len);
                // Next outer index, last axis fastest.
                for a in (0..j).rev() {
                    index[a] += 1;
                    if index[a] < dims[a] {
                        break;
                    }
                    index[a] = 0;
                }
            }
            Some(out)
        }
        _ => None,
    }
}

/// Appends the bytes `range` of the value made of `runs`, merging a run
/// that continues the last one.
fn append(out: &mut Vec<Run>, runs: &[Run], range: Range<usize>) {
    let mut at = 0;
    for r in runs {
        let len = r.bytes.len();
        let (lo, hi) = (range.start.max(at), range.end.min(at + len));
        if lo < hi {
            let bytes = r.bytes.start + (lo - at)..r.bytes.start + (hi - at);
            match out.last_mut() {
                Some(last) if last.param == r.param && last.bytes.end == bytes.start => {
                    last.bytes.end = bytes.end
                }
                _ => out.push(Run {
                    param: r.param,
                    bytes,
                }),
            }
        }
        at += len;
        if at >= range.end {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlx_ir::{DType, GraphExt, Shape};

    fn f32s(dims: &[usize]) -> Shape {
        Shape::new(dims, DType::F32)
    }

    #[test]
    fn a_leading_axis_concat_is_each_param_whole_in_order() {
        let mut g = Graph::new("cat");
        let a = g.param("a", f32s(&[2, 3]));
        let b = g.param("b", f32s(&[1, 3]));
        let c = g.concat_(&[a, b], 0);
        let r = g.reshape_(c, &[9]);
        let runs = param_runs(&g, &[true; 4]);
        let want = vec![
            Run {
                param: a,
                bytes: 0..24,
            },
            Run {
                param: b,
                bytes: 0..12,
            },
        ];
        assert_eq!(runs[r.index()].as_ref(), Some(&want));
    }

    #[test]
    fn an_inner_axis_concat_interleaves_rows() {
        let mut g = Graph::new("cat1");
        let a = g.param("a", f32s(&[2, 1]));
        let b = g.param("b", f32s(&[2, 2]));
        let c = g.concat_(&[a, b], 1);
        let runs = param_runs(&g, &[true; 3]);
        let got: Vec<(NodeId, Range<usize>)> = runs[c.index()]
            .iter()
            .flatten()
            .map(|r| (r.param, r.bytes.clone()))
            .collect();
        assert_eq!(got, vec![(a, 0..4), (b, 0..8), (a, 4..8), (b, 8..16)]);
    }

    #[test]
    fn a_unit_step_slice_reads_one_run_per_outer_index() {
        let mut g = Graph::new("slice");
        let t = g.param("t", f32s(&[4, 3, 5]));
        // t[1:3, :, 2:4]: rows of 2 elements at (1, k, 2) and (2, k, 2).
        let s = g.narrow_(t, 0, 1, 2);
        let s = g.narrow_(s, 2, 2, 2);
        let lead = g.narrow_(t, 0, 0, 2);
        let strided = g.slice_(t, 0, 0, 4, 2);
        let runs = param_runs(&g, &vec![true; g.len()]);
        let got: Vec<Range<usize>> = runs[s.index()]
            .iter()
            .flatten()
            .map(|r| r.bytes.clone())
            .collect();
        let want: Vec<Range<usize>> = (1..3)
            .flat_map(|i| {
                (0..3).map(move |k| ((i * 15 + k * 5 + 2) * 4)..((i * 15 + k * 5 + 4) * 4))
            })
            .collect();
        assert_eq!(got, want);
        let lead_runs = runs[lead.index()].as_ref().unwrap();
        assert_eq!(lead_runs.len(), 1);
        assert_eq!(lead_runs[0].bytes, 0..2 * 15 * 4);
        assert!(runs[strided.index()].is_none(), "a step of 2 is computed");
    }

    #[test]
    fn computing_ops_are_not_moves() {
        let mut g = Graph::new("t");
        let a = g.param("a", f32s(&[2, 3]));
        let t = g.transpose_(a, &[1, 0]);
        let runs = param_runs(&g, &[true; 2]);
        assert!(runs[t.index()].is_none());
    }
}
