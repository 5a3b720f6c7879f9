//! Which code path ran. A result equal to the reference proves nothing about which path made it,
//! so these tests read fmar's launch counter. They live in their own test binary, serialised by a
//! lock, because the counter is process-wide.

mod common;

use burn::tensor::{Device, Tensor};
use common::{forward_backward, tensor, values};
use fmar::{diagnostics, matmul_add_relu, matmul_add_relu_nd, matmul_add_relu_reference};
use fmar_tests::{
    HostTensor, Precision, Problem, Rng, Tolerance, Tolerances, assert_close, tf32_matmuls,
};
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
    // Both sides may round their f32 products to TF32 (CUDA's tensor cores).
    assert_close(
        "fused vs reference",
        &fused,
        &reference,
        Tolerances::new(Precision::F32, tf32_matmuls()).forward,
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

/// The backward's two gradient products (`grad @ rhsᵀ` and `lhsᵀ @ grad`, here with a weight
/// shared by the batch) run on fmar's Hopper kernel on a Hopper GPU, and on the backend's own
/// matmul elsewhere. The gradients match the f64 reference either way.
#[test]
fn backward_products_run_on_the_hopper_kernel_exactly_on_hopper() {
    let _guard = counter_lock();
    let device = Device::default();
    let hopper = is_hopper(&device);
    // The Hopper kernel runs half precisions and f32 (through TF32); bf16 is absent on wgpu's
    // WGSL compiler.
    let precisions: &[Precision] = if hopper {
        &[Precision::BF16, Precision::F32]
    } else {
        &[Precision::F16]
    };
    for &precision in precisions {
        if !common::runs(precision) {
            continue;
        }
        let mut rng = Rng::fresh();
        let before = diagnostics::gradient_product_launches();
        common::check_random_nd::<3, 1>(
            "backward products",
            (&[2, 136, 72], &[1, 72, 200], &[200]),
            precision,
            &device.clone().autodiff(),
            &mut rng,
        );
        let ran = diagnostics::gradient_product_launches() - before;
        assert_eq!(
            ran,
            if hopper { 2 } else { 0 },
            "{precision:?} gradient products on fmar's Hopper kernel (Hopper device: {hopper})"
        );
    }
}

/// Whether fmar's Hopper kernels run on `device`.
fn is_hopper(device: &Device) -> bool {
    match device.as_dispatch().clone().inner() {
        burn::backend::DispatchDevice::Cube(device) => {
            diagnostics::hopper_unavailability(&device.client()).is_none()
        }
        #[allow(unreachable_patterns)]
        _ => false,
    }
}

/// What a tracked call keeps for its backward is the ReLU mask, one bit per output element,
/// not the output: with the output itself dropped after the forward (a loss still holds the
/// graph), the device holds little more than the mask beyond the inputs. Measured in the
/// bytes cubecl's memory pools have in use, on the default device under Fusion.
#[test]
fn tracked_forward_keeps_the_mask_not_the_output() {
    use burn::tensor::Distribution;
    use burn_cubecl::cubecl::MemoryScope;
    let _guard = counter_lock();
    let device = Device::default();
    let client = match device.as_dispatch().clone().inner() {
        burn::backend::DispatchDevice::Cube(device) => device.client(),
        #[allow(unreachable_patterns)]
        _ => panic!("the test measures a CubeCL device's memory; the default device is not one"),
    };
    let in_use = || {
        device.sync().expect("the device runs its queue");
        client
            .memory_report(MemoryScope::Device)
            .usage()
            .bytes_in_use
    };
    let device = device.clone().autodiff();
    let (m, k, n) = (512usize, 64, 1024usize);
    let output_bytes = (m * n * 4) as u64;
    let mask_bytes = (m * n.div_ceil(32) * 4) as u64;
    let random = |shape: [usize; 2]| Tensor::<2>::random(shape, Distribution::Default, &device);
    let lhs = random([m, k]).require_grad();
    let rhs = random([k, n]).require_grad();
    let bias = Tensor::<1>::random([n], Distribution::Default, &device).require_grad();
    let before = in_use();

    let output = matmul_add_relu_nd(lhs.clone(), rhs.clone(), bias.clone());
    let loss = output.sum();
    let kept = in_use().saturating_sub(before);
    assert!(
        kept < output_bytes / 2,
        "a tracked forward keeps {kept} bytes for its backward; the output is {output_bytes} \
         bytes, its mask {mask_bytes}"
    );
    eprintln!("kept between forward and backward: {kept} bytes (mask {mask_bytes})");

    let grads = loss.backward();
    assert!(lhs.grad(&grads).is_some() && rhs.grad(&grads).is_some());
    assert!(bias.grad(&grads).is_some());
}
