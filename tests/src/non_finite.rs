//! Problems whose inputs hold NaN and infinities, for the tests that every kernel and every
//! device treats them as the reference does: IEEE arithmetic through the dot product and the bias
//! (NaN is sticky, `inf * 0` and `inf - inf` are NaN), then Burn's `relu(x) = x <= 0 ? 0 : x`,
//! so NaN stays NaN, +inf stays +inf and -inf becomes 0.

use crate::data::{Precision, Rng};
use crate::reference::{HostTensor, Problem};
use crate::tolerance::Tolerance;

/// What a value is, as far as non-finite arithmetic goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueClass {
    /// Not a number.
    Nan,
    /// `+inf`.
    PositiveInfinity,
    /// `-inf`.
    NegativeInfinity,
    /// `+0` or `-0`.
    Zero,
    /// Any other finite value.
    Finite,
}

/// Each value's [`ValueClass`].
pub fn classes(values: &[f64]) -> Vec<ValueClass> {
    values
        .iter()
        .map(|&x| match x {
            x if x.is_nan() => ValueClass::Nan,
            f64::INFINITY => ValueClass::PositiveInfinity,
            f64::NEG_INFINITY => ValueClass::NegativeInfinity,
            0.0 => ValueClass::Zero,
            _ => ValueClass::Finite,
        })
        .collect()
}

/// Random `[batch, m, k] @ [batch, k, n] + [batch, m, n]` in `precision`, with non-finite values
/// placed in batch 0 so that its output holds every case: row 0 NaN throughout (a NaN in `lhs`),
/// row 1 +-inf by the sign of `rhs[1, j]` (+inf in `lhs`), column 3 -+inf by the sign of
/// `lhs[i, 2]` (-inf in `rhs`), NaN at (2, 5) from `inf * 0`, and +inf and -inf in the bias at
/// (4, 6) and (5, 0). Needs `m >= 6`, `k >= 5`, `n >= 7`.
pub fn non_finite_problem(
    batch: usize,
    (m, k, n): (usize, usize, usize),
    rng: &mut Rng,
    precision: Precision,
) -> Problem {
    assert!(
        batch >= 1 && m >= 6 && k >= 5 && n >= 7,
        "non_finite_problem needs batch >= 1, m >= 6, k >= 5 and n >= 7"
    );
    let mut lhs = HostTensor::random(&[batch, m, k], rng, precision);
    let mut rhs = HostTensor::random(&[batch, k, n], rng, precision);
    let mut bias = HostTensor::random(&[batch, m, n], rng, precision);
    lhs.data[0] = f64::NAN;
    lhs.data[k + 1] = f64::INFINITY;
    rhs.data[2 * n + 3] = f64::NEG_INFINITY;
    rhs.data[4 * n + 5] = 0.0;
    lhs.data[2 * k + 4] = f64::INFINITY;
    bias.data[4 * n + 6] = f64::INFINITY;
    bias.data[5 * n] = f64::NEG_INFINITY;
    Problem::new(lhs, rhs, bias)
}

/// The scale of `problem`'s finite forward sums, for the tolerance of its finite outputs (the
/// non-finite ones must match exactly): [`Problem::forward_scale`] over the finite inputs.
pub fn finite_forward_scale(problem: &Problem) -> f64 {
    let finite_max = |t: &HostTensor| {
        t.data
            .iter()
            .filter(|x| x.is_finite())
            .fold(0.0_f64, |acc, x| acc.max(x.abs()))
    };
    Tolerance::matmul_scale(
        problem.k(),
        finite_max(&problem.lhs),
        finite_max(&problem.rhs),
    ) + finite_max(&problem.bias)
}
