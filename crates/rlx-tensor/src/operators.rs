//! `+ - * /` and unary `-` on tensors and scalars (failed tensors on error;
//! see [`crate::TensorError`]).

use crate::elementwise::Arg;
use crate::tensor::Tensor;
use std::ops::{Add, Div, Mul, Neg, Sub};

macro_rules! binop {
    ($trait:ident, $method:ident, $try:ident) => {
        impl<R: Into<Arg>> $trait<R> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: R) -> Tensor {
                Tensor::sticky(self.$try(rhs))
            }
        }
        impl<R: Into<Arg>> $trait<R> for Tensor {
            type Output = Tensor;
            fn $method(self, rhs: R) -> Tensor {
                Tensor::sticky((&self).$try(rhs))
            }
        }
        binop!(@scalars $trait, $method, $try, f64, i32);
    };
    (@scalars $trait:ident, $method:ident, $try:ident, $($s:ty),*) => {
        $(
            impl $trait<&Tensor> for $s {
                type Output = Tensor;
                fn $method(self, rhs: &Tensor) -> Tensor {
                    Tensor::sticky(crate::creation::scalar_like(self as f64, rhs).and_then(|l| l.$try(rhs)))
                }
            }
            impl $trait<Tensor> for $s {
                type Output = Tensor;
                fn $method(self, rhs: Tensor) -> Tensor {
                    Tensor::sticky(crate::creation::scalar_like(self as f64, &rhs).and_then(|l| l.$try(&rhs)))
                }
            }
        )*
    };
}

binop!(Add, add, try_add);
binop!(Sub, sub, try_sub);
binop!(Mul, mul, try_mul);
binop!(Div, div, try_div);

impl Neg for &Tensor {
    type Output = Tensor;
    fn neg(self) -> Tensor {
        self.negative()
    }
}

impl Neg for Tensor {
    type Output = Tensor;
    fn neg(self) -> Tensor {
        self.negative()
    }
}
