//! Global-norm gradient clipping, as `torch.nn.utils.clip_grad_norm_`.

use crate::float::{norm, Float};

/// The L2 norm of all gradients together: each buffer's norm in its own
/// precision, then the norm of those norms (torch's `clip_grad_norm_`
/// computes it this way).
pub fn l2_norm<T: Float>(grads: &[&[T]]) -> T {
    let norms: Vec<T> = grads.iter().map(|g| norm(g)).collect();
    norm(&norms)
}

/// The factor `clip_grad_norm_(max_norm)` multiplies every gradient by:
/// `min(1, max_norm / (total_norm + 1e-6))`, with `total_norm` the
/// [`l2_norm`] of all gradients.
pub fn global_grad_clip_scale<T: Float>(grads: &[&[T]], max_norm: f64) -> T {
    let total = l2_norm(grads);
    let coef = T::c(max_norm) / (total + T::c(1e-6));
    coef.min(T::one())
}

/// Clips in place like `torch.nn.utils.clip_grad_norm_(grads, max_norm)`
/// and returns the total norm before clipping.
pub fn clip_grad_norm<T: Float>(grads: &mut [&mut [T]], max_norm: f64) -> T {
    let total = {
        let views: Vec<&[T]> = grads.iter().map(|g| &**g).collect();
        l2_norm(&views)
    };
    let scale = (T::c(max_norm) / (total + T::c(1e-6))).min(T::one());
    for g in grads.iter_mut() {
        for x in g.iter_mut() {
            *x = *x * scale;
        }
    }
    total
}
