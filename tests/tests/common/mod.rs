//! Helpers the integration tests share: one forward + backward run, one checked random case,
//! and (from the harness's `burn_io`) host data in and out of Burn tensors.
#![allow(dead_code)] // Each test binary uses its own subset.

use burn::tensor::{Device, Tensor};
use fmar_tests::{HostTensor, Precision, Problem};

pub use fmar_tests::burn_io::{dtype, tensor, values};

/// The signature of `matmul_add_relu` and its reference.
pub type Op = fn(Tensor<3>, Tensor<3>, Tensor<3>) -> Tensor<3>;

/// Forward and backward of `op` on `problem`, with upstream gradient `grad_output`.
pub fn forward_backward(
    op: Op,
    problem: &Problem,
    grad_output: &HostTensor,
    device: &Device,
    precision: Precision,
) -> [Vec<f64>; 4] {
    let device = device.clone().autodiff();
    let lhs = tensor(&problem.lhs, &device, precision).require_grad();
    let rhs = tensor(&problem.rhs, &device, precision).require_grad();
    let bias = tensor(&problem.bias, &device, precision).require_grad();
    let upstream = tensor(grad_output, &device, precision);

    let output = op(lhs.clone(), rhs.clone(), bias.clone());
    let grads = (output.clone() * upstream).sum().backward();
    let grad = |t: &Tensor<3>| values(t.grad(&grads).expect("tracked input has a gradient"));
    [values(output), grad(&lhs), grad(&rhs), grad(&bias)]
}

/// Forward and the three gradients of `fmar::matmul_add_relu_nd` at operand rank `D` and bias
/// rank `B`, on `device` (Fusion, and autodiff when `device` is an autodiff device), with
/// upstream gradient `grad_output`: the [`Outcome`](fmar_tests::Outcome) the harness checks.
pub fn outcome_nd<const D: usize, const B: usize>(
    problem: &Problem,
    grad_output: &HostTensor,
    device: &Device,
    precision: Precision,
) -> fmar_tests::Outcome {
    let lhs = tensor::<D>(&problem.lhs, device, precision).require_grad();
    let rhs = tensor::<D>(&problem.rhs, device, precision).require_grad();
    let bias = tensor::<B>(&problem.bias, device, precision).require_grad();
    let output = fmar::matmul_add_relu_nd(lhs.clone(), rhs.clone(), bias.clone());
    let grads = (output.clone() * tensor::<D>(grad_output, device, precision))
        .sum()
        .backward();
    fmar_tests::Outcome {
        output: values(output),
        grads: [
            Some(values(lhs.grad(&grads).expect("lhs gradient"))),
            Some(values(rhs.grad(&grads).expect("rhs gradient"))),
            Some(values(bias.grad(&grads).expect("bias gradient"))),
        ],
    }
}

/// Whether the default device runs `precision`, honouring `FMAR_REQUIRE_DTYPES`.
pub fn runs(precision: Precision) -> bool {
    fmar_tests::should_run(
        precision,
        Device::default().supports_dtype(dtype(precision)),
    )
}

/// One random problem of the given shapes, forward and gradients on `device` (an autodiff
/// device), checked against the f64 reference within `precision`'s tolerances; `what` names it
/// in a failure, with `rng`'s seed.
pub fn check_random_nd<const D: usize, const B: usize>(
    what: &str,
    (lhs, rhs, bias): (&[usize], &[usize], &[usize]),
    precision: Precision,
    device: &Device,
    rng: &mut fmar_tests::Rng,
) {
    let problem = Problem::random(lhs, rhs, bias, rng, precision);
    let upstream = HostTensor::random(&problem.output.shape, rng, precision);
    let outcome = outcome_nd::<D, B>(&problem, &upstream, device, precision);
    fmar_tests::check_outcome(
        what,
        &problem,
        fmar_tests::Tolerances::new(precision, fmar_tests::tf32_matmuls()),
        &upstream,
        &outcome,
        [true; 3],
        rng.seed(),
    );
}
