#![allow(unsafe_code)] // One test launches a mutant kernel directly.
//! Launches the kernel through cubecl's wgpu runtime, with no Burn in between, and compares it
//! with the harness's f64 loop on fresh random data.

use cubecl::client::Client;
use cubecl::ir::{ElemType, FloatKind};
use cubecl::prelude::*;
use cubecl::server::Handle;
use cubecl::wgpu::WgpuDevice;
use cubecl::zspace::{Shape, Strides, Tiling};
use fmar_kernel::{LaunchError, Operands, Variant, launch, launch_variant};
use fmar_tests::{
    HostTensor, Layout, Precision, Problem, Rng, Tolerance, assert_close, for_random_cases, layout,
    should_run,
};

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

/// The view of a tensor that the launch contract wants: the target's dims (matched from the
/// right), with stride 0 where the tensor broadcasts.
fn expand(shape: &[usize], strides: &[usize], target: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let skip = target.len() - shape.len();
    let strides = (0..target.len())
        .map(|dim| match dim.checked_sub(skip) {
            Some(own) if shape[own] == target[dim] => strides[own],
            _ => 0,
        })
        .collect();
    (target.to_vec(), strides)
}

/// `host` stored on the device in `layout`: the buffer and the strides that read it back.
///
/// `Sliced` windows start at element 0 here: an element offset would need a storage-buffer
/// offset aligned to the device's minimum. The Burn-level harness covers offset windows.
fn store(
    client: &Client,
    host: &HostTensor,
    layout: Layout,
    precision: Precision,
) -> (Handle, Vec<usize>) {
    let rank = host.shape.len();
    let (stored, strides) = match layout {
        Layout::Transposed if rank >= 2 => {
            let stored = layout::transposed(host);
            let mut strides = layout::contiguous_strides(&stored.shape);
            strides.swap(rank - 2, rank - 1);
            (stored, strides)
        }
        Layout::Sliced { pad, .. } => {
            let mut outer = host.shape.clone();
            outer[rank - 1] += pad[1];
            if rank >= 2 {
                outer[rank - 2] += pad[0];
            }
            let stored = layout::scatter(host, &outer, &vec![0; rank], 1);
            (stored, layout::contiguous_strides(&outer))
        }
        Layout::Strided => {
            let mut outer = host.shape.clone();
            outer[rank - 1] *= 2;
            let stored = layout::scatter(host, &outer, &vec![0; rank], 2);
            let mut strides = layout::contiguous_strides(&outer);
            strides[rank - 1] = 2;
            (stored, strides)
        }
        _ => (host.clone(), layout::contiguous_strides(&host.shape)),
    };
    let bytes = encode(&stored.data, precision);
    // A buffer holds at least one element, so that an empty operand still binds.
    let bytes = if bytes.is_empty() {
        encode(&[0.0], precision)
    } else {
        bytes
    };
    (client.create_from_slice(&bytes), strides)
}

/// Runs the kernel on `problem`, each operand stored in its layout, and returns the output.
fn run(
    problem: &Problem,
    precision: Precision,
    layouts: [Layout; 3],
    variant: Variant,
) -> Option<Vec<f64>> {
    let client = client();
    let out_shape = &problem.output.shape;
    let rank = out_shape.len();
    let (m, k, n) = (out_shape[rank - 2], problem.k(), out_shape[rank - 1]);
    let batch = &out_shape[..rank - 2];
    let target = |tail: [usize; 2]| -> Vec<usize> { batch.iter().copied().chain(tail).collect() };
    let view = |host: &HostTensor, layout: Layout, target: &[usize]| {
        let (handle, strides) = store(&client, host, layout, precision);
        let (shape, strides) = expand(&host.shape, &strides, target);
        binding(&handle, &shape, &strides)
    };
    let out_len: usize = out_shape.iter().product();
    let out = client.create_from_slice(&encode(&vec![f64::NAN; out_len.max(1)], precision));
    let operands = Operands {
        lhs: view(&problem.lhs, layouts[0], &target([m, k])),
        rhs: view(&problem.rhs, layouts[1], &target([k, n])),
        bias: view(&problem.bias, layouts[2], out_shape),
        out: binding(&out, out_shape, &layout::contiguous_strides(out_shape)),
    };
    match launch_variant(&client, operands, elem_type(precision), variant) {
        Ok(()) => {}
        // The device lacks what this variant needs (tensor cores on lavapipe): another runs it.
        Err(LaunchError::Unavailable { .. }) => {
            note_unavailable(variant);
            return None;
        }
        Err(error) => panic!("valid operands refused by {variant}: {error}"),
    }
    let values = decode(&client.read_one(out).expect("readback"), precision);
    Some(values[..out_len].to_vec())
}

/// Variants the device could not run, reported once each, so that a skipped variant is seen.
fn note_unavailable(variant: Variant) {
    static SEEN: std::sync::Mutex<Vec<Variant>> = std::sync::Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap();
    if !seen.contains(&variant) {
        seen.push(variant);
        eprintln!("variant {variant} is unavailable on this device; others cover it");
    }
}

fn check(lhs: &[usize], rhs: &[usize], precision: Precision, layouts: [Layout; 3]) {
    let mut rng = Rng::fresh();
    let bias_shape = fmar_tests::reference::output_shape(lhs, rhs);
    let problem = Problem::random(lhs, rhs, &bias_shape, &mut rng, precision);
    check_problem(&problem, precision, layouts, rng.seed());
}

/// Checks every variant on `problem`.
fn check_problem(problem: &Problem, precision: Precision, layouts: [Layout; 3], seed: u64) {
    let scale = problem.forward_scale();
    for variant in Variant::ALL {
        let Some(actual) = run(problem, precision, layouts, variant) else {
            continue;
        };
        assert_close(
            &format!(
                "kernel {variant} {precision:?} lhs {:?} rhs {:?} bias {:?} {layouts:?}",
                problem.lhs.shape, problem.rhs.shape, problem.bias.shape
            ),
            &actual,
            &problem.output.data,
            Tolerance::for_precision(precision),
            scale,
            seed,
        );
    }
}

const ROW_MAJOR: [Layout; 3] = [Layout::Contiguous; 3];

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
        check(&[b, m, k], &[b, k, n], Precision::F32, ROW_MAJOR);
    }
}

#[test]
fn broadcast_batch_on_either_side() {
    check(&[1, 19, 23], &[5, 23, 9], Precision::F32, ROW_MAJOR);
    check(&[5, 19, 23], &[1, 23, 9], Precision::F32, ROW_MAJOR);
    check(&[2, 1, 7, 5], &[1, 3, 5, 3], Precision::F32, ROW_MAJOR);
}

#[test]
fn rank_two_and_rank_four() {
    check(&[33, 17], &[17, 65], Precision::F32, ROW_MAJOR);
    check(&[2, 3, 9, 11], &[2, 3, 11, 4], Precision::F32, ROW_MAJOR);
}

#[test]
fn transposed_rhs_is_read_through_its_strides() {
    check(
        &[3, 21, 37],
        &[3, 37, 13],
        Precision::F32,
        [Layout::Contiguous, Layout::Transposed, Layout::Contiguous],
    );
}

/// More tiles than one grid axis holds (65,535 on CUDA and wgpu): the seed's launch broke here.
#[test]
fn batch_beyond_one_grid_axis() {
    check(&[70_000, 1, 3], &[70_000, 3, 1], Precision::F32, ROW_MAJOR);
}

#[test]
fn output_wider_than_one_grid_axis_of_tiles() {
    let n = 16 * 65_536 + 3;
    check(&[1, 1, 2], &[1, 2, n], Precision::F32, ROW_MAJOR);
}

#[test]
fn half_precisions_where_the_device_supports_them() {
    for precision in [Precision::F16, Precision::BF16] {
        if !should_run(precision, supports(precision)) {
            continue;
        }
        for &(b, m, k, n) in &SHAPES[..3] {
            check(&[b, m, k], &[b, k, n], precision, ROW_MAJOR);
        }
    }
}

#[test]
fn contract_violations_are_errors_not_launches() {
    let client = client();
    let handle = client.create_from_slice(&encode(&[0.0; 64], Precision::F32));
    let ok = |shape: &[usize]| binding(&handle, shape, &layout::contiguous_strides(shape));
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
    for variant in Variant::ALL {
        let out = run(&problem, Precision::F32, ROW_MAJOR, variant);
        assert!(out.is_none_or(|out| out.is_empty()));
    }
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
    for variant in Variant::ALL {
        let Some(actual) = run(&problem, Precision::F32, ROW_MAJOR, variant) else {
            continue;
        };
        assert_close(
            &format!("k = 0, {variant}"),
            &actual,
            &expected,
            Tolerance::for_precision(Precision::F32),
            0.0,
            rng.seed(),
        );
    }
}

#[test]
fn every_operand_may_be_transposed_sliced_or_strided() {
    for layouts in [
        [Layout::Transposed, Layout::Contiguous, Layout::Contiguous],
        [Layout::Transposed, Layout::Transposed, Layout::Transposed],
        [
            Layout::Strided,
            Layout::Sliced {
                pad: [2, 1],
                offset: [0, 0],
            },
            Layout::Strided,
        ],
    ] {
        check(&[2, 19, 21], &[1, 21, 11], Precision::F32, layouts);
    }
}

#[test]
fn bias_broadcasts_from_any_lower_rank() {
    let mut rng = Rng::fresh();
    for bias in [
        &[7][..],
        &[1, 7],
        &[1, 1, 7],
        &[3, 1, 7],
        &[1, 5, 7],
        &[5, 1],
        &[1],
    ] {
        let problem = Problem::random(&[3, 5, 9], &[3, 9, 7], bias, &mut rng, Precision::F32);
        check_problem(&problem, Precision::F32, ROW_MAJOR, rng.seed());
    }
}

/// The same random cases as the Burn-level harness (ranks, zero and ragged sizes, batch and
/// bias broadcasts, layouts, dtypes), straight through the kernel's launch.
#[test]
fn random_cases_through_the_launch() {
    let precisions: Vec<Precision> = Precision::ALL
        .into_iter()
        .filter(|&p| supports(p))
        .collect();
    for_random_cases(24, precisions, |case| {
        let mut rng = Rng::fresh();
        let problem = Problem::random(&case.lhs, &case.rhs, &case.bias, &mut rng, case.precision);
        check_problem(&problem, case.precision, case.layouts, rng.seed());
    });
}

/// The seed's kernel, verbatim in what matters here: it accumulates in its storage type.
#[cube(launch_unchecked)]
fn seed_kernel_accumulating_in_storage_type<F: Float>(
    lhs: &Tensor<F>,
    rhs: &Tensor<F>,
    bias: &Tensor<F>,
    output: &mut Tensor<F>,
    #[define(F)] _dtype: ElemType,
) {
    let row = ABSOLUTE_POS_X as usize;
    let col = ABSOLUTE_POS_Y as usize;
    let n_rows = output.shape(output.rank() - 2);
    let n_cols = output.shape(output.rank() - 1);
    let dim_k = rhs.shape(rhs.rank() - 2);
    if row >= n_rows || col >= n_cols {
        terminate!();
    }
    let mut sum = F::new(0.0);
    for k in 0..dim_k {
        sum += lhs[row * dim_k + k] * rhs[k * n_cols + col];
    }
    let index = row * n_cols + col;
    output[index] = F::max(sum + bias[index], F::new(0.0));
}

/// With k = 4096 and positive inputs, an f16 running sum falls about 9% short of the true sum
/// (about 1024): the f16 tolerance catches it. fmar's kernel, which accumulates in f32, passes
/// the very same check on the very same data.
#[test]
fn f16_tolerance_catches_an_f16_accumulator_at_k_4096() {
    if !should_run(Precision::F16, supports(Precision::F16)) {
        return;
    }
    let (m, k, n) = (16, 4096, 16);
    let mut rng = Rng::fresh();
    let problem = Problem::new(
        HostTensor::new(vec![m, k], rng.values(m * k, 0.0, 1.0, Precision::F16)),
        HostTensor::new(vec![k, n], rng.values(k * n, 0.0, 1.0, Precision::F16)),
        HostTensor::new(vec![m, n], rng.values(m * n, -1.0, 1.0, Precision::F16)),
    );
    check_problem(&problem, Precision::F16, ROW_MAJOR, rng.seed());

    let client = client();
    let upload = |host: &HostTensor| {
        let handle = client.create_from_slice(&encode(&host.data, Precision::F16));
        let strides = layout::contiguous_strides(&host.shape);
        (handle, strides)
    };
    let (lhs, lhs_strides) = upload(&problem.lhs);
    let (rhs, rhs_strides) = upload(&problem.rhs);
    let (bias, bias_strides) = upload(&problem.bias);
    let out = client.create_from_slice(&encode(&vec![0.0; m * n], Precision::F16));
    // SAFETY: contiguous tensors of the shapes given; one unit per output element.
    unsafe {
        seed_kernel_accumulating_in_storage_type::launch_unchecked(
            &client,
            cubecl::CubeCount::Static(1, 1, 1),
            cubecl::CubeDim::new_2d(m as u32, n as u32),
            binding(&lhs, &[m, k], &lhs_strides).into_tensor_arg(),
            binding(&rhs, &[k, n], &rhs_strides).into_tensor_arg(),
            binding(&bias, &[m, n], &bias_strides).into_tensor_arg(),
            binding(&out, &[m, n], &[n, 1]).into_tensor_arg(),
            elem_type(Precision::F16),
        );
    }
    let mutant = decode(&client.read_one(out).expect("readback"), Precision::F16);
    let caught = std::panic::catch_unwind(|| {
        assert_close(
            "f16 accumulator",
            &mutant,
            &problem.output.data,
            Tolerance::for_precision(Precision::F16),
            Tolerance::matmul_scale(k, 1.0, 1.0) + 1.0,
            rng.seed(),
        )
    });
    assert!(
        caught.is_err(),
        "the f16 tolerance must reject an f16 accumulator at k = 4096"
    );
    let worst = mutant
        .iter()
        .zip(&problem.output.data)
        .map(|(a, e)| (a - e).abs() / e.abs())
        .fold(0.0, f64::max);
    assert!(
        worst > 0.03,
        "an f16 accumulator is visibly wrong, relative error {worst}"
    );
}
