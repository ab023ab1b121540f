//! Exact 2D Delaunay triangulation (`geo.delaunay`).
//!
//! Built on `spade`'s bulk loader, whose orientation and in-circle tests are
//! Shewchuk's adaptive exact predicates: for f64 input (and integers up to
//! 2^53, which f64 holds exactly) every decision is exact, so the result is
//! a true Delaunay triangulation of the input, not of a rounded copy.
//!
//! Degenerate input is handled deterministically: duplicate points collapse
//! onto their first occurrence (later copies appear in no triangle);
//! collinear input has no triangles; four or more cocircular points get one
//! of their valid triangulations, the same one for the same input. The
//! triangle list is canonical: each triangle counter-clockwise starting at
//! its smallest index, the list sorted.

use crate::error::{GeoError, Result};
use spade::{DelaunayTriangulation, HasPosition, Point2, Triangulation as _};

/// The triangles of a Delaunay triangulation, as indices into the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Triangulation {
    /// Counter-clockwise triangles, each starting at its smallest index,
    /// sorted. At most `2n - 5` of them for `n >= 3` distinct points.
    pub triangles: Vec<[i32; 3]>,
    /// For each input point, the index of the point it is a duplicate of
    /// (its own index when it is the first at its position).
    pub representative: Vec<i32>,
}

impl Triangulation {
    /// The triangles as the op's `[2n, 3]` I32 output (row-major), padded
    /// with `-1` rows after the last triangle.
    pub fn padded(&self) -> Vec<i32> {
        let rows = 2 * self.representative.len();
        let mut out = vec![-1; rows * 3];
        for (dst, t) in out.chunks_exact_mut(3).zip(&self.triangles) {
            dst.copy_from_slice(t);
        }
        out
    }
}

/// A site: its position and its index in the input.
#[derive(Clone, Copy, Debug)]
struct Site {
    pos: Point2<f64>,
    index: u32,
}

impl HasPosition for Site {
    type Scalar = f64;
    fn position(&self) -> Point2<f64> {
        self.pos
    }
}

fn check_coordinate(index: usize, x: f64, y: f64) -> Result<()> {
    if !x.is_finite() || !y.is_finite() {
        return Err(GeoError::NonFinite { index, x, y });
    }
    for value in [x, y] {
        let a = value.abs();
        if value != 0.0 && !(spade::MIN_ALLOWED_VALUE..=spade::MAX_ALLOWED_VALUE).contains(&a) {
            return Err(GeoError::OutOfRange { index, value });
        }
    }
    Ok(())
}

/// The Delaunay triangulation of `points` (`[x, y]` pairs).
///
/// Errors: a NaN / infinite coordinate, a coordinate outside the exact
/// range, more than `i32::MAX / 2` points — each naming the point.
///
/// ```
/// let t = rlx_geo::delaunay(&[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])?;
/// assert_eq!(t.triangles.len(), 2);
/// # Ok::<(), rlx_geo::GeoError>(())
/// ```
pub fn delaunay(points: &[[f64; 2]]) -> Result<Triangulation> {
    let max = (i32::MAX / 2) as usize;
    if points.len() > max {
        return Err(GeoError::TooManyPoints {
            count: points.len(),
            max,
        });
    }
    for (i, &[x, y]) in points.iter().enumerate() {
        check_coordinate(i, x, y)?;
    }
    // -0.0 and 0.0 are one position.
    let key = |i: usize| [points[i][0] + 0.0, points[i][1] + 0.0];
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|&a, &b| {
        let (ka, kb) = (key(a), key(b));
        ka[0]
            .total_cmp(&kb[0])
            .then(ka[1].total_cmp(&kb[1]))
            .then(a.cmp(&b))
    });
    let mut representative: Vec<i32> = (0..points.len() as i32).collect();
    let mut sites = Vec::with_capacity(points.len());
    let mut prev: Option<usize> = None;
    for &i in &order {
        match prev {
            Some(p) if key(p) == key(i) => representative[i] = p as i32,
            _ => {
                prev = Some(i);
                let [x, y] = key(i);
                sites.push(Site {
                    pos: Point2::new(x, y),
                    index: i as u32,
                });
            }
        }
    }
    // Insertion order is the input order of the distinct points, so the
    // result depends on the input alone.
    sites.sort_by_key(|s| s.index);
    let dt: DelaunayTriangulation<Site> =
        DelaunayTriangulation::bulk_load(sites).map_err(|e| GeoError::InvalidArgument {
            name: "points",
            reason: format!("{e:?}"),
        })?;
    let mut triangles: Vec<[i32; 3]> = dt
        .inner_faces()
        .map(|f| {
            let v = f.vertices().map(|v| v.data().index as i32);
            let m = (0..3).min_by_key(|&k| v[k]).unwrap_or(0);
            [v[m], v[(m + 1) % 3], v[(m + 2) % 3]]
        })
        .collect();
    triangles.sort_unstable();
    Ok(Triangulation {
        triangles,
        representative,
    })
}

/// [`delaunay`] of integer points (exact: every integer of magnitude up to
/// 2^53 is an f64).
pub fn delaunay_i64(points: &[[i64; 2]]) -> Result<Triangulation> {
    const LIMIT: i64 = 1 << 53;
    let mut as_f64 = Vec::with_capacity(points.len());
    for (index, p) in points.iter().enumerate() {
        for &value in p {
            if !(-LIMIT..=LIMIT).contains(&value) {
                return Err(GeoError::IntegerTooLarge { index, value });
            }
        }
        as_f64.push([p[0] as f64, p[1] as f64]);
    }
    delaunay(&as_f64)
}
