//! Real inputs through the public API: broadcast biases (a `Linear` bias first), any rank,
//! transposed and sliced views read without copies, half precision, zero sizes, NaN and
//! infinities, and one typed error per kind of bad input.

mod common;

use burn::tensor::{DType, Device, DeviceKind, Tensor, s};
use common::{runs, tensor, values};
use fmar::{
    Error, diagnostics, matmul_add_relu, matmul_add_relu_nd, matmul_add_relu_reference,
    matmul_add_relu_reference_nd, try_matmul_add_relu, try_matmul_add_relu_nd,
};
use fmar_tests::{
    HostTensor, Outcome, Precision, Problem, Rng, Tolerance, Tolerances, check_outcome,
    tf32_matmuls,
};
use std::sync::{Mutex, MutexGuard};

/// Tests that read fmar's process-wide counters hold this lock.
static COUNTERS: Mutex<()> = Mutex::new(());

fn counters() -> MutexGuard<'static, ()> {
    COUNTERS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Forward and the three gradients of `matmul_add_relu_nd` at ranks `D` (operands) and `B`
/// (bias), on the autodiff device, checked against the f64 reference; gradients must come back
/// in their inputs' shapes.
fn check_nd<const D: usize, const B: usize>(
    lhs: &[usize],
    rhs: &[usize],
    bias: &[usize],
    precision: Precision,
) {
    let _guard = counters();
    let device = Device::default().autodiff();
    let mut rng = Rng::fresh();
    let seed = rng.seed();
    let problem = Problem::random(lhs, rhs, bias, &mut rng, precision);
    let upstream = HostTensor::random(&problem.output.shape, &mut rng, precision);

    let l = tensor::<D>(&problem.lhs, &device, precision).require_grad();
    let r = tensor::<D>(&problem.rhs, &device, precision).require_grad();
    let b = tensor::<B>(&problem.bias, &device, precision).require_grad();
    let out = matmul_add_relu_nd(l.clone(), r.clone(), b.clone());
    assert_eq!(out.dims().to_vec(), problem.output.shape);
    let grads = (out.clone() * tensor::<D>(&upstream, &device, precision))
        .sum()
        .backward();
    let grad_lhs = l.grad(&grads).expect("lhs gradient");
    let grad_rhs = r.grad(&grads).expect("rhs gradient");
    let grad_bias = b.grad(&grads).expect("bias gradient");
    assert_eq!(grad_lhs.dims().to_vec(), lhs.to_vec());
    assert_eq!(grad_rhs.dims().to_vec(), rhs.to_vec());
    assert_eq!(
        grad_bias.dims().to_vec(),
        bias.to_vec(),
        "bias gradient in the bias's shape"
    );
    let outcome = Outcome {
        output: values(out),
        grads: [
            Some(values(grad_lhs)),
            Some(values(grad_rhs)),
            Some(values(grad_bias)),
        ],
    };
    let what = format!("lhs {lhs:?} rhs {rhs:?} bias {bias:?} {precision:?}");
    check_outcome(
        &what,
        &problem,
        Tolerances::new(precision, tf32_matmuls()),
        &upstream,
        &outcome,
        [true; 3],
        seed,
    );
}

#[test]
fn linear_bias_of_shape_n() {
    check_nd::<3, 1>(&[4, 33, 20], &[1, 20, 17], &[17], Precision::F32);
    check_nd::<2, 1>(&[65, 20], &[20, 31], &[31], Precision::F32);
}

#[test]
fn every_bias_pattern_that_broadcasts() {
    let (b, m, k, n) = (3, 9, 11, 7);
    let (lhs, rhs) = ([b, m, k], [b, k, n]);
    check_nd::<3, 2>(&lhs, &rhs, &[1, n], Precision::F32);
    check_nd::<3, 3>(&lhs, &rhs, &[1, 1, n], Precision::F32);
    check_nd::<3, 3>(&lhs, &rhs, &[b, 1, n], Precision::F32);
    check_nd::<3, 3>(&lhs, &rhs, &[1, m, n], Precision::F32);
    check_nd::<3, 3>(&lhs, &rhs, &[b, m, n], Precision::F32);
    check_nd::<3, 2>(&lhs, &rhs, &[m, 1], Precision::F32);
    check_nd::<3, 3>(&lhs, &rhs, &[b, m, 1], Precision::F32);
    check_nd::<3, 1>(&lhs, &rhs, &[1], Precision::F32);
}

#[test]
fn any_rank_with_broadcast_on_every_batch_dim() {
    check_nd::<2, 2>(&[17, 9], &[9, 23], &[17, 23], Precision::F32);
    check_nd::<4, 1>(&[2, 1, 13, 8], &[1, 3, 8, 5], &[5], Precision::F32);
    check_nd::<5, 3>(
        &[1, 2, 1, 6, 4],
        &[2, 1, 3, 4, 9],
        &[1, 6, 9],
        Precision::F32,
    );
}

#[test]
fn half_precision_with_broadcast_bias() {
    for precision in [Precision::F16, Precision::BF16] {
        if runs(precision) {
            check_nd::<3, 1>(&[2, 40, 64], &[1, 64, 24], &[24], precision);
            check_nd::<4, 2>(&[2, 2, 9, 16], &[2, 1, 16, 5], &[9, 1], precision);
        }
    }
}

/// Weights are often stored as `[n, k]` and used as `w.transpose()`: fmar reads the transposed
/// view through its strides. No input is copied, and the result is right.
#[test]
fn transposed_operands_are_read_in_place() {
    let _guard = counters();
    let device = Device::default();
    let mut rng = Rng::fresh();
    let problem = Problem::random(&[2, 19, 24], &[2, 24, 13], &[13], &mut rng, Precision::F32);
    let stored_lhs = fmar_tests::layout::transposed(&problem.lhs);
    let stored_rhs = fmar_tests::layout::transposed(&problem.rhs);
    let lhs = tensor::<3>(&stored_lhs, &device, Precision::F32).transpose();
    let rhs = tensor::<3>(&stored_rhs, &device, Precision::F32).transpose();
    let bias = tensor::<1>(&problem.bias, &device, Precision::F32);
    let copies = diagnostics::input_copies();
    let launches = diagnostics::kernel_launches();
    let out = values(matmul_add_relu_nd(lhs, rhs, bias));
    assert_eq!(
        diagnostics::kernel_launches(),
        launches + 1,
        "fmar's kernel ran"
    );
    assert_eq!(diagnostics::input_copies(), copies, "no input was copied");
    problem.assert_forward(
        "transposed",
        &out,
        Tolerance::for_precision(Precision::F32),
        rng.seed(),
    );
}

#[test]
fn sliced_views_give_correct_results() {
    let _guard = counters();
    let device = Device::default();
    let mut rng = Rng::fresh();
    let big_lhs = HostTensor::random(&[3, 30, 40], &mut rng, Precision::F32);
    let big_rhs = HostTensor::random(&[3, 40, 50], &mut rng, Precision::F32);
    let lhs = tensor::<3>(&big_lhs, &device, Precision::F32).slice(s![1..3, 5..22, 3..31]);
    let rhs = tensor::<3>(&big_rhs, &device, Precision::F32).slice(s![0..2, 10..38, 1..50;2]);
    let bias_full = HostTensor::random(&[25], &mut rng, Precision::F32);
    let bias = tensor::<1>(&bias_full, &device, Precision::F32);
    let problem = Problem::new(
        HostTensor::new(lhs.dims().to_vec(), values(lhs.clone())),
        HostTensor::new(rhs.dims().to_vec(), values(rhs.clone())),
        bias_full,
    );
    let out = values(matmul_add_relu_nd(lhs, rhs, bias));
    problem.assert_forward(
        "sliced",
        &out,
        Tolerance::for_precision(Precision::F32),
        rng.seed(),
    );
}

#[test]
fn zero_sizes_are_legal() {
    let _guard = counters();
    let device = Device::default().autodiff();
    let mut rng = Rng::fresh();
    // k = 0: relu(bias), and zero gradients for lhs and rhs.
    let bias_host = HostTensor::random(&[2, 3, 4], &mut rng, Precision::F32);
    let lhs = Tensor::<3>::zeros([2, 3, 0], &device).require_grad();
    let rhs = Tensor::<3>::zeros([2, 0, 4], &device).require_grad();
    let bias = tensor::<3>(&bias_host, &device, Precision::F32).require_grad();
    let out = matmul_add_relu(lhs.clone(), rhs.clone(), bias.clone());
    let grads = out.clone().sum().backward();
    let expected: Vec<f64> = bias_host.data.iter().map(|&x| x.max(0.0)).collect();
    assert_eq!(values(out), expected);
    assert_eq!(lhs.grad(&grads).unwrap().dims(), [2, 3, 0]);
    let mask: Vec<f64> = bias_host
        .data
        .iter()
        .map(|&x| if x > 0.0 { 1.0 } else { 0.0 })
        .collect();
    assert_eq!(values(bias.grad(&grads).unwrap()), mask);

    // m = 0 and n = 0: empty outputs, zero gradients.
    for (l, r) in [([2, 0, 5], [2, 5, 3]), ([2, 4, 5], [2, 5, 0])] {
        let lhs = Tensor::<3>::ones(l, &device).require_grad();
        let rhs = Tensor::<3>::ones(r, &device).require_grad();
        let bias = Tensor::<1>::ones([r[2]], &device).require_grad();
        let out = matmul_add_relu_nd(lhs.clone(), rhs.clone(), bias.clone());
        assert_eq!(out.dims(), [2, l[1], r[2]]);
        let grads = out.sum().backward();
        for grad in [lhs.grad(&grads).unwrap(), rhs.grad(&grads).unwrap()] {
            assert!(values(grad).iter().all(|&g| g == 0.0));
        }
        assert!(values(bias.grad(&grads).unwrap()).iter().all(|&g| g == 0.0));
    }
}

/// What the reference does with non-finite values, fmar does too, on every device this machine
/// has (the default one, and wgpu's adapter, over Vulkan or OpenGL, where one answers): IEEE
/// arithmetic through the dot product and the bias, then `relu(x) = x <= 0 ? 0 : x`, so NaN
/// stays NaN, +inf stays +inf and -inf becomes 0; the gradients are Burn's composition's, class
/// for class (NaN, infinities, zeros) and within tolerance elsewhere.
#[test]
fn nan_and_infinities_behave_as_the_reference() {
    let _guard = counters();
    let mut devices = vec![(Device::default(), true)];
    if let Some(wgpu) = wgpu_device().filter(|wgpu| *wgpu != devices[0].0) {
        devices.push((wgpu, false));
    }
    for (device, default) in devices {
        for precision in [Precision::F32, Precision::F16] {
            // The default device honours FMAR_REQUIRE_DTYPES; the other runs what it supports.
            let runs_precision = if default {
                runs(precision)
            } else {
                device.supports_dtype(common::dtype(precision))
            };
            if !runs_precision {
                continue;
            }
            for (batch, dims) in [(1, (6, 5, 7)), (2, (37, 70, 41))] {
                non_finite_like_the_reference(&device, precision, batch, dims);
            }
        }
    }
}

/// wgpu's default adapter, where one answers.
fn wgpu_device() -> Option<Device> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let opened = std::panic::catch_unwind(|| {
        let device = Device::wgpu(DeviceKind::DefaultDevice);
        Tensor::<1>::zeros([1], &device).into_data();
        device
    });
    std::panic::set_hook(hook);
    opened.ok()
}

fn non_finite_like_the_reference(
    device: &Device,
    precision: Precision,
    batch: usize,
    dims: (usize, usize, usize),
) {
    let mut rng = Rng::fresh();
    let problem = fmar_tests::non_finite_problem(batch, dims, &mut rng, precision);
    let upstream = HostTensor::random(&problem.output.shape, &mut rng, precision);
    let what = |op: &str| {
        format!(
            "{op} {precision:?} {dims:?} on {device:?} (seed {})",
            rng.seed()
        )
    };
    let [output, grads @ ..] =
        common::forward_backward(matmul_add_relu, &problem, &upstream, device, precision);
    let [reference, reference_grads @ ..] = common::forward_backward(
        matmul_add_relu_reference,
        &problem,
        &upstream,
        device,
        precision,
    );
    let classes = fmar_tests::classes;
    assert_eq!(
        classes(&output),
        classes(&reference),
        "{}",
        what("fmar vs Burn's composition")
    );
    assert_eq!(
        classes(&output),
        classes(&problem.output.data),
        "{}",
        what("fmar vs f64")
    );
    assert!(
        classes(&output).contains(&fmar_tests::ValueClass::Nan)
            && classes(&output).contains(&fmar_tests::ValueClass::PositiveInfinity),
        "{}",
        what("the output holds NaN and +inf")
    );
    let tolerance = Tolerances::new(precision, tf32_matmuls()).forward;
    fmar_tests::assert_close(
        &what("fmar's output"),
        &output,
        &problem.output.data,
        tolerance,
        fmar_tests::finite_forward_scale(&problem),
        rng.seed(),
    );
    for (index, name) in ["lhs", "rhs", "bias"].into_iter().enumerate() {
        assert_eq!(
            classes(&grads[index]),
            classes(&reference_grads[index]),
            "{}",
            what(&format!(
                "the gradient of {name}, fmar vs Burn's composition"
            ))
        );
    }
}

// ---- typed errors -------------------------------------------------------------------------

/// `try_` returns the error at the call; the panicking form panics with the same message; and
/// nothing was launched.
fn assert_refused<const D: usize, const B: usize>(
    lhs: Tensor<D>,
    rhs: Tensor<D>,
    bias: Tensor<B>,
    matches: impl Fn(&Error) -> bool,
    message: &str,
) {
    let _guard = counters();
    let launches = diagnostics::kernel_launches();
    let error = try_matmul_add_relu_nd(lhs.clone(), rhs.clone(), bias.clone())
        .expect_err("bad input is refused at the call");
    assert!(matches(&error), "unexpected variant: {error:?}");
    assert_eq!(error.to_string(), message);
    let panic = std::panic::catch_unwind(|| matmul_add_relu_nd(lhs, rhs, bias))
        .expect_err("the plain form panics");
    let panic = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert_eq!(panic, message, "the panic carries the same message");
    Device::default()
        .sync()
        .expect("the device is still usable");
    assert_eq!(
        diagnostics::kernel_launches(),
        launches,
        "nothing was launched"
    );
}

#[test]
fn rank_error() {
    let device = Device::default();
    assert_refused(
        Tensor::<1>::zeros([4], &device),
        Tensor::<1>::zeros([4], &device),
        Tensor::<1>::zeros([1], &device),
        |e| matches!(e, Error::Rank { operand: "lhs", .. }),
        "matmul_add_relu: `lhs` has shape [4] (rank 1), but it must have at least 2 dims",
    );
}

#[test]
fn inner_dim_error() {
    let device = Device::default();
    assert_refused(
        Tensor::<3>::zeros([2, 3, 4], &device),
        Tensor::<3>::zeros([2, 5, 6], &device),
        Tensor::<1>::zeros([6], &device),
        |e| matches!(e, Error::InnerDim { .. }),
        "matmul_add_relu: inner dims differ: `lhs` [2, 3, 4] has k = 4 but `rhs` [2, 5, 6] has k = 5",
    );
}

#[test]
fn batch_error() {
    let device = Device::default();
    assert_refused(
        Tensor::<4>::zeros([2, 3, 4, 5], &device),
        Tensor::<4>::zeros([2, 2, 5, 6], &device),
        Tensor::<1>::zeros([6], &device),
        |e| matches!(e, Error::BatchNotBroadcastable { dim: 1, .. }),
        "matmul_add_relu: batch dim 1 does not broadcast: `lhs` [2, 3, 4, 5] has 3 and `rhs` \
         [2, 2, 5, 6] has 2 (sizes must match or one must be 1)",
    );
}

#[test]
fn bias_error() {
    let device = Device::default();
    assert_refused(
        Tensor::<3>::zeros([2, 3, 4], &device),
        Tensor::<3>::zeros([2, 4, 6], &device),
        Tensor::<2>::zeros([2, 6], &device),
        |e| matches!(e, Error::BiasNotBroadcastable { .. }),
        "matmul_add_relu: `bias` [2, 6] does not broadcast to the output shape [2, 3, 6] (dims are \
         matched from the right; each must equal the output's or be 1, and `bias` may not have \
         more dims than the output)",
    );
}

#[test]
fn dtype_mismatch_error() {
    let device = Device::default();
    assert_refused(
        Tensor::<3>::zeros([2, 3, 4], &device),
        Tensor::<3>::zeros([2, 4, 6], (&device, DType::F16)),
        Tensor::<1>::zeros([6], &device),
        |e| matches!(e, Error::DtypeMismatch { operand: "rhs", .. }),
        "matmul_add_relu: `rhs` has dtype F16 but `lhs` has dtype F32; all three must match",
    );
}

/// A dtype fmar does not compute in (f64, on every device that stores it; Flex always does), and
/// one the device cannot run (bf16 on wgpu's WGSL compiler), are refused at the call, before
/// anything is compiled or launched. Which cases apply depends on the device, so the test counts
/// the refusals it checked: at least one always applies.
#[test]
fn unsupported_dtype_error() {
    let mut checked = Vec::new();
    for device in [Device::default(), Device::flex()] {
        if device.supports_dtype(DType::F64) {
            let f64s = |dims: [usize; 3]| Tensor::<3>::zeros(dims, (&device, DType::F64));
            assert_refused(
                f64s([2, 3, 4]),
                f64s([2, 4, 5]),
                f64s([2, 3, 5]),
                |e| {
                    matches!(
                        e,
                        Error::UnsupportedDtype {
                            dtype: DType::F64,
                            ..
                        }
                    )
                },
                "matmul_add_relu: dtype F64 is not supported (fmar computes in F32, F16 and BF16)",
            );
            checked.push(format!("F64 on {device:?}"));
        }
    }
    let device = Device::default();
    if !device.supports_dtype(DType::BF16) {
        let bf16 = |dims: [usize; 3]| Tensor::<3>::zeros(dims, (&device, DType::BF16));
        let _guard = counters();
        let launches = diagnostics::kernel_launches();
        let error = try_matmul_add_relu(bf16([2, 3, 4]), bf16([2, 4, 5]), bf16([2, 3, 5]));
        assert!(
            matches!(
                error,
                Err(Error::UnsupportedDtype {
                    dtype: DType::BF16,
                    ..
                })
            ),
            "{error:?}"
        );
        let message = error.unwrap_err().to_string();
        assert!(
            message.starts_with("matmul_add_relu: dtype BF16 is not supported on device"),
            "{message}"
        );
        assert_eq!(diagnostics::kernel_launches(), launches);
        checked.push(format!("BF16 on {device:?}"));
    }
    assert!(
        !checked.is_empty(),
        "no unsupported dtype was checked: neither device stores F64 and {device:?} runs BF16"
    );
    eprintln!("refused at the call: {checked:?}");
}

#[test]
fn device_mismatch_error() {
    let _guard = counters();
    let device = Device::default();
    let other = Device::wgpu(DeviceKind::Cpu);
    let Ok(on_other) = std::panic::catch_unwind(|| Tensor::<3>::zeros([2, 4, 6], &other)) else {
        eprintln!("skipping: no second wgpu device (a CPU adapter) on this machine");
        return;
    };
    assert_ne!(device, other);
    let error = try_matmul_add_relu_nd(
        Tensor::<3>::zeros([2, 3, 4], &device),
        on_other,
        Tensor::<1>::zeros([6], &device),
    );
    assert!(
        matches!(error, Err(Error::DeviceMismatch { operand: "rhs", .. })),
        "{error:?}"
    );
    let message = error.unwrap_err().to_string();
    assert!(
        message.starts_with("matmul_add_relu: `rhs` is on device "),
        "{message}"
    );
}

#[test]
fn reference_accepts_the_same_broadcast_bias() {
    let _guard = counters();
    let device = Device::default();
    let mut rng = Rng::fresh();
    let problem = Problem::random(&[2, 5, 6], &[2, 6, 7], &[7], &mut rng, Precision::F32);
    let out = values(matmul_add_relu_reference_nd(
        tensor::<3>(&problem.lhs, &device, Precision::F32),
        tensor::<3>(&problem.rhs, &device, Precision::F32),
        tensor::<1>(&problem.bias, &device, Precision::F32),
    ));
    problem.assert_forward(
        "reference nd",
        &out,
        Tolerances::new(Precision::F32, tf32_matmuls()).forward,
        rng.seed(),
    );
}
