//! Arbitrary shapes, dtypes and strides through `fmar::try_matmul_add_relu_nd` on the default
//! device (for example Mesa's lavapipe). The only acceptable outcomes:
//! - `Ok` where the inputs are valid, with values (and, on the autodiff device, gradients)
//!   matching the f64 reference within the dtype's tolerance;
//! - a typed `Err` of the class that the shape, dtype and device rules predict.
//!
//! A panic, a hang, a wrong value, an `Err` for valid input or an `Ok` for invalid input is a
//! finding.

#![no_main]

use arbitrary::Arbitrary;
use burn::tensor::{DType, Device, Tensor, TensorData};
use fmar_tests::{HostTensor, Outcome, Precision, Problem, Rng, Tolerances, check_outcome};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    /// Operand rank: 2 + rank % 3.
    rank: u8,
    /// Bias rank: 1 + bias_rank % (operand rank + 1), so one more than allowed is possible.
    bias_rank: u8,
    m: u8,
    k: u8,
    n: u8,
    /// A different k for `rhs` when `k_mismatch % 8 == 0`.
    k_mismatch: u8,
    lhs_batch: [u8; 2],
    rhs_batch: [u8; 2],
    /// Per bias dim: 0 = 1 (broadcast), 1 = the output's, 2 = something else.
    bias_dims: [u8; 5],
    /// Per operand: F32, F16 or BF16.
    dtypes: [u8; 3],
    /// Per operand: contiguous, transposed, or a window of a larger tensor.
    layouts: [u8; 3],
    autodiff: bool,
    seed: u64,
}

fn precision(code: u8) -> Precision {
    [Precision::F32, Precision::F16, Precision::BF16][code as usize % 3]
}

fn dtype(precision: Precision) -> DType {
    match precision {
        Precision::F32 => DType::F32,
        Precision::F16 => DType::F16,
        Precision::BF16 => DType::BF16,
    }
}

/// `host` on `device` in `precision`, laid out per `layout`: the same logical values.
fn upload<const D: usize>(
    host: &HostTensor,
    precision: Precision,
    layout: u8,
    device: &Device,
) -> Tensor<D> {
    let options = (device, dtype(precision));
    let rank = host.shape.len();
    let values: Vec<f32> = host.data.iter().map(|&x| x as f32).collect();
    match layout % 3 {
        1 if rank >= 2 => {
            // Stored transposed, read through swapped strides.
            let transposed = fmar_tests::layout::transposed(host);
            let stored: Vec<f32> = transposed.data.iter().map(|&x| x as f32).collect();
            Tensor::<D>::from_data(TensorData::new(stored, transposed.shape), options)
                .swap_dims(rank - 2, rank - 1)
        }
        2 if rank >= 1 && host.shape[rank - 1] > 0 => {
            // (Burn's `narrow` refuses a zero length, so an empty last dim stays contiguous.)
            // A window at offset 1 of a NaN-padded tensor, two wider in its last dim.
            let mut padded = host.shape.clone();
            padded[rank - 1] += 2;
            let mut starts = vec![0; rank];
            starts[rank - 1] = 1;
            let stored = fmar_tests::layout::scatter(host, &padded, &starts, 1);
            let stored_values: Vec<f32> = stored.data.iter().map(|&x| x as f32).collect();
            Tensor::<D>::from_data(TensorData::new(stored_values, padded), options).narrow(
                rank - 1,
                1,
                host.shape[rank - 1],
            )
        }
        _ => Tensor::<D>::from_data(TensorData::new(values, host.shape.clone()), options),
    }
}

/// Which error class the rules predict for these shapes and dtypes, or `None` for valid input.
fn predicted_error(
    lhs: &[usize],
    rhs: &[usize],
    bias: &[usize],
    precisions: [Precision; 3],
    device: &Device,
) -> Option<&'static str> {
    let rank = lhs.len();
    if precisions[1] != precisions[0] || precisions[2] != precisions[0] {
        return Some("DtypeMismatch");
    }
    if !device.supports_dtype(dtype(precisions[0])) {
        return Some("UnsupportedDtype");
    }
    if lhs[rank - 1] != rhs[rank - 2] {
        return Some("InnerDim");
    }
    let mut output = Vec::new();
    for dim in 0..rank - 2 {
        let (a, b) = (lhs[dim], rhs[dim]);
        if a != b && a != 1 && b != 1 {
            return Some("BatchNotBroadcastable");
        }
        output.push(if a == 1 { b } else { a });
    }
    output.extend([lhs[rank - 2], rhs[rank - 1]]);
    if bias.len() > rank {
        return Some("BiasNotBroadcastable");
    }
    let offset = rank - bias.len();
    for (i, &size) in bias.iter().enumerate() {
        if size != 1 && size != output[offset + i] {
            return Some("BiasNotBroadcastable");
        }
    }
    None
}

fn class(error: &fmar::Error) -> &'static str {
    match error {
        fmar::Error::Rank { .. } => "Rank",
        fmar::Error::InnerDim { .. } => "InnerDim",
        fmar::Error::BatchNotBroadcastable { .. } => "BatchNotBroadcastable",
        fmar::Error::BiasNotBroadcastable { .. } => "BiasNotBroadcastable",
        fmar::Error::DtypeMismatch { .. } => "DtypeMismatch",
        fmar::Error::UnsupportedDtype { .. } => "UnsupportedDtype",
        fmar::Error::DeviceMismatch { .. } => "DeviceMismatch",
        fmar::Error::OutputTooLarge { .. } => "OutputTooLarge",
        #[allow(unreachable_patterns)]
        _ => "other",
    }
}

fn values<const D: usize>(tensor: Tensor<D>) -> Vec<f64> {
    tensor
        .into_data()
        .convert::<f64>()
        .try_into_vec::<f64>()
        .expect("f64 data")
}

fn run<const D: usize, const B: usize>(input: &Input) {
    let dim = |x: u8, max: u8| (x % (max + 1)) as usize;
    let (m, k, n) = (dim(input.m, 24), dim(input.k, 24), dim(input.n, 24));
    let k_rhs = if input.k_mismatch % 8 == 0 {
        dim(input.k_mismatch / 8, 6)
    } else {
        k
    };
    let batch = |sizes: [u8; 2]| -> Vec<usize> {
        (0..D - 2)
            .map(|i| [1, 2, 3, 0][sizes[i] as usize % 4])
            .collect()
    };
    let mut lhs_shape = batch(input.lhs_batch);
    lhs_shape.extend([m, k]);
    let mut rhs_shape = batch(input.rhs_batch);
    rhs_shape.extend([k_rhs, n]);
    let out_guess: Vec<usize> = (0..D)
        .map(|i| match i {
            _ if i == D - 2 => m,
            _ if i == D - 1 => n,
            _ if lhs_shape[i] == 1 => rhs_shape[i],
            _ => lhs_shape[i],
        })
        .collect();
    let bias_shape: Vec<usize> = (0..B)
        .map(|i| {
            let target = if D + i >= B { out_guess[D + i - B] } else { 2 };
            match input.bias_dims[i] % 3 {
                0 => 1,
                1 => target,
                _ => target + 2,
            }
        })
        .collect();
    let precisions = input.dtypes.map(precision);

    let base = Device::default();
    // A tensor of a dtype the device lacks cannot even be created (Burn compiles its upload or
    // fill for that dtype, and the compiler's panic, though caught by CubeCL, aborts under
    // libFuzzer), so fmar's `UnsupportedDtype` is tested in tests/tests/inputs.rs instead.
    if precisions.iter().any(|&p| !base.supports_dtype(dtype(p))) {
        return;
    }
    let device = if input.autodiff {
        base.clone().autodiff()
    } else {
        base.clone()
    };
    let mut rng = Rng::seeded(input.seed);
    let lhs_host = HostTensor::random(&lhs_shape, &mut rng, precisions[0]);
    let rhs_host = HostTensor::random(&rhs_shape, &mut rng, precisions[1]);
    let bias_host = HostTensor::random(&bias_shape, &mut rng, precisions[2]);
    let tracked = |tensor: Tensor<D>| {
        if input.autodiff {
            tensor.require_grad()
        } else {
            tensor
        }
    };
    let lhs = tracked(upload::<D>(
        &lhs_host,
        precisions[0],
        input.layouts[0],
        &device,
    ));
    let rhs = tracked(upload::<D>(
        &rhs_host,
        precisions[1],
        input.layouts[1],
        &device,
    ));
    let bias = upload::<B>(&bias_host, precisions[2], input.layouts[2], &device);
    let bias = if input.autodiff {
        bias.require_grad()
    } else {
        bias
    };

    let predicted = predicted_error(&lhs_shape, &rhs_shape, &bias_shape, precisions, &base);
    let result = fmar::try_matmul_add_relu_nd(lhs.clone(), rhs.clone(), bias.clone());
    let what = format!("lhs {lhs_shape:?} rhs {rhs_shape:?} bias {bias_shape:?} {precisions:?}");
    let output = match (result, predicted) {
        (Err(error), Some(expected)) => {
            assert_eq!(class(&error), expected, "{what}: {error}");
            return;
        }
        (Err(error), None) => panic!("{what}: valid input refused: {error}"),
        (Ok(_), Some(expected)) => panic!("{what}: accepted, but expected {expected}"),
        (Ok(output), None) => output,
    };
    assert_eq!(output.dims().to_vec(), out_guess, "{what}: output shape");

    let precision = precisions[0];
    let problem = Problem::new(lhs_host, rhs_host, bias_host);
    let upstream = HostTensor::random(&problem.output.shape, &mut rng, precision);
    let tracked = [input.autodiff; 3];
    let outcome = if input.autodiff {
        let grads = (output.clone() * upload::<D>(&upstream, precision, 0, &device))
            .sum()
            .backward();
        Outcome {
            output: values(output),
            grads: [
                Some(values(lhs.grad(&grads).expect("lhs gradient"))),
                Some(values(rhs.grad(&grads).expect("rhs gradient"))),
                Some(values(bias.grad(&grads).expect("bias gradient"))),
            ],
        }
    } else {
        Outcome {
            output: values(output),
            grads: [None, None, None],
        }
    };
    check_outcome(
        &what,
        &problem,
        Tolerances::new(precision, false),
        &upstream,
        &outcome,
        tracked,
        input.seed,
    );
}

fuzz_target!(|input: Input| {
    let rank = 2 + input.rank as usize % 3;
    let bias_rank = 1 + input.bias_rank as usize % (rank + 1);
    match (rank, bias_rank) {
        (2, 1) => run::<2, 1>(&input),
        (2, 2) => run::<2, 2>(&input),
        (2, _) => run::<2, 3>(&input),
        (3, 1) => run::<3, 1>(&input),
        (3, 2) => run::<3, 2>(&input),
        (3, 3) => run::<3, 3>(&input),
        (3, _) => run::<3, 4>(&input),
        (4, 1) => run::<4, 1>(&input),
        (4, 2) => run::<4, 2>(&input),
        (4, 3) => run::<4, 3>(&input),
        (4, 4) => run::<4, 4>(&input),
        _ => run::<4, 5>(&input),
    }
});
