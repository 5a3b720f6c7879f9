//! Launches the kernel through cubecl's wgpu runtime, with no Burn in between, and compares it
//! with the harness's f64 loop on fresh random data.

use cubecl::client::Client;
use cubecl::ir::{ElemType, FloatKind};
use cubecl::prelude::TensorBinding;
use cubecl::server::Handle;
use cubecl::wgpu::WgpuDevice;
use cubecl::zspace::{Shape, Strides, Tiling};
use fmar_kernel::{LaunchError, Operands, launch};
use fmar_tests::{HostTensor, Precision, Problem, Rng, Tolerance, assert_close, should_run};

fn client() -> Client {
    cubecl::Device::Wgpu(WgpuDevice::default()).client()
}

fn elem_type(precision: Precision) -> ElemType {
    ElemType::Float(match precision {
        Precision::F32 => FloatKind::F32,
        Precision::F16 => FloatKind::F16,
        Precision::BF16 => FloatKind::BF16,
    })
}

fn encode(values: &[f64], precision: Precision) -> Vec<u8> {
    values
        .iter()
        .flat_map(|&x| match precision {
            Precision::F32 => (x as f32).to_le_bytes().to_vec(),
            Precision::F16 => half::f16::from_f64(x).to_le_bytes().to_vec(),
            Precision::BF16 => half::bf16::from_f64(x).to_le_bytes().to_vec(),
        })
        .collect()
}

fn decode(bytes: &[u8], precision: Precision) -> Vec<f64> {
    match precision {
        Precision::F32 => bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
            .collect(),
        Precision::F16 => bytes
            .chunks_exact(2)
            .map(|c| half::f16::from_le_bytes(c.try_into().unwrap()).to_f64())
            .collect(),
        Precision::BF16 => bytes
            .chunks_exact(2)
            .map(|c| half::bf16::from_le_bytes(c.try_into().unwrap()).to_f64())
            .collect(),
    }
}

fn binding(handle: &Handle, shape: &[usize], strides: &[usize]) -> TensorBinding {
    TensorBinding {
        handle: handle.clone().binding(),
        shape: Shape::from(shape.to_vec()),
        strides: Strides::new(strides),
        tiling: Tiling::default(),
    }
}

fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for dim in (0..shape.len().saturating_sub(1)).rev() {
        strides[dim] = strides[dim + 1] * shape[dim + 1];
    }
    strides
}

/// The view of `tensor` that the launch contract wants: the output's batch dims, with stride 0
/// where `tensor` broadcasts.
fn expanded_strides(tensor: &[usize], out_batch: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let mut shape = tensor.to_vec();
    let mut strides = contiguous_strides(tensor);
    for (dim, &size) in out_batch.iter().enumerate() {
        if shape[dim] != size {
            shape[dim] = size;
            strides[dim] = 0;
        }
    }
    (shape, strides)
}

/// How `rhs` is stored on the device.
#[derive(Clone, Copy, Debug)]
enum RhsLayout {
    RowMajor,
    /// Stored as `[B.., n, k]` and read as `[B.., k, n]` through swapped strides.
    Transposed,
}

/// Runs the kernel on `problem` and returns the output.
fn run(problem: &Problem, precision: Precision, rhs_layout: RhsLayout) -> Vec<f64> {
    let client = client();
    let out_shape = &problem.output.shape;
    let rank = out_shape.len();
    let out_batch = &out_shape[..rank - 2];

    let lhs = client.create_from_slice(&encode(&problem.lhs.data, precision));
    let (lhs_shape, lhs_strides) = expanded_strides(&problem.lhs.shape, out_batch);

    let (rhs, rhs_shape, rhs_strides) = match rhs_layout {
        RhsLayout::RowMajor => {
            let (shape, strides) = expanded_strides(&problem.rhs.shape, out_batch);
            let rhs = client.create_from_slice(&encode(&problem.rhs.data, precision));
            (rhs, shape, strides)
        }
        RhsLayout::Transposed => {
            let s = &problem.rhs.shape;
            let (k, n) = (s[rank - 2], s[rank - 1]);
            let mut stored = vec![0.0; problem.rhs.data.len()];
            for (index, &value) in problem.rhs.data.iter().enumerate() {
                let (matrix, within) = (index / (k * n), index % (k * n));
                let (kk, j) = (within / n, within % n);
                stored[matrix * k * n + j * k + kk] = value;
            }
            let (shape, mut strides) = expanded_strides(s, out_batch);
            strides[rank - 2] = 1;
            strides[rank - 1] = k;
            let rhs = client.create_from_slice(&encode(&stored, precision));
            (rhs, shape, strides)
        }
    };

    let bias = client.create_from_slice(&encode(&problem.bias.data, precision));
    let (bias_shape, bias_strides) = expanded_strides(&problem.bias.shape, out_batch);

    let out_len: usize = out_shape.iter().product();
    let out = client.create_from_slice(&encode(&vec![f64::NAN; out_len], precision));

    launch(
        &client,
        Operands {
            lhs: binding(&lhs, &lhs_shape, &lhs_strides),
            rhs: binding(&rhs, &rhs_shape, &rhs_strides),
            bias: binding(&bias, &bias_shape, &bias_strides),
            out: binding(&out, out_shape, &contiguous_strides(out_shape)),
        },
        elem_type(precision),
    )
    .expect("valid operands launch");
    decode(&client.read_one(out).expect("readback"), precision)
}

fn check(lhs: &[usize], rhs: &[usize], precision: Precision, rhs_layout: RhsLayout) {
    let mut rng = Rng::fresh();
    let rank = lhs.len();
    let bias_shape = fmar_tests::reference::output_shape(lhs, rhs);
    let problem = Problem::random(lhs, rhs, &bias_shape, &mut rng, precision);
    let actual = run(&problem, precision, rhs_layout);
    let scale = Tolerance::matmul_scale(problem.k(), 1.0, 1.0) + 1.0;
    assert_close(
        &format!("kernel {precision:?} lhs {lhs:?} rhs {rhs:?} ({rhs_layout:?}), rank {rank}"),
        &actual,
        &problem.output.data,
        Tolerance::for_precision(precision),
        scale,
        rng.seed(),
    );
}

/// The shapes the foundation issue names (b x m x k x n) and a few more, ragged on purpose.
const SHAPES: &[(usize, usize, usize, usize)] = &[
    (1, 17, 33, 5),
    (3, 65, 7, 129),
    (2, 16, 1, 16),
    (1, 1, 1, 1),
    (4, 31, 64, 47),
    (2, 128, 256, 64),
];

fn supports(precision: Precision) -> bool {
    use cubecl::features::TypeUsage;
    let usage = client().properties().type_usage(elem_type(precision));
    usage.contains(TypeUsage::Arithmetic) && usage.contains(TypeUsage::Conversion)
}

#[test]
fn f32_matches_f64_loop_on_ragged_shapes() {
    for &(b, m, k, n) in SHAPES {
        check(&[b, m, k], &[b, k, n], Precision::F32, RhsLayout::RowMajor);
    }
}

#[test]
fn broadcast_batch_on_either_side() {
    check(
        &[1, 19, 23],
        &[5, 23, 9],
        Precision::F32,
        RhsLayout::RowMajor,
    );
    check(
        &[5, 19, 23],
        &[1, 23, 9],
        Precision::F32,
        RhsLayout::RowMajor,
    );
    check(
        &[2, 1, 7, 5],
        &[1, 3, 5, 3],
        Precision::F32,
        RhsLayout::RowMajor,
    );
}

#[test]
fn rank_two_and_rank_four() {
    check(&[33, 17], &[17, 65], Precision::F32, RhsLayout::RowMajor);
    check(
        &[2, 3, 9, 11],
        &[2, 3, 11, 4],
        Precision::F32,
        RhsLayout::RowMajor,
    );
}

#[test]
fn transposed_rhs_is_read_through_its_strides() {
    check(
        &[3, 21, 37],
        &[3, 37, 13],
        Precision::F32,
        RhsLayout::Transposed,
    );
}

/// More tiles than one grid axis holds (65,535 on CUDA and wgpu): the seed's launch broke here.
#[test]
fn batch_beyond_one_grid_axis() {
    check(
        &[70_000, 1, 3],
        &[70_000, 3, 1],
        Precision::F32,
        RhsLayout::RowMajor,
    );
}

#[test]
fn output_wider_than_one_grid_axis_of_tiles() {
    let n = 16 * 65_536 + 3;
    check(&[1, 1, 2], &[1, 2, n], Precision::F32, RhsLayout::RowMajor);
}

#[test]
fn half_precisions_where_the_device_supports_them() {
    for precision in [Precision::F16, Precision::BF16] {
        if !should_run(precision, supports(precision)) {
            continue;
        }
        for &(b, m, k, n) in &SHAPES[..3] {
            check(&[b, m, k], &[b, k, n], precision, RhsLayout::RowMajor);
        }
    }
}

#[test]
fn contract_violations_are_errors_not_launches() {
    let client = client();
    let handle = client.create_from_slice(&encode(&[0.0; 64], Precision::F32));
    let ok = |shape: &[usize]| binding(&handle, shape, &contiguous_strides(shape));
    let result = launch(
        &client,
        Operands {
            lhs: ok(&[2, 3]),
            rhs: ok(&[4, 2]), // k is 3 in lhs
            bias: ok(&[2, 2]),
            out: ok(&[2, 2]),
        },
        ElemType::Float(FloatKind::F32),
    );
    assert!(
        matches!(result, Err(LaunchError::Shape { operand: "rhs", .. })),
        "{result:?}"
    );

    let result = launch(
        &client,
        Operands {
            lhs: ok(&[2, 3]),
            rhs: binding(&handle, &[3, 2], &[64, 1]),
            bias: ok(&[2, 2]),
            out: ok(&[2, 2]),
        },
        ElemType::Float(FloatKind::F32),
    );
    assert!(
        matches!(result, Err(LaunchError::OutOfBounds { operand: "rhs", .. })),
        "{result:?}"
    );

    let result = launch(
        &client,
        Operands {
            lhs: ok(&[2, 3]),
            rhs: ok(&[3, 2]),
            bias: ok(&[2, 2]),
            out: ok(&[2, 2]),
        },
        ElemType::Float(FloatKind::F64),
    );
    assert!(
        matches!(result, Err(LaunchError::UnsupportedDtype { .. })),
        "{result:?}"
    );
}

#[test]
fn empty_output_launches_nothing_and_succeeds() {
    let problem = Problem::new(
        HostTensor::new(vec![2, 0, 3], vec![]),
        HostTensor::new(vec![2, 3, 4], vec![0.5; 24]),
        HostTensor::new(vec![2, 0, 4], vec![]),
    );
    assert!(run(&problem, Precision::F32, RhsLayout::RowMajor).is_empty());
}

#[test]
fn zero_inner_dim_gives_relu_of_bias() {
    let mut rng = Rng::fresh();
    let bias = HostTensor::random(&[2, 3, 4], &mut rng, Precision::F32);
    let problem = Problem::new(
        HostTensor::new(vec![2, 3, 0], vec![]),
        HostTensor::new(vec![2, 0, 4], vec![]),
        bias.clone(),
    );
    let expected: Vec<f64> = bias.data.iter().map(|&x| x.max(0.0)).collect();
    let actual = run(&problem, Precision::F32, RhsLayout::RowMajor);
    assert_close(
        "k = 0",
        &actual,
        &expected,
        Tolerance::for_precision(Precision::F32),
        0.0,
        rng.seed(),
    );
}
