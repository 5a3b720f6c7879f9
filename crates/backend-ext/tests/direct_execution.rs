//! The forward called directly on `CubeBackend` primitives (no Dispatch, no Fusion), on wgpu,
//! against the harness's f64 loop.

use burn::tensor::Shape;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{CubeBackend, CubeDevice};
use fmar_backend_ext::diagnostics::kernel_launches;
use fmar_backend_ext::fused_matmul_add_relu;
use fmar_tests::burn_io::{primitive, primitive_values};
use fmar_tests::{HostTensor, Precision, Problem, Rng, Tolerance, assert_close};

fn device() -> CubeDevice {
    CubeDevice::Wgpu(Default::default())
}

/// The device to this test alone where the adapter needs it (wgpu over OpenGL: see
/// `fmar_tests::serial`).
fn one_at_a_time() -> Option<std::sync::MutexGuard<'static, ()>> {
    fmar_tests::serial::one_at_a_time(device().client().name())
}

fn upload(host: &HostTensor, precision: Precision) -> CubeTensor {
    primitive::<CubeBackend>(host, &device(), precision)
}

fn check(lhs: &[usize], rhs: &[usize]) {
    let mut rng = Rng::fresh();
    let out_shape = fmar_tests::reference::output_shape(lhs, rhs);
    let problem = Problem::random(lhs, rhs, &out_shape, &mut rng, Precision::F32);
    let before = kernel_launches();
    let out = fused_matmul_add_relu(
        upload(&problem.lhs, Precision::F32),
        upload(&problem.rhs, Precision::F32),
        upload(&problem.bias, Precision::F32),
    );
    assert!(
        kernel_launches() > before,
        "the direct path launches at the call"
    );
    assert_eq!(out.meta.shape(), &Shape::from(out_shape.clone()));
    let scale = Tolerance::matmul_scale(problem.k(), 1.0, 1.0) + 1.0;
    assert_close(
        &format!("direct CubeBackend lhs {lhs:?} rhs {rhs:?}"),
        &primitive_values::<CubeBackend>(out),
        &problem.output.data,
        Tolerance::for_precision(Precision::F32),
        scale,
        rng.seed(),
    );
}

#[test]
fn direct_execution_matches_f64_loop() {
    let _device = one_at_a_time();
    check(&[1, 17, 33], &[1, 33, 5]);
    check(&[3, 65, 7], &[3, 7, 129]);
    check(&[1, 1, 1], &[1, 1, 1]);
}

#[test]
fn direct_execution_broadcasts_batches() {
    let _device = one_at_a_time();
    check(&[1, 12, 8], &[4, 8, 6]);
    check(&[4, 12, 8], &[1, 8, 6]);
}

#[test]
#[should_panic(expected = "matmul_add_relu: `bias` has dtype F16 but `lhs` has dtype F32")]
fn mixed_dtypes_panic_naming_the_argument() {
    let mut rng = Rng::fresh();
    let problem = Problem::random(&[1, 2, 3], &[1, 3, 4], &[1, 2, 4], &mut rng, Precision::F32);
    fused_matmul_add_relu(
        upload(&problem.lhs, Precision::F32),
        upload(&problem.rhs, Precision::F32),
        upload(&problem.bias, Precision::F16),
    );
}

#[test]
#[should_panic(
    expected = "matmul_add_relu: batch dim 0 does not broadcast: `lhs` [2, 2, 3] has 2 and `rhs` [3, 3, 4] has 3"
)]
fn non_broadcasting_batch_panics_naming_both_shapes() {
    let mut rng = Rng::fresh();
    let lhs = HostTensor::random(&[2, 2, 3], &mut rng, Precision::F32);
    let rhs = HostTensor::random(&[3, 3, 4], &mut rng, Precision::F32);
    let bias = HostTensor::random(&[3, 2, 4], &mut rng, Precision::F32);
    fused_matmul_add_relu(
        upload(&lhs, Precision::F32),
        upload(&rhs, Precision::F32),
        upload(&bias, Precision::F32),
    );
}
