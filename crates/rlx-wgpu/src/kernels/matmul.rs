//! Matmul kernels (numpy semantics, and a fused matmul's epilogue applied
//! before the store): f32 results, and f16 ones with rows of even length,
//! as register-blocked tiles staged in workgroup memory; the rest one
//! thread per output.

use super::region::{self, RegionInput};
use super::{is_float, Kernel, NodeCtx};
use crate::wgsl::{broadcast_strides, coords, dot, store_fn, Half, HELPERS, MAX_GROUPS};
use rlx_ir::op::ChainStep;
use rlx_ir::DType;
use std::fmt::Write;

/// numpy matmul (batch dims broadcast, rank-1 operands promoted), then the
/// elementwise `epilogue` of a fused matmul (none for a plain one) applied
/// to each result before it is stored.
pub(super) fn matmul(cx: &NodeCtx, epilogue: &[ChainStep]) -> Result<Kernel, String> {
    let (a, b) = (&cx.inputs[0], &cx.inputs[1]);
    let ad = if a.dims.len() == 1 {
        vec![1, a.dims[0]]
    } else {
        a.dims.clone()
    };
    let bd = if b.dims.len() == 1 {
        vec![b.dims[0], 1]
    } else {
        b.dims.clone()
    };
    let (m, k) = (ad[ad.len() - 2], ad[ad.len() - 1]);
    let n = bd[bd.len() - 1];
    // The output's dims minus the matrix dims a rank-1 operand did not squeeze.
    let mut batch = cx.out.dims.clone();
    batch.truncate(batch.len() - (a.dims.len() > 1) as usize - (b.dims.len() > 1) as usize);
    let mut virt = batch.clone();
    virt.extend([m, n]);
    let nb = batch.len();
    let sa = broadcast_strides(&ad[..ad.len() - 2], &batch);
    let sb = broadcast_strides(&bd[..bd.len() - 2], &batch);
    let batches: usize = batch.iter().product();
    // `epi(i, acc)`: the epilogue at output element `i`; region input 0 is
    // the product, input `j >= 1` the node's input `j + 1`.
    let product = match (cx.out.dtype, cx.half) {
        (DType::F16, Half::Native) => "f16(acc)",
        // Rounded as the unfused matmul's store would, before an epilogue.
        (DType::F16, Half::Packed) if !epilogue.is_empty() => "quantizeToF16(acc)",
        _ => "acc",
    };
    let (epi, stored) = if epilogue.is_empty() {
        (String::new(), product.to_string())
    } else {
        let inputs: Vec<RegionInput> = std::iter::once(RegionInput::Arg(cx.out.dtype))
            .chain(
                cx.inputs[2..]
                    .iter()
                    .enumerate()
                    .map(|(j, x)| RegionInput::Load(j + 2, x)),
            )
            .collect();
        let f = region::region_fn("epi", epilogue, &inputs, &cx.out.dims, cx.half)?;
        (f, format!("epi(OUT, {product})"))
    };
    // f16 results are stored a word (two columns) at a time: an even row
    // length keeps each thread's column pairs in whole words.
    let tiles = cx.out.dtype == DType::F32 || (cx.out.dtype == DType::F16 && n % 2 == 0);
    if tiles
        && batches as u64 <= MAX_GROUPS
        && m.div_ceil(TILE) as u64 <= MAX_GROUPS
        && n.div_ceil(TILE) as u64 <= MAX_GROUPS
    {
        return Ok(tiled_matmul(
            cx,
            &batch,
            (&sa, &sb),
            (m, k, n),
            (&epi, &stored),
        ));
    }
    let a_base = format!("({}) * {}u + c{nb} * {k}u", dot("c", &sa), m * k);
    let b_base = format!("({}) * {}u + c{} ", dot("c", &sb), k * n, nb + 1);
    // Floats accumulate in f32 (f16 operands are widened).
    let (acc_ty, acc, wide) = if is_float(cx.out.dtype) {
        ("f32", "0.0", "f32")
    } else {
        (cx.out_ty(), "0", "")
    };
    let defs = format!(
        "{}{epi}fn value(i: u32) -> {ty} {{\n{}  let ab = {a_base};\n  let bb = {b_base};\n  var acc: {acc_ty} = {acc};\n  for (var k = 0u; k < {k}u; k++) {{ acc += {wide}(x0(ab + k)) * {wide}(x1(bb + k * {n}u)); }}\n  return {};\n}}\n",
        cx.loads(),
        coords(&virt, "i", "c"),
        stored.replace("OUT", "i"),
        ty = cx.out_ty()
    );
    Ok(cx.element(defs))
}

/// Side of the square output tile of one [`tiled_matmul`] workgroup.
const TILE: usize = 32;
/// Side of the square block of outputs one thread of it computes.
const BLOCK: usize = 4;
/// Threads per side of its workgroup.
const THREADS: usize = TILE / BLOCK;
/// Depth of the `a` / `b` slices staged per step.
const DEPTH: usize = 16;

/// f32 (or f16, accumulated in f32) matmul in 32 x 32 output tiles per
/// workgroup of 8 x 8 threads, each
/// thread a 4 x 4 block of outputs kept in registers: each step stages a
/// 32 x 16 slice of `a` and a 16 x 32 slice of `b` in workgroup memory (out
/// of range cells are zero), then every thread updates its 16 sums from
/// four values of each per `k`. Every output still sums its `k` terms in
/// order.
/// Dispatch: (column tiles, row tiles, batch).
pub(super) fn tiled_matmul(
    cx: &NodeCtx,
    batch: &[usize],
    (sa, sb): (&[usize], &[usize]),
    (m, k, n): (usize, usize, usize),
    (epi, stored): (&str, &str),
) -> Kernel {
    let (t, r, d, w) = (TILE, BLOCK, DEPTH, THREADS);
    let per_thread = t * d / (w * w);
    let mut sums = String::new();
    let mut step = String::new();
    let mut stores = String::new();
    for i in 0..r {
        let _ = writeln!(
            step,
            "      let a{i} = ta[(lid.y * {r}u + {i}u) * {d}u + q];"
        );
        let _ = writeln!(step, "      let b{i} = tb[q * {t}u + lid.x * {r}u + {i}u];");
    }
    let half = cx.out.dtype == DType::F16;
    for i in 0..r {
        for j in 0..r {
            let _ = writeln!(sums, "  var acc{i}{j} = 0.0;");
            let _ = writeln!(step, "      acc{i}{j} += a{i} * b{j};");
        }
        for j in 0..r {
            let at = format!("z * {}u + (row + {i}u) * {n}u + col + {j}u", m * n);
            let inside = format!("row + {i}u < {m}u && col + {j}u < {n}u");
            if !half {
                let _ = writeln!(
                    stores,
                    "  if ({inside}) {{ st({at}, fin({at}, acc{i}{j})); }}"
                );
            } else if j % 2 == 0 {
                // Columns j and j + 1: one word (n is even).
                let _ = writeln!(
                    stores,
                    "  if ({inside}) {{ let o = {at}; mem[{w0}u + o / 2u] = pack2x16float(vec2<f32>(f32(fin(o, acc{i}{j})), f32(fin(o + 1u, acc{i}{j1})))); }}",
                    w0 = cx.out.byte / 4,
                    j1 = j + 1,
                );
            }
        }
    }
    // The value stored at output `o` from its sum.
    let fin = format!(
        "fn fin(o: u32, acc: f32) -> {} {{ return {}; }}\n",
        cx.out_ty(),
        stored.replace("OUT", "o")
    );
    let source = format!(
        "@group(0) @binding(0) var<storage, read_write> mem: array<u32>;\n\
         const FLAG: u32 = {flag}u;\nconst NODE: u32 = {node}u;\n{HELPERS}\n{loads}{store}{epi}{fin}\n\
         var<workgroup> ta: array<f32, {td}>;\nvar<workgroup> tb: array<f32, {td}>;\n\
         @compute @workgroup_size({w}, {w})\n\
         fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {{\n\
         let z = wg.z;\n{coords}  let ab = ({da}) * {mk}u;\n  let bb = ({db}) * {kn}u;\n\
         let row = wg.y * {t}u + lid.y * {r}u;\n  let col = wg.x * {t}u + lid.x * {r}u;\n\
         let tid = lid.y * {w}u + lid.x;\n{sums}\
         for (var s = 0u; s < {k}u; s += {d}u) {{\n\
             for (var j = 0u; j < {per_thread}u; j++) {{\n\
               let e = j * {ww}u + tid;\n\
               let ar = wg.y * {t}u + e / {d}u;\n      let ak = s + e % {d}u;\n\
               ta[e] = select(0.0, f32(x0(ab + min(ar, {m1}u) * {k}u + min(ak, {k1}u))), ar < {m}u && ak < {k}u);\n\
               let bk = s + e / {t}u;\n      let bc = wg.x * {t}u + e % {t}u;\n\
               tb[e] = select(0.0, f32(x1(bb + min(bk, {k1}u) * {n}u + min(bc, {n1}u))), bk < {k}u && bc < {n}u);\n\
             }}\n\
             workgroupBarrier();\n\
             for (var q = 0u; q < {d}u; q++) {{\n{step}    }}\n\
             workgroupBarrier();\n  }}\n{stores}}}\n",
        flag = cx.flag_word,
        node = cx.index + 1,
        loads = cx.loads(),
        store = store_fn(&cx.out),
        td = t * d,
        ww = w * w,
        coords = coords(batch, "z", "c"),
        da = dot("c", sa),
        db = dot("c", sb),
        mk = m * k,
        kn = k * n,
        m1 = m.saturating_sub(1),
        k1 = k.saturating_sub(1),
        n1 = n.saturating_sub(1),
    );
    let batches: usize = batch.iter().product();
    Kernel {
        source: cx.enable(source),
        groups: [
            n.div_ceil(t) as u32,
            m.div_ceil(t) as u32,
            batches.max(1) as u32,
        ],
    }
}
