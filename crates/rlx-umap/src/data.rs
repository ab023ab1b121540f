//! Validation of row-major data matrices handed to the public functions.

use crate::{Result, UmapError};

/// Checks that `x` is a finite `rows x n_features` matrix; returns `rows`.
pub(crate) fn rows_of(name: &'static str, x: &[f64], n_features: usize) -> Result<usize> {
    if n_features == 0 {
        return Err(UmapError::InvalidData {
            name,
            reason: "n_features must be at least 1".into(),
        });
    }
    if !x.len().is_multiple_of(n_features) {
        return Err(UmapError::InvalidData {
            name,
            reason: format!(
                "{} values do not split into rows of {n_features} features",
                x.len()
            ),
        });
    }
    if let Some(i) = x.iter().position(|v| !v.is_finite()) {
        return Err(UmapError::NonFinite {
            name,
            row: i / n_features,
            col: i % n_features,
            value: x[i],
        });
    }
    Ok(x.len() / n_features)
}
