//! The handwritten backward pass against Burn's own autodiff of the composed operations, on
//! `Autodiff<CubeBackend>` over wgpu. The forward handed to the pass is the composition itself,
//! its mask and masked gradient are computed on the host, and its products are Burn's matmul,
//! so this checks the backward alone, independent of any of fmar's kernels.

use burn::backend::ops::{ActivationOps, FloatTensorOps};
use burn::backend::{AutodiffBackend, Backend, TensorMetadata};
use burn::tensor::Shape;
use burn_autodiff::Autodiff;
use burn_autodiff::checkpoint::strategy::{
    BalancedCheckpointing, CheckpointStrategy, NoCheckpointing,
};
use burn_cubecl::{CubeBackend, CubeDevice};
use fmar_autodiff::host_mask::{masked_gradient, masked_gradient_with_column_sums, pack_relu_mask};
use fmar_autodiff::{FloatTensor, InnerOps, fused_matmul_add_relu};
use fmar_tests::burn_io::{primitive, primitive_values};
use fmar_tests::{HostTensor, Outcome, Precision, Problem, Rng, Tolerances, check_outcome};

type Inner = CubeBackend;

fn composed(
    lhs: FloatTensor<Inner>,
    rhs: FloatTensor<Inner>,
    bias: FloatTensor<Inner>,
) -> FloatTensor<Inner> {
    let product = Inner::float_matmul(lhs, rhs);
    // Burn's primitive `add` broadcasts between equal ranks only: give the bias leading 1s.
    let bias_dims = bias.shape();
    let mut dims = vec![1; product.shape().num_dims() - bias_dims.num_dims()];
    dims.extend(bias_dims.iter().copied());
    let bias = Inner::float_reshape(bias, Shape::from(dims));
    Inner::relu(Inner::float_add(product, bias))
}

/// The inner ops the pass runs: the composition, and the mask operations on the host.
fn inner_ops() -> InnerOps<Inner> {
    InnerOps {
        forward: composed,
        forward_keeping_mask: |lhs, rhs, bias| pack_relu_mask::<Inner>(composed(lhs, rhs, bias)),
        masked_gradient: masked_gradient::<Inner>,
        masked_gradient_with_column_sums: masked_gradient_with_column_sums::<Inner>,
        matmul: Inner::float_matmul,
    }
}

fn device() -> CubeDevice {
    CubeDevice::Wgpu(Default::default())
}

/// The device to this test alone where the adapter needs it (wgpu over OpenGL: see
/// `fmar_tests::serial`).
fn one_at_a_time() -> Option<std::sync::MutexGuard<'static, ()>> {
    fmar_tests::serial::one_at_a_time(device().client().name())
}

fn upload<B: Backend<Device = CubeDevice>>(host: &HostTensor) -> FloatTensor<B> {
    primitive::<B>(host, &device(), Precision::F32)
}

/// Output and gradients of `sum(op(lhs, rhs, bias) * upstream)`, with `tracked` saying which
/// inputs require a gradient.
fn run<C: CheckpointStrategy>(
    problem: &Problem,
    upstream: &HostTensor,
    tracked: [bool; 3],
) -> Outcome {
    type Ad<C> = Autodiff<Inner, C>;
    let input = |host: &HostTensor, track: bool| {
        Ad::<C>::float_set_require_grad(upload::<Ad<C>>(host), track)
    };
    let lhs = input(&problem.lhs, tracked[0]);
    let rhs = input(&problem.rhs, tracked[1]);
    let bias = input(&problem.bias, tracked[2]);
    let out =
        fused_matmul_add_relu::<Inner, C>(lhs.clone(), rhs.clone(), bias.clone(), inner_ops());
    let loss = Ad::<C>::float_sum(Ad::<C>::float_mul(out.clone(), upload::<Ad<C>>(upstream)));
    let mut grads = Ad::<C>::backward(loss);
    Outcome {
        output: primitive_values::<Ad<C>>(out),
        grads: [lhs, rhs, bias]
            .map(|t| Ad::<C>::grad_remove(&t, &mut grads).map(primitive_values::<Inner>)),
    }
}

fn check<C: CheckpointStrategy>(lhs: &[usize], rhs: &[usize], bias: &[usize], tracked: [bool; 3]) {
    let mut rng = Rng::fresh();
    let problem = Problem::random(lhs, rhs, bias, &mut rng, Precision::F32);
    let upstream = HostTensor::random(&problem.output.shape, &mut rng, Precision::F32);
    let outcome = run::<C>(&problem, &upstream, tracked);
    let what = format!("lhs {lhs:?} rhs {rhs:?} bias {bias:?} tracked {tracked:?}");
    check_outcome(
        &what,
        &problem,
        Tolerances::new(Precision::F32, false),
        &upstream,
        &outcome,
        tracked,
        rng.seed(),
    );
}

#[test]
fn all_three_gradients_match_f64() {
    let _device = one_at_a_time();
    check::<NoCheckpointing>(&[2, 17, 33], &[2, 33, 5], &[2, 17, 5], [true; 3]);
    check::<NoCheckpointing>(&[1, 1, 1], &[1, 1, 1], &[1, 1, 1], [true; 3]);
}

#[test]
fn broadcast_batches_reduce_their_gradients() {
    let _device = one_at_a_time();
    check::<NoCheckpointing>(&[1, 9, 4], &[3, 4, 6], &[3, 9, 6], [true; 3]);
    check::<NoCheckpointing>(&[3, 9, 4], &[1, 4, 6], &[3, 9, 6], [true; 3]);
    // A weight shared by every batch: its gradient is one product over the folded batch.
    check::<NoCheckpointing>(&[2, 3, 5, 4], &[1, 1, 4, 6], &[6], [true; 3]);
    check::<NoCheckpointing>(&[2, 3, 5, 4], &[2, 1, 4, 6], &[6], [true; 3]);
}

#[test]
fn bias_gradient_comes_back_in_the_bias_shape() {
    let _device = one_at_a_time();
    for bias in [&[6][..], &[1, 6], &[3, 1, 6], &[9, 1], &[1]] {
        check::<NoCheckpointing>(&[3, 9, 4], &[1, 4, 6], bias, [true; 3]);
    }
}

#[test]
fn untracked_inputs_get_no_gradient() {
    let _device = one_at_a_time();
    for tracked in [
        [true, false, false],
        [false, true, false],
        [false, false, true],
    ] {
        check::<NoCheckpointing>(&[2, 5, 4], &[2, 4, 3], &[3], tracked);
    }
}

#[test]
fn balanced_checkpointing_keeps_gradients_correct() {
    let _device = one_at_a_time();
    check::<BalancedCheckpointing>(&[2, 17, 9], &[2, 9, 11], &[11], [true; 3]);
    check::<BalancedCheckpointing>(&[1, 8, 4], &[3, 4, 6], &[3, 8, 6], [true, true, false]);
}

#[test]
fn zero_sizes_give_zero_or_empty_gradients() {
    let _device = one_at_a_time();
    check::<NoCheckpointing>(&[2, 3, 0], &[2, 0, 4], &[4], [true; 3]);
    check::<NoCheckpointing>(&[2, 0, 5], &[2, 5, 3], &[3], [true; 3]);
    check::<NoCheckpointing>(&[2, 4, 5], &[2, 5, 0], &[0], [true; 3]);
}
