//! NaN and infinities through every entry: the contract is IEEE arithmetic through the dot
//! product and the bias, then Burn's `relu(x) = x <= 0 ? 0 : x`, which passes NaN. A compiler
//! that may assume no NaN (GLSL's, for one) is free to fold that select into `max(x, 0)`, which
//! returns 0 for NaN; this test is what catches it on each adapter.

use super::{Kernel, ROW_MAJOR, check_expected, supports};
use fmar_tests::{Precision, Rng, finite_forward_scale, non_finite_problem, should_run};
use std::fmt::Display;

/// Sizes that reach the small-problem kernels and the tiled ones (several tiles in every dim,
/// ragged edges, a batch).
const SIZES: &[(usize, (usize, usize, usize))] =
    &[(1, (6, 5, 7)), (2, (37, 70, 41)), (1, (128, 256, 64))];

pub fn non_finite_values_follow_ieee_then_relu<V: Copy + Display>(kernel: &Kernel<V>) {
    for precision in Precision::ALL {
        if !should_run(precision, supports(precision)) {
            continue;
        }
        for &(batch, dims) in SIZES {
            let mut rng = Rng::fresh();
            let problem = non_finite_problem(batch, dims, &mut rng, precision);
            check_expected(
                kernel,
                &problem,
                precision,
                ROW_MAJOR,
                &problem.output.data,
                finite_forward_scale(&problem),
                rng.seed(),
            );
        }
    }
}
