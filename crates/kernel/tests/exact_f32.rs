//! f32 with TF32 rounding disallowed (cubek's `allow_tf32 = false`, set for this process before
//! any launch, which is why this is a test binary of its own): at up to 32 rows with an N-major
//! `rhs` the crate's choice still runs a Hopper kernel, its f32 FMAs, and matches the f64
//! reference at f32's own tolerance; above 32 rows every Hopper path declines, since the FMA
//! paths take no more rows and the MMAs would round to TF32. Off Hopper they decline either
//! way.

use fmar_kernel as kernel; // the contract harness reaches the crate under test as `crate::kernel`

// The harness's device, transfer and layout helpers; its contract tests run in `against_f64`.
#[allow(dead_code, unused_macros, unused_imports)]
mod contract;
#[allow(dead_code)]
mod hopper_support;

use fmar_tests::{Precision, Problem, Rng, Tolerance};
use hopper_support::{FewRowProblem, check_few_row_f32, hopper_operands};

#[test]
fn few_row_f32_is_exact_where_tf32_is_disallowed() {
    use contract::{client, elem_type};
    use cubek_std::config::{CubekConfig, MatmulConfig, RuntimeConfig};
    CubekConfig::set(CubekConfig {
        matmul: MatmulConfig { allow_tf32: false },
    });
    assert!(!MatmulConfig::get().allow_tf32);
    // Rows of 1001, 2055 and 517 elements are not 16-byte multiples; 1, 7, 16 and 29 rows take
    // each FMA kernel, and 3 rows of 4100 the one that reads four weight columns a unit.
    let problems: &[FewRowProblem] = &[
        (&[1, 7, 1001], &[1, 1001, 2055], &[2055], false),
        (&[3, 16, 517], &[1, 517, 1030], &[3, 16, 1030], true),
        (&[2, 1, 4097], &[2, 4097, 99], &[1, 99], false),
        (&[2, 29, 517], &[1, 517, 1030], &[1030], true),
        // Four weight columns a unit (rows of 16-byte multiples, at most 4 rows, slices at least
        // 64 deep).
        (&[2, 3, 8200], &[1, 8200, 4100], &[4100], false),
        // The one-launch kernel: clusters of two slices, summed in the first cube.
        (&[1, 2, 4100], &[1, 4100, 4100], &[4100], false),
    ];
    let precision = Precision::F32;
    if !check_few_row_f32(problems, Tolerance::for_precision(precision)) {
        return;
    }
    let client = client();
    // 33 rows: past the FMA kernels, and the MMAs may not round.
    let mut rng = Rng::fresh();
    let problem = Problem::random(&[1, 33, 256], &[1, 256, 128], &[128], &mut rng, precision);
    for path in kernel::HopperPath::ALL {
        let (operands, _) = hopper_operands(&client, &problem, precision, false, false);
        match kernel::launch_variant(&client, operands, elem_type(precision), path.into()) {
            Err(kernel::LaunchError::Unavailable { reason, .. }) => {
                assert!(
                    reason.contains("TF32") || reason.contains("33 rows"),
                    "{}: declined for another reason: {reason}",
                    path.name()
                );
            }
            other => panic!(
                "{}: 33 f32 rows without TF32 must decline, got {other:?}",
                path.name()
            ),
        }
    }
}
