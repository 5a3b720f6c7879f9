//! `fmar-kernel` against the launch contract: the contract tests of `contract/` run with this
//! crate's `launch`, `launch_variant` and every [`Variant`](kernel::Variant), plus one check of
//! the f16 tolerance itself.

use fmar_kernel as kernel; // the contract harness reaches the crate under test as `crate::kernel`

mod contract;

use fmar_tests::{Precision, Rng, Tolerance, assert_close, should_run, worst_relative_error};

contract::contract_tests! {
    launch: kernel::launch,
    launch_variant: kernel::launch_variant,
    variants: &kernel::Variant::ALL,
}

/// The seed's kernel, verbatim in what matters here: it accumulates in its storage type.
#[allow(unsafe_code)] // `launch_unchecked`: the one launch whose indices no contract check guards.
mod seed_kernel {
    use crate::contract::{binding, client, download, elem_type, upload};
    use cubecl::prelude::*;
    use fmar_tests::{Precision, Problem};

    #[cube(launch_unchecked)]
    fn accumulating_in_storage_type<F: Float>(
        lhs: &Tensor<F>,
        rhs: &Tensor<F>,
        bias: &Tensor<F>,
        output: &mut Tensor<F>,
        #[define(F)] _dtype: ElemType,
    ) {
        let row = ABSOLUTE_POS_X as usize;
        let col = ABSOLUTE_POS_Y as usize;
        let n_rows = output.shape(output.rank() - 2);
        let n_cols = output.shape(output.rank() - 1);
        let dim_k = rhs.shape(rhs.rank() - 2);
        if row >= n_rows || col >= n_cols {
            terminate!();
        }
        let mut sum = F::new(0.0);
        for k in 0..dim_k {
            sum += lhs[row * dim_k + k] * rhs[k * n_cols + col];
        }
        let index = row * n_cols + col;
        output[index] = F::max(sum + bias[index], F::new(0.0));
    }

    /// The seed kernel's output on a rank-2 f16 `problem` small enough for one cube.
    pub fn run_f16(problem: &Problem) -> Vec<f64> {
        let client = client();
        let (m, n) = (problem.lhs.shape[0], problem.rhs.shape[1]);
        let k = problem.k();
        assert!(m * n <= 256, "one cube of {m} x {n} units");
        let (lhs, lhs_strides) = upload(&client, &problem.lhs, Precision::F16);
        let (rhs, rhs_strides) = upload(&client, &problem.rhs, Precision::F16);
        let (bias, bias_strides) = upload(&client, &problem.bias, Precision::F16);
        let out = client.create_from_slice(&Precision::F16.encode(&vec![0.0; m * n]));
        // SAFETY: contiguous tensors of the shapes given; one unit per output element, and the
        // kernel returns early for any unit past the output.
        unsafe {
            accumulating_in_storage_type::launch_unchecked(
                &client,
                cubecl::CubeCount::Static(1, 1, 1),
                cubecl::CubeDim::new_2d(m as u32, n as u32),
                binding(&lhs, &[m, k], &lhs_strides).into_tensor_arg(),
                binding(&rhs, &[k, n], &rhs_strides).into_tensor_arg(),
                binding(&bias, &[m, n], &bias_strides).into_tensor_arg(),
                binding(&out, &[m, n], &[n, 1]).into_tensor_arg(),
                elem_type(Precision::F16),
            );
        }
        download(&client, out, Precision::F16)
    }
}

/// With k = 4096 and positive inputs, an f16 running sum falls about 9% short of the true sum
/// (about 1024): the f16 tolerance catches it. fmar's kernel, which accumulates in f32, passes
/// the very same check on the very same data.
#[test]
fn f16_tolerance_catches_an_f16_accumulator_at_k_4096() {
    if !should_run(Precision::F16, contract::supports(Precision::F16)) {
        return;
    }
    let mut rng = Rng::fresh();
    let problem = contract::f16_problem_at_k_4096(&mut rng);
    contract::check_problem(
        &kernel(),
        &problem,
        Precision::F16,
        [fmar_tests::Layout::Contiguous; 3],
        rng.seed(),
    );

    let mutant = seed_kernel::run_f16(&problem);
    let k = problem.k();
    let caught = std::panic::catch_unwind(|| {
        assert_close(
            "f16 accumulator",
            &mutant,
            &problem.output.data,
            Tolerance::for_precision(Precision::F16),
            Tolerance::matmul_scale(k, 1.0, 1.0) + 1.0,
            rng.seed(),
        )
    });
    assert!(
        caught.is_err(),
        "the f16 tolerance must reject an f16 accumulator at k = 4096"
    );
    let worst = worst_relative_error(&mutant, &problem.output.data);
    assert!(
        worst > 0.03,
        "an f16 accumulator is visibly wrong, relative error {worst}"
    );
}
