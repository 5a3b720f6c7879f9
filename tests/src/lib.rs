//! fmar's shared test harness: a plain-Rust f64 reference for `relu(lhs @ rhs + bias)` and its
//! three gradients, random inputs that are fresh on every run (and reproducible from a printed
//! seed), and one tolerance rule per dtype.
//!
//! Every crate's tests use it as a dev-dependency, and this package's integration tests (in
//! `tests/`) use it with fmar's public API. It depends on no part of fmar and on no GPU crate, so
//! a swapped-in kernel crate can run the same checks. The `burn` feature adds `burn_io`, host
//! data in and out of Burn tensors, for the tests that run on Burn.

#[cfg(feature = "burn")]
pub mod burn_io;
pub mod cases;
pub mod check;
pub mod data;
pub mod layout;
pub mod non_finite;
pub mod reference;
pub mod serial;
pub mod tolerance;

pub use cases::{Case, Layout, case, case_count, for_random_cases};
pub use check::{Outcome, check_outcome};
pub use data::{Precision, Rng, should_run};
pub use non_finite::{ValueClass, classes, finite_forward_scale, non_finite_problem};
pub use reference::{Gradients, HostTensor, Problem};
pub use tolerance::{Tolerance, Tolerances, assert_close, tf32_matmuls, worst_relative_error};
