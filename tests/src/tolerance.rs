//! One tolerance rule for every comparison, with the constant set by the storage precision.
//!
//! An element passes when `|actual - expected| <= rtol * (|expected| + scale)`, where `scale` is
//! the typical size of a partial sum in the reduction that produced it, `sqrt(k) * max|a| *
//! max|b|` for a length-`k` dot product ([`Tolerance::matmul_scale`]). The `|expected|` term
//! covers the final rounding to the storage dtype; the `scale` term covers accumulation error
//! and cancellation near zero. `rtol` is a small multiple of the unit roundoff `u`:
//!
//! | storage | `u` | `rtol` | why |
//! |---|---|---|---|
//! | f32 | 2^-24 | 1e-5 | f32 accumulation drifts by about `sqrt(k) * u` of `scale`; 1e-5 leaves 10x room at k = 4096 |
//! | tf32 | 2^-11 | 5e-3 | inputs rounded to 10 mantissa bits (CUDA matmuls with `allow_tf32`) |
//! | f16 | 2^-11 | 2e-3 | `4u`: output rounding plus one rounding of each intermediate tensor |
//! | bf16 | 2^-8 | 1.6e-2 | `4u`, likewise |
//!
//! The f16 bound is tight enough that an f16 accumulator fails it: at k = 4096 with inputs in
//! [0, 1), an f16 running sum (spacing 0.5 near 1000) rounds away most of each addend and ends
//! about 9% short of the true sum of about 1024, some 40 times the bound (measured on lavapipe by
//! `fmar-kernel`'s `f16_tolerance_catches_an_f16_accumulator_at_k_4096`).

use crate::data::Precision;

/// The relative tolerance of one comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// The multiplier of `|expected| + scale`.
    pub rtol: f64,
}

impl Tolerance {
    /// The tolerance for results stored in `precision` and accumulated in f32.
    pub fn for_precision(precision: Precision) -> Self {
        let rtol = match precision {
            Precision::F32 => 1e-5,
            Precision::F16 => 4.0 * precision.unit_roundoff(),
            Precision::BF16 => 4.0 * precision.unit_roundoff(),
        };
        Self { rtol }
    }

    /// The tolerance for f32 results of a matmul that may round its inputs to TF32.
    pub fn tf32() -> Self {
        Self { rtol: 5e-3 }
    }

    /// The typical partial-sum size of a length-`k` dot product of values bounded by `a_max`
    /// and `b_max`.
    pub fn matmul_scale(k: usize, a_max: f64, b_max: f64) -> f64 {
        (k as f64).sqrt() * a_max * b_max
    }

    /// The largest error allowed for an element expected to be `expected`.
    pub fn bound(&self, expected: f64, scale: f64) -> f64 {
        self.rtol * (expected.abs() + scale)
    }
}

/// The tolerances of one implementation run: its forward and its gradients. Both accumulate in
/// f32; on CUDA, f32 matmuls on tensor cores (fmar's routines as Burn's) round their inputs to
/// TF32 while cubek's `allow_tf32` is on, its default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerances {
    /// For the forward output.
    pub forward: Tolerance,
    /// For the gradients.
    pub gradients: Tolerance,
}

impl Tolerances {
    /// Storage `precision`; `tf32_matmuls` when the runtime's f32 matmuls may use TF32.
    pub fn new(precision: Precision, tf32_matmuls: bool) -> Self {
        let tolerance = match precision {
            Precision::F32 if tf32_matmuls => Tolerance::tf32(),
            _ => Tolerance::for_precision(precision),
        };
        Self {
            forward: tolerance,
            gradients: tolerance,
        }
    }
}

/// Whether Burn's f32 matmuls may round to TF32 on the runtime `FMAR_TEST_DEVICE` or
/// `BURN_DEVICE` names: true for CUDA, whose tensor cores cubek uses with `allow_tf32`.
pub fn tf32_matmuls() -> bool {
    ["FMAR_TEST_DEVICE", "BURN_DEVICE"]
        .iter()
        .any(|name| std::env::var(name).is_ok_and(|v| v.eq_ignore_ascii_case("cuda")))
}

/// Panics, naming `what`, the worst element and the seed, unless every element of `actual` is
/// within `tolerance` of `expected`. NaN passes only where NaN is expected, and infinities only
/// where the same infinity is expected.
pub fn assert_close(
    what: &str,
    actual: &[f64],
    expected: &[f64],
    tolerance: Tolerance,
    scale: f64,
    seed: u64,
) {
    assert_eq!(
        actual.len(),
        expected.len(),
        "{what}: {} values, expected {} (seed {seed})",
        actual.len(),
        expected.len()
    );
    let mut worst: Option<(usize, f64)> = None;
    let mut failures = 0;
    for (index, (&a, &e)) in actual.iter().zip(expected).enumerate() {
        let ok = if e.is_nan() || a.is_nan() {
            e.is_nan() && a.is_nan()
        } else if e.is_infinite() || a.is_infinite() {
            a == e
        } else {
            (a - e).abs() <= tolerance.bound(e, scale)
        };
        if !ok {
            failures += 1;
            let excess = if (a - e).is_nan() {
                f64::INFINITY
            } else {
                (a - e).abs() / tolerance.bound(e, scale).max(f64::MIN_POSITIVE)
            };
            if worst.is_none_or(|(_, w)| excess > w) {
                worst = Some((index, excess));
            }
        }
    }
    if let Some((index, excess)) = worst {
        panic!(
            "{what}: {failures} of {} elements outside tolerance (rtol {:e}, scale {scale:.3e}); \
             worst at flat index {index}: got {}, expected {}, error {:.3e} is {excess:.1}x the \
             bound. Reproduce with FMAR_TEST_SEED={seed}",
            actual.len(),
            tolerance.rtol,
            actual[index],
            expected[index],
            (actual[index] - expected[index]).abs(),
        );
    }
}

/// The largest `|actual - expected| / |expected|` over the elements (0 where they are equal):
/// how far off a result is, for tests that show a wrong implementation is visibly wrong rather
/// than just outside a bound. NaN if any element is NaN; infinite if an element expected to be
/// 0 is not.
pub fn worst_relative_error(actual: &[f64], expected: &[f64]) -> f64 {
    assert_eq!(
        actual.len(),
        expected.len(),
        "compared slices differ in length"
    );
    actual
        .iter()
        .zip(expected)
        .map(|(&a, &e)| if a == e { 0.0 } else { (a - e).abs() / e.abs() })
        .fold(0.0, |worst: f64, error| {
            if worst.is_nan() || error.is_nan() {
                f64::NAN
            } else {
                worst.max(error)
            }
        })
}
