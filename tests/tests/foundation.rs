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

/// The three gradients against central finite differences of the loss `sum(out * upstream)`,
/// in f32, through fmar's forward alone: a check of the backward that rests on no derivative
/// formula. The weight is shared by the batch, so `rhs`'s gradient takes the folded-batch
/// product. Inputs are drawn until every pre-activation is at least 0.05 from the ReLU's kink:
/// a step of 0.01 in one input moves each pre-activation by at most 0.01 (every value lies in
/// [-1, 1)), so no step crosses the kink, the loss is linear in each input, and the difference
/// is exact up to f32 rounding (about 3e-4 here).
///
/// Skipped where f32 matmuls may use TF32 (CUDA): its rounding (about 1e-3 of a value) over a
/// step of 0.01 would swamp the difference.
#[test]
fn gradients_match_finite_differences_in_f32() {
    if tf32_matmuls() {
        eprintln!("skipped: f32 products may round to TF32 on this runtime");
        return;
    }
    let precision = Precision::F32;
    let device = Device::default();
    let mut rng = Rng::fresh();
    let seed = rng.seed();
    let problem = loop {
        let problem = Problem::random(&[2, 3, 4], &[1, 4, 5], &[1, 1, 5], &mut rng, precision);
        if problem.pre_activation.data.iter().all(|x| x.abs() >= 0.05) {
            break problem;
        }
    };
    let upstream = HostTensor::random(&problem.output.shape, &mut rng, precision);
    let [_, grad_lhs, grad_rhs, grad_bias] =
        forward_backward(matmul_add_relu, &problem, &upstream, &device, precision);
    let loss = |inputs: &[HostTensor; 3]| -> f64 {
        let [lhs, rhs, bias] = inputs
            .each_ref()
            .map(|host| tensor(host, &device, precision));
        let out = values(matmul_add_relu(lhs, rhs, bias));
        out.iter().zip(&upstream.data).map(|(o, u)| o * u).sum()
    };
    let step = 0.01;
    for (operand, analytic) in [grad_lhs, grad_rhs, grad_bias].iter().enumerate() {
        for (index, &backward) in analytic.iter().enumerate() {
            let mut inputs = [
                problem.lhs.clone(),
                problem.rhs.clone(),
                problem.bias.clone(),
            ];
            inputs[operand].data[index] += step;
            let up = loss(&inputs);
            inputs[operand].data[index] -= 2.0 * step;
            let down = loss(&inputs);
            let difference = (up - down) / (2.0 * step);
            let bound = 2e-3 * (1.0 + backward.abs());
            assert!(
                (difference - backward).abs() <= bound,
                "{} gradient at flat index {index}: backward {}, finite difference {difference} \
                 (bound {bound}). Reproduce with FMAR_TEST_SEED={seed}",
                ["lhs", "rhs", "bias"][operand],
                backward,
            );
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
