//! WGSL building blocks every generated kernel shares: the one storage
//! binding over the arena buffer, typed loads / stores at fixed byte
//! offsets, index arithmetic with the shape baked in, and the math
//! helpers WGSL lacks (erf, a numpy-exact pow and mod).

use rlx_ir::DType;
use std::fmt::Write;

/// Threads per workgroup of every kernel.
pub(crate) const WORKGROUP: u64 = 64;
/// The most workgroups one dispatch dimension takes (WebGPU's limit).
pub(crate) const MAX_GROUPS: u64 = 65535;

/// How a kernel computes f16 values (stored two to a word either way).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Half {
    /// Unpacked to f32 registers, rounded back when stored: any adapter.
    Packed,
    /// WGSL `f16` registers (`enable f16;`): adapters with `shader-f16`.
    Native,
}

/// How a dtype's elements are held in WGSL registers.
pub(crate) fn reg_type(dt: DType, half: Half) -> Option<&'static str> {
    match dt {
        DType::F16 if half == Half::Native => Some("f16"),
        // Packed f16 values are computed in f32.
        DType::F32 | DType::F16 => Some("f32"),
        // I64 values compute in 32 bits: kernels that read or write them
        // check the range (see `store`), the rest only move both words.
        DType::I32 | DType::I64 => Some("i32"),
        DType::Bool => Some("u32"),
        _ => None,
    }
}

/// A value in the arena buffer: where its bytes start, its dtype and dims.
#[derive(Clone, Debug)]
pub(crate) struct Operand {
    pub byte: u64,
    pub dtype: DType,
    pub dims: Vec<usize>,
}

impl Operand {
    pub(crate) fn numel(&self) -> usize {
        self.dims.iter().product()
    }
}

/// `fn {name}(e: u32) -> T`: element `e` of `x`.
pub(crate) fn load_fn(name: &str, x: &Operand, half: Half) -> String {
    let w = x.byte / 4;
    let b = x.byte;
    match x.dtype {
        DType::F32 => format!("fn {name}(e: u32) -> f32 {{ return bitcast<f32>(mem[{w}u + e]); }}\n"),
        DType::I32 => format!("fn {name}(e: u32) -> i32 {{ return bitcast<i32>(mem[{w}u + e]); }}\n"),
        // The low word, checked to be the whole value (high word = sign).
        DType::I64 => format!(
            "fn {name}(e: u32) -> i32 {{ let lo = mem[{w}u + 2u * e]; let hi = mem[{w}u + 2u * e + 1u]; \
             if (hi != select(0u, 0xffffffffu, (lo & 0x80000000u) != 0u)) {{ fail(); }} return bitcast<i32>(lo); }}\n"
        ),
        DType::Bool => format!(
            "fn {name}(e: u32) -> u32 {{ let b = {b}u + e; return select(0u, 1u, ((mem[b / 4u] >> ((b % 4u) * 8u)) & 0xffu) != 0u); }}\n"
        ),
        // Through f32, exactly (naga has no u32 -> vec2<f16> bitcast).
        DType::F16 if half == Half::Native => format!(
            "fn {name}(e: u32) -> f16 {{ let h = {}u + e; return f16(unpack2x16float(mem[h / 2u])[h % 2u]); }}\n",
            b / 2
        ),
        DType::F16 => format!(
            "fn {name}(e: u32) -> f32 {{ let h = {}u + e; return unpack2x16float(mem[h / 2u])[h % 2u]; }}\n",
            b / 2
        ),
        _ => unreachable!("checked by reg_type"),
    }
}

/// `fn st(e: u32, v: T)` for a non-Bool output (Bool outputs are packed
/// four to a word by the element wrapper).
pub(crate) fn store_fn(out: &Operand) -> String {
    let w = out.byte / 4;
    match out.dtype {
        DType::F32 | DType::I32 => {
            format!("fn st(e: u32, v: {}) {{ mem[{w}u + e] = bitcast<u32>(v); }}\n", reg_type(out.dtype, Half::Packed).unwrap())
        }
        DType::I64 => format!(
            "fn st(e: u32, v: i32) {{ mem[{w}u + 2u * e] = bitcast<u32>(v); mem[{w}u + 2u * e + 1u] = select(0u, 0xffffffffu, v < 0); }}\n"
        ),
        _ => String::new(),
    }
}

/// Statements binding `c{k}` to output coordinate `k` of linear index `i`.
pub(crate) fn coords(dims: &[usize], var: &str, prefix: &str) -> String {
    let strides = rlx_ir::contiguous_strides(dims);
    let mut s = String::new();
    for (k, (&d, &st)) in dims.iter().zip(&strides).enumerate() {
        let _ = writeln!(s, "  let {prefix}{k} = ({var} / {st}u) % {d}u;");
    }
    s
}

/// Row-major strides of `input` read at the coordinates of `out_dims`
/// (numpy broadcasting: right-aligned, stride 0 where `input` has 1).
pub(crate) fn broadcast_strides(input: &[usize], out_dims: &[usize]) -> Vec<usize> {
    let own = rlx_ir::contiguous_strides(input);
    let lead = out_dims.len() - input.len();
    (0..out_dims.len())
        .map(|k| {
            if k < lead || input[k - lead] == 1 {
                0
            } else {
                own[k - lead]
            }
        })
        .collect()
}

/// `Σ c{k} * strides[k]` as a u32 expression (`0u` when empty).
pub(crate) fn dot(prefix: &str, strides: &[usize]) -> String {
    let terms: Vec<String> = strides
        .iter()
        .enumerate()
        .filter(|(_, &s)| s != 0)
        .map(|(k, &s)| format!("{prefix}{k} * {s}u"))
        .collect();
    if terms.is_empty() {
        "0u".into()
    } else {
        terms.join(" + ")
    }
}

pub(crate) const HELPERS: &str = r#"
fn fail() { mem[FLAG] = NODE; }
// Infinities and NaN built at run time: a constant one is a WGSL error.
fn bits_(b: u32) -> f32 { return bitcast<f32>(b + min(mem[FLAG], 0u)); }
// erfc for z >= 0 (Numerical Recipes' erfcc: fractional error < 1.2e-7).
fn erfc_pos(z: f32) -> f32 {
  let t = 1.0 / (1.0 + 0.5 * z);
  return t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
    + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
    + t * (-0.82215223 + t * 0.17087277)))))))));
}
fn erf_(x: f32) -> f32 {
  if (abs(x) < 0.75) {
    // Maclaurin series: exact to f32 rounding below 0.75.
    let x2 = x * x;
    var term = x;
    var sum = x;
    for (var n = 1; n < 14; n++) {
      term = -term * x2 / f32(n);
      sum += term / f32(2 * n + 1);
    }
    return 1.1283791670955126 * sum;
  }
  return sign(x) * (1.0 - erfc_pos(abs(x)));
}
fn gelu_(x: f32) -> f32 {
  let z = x * 0.7071067811865476;
  if (x < 0.0) { return 0.5 * x * erfc_pos(-z); }
  return 0.5 * x * (1.0 + erf_(z));
}
// numpy's astype truncates toward zero; a value i32 cannot hold fails.
fn cast_int(a: f32) -> i32 {
  if (!(a > -2147483904.0 && a < 2147483648.0)) { fail(); }
  return i32(a);
}
fn tanh_(x: f32) -> f32 { return tanh(clamp(x, -20.0, 20.0)); }
fn pow_(a: f32, b: f32) -> f32 {
  if (b == 0.0) { return 1.0; }
  if (b == 1.0) { return a; }
  if (b == 2.0) { return a * a; }
  if (b == 0.5 && a >= 0.0) { return sqrt(a); }
  if (a == 0.0) { if (b > 0.0) { return 0.0; } return bits_(0x7f800000u); }
  let r = exp2(b * log2(abs(a)));
  if (a < 0.0) {
    if (fract(b) != 0.0) { return bits_(0x7fc00000u); }
    if (fract(b * 0.5) != 0.0) { return -r; }
  }
  return r;
}
fn fmod_(a: f32, b: f32) -> f32 {
  var r = a % b;
  if (r != 0.0 && ((r < 0.0) != (b < 0.0))) { r += b; }
  return r;
}
"#;

/// A whole shader: the binding, the failure flag, helpers, `defs`, and an
/// entry point running `body` once per thread index `t < threads`.
pub(crate) fn shader(
    flag_word: u64,
    node: usize,
    defs: &str,
    body: &str,
    threads: u64,
) -> (String, [u32; 3]) {
    let groups = threads.div_ceil(WORKGROUP).max(1);
    let gx = groups.min(MAX_GROUPS);
    let gy = groups.div_ceil(gx);
    let src = format!(
        "@group(0) @binding(0) var<storage, read_write> mem: array<u32>;\n\
         const FLAG: u32 = {flag_word}u;\nconst NODE: u32 = {}u;\n{HELPERS}\n{defs}\n\
         @compute @workgroup_size({WORKGROUP})\n\
         fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{\n  let t = gid.x + gid.y * {}u;\n  if (t >= {threads}u) {{ return; }}\n{body}}}\n",
        node + 1,
        gx * WORKGROUP
    );
    (src, [gx as u32, gy as u32, 1])
}

/// A shader computing `fn value(i: u32) -> T` (in `defs`) for each element
/// of `out`. Bool outputs are packed: one thread writes a word of four; f16
/// outputs too: one thread writes a word of two (rounded to nearest).
pub(crate) fn element_shader(
    flag_word: u64,
    node: usize,
    out: &Operand,
    defs: &str,
    half: Half,
) -> (String, [u32; 3]) {
    let n = out.numel() as u64;
    if out.dtype == DType::Bool {
        let w = out.byte / 4;
        let body = format!(
            "  var word = 0u;\n  for (var j = 0u; j < 4u; j++) {{\n    let i = t * 4u + j;\n    if (i < {n}u) {{ word |= (value(i) & 1u) << (8u * j); }}\n  }}\n  mem[{w}u + t] = word;\n"
        );
        return shader(flag_word, node, defs, &body, n.div_ceil(4));
    }
    if out.dtype == DType::F16 && half == Half::Native {
        let w = out.byte / 4;
        let body = format!(
            "  var hi: f16 = 0.0;\n  if (t * 2u + 1u < {n}u) {{ hi = value(t * 2u + 1u); }}\n  mem[{w}u + t] = pack2x16float(vec2<f32>(f32(value(t * 2u)), f32(hi)));\n"
        );
        return shader(flag_word, node, defs, &body, n.div_ceil(2));
    }
    if out.dtype == DType::F16 {
        let w = out.byte / 4;
        let body = format!(
            "  var hi = 0.0;\n  if (t * 2u + 1u < {n}u) {{ hi = value(t * 2u + 1u); }}\n  mem[{w}u + t] = pack2x16float(vec2<f32>(value(t * 2u), hi));\n"
        );
        return shader(flag_word, node, defs, &body, n.div_ceil(2));
    }
    let defs = format!("{defs}{}", store_fn(out));
    shader(flag_word, node, &defs, "  st(t, value(t));\n", n)
}
