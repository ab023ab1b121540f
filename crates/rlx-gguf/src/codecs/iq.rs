//! The "i-quants": IQ4_NL and IQ4_XS (non-linear 4-bit) and the lattice
//! formats IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S.
//! Dequantization only, following ggml's `dequantize_row_iq*` (and
//! gguf-py's numpy ports) operation for operation.

use super::float::{f16_at, f16_to_f32};
use super::iq_grids::*;
use std::sync::OnceLock;

/// ggml's `kvalues_iq4nl`.
const KVALUES_IQ4NL: [i8; 16] = [
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];
const IQ1S_DELTA: f32 = 0.125;

/// Decodes a packed hex grid into `entries * width` f32 values.
fn decode_grid(hex: &str, width: usize, map: &[f32]) -> Vec<f32> {
    let bits = if map.len() <= 4 { 2 } else { 4 };
    let per_byte = 8 / bits;
    let nib = |c: u8| match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => unreachable!("grid tables are lowercase hex"),
    };
    let mut out = Vec::with_capacity(hex.len() / 2 * per_byte);
    for pair in hex.as_bytes().chunks_exact(2) {
        let byte = (nib(pair[0]) << 4) | nib(pair[1]);
        for k in 0..per_byte {
            let v = (byte >> (k * bits)) & ((1 << bits) - 1);
            out.push(map[v as usize]);
        }
    }
    debug_assert_eq!(out.len() % width, 0);
    out
}

macro_rules! grid {
    ($fn:ident, $hex:ident, $width:expr, $map:expr) => {
        fn $fn() -> &'static [f32] {
            static G: OnceLock<Vec<f32>> = OnceLock::new();
            G.get_or_init(|| decode_grid($hex, $width, &$map))
        }
    };
}

const MAP_IQ2: [f32; 3] = [8.0, 25.0, 43.0];
grid!(iq2xxs_grid, IQ2_XXS_GRID_HEX, 8, MAP_IQ2);
grid!(iq2xs_grid, IQ2_XS_GRID_HEX, 8, MAP_IQ2);
grid!(iq2s_grid, IQ2_S_GRID_HEX, 8, MAP_IQ2);
grid!(
    iq3xxs_grid,
    IQ3_XXS_GRID_HEX,
    4,
    [4.0, 12.0, 20.0, 28.0, 36.0, 44.0, 52.0, 62.0]
);
grid!(
    iq3s_grid,
    IQ3_S_GRID_HEX,
    4,
    [1.0, 3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 15.0]
);
grid!(iq1s_grid, IQ1_S_GRID_HEX, 8, [-1.0, 0.0, 1.0]);

/// ggml's `ksigns_iq2xs`: 7 sign bits plus an eighth making the parity even.
#[inline]
fn ksigns(i: u32) -> u8 {
    let i = (i & 127) as u8;
    i | (((i.count_ones() & 1) as u8) << 7)
}

#[inline]
fn sign(bits: u8, j: usize) -> f32 {
    if bits & (1 << j) != 0 {
        -1.0
    } else {
        1.0
    }
}

#[inline]
fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

#[inline]
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// IQ4_NL (18 bytes): `d: f16, qs: [u8; 16]`.
pub(crate) fn dequant_iq4_nl(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    for j in 0..16 {
        y[j] = d * f32::from(KVALUES_IQ4NL[(b[2 + j] & 0xF) as usize]);
        y[j + 16] = d * f32::from(KVALUES_IQ4NL[(b[2 + j] >> 4) as usize]);
    }
}

/// IQ4_XS (136 bytes): `d: f16, scales_h: u16, scales_l: [u8; 4], qs: [u8; 128]`.
pub(crate) fn dequant_iq4_xs(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    let scales_h = u16_at(b, 2);
    for ib in 0..8 {
        let lo = (b[4 + ib / 2] >> (4 * (ib % 2))) & 0xF;
        let hi = ((scales_h >> (2 * ib)) & 3) as u8;
        let dl = d * f32::from(((lo | (hi << 4)) as i8) - 32);
        let qs = &b[8 + 16 * ib..8 + 16 * ib + 16];
        for j in 0..16 {
            y[32 * ib + j] = dl * f32::from(KVALUES_IQ4NL[(qs[j] & 0xF) as usize]);
            y[32 * ib + 16 + j] = dl * f32::from(KVALUES_IQ4NL[(qs[j] >> 4) as usize]);
        }
    }
}

/// IQ2_XXS (66 bytes): `d: f16, qs: [u16; 32]`.
pub(crate) fn dequant_iq2_xxs(b: &[u8], y: &mut [f32]) {
    let grid = iq2xxs_grid();
    let d = f16_at(b, 0);
    for ib in 0..8 {
        let q = &b[2 + 8 * ib..2 + 8 * ib + 4];
        let aux1 = u32_at(b, 2 + 8 * ib + 4);
        let db = d * (0.5 + (aux1 >> 28) as f32) * 0.25;
        for l in 0..4 {
            let g = &grid[8 * q[l] as usize..][..8];
            let s = ksigns(aux1 >> (7 * l));
            for j in 0..8 {
                y[32 * ib + 8 * l + j] = db * g[j] * sign(s, j);
            }
        }
    }
}

/// IQ2_XS (74 bytes): `d: f16, qs: [u16; 32], scales: [u8; 8]`.
pub(crate) fn dequant_iq2_xs(b: &[u8], y: &mut [f32]) {
    let grid = iq2xs_grid();
    let d = f16_at(b, 0);
    for ib in 0..8 {
        let sc = b[66 + ib];
        let db = [
            d * (0.5 + f32::from(sc & 0xF)) * 0.25,
            d * (0.5 + f32::from(sc >> 4)) * 0.25,
        ];
        for l in 0..4 {
            let q = u16_at(b, 2 + 2 * (4 * ib + l));
            let g = &grid[8 * (q & 511) as usize..][..8];
            let s = ksigns(u32::from(q >> 9));
            for j in 0..8 {
                y[32 * ib + 8 * l + j] = db[l / 2] * g[j] * sign(s, j);
            }
        }
    }
}

/// IQ2_S (82 bytes): `d: f16, qs: [u8; 32], signs: [u8; 32], qh: [u8; 8], scales: [u8; 8]`.
pub(crate) fn dequant_iq2_s(b: &[u8], y: &mut [f32]) {
    let grid = iq2s_grid();
    let d = f16_at(b, 0);
    for ib in 0..8 {
        let sc = b[74 + ib];
        let db = [
            d * (0.5 + f32::from(sc & 0xF)) * 0.25,
            d * (0.5 + f32::from(sc >> 4)) * 0.25,
        ];
        let qh = usize::from(b[66 + ib]);
        for l in 0..4 {
            let idx = usize::from(b[2 + 4 * ib + l]) | ((qh << (8 - 2 * l)) & 0x300);
            let g = &grid[8 * idx..][..8];
            let s = b[34 + 4 * ib + l];
            for j in 0..8 {
                y[32 * ib + 8 * l + j] = db[l / 2] * g[j] * sign(s, j);
            }
        }
    }
}

/// IQ3_XXS (98 bytes): `d: f16, qs: [u8; 64], scales_and_signs: [u32; 8]`.
pub(crate) fn dequant_iq3_xxs(b: &[u8], y: &mut [f32]) {
    let grid = iq3xxs_grid();
    let d = f16_at(b, 0);
    for ib in 0..8 {
        let aux = u32_at(b, 66 + 4 * ib);
        let db = d * (0.5 + (aux >> 28) as f32) * 0.5;
        let qs = &b[2 + 8 * ib..2 + 8 * ib + 8];
        for l in 0..4 {
            let s = ksigns(aux >> (7 * l));
            let g1 = &grid[4 * qs[2 * l] as usize..][..4];
            let g2 = &grid[4 * qs[2 * l + 1] as usize..][..4];
            let o = 32 * ib + 8 * l;
            for j in 0..4 {
                y[o + j] = db * g1[j] * sign(s, j);
                y[o + j + 4] = db * g2[j] * sign(s, j + 4);
            }
        }
    }
}

/// IQ3_S (110 bytes): `d: f16, qs: [u8; 64], qh: [u8; 8], signs: [u8; 32], scales: [u8; 4]`.
pub(crate) fn dequant_iq3_s(b: &[u8], y: &mut [f32]) {
    let grid = iq3s_grid();
    let d = f16_at(b, 0);
    for ib in 0..8 {
        let sc = b[106 + ib / 2];
        let nib = if ib % 2 == 0 { sc & 0xF } else { sc >> 4 };
        let db = d * f32::from(1 + 2 * nib);
        let qh = usize::from(b[66 + ib]);
        let qs = &b[2 + 8 * ib..2 + 8 * ib + 8];
        let signs = &b[74 + 4 * ib..74 + 4 * ib + 4];
        for l in 0..4 {
            let i1 = usize::from(qs[2 * l]) | ((qh << (8 - 2 * l)) & 256);
            let i2 = usize::from(qs[2 * l + 1]) | ((qh << (7 - 2 * l)) & 256);
            let (g1, g2) = (&grid[4 * i1..][..4], &grid[4 * i2..][..4]);
            let o = 32 * ib + 8 * l;
            for j in 0..4 {
                y[o + j] = db * g1[j] * sign(signs[l], j);
                y[o + j + 4] = db * g2[j] * sign(signs[l], j + 4);
            }
        }
    }
}

/// IQ1_S (50 bytes): `d: f16, qs: [u8; 32], qh: [u16; 8]`.
pub(crate) fn dequant_iq1_s(b: &[u8], y: &mut [f32]) {
    let grid = iq1s_grid();
    let d = f16_at(b, 0);
    for ib in 0..8 {
        let qh = u16_at(b, 34 + 2 * ib);
        let dl = d * f32::from(2 * ((qh >> 12) & 7) + 1);
        let delta = if qh & 0x8000 != 0 {
            -IQ1S_DELTA
        } else {
            IQ1S_DELTA
        };
        for l in 0..4 {
            let idx = usize::from(b[2 + 4 * ib + l]) | (usize::from((qh >> (3 * l)) & 7) << 8);
            let g = &grid[8 * idx..][..8];
            for j in 0..8 {
                y[32 * ib + 8 * l + j] = dl * (g[j] + delta);
            }
        }
    }
}

/// IQ1_M (56 bytes): `qs: [u8; 32], qh: [u8; 16], scales: [u8; 8]` (the f16
/// super-scale is spread over the top nibbles of the four scale words).
pub(crate) fn dequant_iq1_m(b: &[u8], y: &mut [f32]) {
    let grid = iq1s_grid();
    let sc: [u16; 4] = std::array::from_fn(|k| u16_at(b, 48 + 2 * k));
    let d = f16_to_f32(
        (sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000),
    );
    for ib in 0..8 {
        let s = sc[ib / 2];
        let dl1 = d * f32::from(2 * ((s >> (6 * (ib % 2))) & 7) + 1);
        let dl2 = d * f32::from(2 * ((s >> (6 * (ib % 2) + 3)) & 7) + 1);
        let qs = &b[4 * ib..4 * ib + 4];
        let qh = [u16::from(b[32 + 2 * ib]), u16::from(b[32 + 2 * ib + 1])];
        let idx = [
            u16::from(qs[0]) | ((qh[0] << 8) & 0x700),
            u16::from(qs[1]) | ((qh[0] << 4) & 0x700),
            u16::from(qs[2]) | ((qh[1] << 8) & 0x700),
            u16::from(qs[3]) | ((qh[1] << 4) & 0x700),
        ];
        let delta = |h: u16, bit: u16| {
            if h & bit != 0 {
                -IQ1S_DELTA
            } else {
                IQ1S_DELTA
            }
        };
        let deltas = [
            delta(qh[0], 0x08),
            delta(qh[0], 0x80),
            delta(qh[1], 0x08),
            delta(qh[1], 0x80),
        ];
        for l in 0..4 {
            let dl = if l < 2 { dl1 } else { dl2 };
            let g = &grid[8 * usize::from(idx[l])..][..8];
            for j in 0..8 {
                y[32 * ib + 8 * l + j] = dl * (g[j] + deltas[l]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_have_ggml_sizes() {
        assert_eq!(iq2xxs_grid().len(), 256 * 8);
        assert_eq!(iq2xs_grid().len(), 512 * 8);
        assert_eq!(iq2s_grid().len(), 1024 * 8);
        assert_eq!(iq3xxs_grid().len(), 256 * 4);
        assert_eq!(iq3s_grid().len(), 512 * 4);
        assert_eq!(iq1s_grid().len(), 2048 * 8);
        // ksigns_iq2xs starts 0, 129, 130, 3, 132, ...
        let first: Vec<u8> = (0..5).map(ksigns).collect();
        assert_eq!(first, [0, 129, 130, 3, 132]);
    }
}
