//! The element types an optimizer steps: `f32` and `f64`. Every update is
//! computed in the buffer's own precision, as `torch.optim` does: Python
//! floats (the hyperparameters, bias corrections) are computed in `f64` and
//! rounded to the element type where torch passes them to a tensor op.

use std::collections::BTreeMap;
use std::fmt::Debug;

use crate::error::Result;
use crate::optimizer::Optimizer;
use crate::state::ParamState;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// `f32` or `f64`: the precision of a parameter buffer and of its state.
pub trait Float:
    num_traits::Float + Debug + Default + Send + Sync + 'static + sealed::Sealed
{
    /// `"f32"` or `"f64"`.
    const NAME: &'static str;
    /// Round an `f64` (a Python float in the reference) to this type.
    fn c(x: f64) -> Self;
    /// Widen to `f64` (exact).
    fn f64(self) -> f64;
    /// The state buffers of this precision inside a parameter's state.
    #[doc(hidden)]
    fn bufs(st: &mut ParamState) -> &mut BTreeMap<String, Vec<Self>>;
    /// The state buffers of this precision, read-only.
    #[doc(hidden)]
    fn bufs_ref(st: &ParamState) -> &BTreeMap<String, Vec<Self>>;
    /// Calls the optimizer's step for this precision.
    #[doc(hidden)]
    fn step_on<O: Optimizer + ?Sized>(
        opt: &mut O,
        name: &str,
        shape: &[usize],
        param: &mut [Self],
        grad: &[Self],
    ) -> Result<()>;
}

macro_rules! float_impl {
    ($t:ident, $step:ident) => {
        impl Float for $t {
            const NAME: &'static str = stringify!($t);
            fn c(x: f64) -> Self {
                x as $t
            }
            fn f64(self) -> f64 {
                self as f64
            }
            fn bufs(st: &mut ParamState) -> &mut BTreeMap<String, Vec<Self>> {
                &mut st.$t
            }
            fn bufs_ref(st: &ParamState) -> &BTreeMap<String, Vec<Self>> {
                &st.$t
            }
            fn step_on<O: Optimizer + ?Sized>(
                opt: &mut O,
                name: &str,
                shape: &[usize],
                param: &mut [Self],
                grad: &[Self],
            ) -> Result<()> {
                opt.$step(name, shape, param, grad)
            }
        }
    };
}

float_impl!(f32, step_f32);
float_impl!(f64, step_f64);

/// `a + alpha * b` as torch's CPU kernels compute `add(alpha=)` /
/// `addcmul`: one fused multiply-add (what the compiler makes of the
/// kernel's scalar loop on an FMA machine; the torch fixtures show it).
pub(crate) fn madd<T: Float>(a: T, alpha: T, b: T) -> T {
    alpha.mul_add(b, a)
}

/// torch's `lerp` (`self + w (end - self)` for `|w| < 0.5`, else
/// `end - (end - self)(1 - w)`), fused as its CPU kernel is.
pub(crate) fn lerp<T: Float>(a: T, b: T, w: T) -> T {
    if w.abs() < T::c(0.5) {
        w.mul_add(b - a, a)
    } else {
        (-(b - a)).mul_add(T::one() - w, b)
    }
}

/// `x.lerp_(y, w)` elementwise.
pub(crate) fn lerp_into<T: Float>(x: &mut [T], y: &[T], w: T) {
    for (a, &b) in x.iter_mut().zip(y) {
        *a = lerp(*a, b, w);
    }
}

/// `x.mul_(beta).addcmul_(y, y, value=v)`: the second-moment update.
pub(crate) fn ema_sq_into<T: Float>(x: &mut [T], y: &[T], beta: T, v: T) {
    for (a, &b) in x.iter_mut().zip(y) {
        *a = madd(*a * beta, v * b, b);
    }
}

/// `x.mul_(beta).add_(y, alpha=v)`.
pub(crate) fn ema_into<T: Float>(x: &mut [T], y: &[T], beta: T, v: T) {
    for (a, &b) in x.iter_mut().zip(y) {
        *a = madd(*a * beta, v, b);
    }
}

/// `x.add_(y, alpha=v)`.
pub(crate) fn axpy<T: Float>(x: &mut [T], v: T, y: &[T]) {
    for (a, &b) in x.iter_mut().zip(y) {
        *a = madd(*a, v, b);
    }
}

/// `sqrt(sum x^2)` accumulated in `T`.
pub(crate) fn norm<T: Float>(x: &[T]) -> T {
    x.iter().fold(T::zero(), |s, &v| s + v * v).sqrt()
}
