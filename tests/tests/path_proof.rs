//! Which code path ran. A result equal to the reference proves nothing about which path made it,
//! so these tests read fmar's launch counter. They live in their own test binary, serialised by a
//! lock, because the counter is process-wide.

mod common;

use burn::tensor::Device;
use common::{forward_backward, tensor, values};
use fmar::{diagnostics, matmul_add_relu, matmul_add_relu_reference};
use fmar_tests::{HostTensor, Precision, Problem, Rng, Tolerance, assert_close};
use std::sync::{Mutex, MutexGuard};

static COUNTER_LOCK: Mutex<()> = Mutex::new(());

fn counter_lock() -> MutexGuard<'static, ()> {
    COUNTER_LOCK
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The counter shows that fmar's kernel ran for `matmul_add_relu` (under Fusion, only once the
/// result is read) and not for the reference composition.
#[test]
fn fused_path_runs_fmar_kernel_lazily_and_reference_does_not() {
    let _guard = counter_lock();
    let device = Device::default();
    let mut rng = Rng::fresh();
    let problem = Problem::random(&[2, 9, 5], &[2, 5, 7], &[2, 9, 7], &mut rng, Precision::F32);
    let inputs = || {
        (
            tensor(&problem.lhs, &device, Precision::F32),
            tensor(&problem.rhs, &device, Precision::F32),
            tensor(&problem.bias, &device, Precision::F32),
        )
    };

    let (lhs, rhs, bias) = inputs();
    let before = diagnostics::kernel_launches();
    let reference = values(matmul_add_relu_reference(lhs, rhs, bias));
    assert_eq!(
        diagnostics::kernel_launches(),
        before,
        "the reference composition must not reach fmar's kernel"
    );

    let (lhs, rhs, bias) = inputs();
    let lazy = matmul_add_relu(lhs, rhs, bias);
    assert_eq!(
        diagnostics::kernel_launches(),
        before,
        "under Fusion the operation is registered, not executed, at the call"
    );
    let fused = values(lazy);
    assert_eq!(
        diagnostics::kernel_launches(),
        before + 1,
        "reading the result runs fmar's kernel exactly once"
    );
    let scale = Tolerance::matmul_scale(5, 1.0, 1.0) + 1.0;
    assert_close(
        "fused vs reference",
        &fused,
        &reference,
        Tolerance::for_precision(Precision::F32),
        scale,
        rng.seed(),
    );
}

#[test]
fn autodiff_path_runs_fmar_kernel() {
    let _guard = counter_lock();
    let mut rng = Rng::fresh();
    let problem = Problem::random(&[1, 4, 3], &[1, 3, 2], &[1, 4, 2], &mut rng, Precision::F32);
    let grad_output = HostTensor::random(&[1, 4, 2], &mut rng, Precision::F32);
    let before = diagnostics::kernel_launches();
    forward_backward(
        matmul_add_relu,
        &problem,
        &grad_output,
        &Device::default(),
        Precision::F32,
    );
    assert_eq!(diagnostics::kernel_launches(), before + 1);
    forward_backward(
        matmul_add_relu_reference,
        &problem,
        &grad_output,
        &Device::default(),
        Precision::F32,
    );
    assert_eq!(diagnostics::kernel_launches(), before + 1);
}
