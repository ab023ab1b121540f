//! Projection of one Gaussian (3DGS `preprocess`): view-space mean, EWA 2D
//! covariance with the 0.3 low-pass, conic, screen radius and tile
//! rectangle; and its reverse mode from the screen-space gradients.

use crate::gaussians::{Camera, Gaussians};
use crate::mat::{mul, mul_vec, scale, tr};
use rlx_ir::ops::splat::{gaussian_splat_tiles, GAUSSIAN_SPLAT_TILE_SIZE};

/// The EWA low-pass added to the 2D covariance's diagonal (one pixel's footprint).
const LOW_PASS: f64 = 0.3;

/// One Gaussian on screen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Projected {
    /// Pixel centre.
    pub mean: [f64; 2],
    /// Inverse 2D covariance `(a, b, c)` of `[[a, b], [b, c]]`.
    pub conic: [f64; 3],
    /// View-space depth.
    pub depth: f64,
    /// Screen radius (pixels); 0 when culled.
    pub radius: f64,
    /// Opacity.
    pub opacity: f64,
    /// Color.
    pub color: [f64; 3],
    /// Tiles touched: columns `rect[0]..rect[2]`, rows `rect[1]..rect[3]`.
    pub rect: [usize; 4],
}

impl Projected {
    /// True when it reaches at least one tile.
    pub fn visible(&self) -> bool {
        self.radius > 0.0
    }
}

/// The forward intermediates of one Gaussian the reverse mode reuses.
struct Geometry {
    /// Normalized quaternion and the norm of the given one.
    q: [f64; 4],
    q_norm: f64,
    rot: [[f64; 3]; 3],
    /// `R · diag(s)`.
    m: [[f64; 3]; 3],
    cov3: [[f64; 3]; 3],
    /// View-space mean.
    t: [f64; 3],
    /// `J · V`.
    jv: [[f64; 3]; 2],
    cov2: [[f64; 2]; 2],
}

pub(crate) fn quat_rot(q: [f64; 4]) -> [[f64; 3]; 3] {
    let [w, x, y, z] = q;
    [
        [
            1.0 - 2.0 * (y * y + z * z),
            2.0 * (x * y - w * z),
            2.0 * (x * z + w * y),
        ],
        [
            2.0 * (x * y + w * z),
            1.0 - 2.0 * (x * x + z * z),
            2.0 * (y * z - w * x),
        ],
        [
            2.0 * (x * z - w * y),
            2.0 * (y * z + w * x),
            1.0 - 2.0 * (x * x + y * y),
        ],
    ]
}

/// `x/z` clamped to `±lim`, times `z` (3DGS clamps the Jacobian's point so
/// Gaussians far off screen do not blow it up), and whether it clamped.
fn clamp_lateral(x: f64, z: f64, lim: f64) -> (f64, bool) {
    let u = x / z;
    (u.clamp(-lim, lim) * z, u.abs() > lim)
}

fn jacobian(cam: &Camera, t: [f64; 3]) -> [[f64; 3]; 2] {
    let z = t[2];
    let (tx, _) = clamp_lateral(t[0], z, cam.lim_x);
    let (ty, _) = clamp_lateral(t[1], z, cam.lim_y);
    [
        [cam.fx / z, 0.0, -cam.fx * tx / (z * z)],
        [0.0, cam.fy / z, -cam.fy * ty / (z * z)],
    ]
}

fn geometry(cam: &Camera, g: &Gaussians, i: usize) -> Geometry {
    let r = g.rotations[i];
    let q_norm = r.iter().map(|v| v * v).sum::<f64>().sqrt();
    let q = r.map(|v| v / q_norm);
    let rot = quat_rot(q);
    let s = g.scales[i];
    let m: [[f64; 3]; 3] = std::array::from_fn(|a| std::array::from_fn(|b| rot[a][b] * s[b]));
    let cov3 = mul(&m, &tr(&m));
    let mut t = mul_vec(&cam.rot, &g.means[i]);
    t.iter_mut().zip(cam.trans).for_each(|(a, b)| *a += b);
    let jv = mul(&jacobian(cam, t), &cam.rot);
    let mut cov2 = mul(&mul(&jv, &cov3), &tr(&jv));
    cov2[0][0] += LOW_PASS;
    cov2[1][1] += LOW_PASS;
    Geometry {
        q,
        q_norm,
        rot,
        m,
        cov3,
        t,
        jv,
        cov2,
    }
}

/// Projects Gaussian `i`; culled (radius 0) behind the near plane, with a
/// singular 2D covariance, or touching no tile.
pub(crate) fn project(cam: &Camera, g: &Gaussians, i: usize) -> Projected {
    let geo = geometry(cam, g, i);
    let t = geo.t;
    let culled = Projected {
        mean: [0.0; 2],
        conic: [0.0; 3],
        depth: t[2],
        radius: 0.0,
        opacity: g.opacities[i],
        color: g.colors[i],
        rect: [0; 4],
    };
    if t[2] <= cam.near {
        return culled;
    }
    let [[a, b], [_, c]] = geo.cov2;
    let det = a * c - b * b;
    if det == 0.0 {
        return culled;
    }
    let mean = [cam.fx * t[0] / t[2] + cam.cx, cam.fy * t[1] / t[2] + cam.cy];
    let mid = 0.5 * (a + c);
    let lambda = mid + (mid * mid - det).max(0.1).sqrt();
    let radius = (3.0 * lambda.sqrt()).ceil();
    let rect = tile_rect(cam, mean, radius);
    if (rect[2] - rect[0]) * (rect[3] - rect[1]) == 0 {
        return culled;
    }
    Projected {
        mean,
        conic: [c / det, -b / det, a / det],
        radius,
        rect,
        ..culled
    }
}

/// The tiles `[centre ± radius]` touches (3DGS `getRect`).
fn tile_rect(cam: &Camera, mean: [f64; 2], radius: f64) -> [usize; 4] {
    let (tx, ty) = gaussian_splat_tiles(cam.width, cam.height);
    let ts = GAUSSIAN_SPLAT_TILE_SIZE as f64;
    // Truncation as C's (int) cast; negatives clamp to 0 either way.
    let lo = |v: f64, n: usize| ((v / ts).trunc().max(0.0) as usize).min(n);
    let hi = |v: f64, n: usize| (((v + ts - 1.0) / ts).trunc().max(0.0) as usize).min(n);
    [
        lo(mean[0] - radius, tx),
        lo(mean[1] - radius, ty),
        hi(mean[0] + radius, tx),
        hi(mean[1] + radius, ty),
    ]
}

/// Gradients of one Gaussian's screen quantities.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ScreenGrad {
    pub mean: [f64; 2],
    /// W.r.t. the symmetric conic matrix `[[a, b], [b, c]]` as a matrix:
    /// `(d/da, d/d(each off-diagonal entry), d/dc)`.
    pub conic: [f64; 3],
}

/// Gradients of one Gaussian's projection inputs.
pub(crate) struct ProjectionGrad {
    pub mean: [f64; 3],
    pub scale: [f64; 3],
    pub rotation: [f64; 4],
}

/// Reverse mode of [`project`] for a visible Gaussian.
pub(crate) fn project_vjp(
    cam: &Camera,
    g: &Gaussians,
    i: usize,
    p: &Projected,
    d: &ScreenGrad,
) -> ProjectionGrad {
    let geo = geometry(cam, g, i);
    let [ka, kb, kc] = p.conic;
    let k = [[ka, kb], [kb, kc]];
    let dk = [[d.conic[0], d.conic[1]], [d.conic[1], d.conic[2]]];
    // conic = cov2⁻¹  ⇒  dL/dcov2 = -K · dL/dK · K (all symmetric).
    let d_cov2 = scale(&mul(&mul(&k, &dk), &k), -1.0);
    // cov2 = T Σ Tᵀ + 0.3 I with T = J V.
    let d_cov3 = mul(&mul(&tr(&geo.jv), &d_cov2), &geo.jv);
    let d_jv = scale(&mul(&mul(&d_cov2, &geo.jv), &geo.cov3), 2.0);
    let d_j = mul(&d_jv, &tr(&cam.rot));
    let d_t = view_point_grad(cam, geo.t, &d_j, d.mean);
    let mean = mul_vec(&tr(&cam.rot), &d_t);
    // Σ = M Mᵀ, M = R diag(s).
    let d_m = scale(&mul(&d_cov3, &geo.m), 2.0);
    let s = g.scales[i];
    let scale_grad = std::array::from_fn(|b| (0..3).map(|a| d_m[a][b] * geo.rot[a][b]).sum());
    let d_rot: [[f64; 3]; 3] = std::array::from_fn(|a| std::array::from_fn(|b| d_m[a][b] * s[b]));
    let dq = quat_grad(geo.q, &d_rot);
    // Through q = r / |r|.
    let dot: f64 = geo.q.iter().zip(&dq).map(|(a, b)| a * b).sum();
    let rotation = std::array::from_fn(|c| (dq[c] - geo.q[c] * dot) / geo.q_norm);
    ProjectionGrad {
        mean,
        scale: scale_grad,
        rotation,
    }
}

/// dL/dt of the view-space mean, from the Jacobian's and the pixel centre's gradients.
fn view_point_grad(cam: &Camera, t: [f64; 3], d_j: &[[f64; 3]; 2], d_mean: [f64; 2]) -> [f64; 3] {
    let z = t[2];
    let (z2, z3) = (z * z, z * z * z);
    let mut d_t = [0.0; 3];
    // J00 = fx/z, J11 = fy/z.
    d_t[2] += -(d_j[0][0] * cam.fx + d_j[1][1] * cam.fy) / z2;
    // J02 = -f · tx_c / z², tx_c = clamp(x/z) · z.
    for (axis, f, lim) in [(0, cam.fx, cam.lim_x), (1, cam.fy, cam.lim_y)] {
        let dj = d_j[axis][2];
        let (tc, clamped) = clamp_lateral(t[axis], z, lim);
        if clamped {
            // J02 = -f · (±lim) / z.
            d_t[2] += dj * f * (tc / z) / z2;
        } else {
            d_t[axis] += dj * -f / z2;
            d_t[2] += dj * 2.0 * f * t[axis] / z3;
        }
        // pixel = f · t / z + c.
        d_t[axis] += d_mean[axis] * f / z;
        d_t[2] += d_mean[axis] * -f * t[axis] / z2;
    }
    d_t
}

/// dL/dq of `R(q)` (unnormalized formula) given dL/dR.
fn quat_grad(q: [f64; 4], g: &[[f64; 3]; 3]) -> [f64; 4] {
    let [w, x, y, z] = q;
    [
        2.0 * (-z * g[0][1] + y * g[0][2] + z * g[1][0] - x * g[1][2] - y * g[2][0] + x * g[2][1]),
        2.0 * (y * g[0][1] + z * g[0][2] + y * g[1][0] - 2.0 * x * g[1][1] - w * g[1][2]
            + z * g[2][0]
            + w * g[2][1]
            - 2.0 * x * g[2][2]),
        2.0 * (-2.0 * y * g[0][0] + x * g[0][1] + w * g[0][2] + x * g[1][0] + z * g[1][2]
            - w * g[2][0]
            + z * g[2][1]
            - 2.0 * y * g[2][2]),
        2.0 * (-2.0 * z * g[0][0] - w * g[0][1] + x * g[0][2] + w * g[1][0] - 2.0 * z * g[1][1]
            + y * g[1][2]
            + x * g[2][0]
            + y * g[2][1]),
    ]
}
