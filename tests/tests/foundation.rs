//! The 3-D operation through fmar's public API: forward values and all three gradients
//! against the f64 reference (and hence against Burn's composed reference), on Burn's default
//! device (Fusion on) and through the autodiff device, with proof that fmar's kernel ran.

mod common;

use burn::tensor::{DType, Device, Tensor};
use common::{Op, forward_backward, runs, tensor, values};
use fmar::{matmul_add_relu, matmul_add_relu_reference};
use fmar_tests::{
    HostTensor, Outcome, Precision, Problem, Rng, Tolerance, Tolerances, check_outcome,
    tf32_matmuls,
};

/// Checks `op`'s forward and gradients against the f64 reference.
fn check_against_f64(
    op: Op,
    name: &str,
    problem: &Problem,
    precision: Precision,
    tolerances: Tolerances,
    seed: u64,
) {
    let device = Device::default();
    let mut rng = Rng::seeded(seed ^ 0x5eed);
    let grad_output = HostTensor::random(&problem.output.shape, &mut rng, precision);
    let [out, grad_lhs, grad_rhs, grad_bias] =
        forward_backward(op, problem, &grad_output, &device, precision);

    let outcome = Outcome {
        output: out,
        grads: [Some(grad_lhs), Some(grad_rhs), Some(grad_bias)],
    };
    let what = format!(
        "{name} {precision:?} lhs {:?} rhs {:?}",
        problem.lhs.shape, problem.rhs.shape
    );
    check_outcome(
        &what,
        problem,
        tolerances,
        &grad_output,
        &outcome,
        [true; 3],
        seed,
    );
}

/// `b x m x k x n` with both batches `b`, plus two where one batch of 1 broadcasts to 5.
fn cases() -> Vec<([usize; 3], [usize; 3])> {
    let mut cases: Vec<([usize; 3], [usize; 3])> = [
        (1, 17, 33, 5),
        (3, 65, 7, 129),
        (2, 31, 1, 9),
        (1, 1, 1, 1),
        (2, 128, 256, 64),
    ]
    .iter()
    .map(|&(b, m, k, n)| ([b, m, k], [b, k, n]))
    .collect();
    cases.push(([1, 19, 23], [5, 23, 9]));
    cases.push(([5, 19, 23], [1, 23, 9]));
    cases
}

fn check_all(precision: Precision) {
    for (lhs, rhs) in cases() {
        let mut rng = Rng::fresh();
        let out = fmar_tests::reference::output_shape(&lhs, &rhs);
        let problem = Problem::random(&lhs, &rhs, &out, &mut rng, precision);
        let tf32 = tf32_matmuls();
        check_against_f64(
            matmul_add_relu,
            "fmar",
            &problem,
            precision,
            Tolerances::new(precision, tf32),
            rng.seed(),
        );
        check_against_f64(
            matmul_add_relu_reference,
            "burn reference",
            &problem,
            precision,
            Tolerances::new(precision, tf32),
            rng.seed(),
        );
    }
}

#[test]
fn f32_forward_and_gradients_match_f64_reference() {
    check_all(Precision::F32);
}

#[test]
fn half_precision_forward_and_gradients_match_f64_reference() {
    for precision in [Precision::F16, Precision::BF16] {
        if runs(precision) {
            check_all(precision);
        }
    }
}

#[test]
fn forward_on_default_device_matches_without_autodiff() {
    let device = Device::default();
    let mut rng = Rng::fresh();
    let problem = Problem::random(
        &[3, 65, 7],
        &[3, 7, 129],
        &[3, 65, 129],
        &mut rng,
        Precision::F32,
    );
    let out = values(matmul_add_relu(
        tensor(&problem.lhs, &device, Precision::F32),
        tensor(&problem.rhs, &device, Precision::F32),
        tensor(&problem.bias, &device, Precision::F32),
    ));
    problem.assert_forward(
        "default device forward",
        &out,
        Tolerance::for_precision(Precision::F32),
        rng.seed(),
    );
}

#[test]
#[should_panic(
    expected = "matmul_add_relu: inner dims differ: `lhs` [2, 3, 4] has k = 4 but `rhs` [2, 5, 6] has k = 5"
)]
fn inner_dim_mismatch_panics_at_the_call_naming_both_shapes() {
    let device = Device::default();
    let _ = matmul_add_relu(
        Tensor::zeros([2, 3, 4], &device),
        Tensor::zeros([2, 5, 6], &device),
        Tensor::zeros([2, 3, 6], &device),
    );
}

#[test]
#[should_panic(
    expected = "matmul_add_relu: `bias` [2, 3, 5] does not broadcast to the output shape [2, 3, 6]"
)]
fn wrong_bias_shape_panics_naming_bias() {
    let device = Device::default();
    let _ = matmul_add_relu(
        Tensor::zeros([2, 3, 4], &device),
        Tensor::zeros([2, 4, 6], &device),
        Tensor::zeros([2, 3, 5], &device),
    );
}

#[test]
#[should_panic(
    expected = "matmul_add_relu: `rhs` has dtype F16 but `lhs` has dtype F32; all three must match"
)]
fn mixed_dtypes_panic_naming_both() {
    let device = Device::default();
    let _ = matmul_add_relu(
        Tensor::zeros([2, 3, 4], &device),
        Tensor::zeros([2, 4, 6], (&device, DType::F16)),
        Tensor::zeros([2, 3, 6], &device),
    );
}
