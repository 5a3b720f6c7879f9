//! The CPU fallback: on Burn's pure-Rust Flex backend (no GPU, no driver) fmar computes the same
//! function and gradients, against the f64 reference.

use burn::tensor::{Device, Tensor, TensorData};
use fmar::{matmul_add_relu_nd, try_matmul_add_relu_nd};
use fmar_tests::{HostTensor, Outcome, Precision, Problem, Rng, Tolerances, check_outcome};

fn tensor<const D: usize>(host: &HostTensor, device: &Device) -> Tensor<D> {
    let values: Vec<f32> = host.data.iter().map(|&x| x as f32).collect();
    Tensor::from_data(TensorData::new(values, host.shape.clone()), device)
}

fn values<const D: usize>(tensor: Tensor<D>) -> Vec<f64> {
    tensor
        .into_data()
        .convert::<f64>()
        .try_into_vec::<f64>()
        .unwrap()
}

#[test]
fn flex_forward_and_gradients_match_f64() {
    let device = Device::flex().autodiff();
    for (lhs, rhs, bias) in [
        (&[3, 17, 33][..], &[1, 33, 9][..], &[9][..]),
        (&[2, 1, 5, 7][..], &[1, 3, 7, 4][..], &[5, 1][..]),
    ] {
        let mut rng = Rng::fresh();
        let problem = Problem::random(lhs, rhs, bias, &mut rng, Precision::F32);
        let upstream = HostTensor::random(&problem.output.shape, &mut rng, Precision::F32);
        let outcome = match lhs.len() {
            3 => run::<3, 1>(&problem, &upstream, &device),
            _ => run::<4, 2>(&problem, &upstream, &device),
        };
        check_outcome(
            &format!("flex lhs {lhs:?} rhs {rhs:?} bias {bias:?}"),
            &problem,
            Tolerances::new(Precision::F32, false),
            &upstream,
            &outcome,
            [true; 3],
            rng.seed(),
        );
    }
}

fn run<const D: usize, const B: usize>(
    problem: &Problem,
    upstream: &HostTensor,
    device: &Device,
) -> Outcome {
    let lhs = tensor::<D>(&problem.lhs, device).require_grad();
    let rhs = tensor::<D>(&problem.rhs, device).require_grad();
    let bias = tensor::<B>(&problem.bias, device).require_grad();
    let out = matmul_add_relu_nd(lhs.clone(), rhs.clone(), bias.clone());
    let grads = (out.clone() * tensor::<D>(upstream, device))
        .sum()
        .backward();
    Outcome {
        output: values(out),
        grads: [
            Some(values(lhs.grad(&grads).unwrap())),
            Some(values(rhs.grad(&grads).unwrap())),
            Some(values(bias.grad(&grads).unwrap())),
        ],
    }
}

#[test]
fn flex_refuses_bad_input_with_the_same_typed_error() {
    let device = Device::flex();
    let error = try_matmul_add_relu_nd(
        Tensor::<3>::zeros([2, 3, 4], &device),
        Tensor::<3>::zeros([2, 5, 6], &device),
        Tensor::<1>::zeros([6], &device),
    )
    .unwrap_err();
    assert!(matches!(error, fmar::Error::InnerDim { .. }), "{error}");
}

#[test]
fn default_device_reports_its_runtime() {
    let choice = fmar::default_device();
    let out = matmul_add_relu_nd(
        Tensor::<2>::ones([2, 3], &choice.device),
        Tensor::<2>::ones([3, 4], &choice.device),
        Tensor::<1>::ones([4], &choice.device),
    );
    assert_eq!(values(out), vec![4.0; 8], "on {choice}");
}
