//! Discrete Voronoi grids (`geo.voronoi_grid`): for every pixel of a
//! `height × width` grid, the index of its nearest site.
//!
//! Pixel `(row, col)` is the point `(x, y) = (col, row)`; sites are given in
//! the same coordinates and may lie outside the grid. Distances are squared
//! Euclidean in f64 (exact for integer sites of magnitude below 2^25); ties
//! go to the smaller site index. Duplicated sites: the first one wins.

use crate::error::{GeoError, Result};

/// How the grid is labelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VoronoiMode {
    /// The nearest site of every pixel (sites swept in x order, pruned by
    /// the x distance): the reference.
    Exact,
    /// Jump flooding (Rong & Tan 2006) with a final step of 1 ("JFA+1"):
    /// `O(W H log max(W, H))` independent of the number of sites; a pixel
    /// may get a site that is not its nearest where regions are thin, and
    /// where sites are denser than pixels (a pixel seeds one site).
    JumpFlood,
}

fn dist2(site: [f64; 2], x: f64, y: f64) -> f64 {
    let (dx, dy) = (site[0] - x, site[1] - y);
    dx * dx + dy * dy
}

/// `(distance², index)` ordering: nearer first, then lower index.
fn better(d: f64, i: u32, best_d: f64, best_i: u32) -> bool {
    d < best_d || (d == best_d && i < best_i)
}

fn check(sites: &[[f64; 2]], width: usize, height: usize) -> Result<()> {
    if sites.is_empty() {
        return Err(GeoError::InvalidArgument {
            name: "sites",
            reason: "no sites: every pixel needs a nearest one".into(),
        });
    }
    if sites.len() > i32::MAX as usize {
        return Err(GeoError::TooManyPoints {
            count: sites.len(),
            max: i32::MAX as usize,
        });
    }
    for (index, &[x, y]) in sites.iter().enumerate() {
        if !x.is_finite() || !y.is_finite() {
            return Err(GeoError::NonFinite { index, x, y });
        }
    }
    if width.checked_mul(height).is_none_or(|n| n > (1 << 34)) {
        return Err(GeoError::InvalidArgument {
            name: "width × height",
            reason: format!("{width} × {height} pixels is more than 2^34"),
        });
    }
    Ok(())
}

/// The `height × width` grid (row-major) of nearest-site indices.
///
/// Errors: no sites, a non-finite site (named), a grid over 2^34 pixels.
///
/// ```
/// use rlx_geo::{voronoi_grid, VoronoiMode};
/// let g = voronoi_grid(&[[0.0, 0.0], [3.0, 0.0]], 4, 1, VoronoiMode::Exact)?;
/// assert_eq!(g, [0, 0, 1, 1]);
/// # Ok::<(), rlx_geo::GeoError>(())
/// ```
pub fn voronoi_grid(
    sites: &[[f64; 2]],
    width: usize,
    height: usize,
    mode: VoronoiMode,
) -> Result<Vec<i32>> {
    check(sites, width, height)?;
    Ok(match mode {
        VoronoiMode::Exact => exact(sites, width, height),
        VoronoiMode::JumpFlood => jump_flood(sites, width, height),
    })
}

fn exact(sites: &[[f64; 2]], width: usize, height: usize) -> Vec<i32> {
    let mut by_x: Vec<u32> = (0..sites.len() as u32).collect();
    by_x.sort_by(|&a, &b| {
        sites[a as usize][0]
            .total_cmp(&sites[b as usize][0])
            .then(a.cmp(&b))
    });
    let xs: Vec<f64> = by_x.iter().map(|&i| sites[i as usize][0]).collect();
    let mut out = vec![0i32; width * height];
    for row in 0..height {
        let y = row as f64;
        for col in 0..width {
            let x = col as f64;
            let start = xs.partition_point(|&sx| sx < x);
            let (mut best_d, mut best_i) = (f64::INFINITY, u32::MAX);
            // Walk right, then left, stopping once the x gap alone exceeds the best.
            let mut visit = |k: usize| {
                let dx = xs[k] - x;
                if dx * dx > best_d {
                    return false;
                }
                let i = by_x[k];
                let d = dist2(sites[i as usize], x, y);
                if better(d, i, best_d, best_i) {
                    (best_d, best_i) = (d, i);
                }
                true
            };
            // `all` stops a walk at the first site too far in x.
            (start..xs.len()).all(&mut visit);
            (0..start).rev().all(&mut visit);
            out[row * width + col] = best_i as i32;
        }
    }
    out
}

fn jump_flood(sites: &[[f64; 2]], width: usize, height: usize) -> Vec<i32> {
    const NONE: u32 = u32::MAX;
    let n = width * height;
    if n == 0 {
        return Vec::new();
    }
    let mut cur = vec![NONE; n];
    // Seed each site at its nearest pixel (clamped into the grid). A pixel
    // holds one site, so when two sites round to the same pixel the later
    // one takes the nearest free pixel within 3 (its distances still use its
    // true position); a site that would be lost otherwise could never win
    // any pixel.
    let (w, h) = (width as isize, height as isize);
    for (i, &s) in sites.iter().enumerate() {
        let col = s[0].round().clamp(0.0, (width - 1) as f64) as isize;
        let row = s[1].round().clamp(0.0, (height - 1) as f64) as isize;
        let mut spot: Option<(f64, usize)> = None;
        'rings: for r in 0..=3isize {
            for dr in -r..=r {
                for dc in -r..=r {
                    if dr.abs().max(dc.abs()) != r {
                        continue;
                    }
                    let (rr, cc) = (row + dr, col + dc);
                    if rr < 0 || cc < 0 || rr >= h || cc >= w {
                        continue;
                    }
                    let p = (rr * w + cc) as usize;
                    if cur[p] == NONE {
                        let d = dist2(s, cc as f64, rr as f64);
                        if spot.is_none_or(|(bd, bp)| d < bd || (d == bd && p < bp)) {
                            spot = Some((d, p));
                        }
                    }
                }
            }
            if spot.is_some() {
                break 'rings;
            }
        }
        match spot {
            Some((_, p)) => cur[p] = i as u32,
            None => {
                let p = (row * w + col) as usize;
                let (x, y) = (col as f64, row as f64);
                let old = cur[p];
                if better(
                    dist2(s, x, y),
                    i as u32,
                    dist2(sites[old as usize], x, y),
                    old,
                ) {
                    cur[p] = i as u32;
                }
            }
        }
    }
    let mut next = cur.clone();
    let mut steps = Vec::new();
    let mut k = width.max(height).next_power_of_two() / 2;
    while k >= 1 {
        steps.push(k);
        k /= 2;
    }
    steps.push(1);
    for &k in &steps {
        let k = k as isize;
        for row in 0..height {
            for col in 0..width {
                let (x, y) = (col as f64, row as f64);
                let (mut best_d, mut best_i) = (f64::INFINITY, NONE);
                for dr in [-k, 0, k] {
                    for dc in [-k, 0, k] {
                        let (r, c) = (row as isize + dr, col as isize + dc);
                        if r < 0 || c < 0 || r >= height as isize || c >= width as isize {
                            continue;
                        }
                        let i = cur[r as usize * width + c as usize];
                        if i == NONE {
                            continue;
                        }
                        let d = dist2(sites[i as usize], x, y);
                        if better(d, i, best_d, best_i) {
                            (best_d, best_i) = (d, i);
                        }
                    }
                }
                next[row * width + col] = best_i;
            }
        }
        std::mem::swap(&mut cur, &mut next);
    }
    cur.into_iter().map(|i| i as i32).collect()
}
