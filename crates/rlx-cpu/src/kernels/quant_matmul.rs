//! Quantized-weight family: `dequantize` and the native `dequant_matmul`.
//!
//! `dequant_matmul` never dequantizes the whole weight. As ggml's CPU
//! backend does, it quantizes the activation rows once per call, per block
//! (Q8_0 for Q4_0 / Q5_0 / Q8_0 weights, Q8_1 for Q4_1 / Q5_1, Q8_K for the
//! K-quants; `act_quant`: AVX2, bit-identical to rlx-gguf's reference
//! quantizers, which the portable path runs), and forms ggml's block
//! sums with integer dot products chosen at run time (AVX-512 VNNI, AVX2,
//! NEON with or without `sdot` (`neon`), or scalar). Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q5_K and Q6_K weights are dotted
//! straight from their block bytes (`planes`), one weight row against
//! tiles of activation rows (GEMV for decoding, GEMM for prefill; on
//! AVX-512 VNNI the GEMM is `gemm16` / `gemm16k`, 16 weight rows across the
//! lanes (ggml's per-block sums: not `planes`' bits, within f32 rounding of
//! them), and the GEMV `gemv512` / `gemv512k`); the
//! other formats decode one weight row at a time to integer quants and
//! scales (`decode`) and reuse it for every activation row (`dot`).
//! F32 / F16 / BF16 weights (`scheme: None`) are
//! widened a row at a time and dotted in f32, without quantizing `x`.
//! Output rows are split over threads (`RLX_NUM_THREADS`, default: all
//! cores), each decoding its own weight rows once for every activation row
//! and writing its output columns in place (`out_cols`).
//!
//! Because activations are quantized, the result equals ggml's
//! (`dequant(W) · dequant(q8(x))`), not `dequant(W) · x`; the two differ by
//! the activation rounding (about 0.5% of the row's L1 magnitude at most).
//!
//! The crate depends on `rlx-gguf` for the activation quantizers and for
//! `dequantize` (every GGUF block format), since rlx-gguf depends only on
//! the IR.

pub(crate) mod act_quant;
pub(crate) mod decode;
pub(crate) mod dot;
#[cfg(target_arch = "x86_64")]
mod gemm16;
#[cfg(target_arch = "x86_64")]
mod gemm16k;
#[cfg(target_arch = "x86_64")]
mod gemv512;
#[cfg(target_arch = "x86_64")]
mod gemv512k;
#[cfg(target_arch = "aarch64")]
mod neon;
pub(crate) mod out_cols;
pub(crate) mod planes;

use super::{KernelError, KernelResult, View, ViewMut};
use crate::team;
use act_quant::{quantize_act_rows, Act};
use decode::{layout, Layout, Mins, WeightRow};
pub use dot::QuantIsa;
use dot::{dot_f32, row_dot, RowDot};
use half::{bf16, f16};
use out_cols::OutCols;
use planes::{plane_row, ActRow};
use rlx_gguf::codecs;
use rlx_gguf::GgmlType;
use rlx_ir::quant::QuantScheme;
use rlx_ir::DType;

/// Multiply-adds per thread below which another thread does not pay: about
/// 7-15 us of work at GEMV speed, several times a job on the persistent
/// team (its workers spin between a graph's ops). At 2^20 (sized for a
/// scoped thread's start) every SmolLM2 decode GEMV but the LM head ran on
/// one thread, so 2-thread decode ran at the 1-thread rate.
const GRAIN: usize = 1 << 16;

/// Whether the native kernel runs weights of `scheme` (`None`: plain floats);
/// other schemes run through the decomposition (`dequantize` + matmul).
pub(crate) fn supports(scheme: Option<QuantScheme>) -> bool {
    scheme.is_none_or(|s| layout(s).is_some())
}

/// `Op::Dequantize`: block bytes to f32 with rlx-gguf's codecs.
pub(crate) fn dequantize(scheme: QuantScheme, ins: &[View], out: &mut ViewMut) -> KernelResult {
    codecs::dequantize_into(GgmlType::from(scheme), ins[0].bytes, out.slice::<f32>())?;
    Ok(())
}

/// `Op::DequantMatMul`: `y[.., N] = x[.., K] · Wᵀ` (see the module docs).
pub(crate) fn dequant_matmul(
    scheme: Option<QuantScheme>,
    n: usize,
    k: usize,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    let (x, w) = (ins[0], ins[1]);
    let mm = QuantMatMul {
        scheme,
        w_dtype: w.dtype,
        n,
        k,
    };
    let threads = default_threads(x.numel() / k.max(1), n, k);
    mm.run(
        QuantIsa::best(),
        threads,
        w.bytes,
        x.slice::<f32>(),
        out.slice::<f32>(),
    )
}

/// The threads the op uses for an `[M, K] x [N, K]ᵀ` problem: one per
/// 2^20 multiply-adds, at most what `RLX_NUM_THREADS` allows (default:
/// every core).
pub fn default_threads(m: usize, n: usize, k: usize) -> usize {
    let work = m.saturating_mul(n).saturating_mul(k);
    thread_budget().min(work / GRAIN).max(1)
}

/// The worker threads `RLX_NUM_THREADS` allows (default: every core).
fn thread_budget() -> usize {
    super::gemm::num_threads()
}

/// One quantized matmul problem: `x[M, K] · Wᵀ` with `W` an `[N, K]` weight.
#[derive(Clone, Copy, Debug)]
pub struct QuantMatMul {
    /// The weight's block format; `None` for a plain float weight.
    pub scheme: Option<QuantScheme>,
    /// The weight's dtype (`U8` for block bytes; F32 / F16 / BF16 otherwise).
    pub w_dtype: DType,
    /// Output features.
    pub n: usize,
    /// Input features.
    pub k: usize,
}

/// What the row workers share.
struct Job<'a> {
    mm: QuantMatMul,
    lay: Option<Layout>,
    w: &'a [u8],
    x: &'a [f32],
    act: Option<&'a Act>,
    m: usize,
    /// The panel GEMMs' activation layout, made once for every part.
    #[cfg(target_arch = "x86_64")]
    panel: Option<Panel<'a>>,
}

/// Prepared activations of the 512-bit panel GEMMs (prefill).
#[cfg(target_arch = "x86_64")]
enum Panel<'a> {
    Blocks(gemm16::Prepared<'a>),
    KBlocks(gemm16k::Prepared<'a>),
}

/// Weight rows in a part of a `gemm16` / `gemm16k` product (two panels),
/// taken by whichever thread is free: the activations are laid out once per
/// call, so parts cost little, and with parts of 64 / 80 rows (SmolLM2's
/// 576 output rows in 8) one thread had drawn every longer one (its share
/// ~20 % over the other's).
#[cfg(target_arch = "x86_64")]
const GEMM16_PART_ROWS: usize = 32;

/// The activation rows of `act` as [`ActRow`] views (`k` deep).
fn act_rows<'a>(act: &'a Act, lay: &Layout, k: usize, m: usize) -> Vec<ActRow<'a>> {
    let (nb, ng) = (k / lay.block, k / lay.group);
    (0..m)
        .map(|i| ActRow {
            q: &act.q[i * k..(i + 1) * k],
            d: &act.d[i * nb..(i + 1) * nb],
            s: act.s.get(i * nb..(i + 1) * nb).unwrap_or(&[]),
            gsum: &act.gsum[i * ng..(i + 1) * ng],
        })
        .collect()
}

impl QuantMatMul {
    /// Checks the problem against the weight bytes and `x`; returns `M`.
    fn check(&self, w: &[u8], x: &[f32], out: &[f32]) -> Result<usize, String> {
        let (n, k) = (self.n, self.k);
        if n == 0 || k == 0 || !x.len().is_multiple_of(k) {
            return Err(fail!(
                "dequant_matmul: x has {} values, not rows of K = {k} (N = {n})",
                x.len()
            ));
        }
        let m = x.len() / k;
        let row = match self.scheme {
            Some(s) => {
                if self.w_dtype != DType::U8 {
                    return Err(fail!(
                        "dequant_matmul: {s} weights must be u8 bytes, given {}",
                        self.w_dtype
                    ));
                }
                if layout(s).is_none() {
                    return Err(fail!(
                        "dequant_matmul: no native kernel for {s} weights (supported: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K, Q8_K, F32, F16, BF16); it runs decomposed"
                    ));
                }
                s.row_bytes(k).ok_or_else(|| {
                    format!(
                        "dequant_matmul: K = {k} is not a multiple of {s}'s block size {}",
                        s.block_size()
                    )
                })?
            }
            None => match self.w_dtype {
                DType::F32 => 4 * k,
                DType::F16 | DType::BF16 => 2 * k,
                d => {
                    return Err(fail!(
                        "dequant_matmul: plain weights must be f32 / f16 / bf16, given {d}"
                    ))
                }
            },
        };
        if row.checked_mul(n) != Some(w.len()) {
            return Err(fail!(
                "dequant_matmul: [{n}, {k}] weights take {row} bytes a row, {} in all; given {} bytes",
                row.saturating_mul(n),
                w.len()
            ));
        }
        if out.len() != m * n {
            return Err(fail!(
                "dequant_matmul: output holds {} values, expected M * N = {m} * {n}",
                out.len()
            ));
        }
        Ok(m)
    }

    /// The panel GEMMs' prepared activations, where `isa` and the rows
    /// take them (prefill products on AVX-512 VNNI).
    #[cfg(target_arch = "x86_64")]
    fn panel<'a>(
        &self,
        isa: QuantIsa,
        lay: Option<&Layout>,
        act: Option<&'a Act>,
        m: usize,
    ) -> Option<Panel<'a>> {
        let (scheme, lay, act) = (self.scheme?, lay?, act?);
        if isa != QuantIsa::Avx512Vnni || m < gemm16k::MIN_ROWS || !planes::runs(scheme) {
            return None;
        }
        if m <= gemv512::MAX_ROWS && gemv512::runs(scheme) {
            // A short piece: the weights are read in place (`rows_body`).
            return None;
        }
        if gemm16::runs(scheme) {
            let rows = act_rows(act, lay, self.k, m);
            Some(Panel::Blocks(gemm16::prepare(scheme, &act.q, &rows)))
        } else if gemm16k::runs(scheme) {
            Some(Panel::KBlocks(gemm16k::prepare(scheme, act, m, self.k)))
        } else {
            None
        }
    }

    /// Computes `out[M, N] = x[M, K] · Wᵀ` on `isa` (one of
    /// [`QuantIsa::available`]) with `threads` threads (at most one per
    /// output row); the op's kernel picks the count from `RLX_NUM_THREADS`
    /// and the problem size.
    pub fn run(
        &self,
        isa: QuantIsa,
        threads: usize,
        w: &[u8],
        x: &[f32],
        out: &mut [f32],
    ) -> KernelResult {
        if !QuantIsa::available().contains(&isa) {
            return Err(fail!("dequant_matmul: this CPU does not run {isa:?}"));
        }
        let m = self.check(w, x, out)?;
        let lay = self.scheme.and_then(layout);
        let t = threads.clamp(1, self.n);
        // Quantized by rows over the same threads: on one thread it was
        // ~20 us of a 32-token prefill product's 2-thread time.
        let act = match &lay {
            Some(l) => Some(quantize_act_rows(isa, l.act, x, (self.k, l.group), t)?),
            None => None,
        };
        #[cfg(target_arch = "x86_64")]
        let panel = self.panel(isa, lay.as_ref(), act.as_ref(), m);
        let job = Job {
            mm: *self,
            lay,
            w,
            x,
            act: act.as_ref(),
            m,
            #[cfg(target_arch = "x86_64")]
            panel,
        };
        if t <= 1 {
            run_rows(&job, isa, 0, self.n, &mut OutCols::whole(out, m, self.n));
            return Ok(());
        }
        // Blocks of weight rows run as one job of the persistent team (no
        // thread spawned per call); each part writes its columns in place
        // (a block per part copied into place by the calling thread
        // afterwards left the other threads waiting). One block per thread,
        // or for the panel GEMMs parts of two panels, taken by whichever
        // thread is free.
        #[cfg(target_arch = "x86_64")]
        let (parts, align) = match job.panel {
            Some(_) => ((self.n / GEMM16_PART_ROWS).max(t), gemm16::ROWS),
            None => (t, 1),
        };
        #[cfg(not(target_arch = "x86_64"))]
        let (parts, align) = (t, 1);
        let blocks = team::split(self.n, parts, align);
        let n = self.n;
        let shared = team::Disjoint::new(out);
        team::parallel_for(blocks.len(), |p| {
            let (lo, hi) = (blocks[p].start, blocks[p].end);
            // SAFETY: `split`'s column ranges are disjoint.
            let mut cols = unsafe { OutCols::part(&shared, m, n, lo, hi) };
            run_rows(&job, isa, lo, hi, &mut cols);
        });
        Ok(())
    }
}

/// Weight rows `lo..hi` (output columns) into `out` on `isa`.
fn run_rows(job: &Job, isa: QuantIsa, lo: usize, hi: usize, out: &mut OutCols) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `run` checked that the CPU runs `isa`.
        QuantIsa::Avx2 => unsafe { rows_avx2(job, lo, hi, out) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        QuantIsa::Avx512Vnni => unsafe { rows_vnni(job, lo, hi, out) },
        #[cfg(target_arch = "aarch64")]
        QuantIsa::Neon => rows_body(job, QuantIsa::Neon, lo, hi, out),
        #[cfg(target_arch = "aarch64")]
        // SAFETY: as above.
        QuantIsa::NeonDot => unsafe { rows_neon_dot(job, lo, hi, out) },
        _ => rows_body(job, QuantIsa::Scalar, lo, hi, out),
    }
}

// The row loop compiled for each instruction set, so the weight decoding
// vectorizes with it too.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn rows_avx2(job: &Job, lo: usize, hi: usize, out: &mut OutCols) {
    rows_body(job, QuantIsa::Avx2, lo, hi, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")]
unsafe fn rows_vnni(job: &Job, lo: usize, hi: usize, out: &mut OutCols) {
    rows_body(job, QuantIsa::Avx512Vnni, lo, hi, out)
}

#[cfg(target_arch = "aarch64")]
#[target_feature(enable = "neon,dotprod")]
unsafe fn rows_neon_dot(job: &Job, lo: usize, hi: usize, out: &mut OutCols) {
    rows_body(job, QuantIsa::NeonDot, lo, hi, out)
}

#[inline(always)]
fn rows_body(job: &Job, isa: QuantIsa, lo: usize, hi: usize, out: &mut OutCols) {
    let (k, m) = (job.mm.k, job.m);
    match (&job.lay, &job.act) {
        (Some(lay), Some(act)) if job.mm.scheme.is_some_and(planes::runs) => {
            let scheme = job.mm.scheme.expect("checked above");
            let row_bytes = k / lay.block * lay.block_bytes;
            #[cfg(target_arch = "x86_64")]
            match &job.panel {
                // SAFETY: `run` checked that the CPU runs `isa`, and
                // prepared `p` for `scheme`.
                Some(Panel::Blocks(p)) => {
                    unsafe { gemm16::rows(scheme, job.w, row_bytes, (lo, hi), p, out) };
                    return;
                }
                // SAFETY: as above.
                Some(Panel::KBlocks(p)) => {
                    unsafe { gemm16k::rows(scheme, job.w, row_bytes, (lo, hi), p, out) };
                    return;
                }
                None => {}
            }
            let acts = act_rows(act, lay, k, m);
            #[cfg(target_arch = "x86_64")]
            if isa == QuantIsa::Avx512Vnni
                && (1..=gemv512::MAX_ROWS).contains(&m)
                && gemv512::runs(scheme)
            {
                // SAFETY: `run` checked that the CPU runs `isa`.
                unsafe { gemv512::rows(scheme, job.w, row_bytes, (lo, hi), &acts, out) };
                return;
            }
            #[cfg(target_arch = "x86_64")]
            if isa == QuantIsa::Avx512Vnni && m == 1 && gemv512k::runs(scheme) {
                // SAFETY: as above.
                unsafe { gemv512k::rows(scheme, job.w, row_bytes, (lo, hi), &acts[0], out) };
                return;
            }
            let mut scratch = WeightRow::default();
            // Weight rows outside, activation tiles inside: a row's blocks
            // stay in L1 while every tile of activations passes by.
            for (j, r) in (lo..hi).enumerate() {
                let w = &job.w[r * row_bytes..(r + 1) * row_bytes];
                plane_row(isa, scheme, w, &acts, &mut scratch, |i, v| out.set(i, j, v));
            }
        }
        (Some(lay), Some(act)) => {
            let row_bytes = k / lay.block * lay.block_bytes;
            let nb = k / lay.block;
            let ng = k / lay.group;
            let mut wr = WeightRow::default();
            let mut bscale = vec![0f32; nb];
            for (j, r) in (lo..hi).enumerate() {
                wr.decode(lay, &job.w[r * row_bytes..(r + 1) * row_bytes], k);
                for i in 0..m {
                    let xd = &act.d[i * nb..(i + 1) * nb];
                    for ((s, &dw), &dx) in bscale.iter_mut().zip(&wr.d).zip(xd) {
                        *s = dw * dx;
                    }
                    let mut y = row_dot(
                        isa,
                        &RowDot {
                            w: &wr.q,
                            x: &act.q[i * k..(i + 1) * k],
                            gscale: (!lay.unit_scales).then_some(&wr.scale[..]),
                            group: lay.group,
                            bscale: &bscale,
                            block: lay.block,
                        },
                    );
                    y += min_term(lay, &wr, act, i, nb, ng);
                    out.set(i, j, y);
                }
            }
        }
        _ => {
            let mut wf = vec![0f32; k];
            let bytes_per = job.mm.w_dtype.size_bytes();
            for (j, r) in (lo..hi).enumerate() {
                widen_row(
                    job.mm.w_dtype,
                    &job.w[r * k * bytes_per..(r + 1) * k * bytes_per],
                    &mut wf,
                );
                for i in 0..m {
                    out.set(i, j, dot_f32(&wf, &job.x[i * k..(i + 1) * k]));
                }
            }
        }
    }
}

/// The offset part of one output: ggml's `m * s` (Q4_1 / Q5_1) or
/// `-dmin * d_x * sum_g min_g * bsum_g` (Q2_K / Q4_K / Q5_K).
#[inline(always)]
fn min_term(lay: &Layout, wr: &WeightRow, act: &Act, i: usize, nb: usize, ng: usize) -> f32 {
    match lay.mins {
        Mins::None => 0.0,
        Mins::Block => wr
            .dmin
            .iter()
            .zip(&act.s[i * nb..(i + 1) * nb])
            .map(|(&m, &s)| m * s)
            .sum(),
        Mins::Groups => {
            let gpb = lay.block / lay.group;
            let gsum = &act.gsum[i * ng..(i + 1) * ng];
            let mut acc = 0f32;
            for b in 0..nb {
                let g = b * gpb..(b + 1) * gpb;
                let isum: i32 = wr.min[g.clone()]
                    .iter()
                    .zip(&gsum[g])
                    .map(|(&m, &s)| m * s)
                    .sum();
                acc -= act.d[i * nb + b] * wr.dmin[b] * isum as f32;
            }
            acc
        }
    }
}

/// One plain weight row (little-endian F32 / F16 / BF16 bytes) as f32.
#[inline(always)]
fn widen_row(dtype: DType, bytes: &[u8], out: &mut [f32]) {
    match dtype {
        DType::F16 => {
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = f16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32();
            }
        }
        DType::BF16 => {
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = bf16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32();
            }
        }
        _ => {
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
        }
    }
}
