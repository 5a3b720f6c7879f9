//! The CPU fallback: on Burn's pure-Rust Flex backend (no GPU, no driver) fmar computes the same
//! function and gradients, against the f64 reference; and `fmar::default_device` says truly
//! which device it picked, and picks Flex over a wgpu software rasterizer.

mod common;

use burn::backend::DispatchDevice;
use burn::tensor::{Device, Tensor};
use burn_cubecl::CubeDevice;
use common::{outcome_nd, values};
use fmar::{Adapter, Runtime, matmul_add_relu_nd, try_matmul_add_relu_nd};
use fmar_tests::{HostTensor, Precision, Problem, Rng, Tolerances, check_outcome};

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
            3 => outcome_nd::<3, 1>(&problem, &upstream, &device, Precision::F32),
            _ => outcome_nd::<4, 2>(&problem, &upstream, &device, Precision::F32),
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

/// The runtime and adapter `device` is, as Burn tells them (not as fmar reports them).
fn runtime_and_adapter(device: &Device) -> (Runtime, Adapter) {
    let runtime = match device.as_dispatch() {
        DispatchDevice::Flex(_) => return (Runtime::Cpu, Adapter::Host),
        DispatchDevice::Cube(CubeDevice::Wgpu(_)) => Runtime::Wgpu,
        DispatchDevice::Cube(CubeDevice::Cuda(_)) => Runtime::Cuda,
        #[allow(unreachable_patterns)]
        other => panic!("default_device picked a device fmar never picks: {other:?}"),
    };
    let identity = device
        .identity()
        .expect("a CubeCL device reports its identity");
    // CubeCL reports no physical card for a software rasterizer.
    let adapter = match identity.physical {
        Some(_) => Adapter::Gpu,
        None => Adapter::SoftwareRasterizer,
    };
    (runtime, adapter)
}

/// The choice reports the device it holds; unless `BURN_DEVICE` names one, it is never a wgpu
/// software rasterizer; and where the machine declares which device its default must be
/// (`FMAR_EXPECT_DEFAULT_DEVICE`: `cuda`, `wgpu` or `cpu`; CI sets `cpu`, since its only wgpu
/// adapter is a software rasterizer), it is that one. The rule itself (`fmar::choose`) is
/// unit-tested against a table of adapters in the api crate. Tests share one process, so this
/// one reads `BURN_DEVICE` and expects accordingly rather than set it.
#[test]
fn default_device_reports_its_runtime() {
    let choice = fmar::default_device();
    assert_eq!(
        (choice.runtime, choice.adapter),
        runtime_and_adapter(&choice.device),
        "the choice misreports its device: {choice}"
    );
    let runtime_named = |name: &str| match name.trim().to_lowercase().as_str() {
        "cuda" => Runtime::Cuda,
        "wgpu" | "vulkan" => Runtime::Wgpu,
        "cpu" | "flex" => Runtime::Cpu,
        other => panic!("not a device name: {other}"),
    };
    match std::env::var(fmar::DEVICE_VARIABLE) {
        Ok(name) => {
            assert!(
                choice.requested,
                "{} is set: {choice}",
                fmar::DEVICE_VARIABLE
            );
            assert_eq!(
                choice.runtime,
                runtime_named(&name),
                "{}={name}: {choice}",
                fmar::DEVICE_VARIABLE
            );
        }
        Err(_) => {
            assert!(!choice.requested, "{choice}");
            assert_ne!(
                choice.adapter,
                Adapter::SoftwareRasterizer,
                "a software rasterizer is never the default: {choice}"
            );
            if let Ok(expected) = std::env::var("FMAR_EXPECT_DEFAULT_DEVICE") {
                assert_eq!(
                    choice.runtime,
                    runtime_named(&expected),
                    "this machine declares FMAR_EXPECT_DEFAULT_DEVICE={expected}: {choice}"
                );
            }
        }
    }
    let out = matmul_add_relu_nd(
        Tensor::<2>::ones([2, 3], &choice.device),
        Tensor::<2>::ones([3, 4], &choice.device),
        Tensor::<1>::ones([4], &choice.device),
    );
    assert_eq!(values(out), vec![4.0; 8], "on {choice}");
}
