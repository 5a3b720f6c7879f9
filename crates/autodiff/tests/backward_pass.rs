//! The handwritten backward pass against Burn's own autodiff of the composed operations, on
//! `Autodiff<CubeBackend>` over wgpu. The forward handed to the pass is the composition itself,
//! so this checks the backward alone, independent of any kernel.

use burn::backend::ops::{ActivationOps, FloatTensorOps};
use burn::backend::{AutodiffBackend, Backend};
use burn::tensor::{DType, TensorData, read_sync};
use burn_autodiff::Autodiff;
use burn_autodiff::checkpoint::strategy::{
    BalancedCheckpointing, CheckpointStrategy, NoCheckpointing,
};
use burn_cubecl::{CubeBackend, CubeDevice};
use fmar_autodiff::{FloatTensor, fused_matmul_add_relu};
use fmar_tests::{HostTensor, Precision, Problem, Rng, Tolerance, assert_close};

type Inner = CubeBackend;

fn composed(
    lhs: FloatTensor<Inner>,
    rhs: FloatTensor<Inner>,
    bias: FloatTensor<Inner>,
) -> FloatTensor<Inner> {
    Inner::relu(Inner::float_add(Inner::float_matmul(lhs, rhs), bias))
}

fn device() -> CubeDevice {
    CubeDevice::Wgpu(Default::default())
}

fn upload<B: Backend<Device = CubeDevice>>(host: &HostTensor) -> FloatTensor<B> {
    let values: Vec<f32> = host.data.iter().map(|&x| x as f32).collect();
    B::float_from_data(
        TensorData::new(values, host.shape.clone()).convert_dtype(DType::F32),
        &device(),
    )
}

fn download<B: Backend>(tensor: FloatTensor<B>) -> Vec<f64> {
    read_sync(B::float_into_data(tensor))
        .expect("readback")
        .convert::<f64>()
        .try_into_vec::<f64>()
        .expect("f64 data")
}

/// Gradients of `sum(op(lhs, rhs, bias) * upstream)` for the three inputs, with `tracked`
/// saying which inputs require a gradient.
fn gradients<C: CheckpointStrategy>(
    problem: &Problem,
    upstream: &HostTensor,
    tracked: [bool; 3],
) -> [Option<Vec<f64>>; 3] {
    type Ad<C> = Autodiff<Inner, C>;
    let input = |host: &HostTensor, track: bool| {
        let t = upload::<Ad<C>>(host);
        Ad::<C>::float_set_require_grad(t, track)
    };
    let lhs = input(&problem.lhs, tracked[0]);
    let rhs = input(&problem.rhs, tracked[1]);
    let bias = input(&problem.bias, tracked[2]);
    let out = fused_matmul_add_relu::<Inner, C>(lhs.clone(), rhs.clone(), bias.clone(), composed);
    let loss = Ad::<C>::float_sum(Ad::<C>::float_mul(out, upload::<Ad<C>>(upstream)));
    let mut grads = Ad::<C>::backward(loss);
    [lhs, rhs, bias].map(|t| Ad::<C>::grad_remove(&t, &mut grads).map(download::<Inner>))
}

fn check<C: CheckpointStrategy>(lhs: &[usize], rhs: &[usize], tracked: [bool; 3]) {
    let mut rng = Rng::fresh();
    let out_shape = fmar_tests::reference::output_shape(lhs, rhs);
    let problem = Problem::random(lhs, rhs, &out_shape, &mut rng, Precision::F32);
    let upstream = HostTensor::random(&out_shape, &mut rng, Precision::F32);
    let tolerance = Tolerance::for_precision(Precision::F32);
    let forward_scale = Tolerance::matmul_scale(problem.k(), 1.0, 1.0) + 1.0;
    let mask = problem.resolve_mask(&problem.output.data, |i| {
        tolerance.bound(problem.pre_activation.data[i], forward_scale)
    });
    let expected = problem.gradients(&upstream, &mask);
    let got = gradients::<C>(&problem, &upstream, tracked);
    let reduction = out_shape.iter().product::<usize>();
    for (((name, got), expected), track) in ["lhs", "rhs", "bias"]
        .into_iter()
        .zip(got)
        .zip([expected.lhs, expected.rhs, expected.bias])
        .zip(tracked)
    {
        match (track, got) {
            (true, Some(got)) => assert_close(
                &format!("grad {name}, lhs {lhs:?} rhs {rhs:?}"),
                &got,
                &expected.data,
                tolerance,
                Tolerance::matmul_scale(reduction, 1.0, 1.0),
                rng.seed(),
            ),
            (false, None) => {}
            (track, got) => panic!(
                "grad {name}: tracked {track} but gradient present {}",
                got.is_some()
            ),
        }
    }
}

#[test]
fn all_three_gradients_match_f64() {
    check::<NoCheckpointing>(&[2, 17, 33], &[2, 33, 5], [true; 3]);
    check::<NoCheckpointing>(&[1, 1, 1], &[1, 1, 1], [true; 3]);
}

#[test]
fn broadcast_batches_reduce_their_gradients() {
    check::<NoCheckpointing>(&[1, 9, 4], &[3, 4, 6], [true; 3]);
    check::<NoCheckpointing>(&[3, 9, 4], &[1, 4, 6], [true; 3]);
}

#[test]
fn untracked_inputs_get_no_gradient() {
    check::<NoCheckpointing>(&[2, 5, 4], &[2, 4, 3], [true, false, false]);
    check::<NoCheckpointing>(&[2, 5, 4], &[2, 4, 3], [false, true, false]);
    check::<NoCheckpointing>(&[2, 5, 4], &[2, 4, 3], [false, false, true]);
}

#[test]
fn balanced_checkpointing_keeps_gradients_correct() {
    check::<BalancedCheckpointing>(&[2, 17, 9], &[2, 9, 11], [true; 3]);
    check::<BalancedCheckpointing>(&[1, 8, 4], &[3, 4, 6], [true, true, false]);
}
