//! # rlx-autodiff — graph transforms
//!
//! Home of `grad_with_loss`, `jvp`, `hvp`, `vmap` and `nth_order_grad`, with
//! one rule file per op family. The transforms issue fills it; today it
//! exports nothing.
#![warn(missing_docs)]
