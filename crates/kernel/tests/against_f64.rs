//! `fmar-kernel` against the launch contract: the contract tests of `contract/` run with this
//! crate's `launch`, `launch_variant` and every [`Variant`](kernel::Variant), plus one check of
//! the f16 tolerance itself.

use fmar_kernel as kernel; // the contract harness reaches the crate under test as `crate::kernel`

mod contract;
mod hopper_support;
use hopper_support::{
    FewRowProblem, check_few_row_f32, expect_every_path_declines, expect_hopper_unavailable,
    hopper_device, hopper_operands,
};

use fmar_tests::{
    Precision, Problem, Rng, Tolerance, assert_close, should_run, worst_relative_error,
};

contract::contract_tests! {
    launch: kernel::launch,
    launch_variant: kernel::launch_variant,
    variants: variants(),
}

/// Every variant, or those `FMAR_TEST_VARIANTS` names (comma-separated [`Variant::name`]s), to
/// run the contract on one variant of a device where compiling every other one takes long.
///
/// [`Variant::name`]: kernel::Variant::name
fn variants() -> &'static [kernel::Variant] {
    static SELECTED: std::sync::LazyLock<Vec<kernel::Variant>> =
        std::sync::LazyLock::new(|| match std::env::var("FMAR_TEST_VARIANTS") {
            Ok(names) => names
                .split(',')
                .map(|name| {
                    kernel::Variant::from_name(name)
                        .unwrap_or_else(|| panic!("FMAR_TEST_VARIANTS: no variant {name}"))
                })
                .collect(),
            Err(_) => kernel::Variant::ALL.to_vec(),
        });
    &SELECTED
}

/// A minimal rank-2 kernel that accumulates in its storage type: the f16-accumulator mutant.
#[allow(unsafe_code)] // `launch_unchecked`: the one launch whose indices no contract check guards.
mod seed_kernel {
    use crate::contract::{binding, client, download, elem_type, upload};
    use cubecl::prelude::*;
    use fmar_tests::{Precision, Problem};

    #[cube(launch_unchecked)]
    fn accumulating_in_storage_type<F: Float>(
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

    /// The mutant's output on a rank-2 f16 `problem` small enough for one cube.
    pub fn run_f16(problem: &Problem) -> Vec<f64> {
        let client = client();
        let (m, n) = (problem.lhs.shape[0], problem.rhs.shape[1]);
        let k = problem.k();
        assert!(m * n <= 256, "one cube of {m} x {n} units");
        let (lhs, lhs_strides) = upload(&client, &problem.lhs, Precision::F16);
        let (rhs, rhs_strides) = upload(&client, &problem.rhs, Precision::F16);
        let (bias, bias_strides) = upload(&client, &problem.bias, Precision::F16);
        let out = client.create_from_slice(&Precision::F16.encode(&vec![0.0; m * n]));
        // SAFETY: contiguous tensors of the shapes given; one unit per output element, and the
        // kernel returns early for any unit past the output.
        unsafe {
            accumulating_in_storage_type::launch_unchecked(
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
        download(&client, out, Precision::F16)
    }
}

/// With k = 4096 and positive inputs, an f16 running sum falls about 9% short of the true sum
/// (about 1024): the f16 tolerance catches it. fmar's kernel, which accumulates in f32, passes
/// the very same check on the very same data.
#[test]
fn f16_tolerance_catches_an_f16_accumulator_at_k_4096() {
    let _device = contract::one_at_a_time();
    if !should_run(Precision::F16, contract::supports(Precision::F16)) {
        return;
    }
    let mut rng = Rng::fresh();
    let problem = contract::f16_problem_at_k_4096(&mut rng);
    contract::check_problem(
        &kernel(),
        &problem,
        Precision::F16,
        [fmar_tests::Layout::Contiguous; 3],
        rng.seed(),
    );

    let mutant = seed_kernel::run_f16(&problem);
    let k = problem.k();
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
    let worst = worst_relative_error(&mutant, &problem.output.data);
    assert!(
        worst > 0.03,
        "an f16 accumulator is visibly wrong, relative error {worst}"
    );
}

/// fmar's Hopper kernels run where the device has what they need (a CUDA device of compute
/// capability 9.0, through cubecl's CUDA C++ compiler) and compute the contract's function
/// there; everywhere else each path reports itself unavailable, so that the launch runs another
/// variant. Either way the test asserts which: a decline is never silent.
///
/// On a Hopper device every problem below runs on the crate's own choice of path, each ragged
/// in `m`, `n` and `k`; on an H200 (132 multiprocessors) they take each of the whole-tile
/// kernel's tile shapes in turn (128 x 256, 128 x 128, 64 x 128, 64 x 64, and 64 x 64 with `k`
/// split in two to five slices), with `lhs` both K-major and M-major, `rhs` both N-major and
/// K-major, batched and batch-broadcast operands, and row-broadcast, per-batch and full biases.
/// (`hopper_paths.rs` runs each path pinned.)
#[test]
fn hopper_runs_exactly_where_the_device_has_it() {
    let _device = contract::one_at_a_time();
    use contract::{client, download, elem_type};
    let client = client();
    let hopper_device = hopper_device(&client);
    // Shapes of lhs, rhs and bias; whether lhs is stored M-major and rhs K-major (else each is
    // row-major).
    type HopperProblem = (
        &'static [usize],
        &'static [usize],
        &'static [usize],
        bool,
        bool,
    );
    let problems: &[HopperProblem] = &[
        (&[2, 130, 72], &[1, 72, 264], &[264], false, false),
        (&[1000, 200], &[200, 4000], &[4000], false, false),
        (&[1000, 136], &[136, 2000], &[1000, 2000], false, true),
        (&[504, 136], &[136, 2000], &[2000], true, true),
        (&[2, 200, 264], &[2, 264, 136], &[2, 1, 136], true, false),
        // Few rows: split-K, the slices of a 64 x 64 tile in one cluster (five slices of `k`
        // per tile; five slices of one tile, the last shorter in f32; two slices, four in f32,
        // of tiles with a full bias and ragged rows).
        (&[3, 1, 4104], &[1, 4104, 1000], &[1, 1000], false, false),
        (&[1, 4104], &[4104, 64], &[64], false, true),
        (
            &[2, 120, 1000],
            &[1, 1000, 200],
            &[2, 120, 200],
            true,
            false,
        ),
        // Tiles enough for every multiprocessor, the weight N-major: f32 computes the product
        // transposed, with no copy (ragged tiles of rows and columns; a bias per row, then a
        // batched weight with a bias per batch, then one weight for every batch).
        (&[2100, 40], &[40, 2056], &[2100, 2056], false, false),
        (&[3, 700, 32], &[3, 32, 2056], &[3, 1, 2056], false, false),
        // A `Linear` over batched rows: one weight for every batch (its batch stride 0).
        (&[3, 600, 40], &[1, 40, 2056], &[2056], false, false),
        // A ragged `k` (77) with both operands in the layouts f32 copies K-major first: the
        // copies' rows are padded to 16 bytes.
        (&[200, 77], &[77, 136], &[136], true, false),
    ];
    for precision in hopper_precisions(hopper_device) {
        for &(lhs_shape, rhs_shape, bias_shape, lhs_m_major, rhs_k_major) in problems {
            let mut rng = Rng::fresh();
            let problem = Problem::random(lhs_shape, rhs_shape, bias_shape, &mut rng, precision);
            let (operands, out) =
                hopper_operands(&client, &problem, precision, lhs_m_major, rhs_k_major);
            if !hopper_device {
                expect_every_path_declines(&client, &operands, elem_type(precision));
                return;
            }
            kernel::launch(&client, operands, elem_type(precision))
                .expect("the launch runs every valid problem");
            let got = download(&client, out, precision);
            assert_close(
                &format!(
                    "hopper {precision:?} lhs {lhs_shape:?} (M-major: {lhs_m_major}) rhs \
                     {rhs_shape:?} (K-major: {rhs_k_major}) bias {bias_shape:?}"
                ),
                &got,
                &problem.output.data,
                contract::tolerance(precision),
                problem.forward_scale(),
                rng.seed(),
            );
        }
    }
}

/// f32 at up to 128 rows with an N-major `rhs` runs on the Hopper kernels (up to 8 rows f32
/// FMAs; from 9, the transposed product through TF32 MMAs, the weight the MMA's register
/// operand; with TF32 disallowed, at up to 32 rows, f32 FMAs) whatever the strides: rows of
/// 1001, 2055 and 517 elements are not 16-byte multiples, which the TMA engine needs, and yet
/// the crate's choice takes them, `lhs` K- and M-major, batched and broadcast, at 1 to 128 rows
/// (every row count the swapped kernels are compiled for, ragged; fed by `cp.async`, and by
/// the TMA engine where the strides allow), and matches the f64 reference. Elsewhere it reports
/// itself unavailable.
#[test]
fn few_row_f32_runs_on_hopper_whatever_its_strides() {
    let _device = contract::one_at_a_time();
    let problems: &[FewRowProblem] = &[
        (&[1, 7, 1001], &[1, 1001, 2055], &[2055], false),
        (&[3, 16, 517], &[1, 517, 1030], &[3, 16, 1030], true),
        (&[2, 1, 4097], &[2, 4097, 99], &[1, 99], false),
        (&[2, 29, 517], &[1, 517, 1030], &[1030], true),
        (&[1, 61, 300], &[1, 300, 70], &[70], false),
        (&[2, 128, 1001], &[1, 1001, 258], &[2, 128, 258], true),
        (&[1, 100, 4096], &[1, 4096, 130], &[130], false),
        // Aligned `lhs` and an even `n`, few rows: 16-byte copies of `lhs`, 8-byte pairs of
        // the weight; aligned `lhs` with an odd `n`: single weight elements.
        (&[1, 12, 512], &[1, 512, 1000], &[1000], false),
        (&[2, 40, 256], &[1, 256, 77], &[77], false),
        // Strides the TMA engine can follow (`lhs` K-major, rows of 16-byte multiples): the
        // TMA-fed kernel, at each row count compiled, a ragged last stage of `k` and a ragged
        // last column block, the weight broadcast and batched.
        (&[1, 20, 1028], &[1, 1028, 4100], &[4100], false),
        (&[3, 50, 4096], &[3, 4096, 196], &[196], false),
        (&[2, 128, 1000], &[1, 1000, 260], &[2, 128, 260], false),
        // Up to 4 rows with rows of 16-byte multiples and slices at least 64 deep: four weight
        // columns a unit, the slice depth chosen per problem; a ragged `k` and a last column
        // block of 4 columns, the weight broadcast and batched, `lhs` M-major. Then the same
        // rows with slices too shallow for it (one column a unit), and the second kernel's
        // four columns a unit at one row.
        (&[2, 3, 8200], &[1, 8200, 4100], &[4100], false),
        (&[3, 4, 6000], &[3, 6000, 2052], &[3, 4, 2052], true),
        (&[2, 3, 1001], &[1, 1001, 1028], &[1028], false),
        (&[1, 1, 4096], &[1, 4096, 4096], &[4096], false),
        // A weight shared by every batch, the batches' rows one after the other: one batch of
        // 4, 8 and 30 rows, the bias following the rows or the same for all of them. A bias
        // per batch that every row of it shares, or a weight per batch, keeps the batches.
        (&[4, 1, 2048], &[1, 2048, 1000], &[1000], false),
        (&[4, 2, 1024], &[1, 1024, 520], &[4, 2, 520], false),
        (&[3, 10, 1024], &[1, 1024, 264], &[264], false),
        (&[4, 2, 1024], &[1, 1024, 520], &[4, 1, 520], false),
        (&[4, 2, 1024], &[4, 1024, 520], &[520], false),
        // Up to 8 rows and column blocks enough to fill the device with clusters of a block's
        // slices: one launch, the slices summed in the cluster's first cube. A ragged `k` (a
        // short last slice and stage) and a last column block of 4 columns; a `k` of two
        // stages, the second short; a weight and a bias per batch, one slice a block (no
        // cluster); 4 rows, one slice.
        (&[1, 3, 4100], &[1, 4100, 4100], &[4100], false),
        (&[1, 2, 40], &[1, 40, 4096], &[4096], false),
        (&[2, 3, 2048], &[2, 2048, 4096], &[2, 3, 4096], false),
        (&[1, 4, 1000], &[1, 1000, 8000], &[8000], false),
        // 7 rows (the 8-row kernel), a bias per row, a ragged last column block.
        (&[1, 7, 2000], &[1, 2000, 4104], &[1, 7, 4104], false),
    ];
    check_few_row_f32(problems, contract::tolerance(Precision::F32));
}

/// The plain product `lhs @ rhs` ([`kernel::launch_product`]) runs on the Hopper kernel where
/// the device has it, and matches the f64 product (no bias, no ReLU: about half the sums are
/// negative and must come back as they are); elsewhere it reports itself unavailable.
///
/// The problems are the backward's gradient products as fmar issues them: `grad @ rhsᵀ` (a
/// row-major gradient, the weight read K-major through swapped strides), `lhsᵀ @ grad` (the
/// input read M-major, the gradient N-major), with a batch, with the batch folded into `k`, and
/// few enough rows that `k` is split across cubes.
#[test]
fn hopper_product_runs_exactly_where_the_device_has_it() {
    let _device = contract::one_at_a_time();
    use contract::{client, download, elem_type};
    let client = client();
    let hopper_device = hopper_device(&client);
    // Shapes of lhs and rhs; whether lhs is stored M-major and rhs K-major.
    type ProductProblem = (&'static [usize], &'static [usize], bool, bool);
    let problems: &[ProductProblem] = &[
        // grad_lhs = grad @ rhsᵀ: grad [b, m, n], rhs [1, k, n] read as [1, n, k] (K-major).
        (&[2, 200, 136], &[1, 136, 264], false, true),
        // grad_rhs = lhsᵀ @ grad, the batch folded into k: lhs [b m, k] read as [k, b m].
        (&[264, 400], &[400, 136], true, false),
        // The same with a batch kept (a batched weight), ragged everywhere.
        (&[2, 136, 72], &[2, 72, 200], true, false),
        // Few rows: split-K.
        (&[8, 4104], &[4104, 1000], false, true),
        // Tiles enough for every multiprocessor, the weight N-major: f32 computes the product
        // transposed, with no copy.
        (&[1100, 64], &[64, 4104], false, false),
    ];
    for precision in hopper_precisions(hopper_device) {
        for &(lhs_shape, rhs_shape, lhs_m_major, rhs_k_major) in problems {
            let mut rng = Rng::fresh();
            let lhs = fmar_tests::HostTensor::random(lhs_shape, &mut rng, precision);
            let rhs = fmar_tests::HostTensor::random(rhs_shape, &mut rng, precision);
            // A zero bias: the reference's pre-activation is the plain product.
            let zero = fmar_tests::HostTensor::new(vec![1], vec![0.0]);
            let problem = Problem::new(lhs, rhs, zero);
            let (operands, out) =
                hopper_operands(&client, &problem, precision, lhs_m_major, rhs_k_major);
            let product = kernel::ProductOperands {
                lhs: operands.lhs,
                rhs: operands.rhs,
                out: operands.out,
            };
            let result = kernel::launch_product(&client, product, elem_type(precision));
            if hopper_device {
                result.expect("the plain product must run on a Hopper device");
                let got = download(&client, out, precision);
                let expected = &problem.pre_activation.data;
                assert!(
                    expected.iter().filter(|&&x| x < 0.0).count() > expected.len() / 4,
                    "the product has negative sums, which a ReLU would change"
                );
                assert_close(
                    &format!(
                        "hopper product {precision:?} lhs {lhs_shape:?} (M-major: \
                         {lhs_m_major}) rhs {rhs_shape:?} (K-major: {rhs_k_major})"
                    ),
                    &got,
                    expected,
                    contract::tolerance(precision),
                    problem.forward_scale(),
                    rng.seed(),
                );
            } else {
                expect_hopper_unavailable(result);
                return;
            }
        }
    }
}

/// The dtypes the Hopper tests run: both half precisions and f32 (through TF32) on a Hopper
/// device; elsewhere f16 alone (the decline is the same for all), where the device runs it.
fn hopper_precisions(hopper_device: bool) -> Vec<Precision> {
    let candidates: &[Precision] = if hopper_device {
        &[Precision::BF16, Precision::F16, Precision::F32]
    } else {
        &[Precision::F16]
    };
    candidates
        .iter()
        .copied()
        .filter(|&precision| should_run(precision, contract::supports(precision)))
        .collect()
}

/// Which variants run here, against fixed expectations per kind of device, so that a variant
/// that stops running where it should (or starts running where it cannot, and fails at
/// readback) fails this test instead of passing the others by declining. Each variant is
/// launched on one f32 problem; a decline must name a reason of its own kind.
///
/// Expectation: on adapters without subgroup (plane) operations, which is how cubecl's wgpu
/// runtime reports Mesa's lavapipe and any GL adapter, the portable kernels alone (`naive`,
/// `tiled`): cubek's routines need subgroups and the Hopper kernels a Hopper GPU. Devices with
/// subgroups have no fixed list here, and the test says so.
#[test]
fn each_variant_runs_exactly_where_expected() {
    let _device = contract::one_at_a_time();
    use contract::{binding, client, upload};
    use cubecl::ir::features::Plane;
    use kernel::Variant;
    let client = client();
    let properties = client.properties();
    let device = properties.identity.name.clone();
    let subgroups = properties.features.plane.contains(Plane::Ops);
    if subgroups {
        eprintln!("no fixed list of variants for {device}, which has subgroups: nothing compared");
        return;
    }
    let expected = ["naive", "tiled"];

    let precision = Precision::F32;
    let mut rng = Rng::fresh();
    let problem = Problem::random(&[1, 64, 48], &[1, 48, 80], &[80], &mut rng, precision);
    let (lhs, lhs_strides) = upload(&client, &problem.lhs, precision);
    let (rhs, rhs_strides) = upload(&client, &problem.rhs, precision);
    let (bias, _) = upload(&client, &problem.bias, precision);
    let mut ran = Vec::new();
    for variant in Variant::ALL {
        let out = client.create_from_slice(&precision.encode(&vec![f64::NAN; 64 * 80]));
        let operands = kernel::Operands {
            lhs: binding(&lhs, &[1, 64, 48], &lhs_strides),
            rhs: binding(&rhs, &[1, 48, 80], &rhs_strides),
            bias: binding(&bias, &[1, 64, 80], &[0, 0, 1]),
            out: binding(&out, &[1, 64, 80], &[64 * 80, 80, 1]),
        };
        match kernel::launch_variant(&client, operands, contract::elem_type(precision), variant) {
            Ok(()) => {
                let got = contract::download(&client, out, precision);
                assert_close(
                    &variant.name(),
                    &got,
                    &problem.output.data,
                    contract::tolerance(precision),
                    problem.forward_scale(),
                    rng.seed(),
                );
                ran.push(variant.name());
            }
            Err(error) if error.is_variant_specific() => {
                eprintln!("{variant} declines here: {error}");
            }
            Err(error) => panic!("{variant} refused valid operands: {error}"),
        }
    }
    assert_eq!(
        ran, expected,
        "the variants that ran on {device}, which has no subgroups, are not the expected ones"
    );
}

/// The tracked forward ([`kernel::launch_keeping_mask`]) writes the output as [`kernel::launch`]
/// does and, one bit per element, the ReLU mask of what it stored: set exactly where the stored
/// value is not `<= 0`, zero past the row's end. [`kernel::launch_masked_gradient`] then lets
/// a gradient through exactly where the bit is set, and its column sums add up to the sum of
/// the masked gradient over the rows.
///
/// Rows end inside a mask word (`n` = 72, 264, 1000, 4104) and on its edge (`n` = 64); 1100
/// rows give the bias gradient's last step more partial sums than it has unit rows; the batch
/// is kept and broadcast; on a Hopper device every dtype runs the Hopper kernel (f32 through
/// TF32), whose epilogue writes the mask (asserted), including few-row problems whose `k` is
/// split across a cluster (f32: the few-row kernels, whose second kernel, or with 4104 columns
/// the cluster's first cube, writes it); everywhere the other variants' output is packed by
/// the mask kernel.
/// Every dtype the device runs.
#[test]
fn mask_follows_the_stored_output_and_gates_the_gradient() {
    let _device = contract::one_at_a_time();
    use contract::{binding, client, download, elem_type, upload};
    let client = client();
    let hopper_device = hopper_device(&client);
    let problems: &[(&[usize], &[usize], &[usize])] = &[
        (&[2, 130, 72], &[1, 72, 264], &[264]),
        (&[1, 200, 136], &[1, 136, 72], &[1, 72]),
        (&[3, 70, 40], &[3, 40, 64], &[3, 70, 64]),
        (&[1, 9, 4104], &[1, 4104, 1000], &[1000]),
        // Few rows, batched, a bias per row, rows ending inside a word: f32 takes the few-row
        // kernels on a Hopper device, whose second kernel writes the mask.
        (&[3, 5, 296], &[3, 296, 72], &[3, 5, 72]),
        // The same with a shared weight: one batch of 15 rows (f32: the transposed product).
        (&[3, 5, 296], &[1, 296, 72], &[3, 5, 72]),
        // Columns enough for the few-row kernel's clusters (f32), whose first cube writes it.
        (&[1, 3, 1024], &[1, 1024, 4104], &[4104]),
        // Enough rows for the bias gradient's partial sums to span several of each unit's steps.
        (&[1, 1100, 40], &[1, 40, 72], &[72]),
        // More than 128 rows and a tile for every multiprocessor (f32: the transposed product
        // over whole tiles, whose two warps of a weight box each hold half of a mask word;
        // ragged rows and columns).
        (&[1, 1100, 40], &[1, 40, 4104], &[4104]),
    ];
    let precisions: Vec<Precision> = [Precision::F32, Precision::F16, Precision::BF16]
        .into_iter()
        .filter(|&precision| should_run(precision, contract::supports(precision)))
        .collect();
    for precision in precisions {
        for &(lhs_shape, rhs_shape, bias_shape) in problems {
            let mut rng = Rng::fresh();
            let problem = Problem::random(lhs_shape, rhs_shape, bias_shape, &mut rng, precision);
            let (operands, out) = hopper_operands(&client, &problem, precision, false, false);
            let out_shape = problem.output.shape.clone();
            let n = out_shape[out_shape.len() - 1];
            let rows = out_shape.iter().product::<usize>() / n;
            let mask_shape = kernel::mask_shape(&out_shape);
            let words = mask_shape[mask_shape.len() - 1];
            // Every word starts as a pattern no mask has (bits past `n` set), so an unwritten
            // word fails the comparison.
            let mask = client.create_from_slice(&u32_bytes(&vec![0xAAAA_AAAA; rows * words]));
            let mask_strides = fmar_tests::layout::contiguous_strides(&mask_shape);
            let dtype = elem_type(precision);
            kernel::launch_keeping_mask(
                &client,
                operands,
                binding(&mask, &mask_shape, &mask_strides),
                dtype,
            )
            .expect("the tracked forward runs every valid problem");
            let label = format!("{precision:?} lhs {lhs_shape:?} rhs {rhs_shape:?}");
            if hopper_device {
                // Under parallel tests another launch may have run since; one thread each
                // (`--test-threads 1`, as the device runs this binary) makes it this one's.
                assert!(
                    kernel::last_launched_variant().is_some_and(|v| v.hopper_path().is_some()),
                    "{label}: the tracked forward runs a Hopper kernel on a Hopper device"
                );
            }
            let stored = download(&client, out, precision);
            assert_close(
                &label,
                &stored,
                &problem.output.data,
                contract::tolerance(precision),
                problem.forward_scale(),
                rng.seed(),
            );
            let mask_words = read_u32(&client, mask);
            for row in 0..rows {
                for word in 0..words {
                    let mut expected = 0u32;
                    for bit in 0..32 {
                        let col = word * 32 + bit;
                        if col < n
                            && (stored[row * n + col] > 0.0 || stored[row * n + col].is_nan())
                        {
                            expected |= 1 << bit;
                        }
                    }
                    let got = mask_words[row * words + word];
                    assert_eq!(
                        got,
                        expected,
                        "{label}: mask word {word} of row {row} is {got:#034b}, the stored \
                         output's signs give {expected:#034b} (seed {})",
                        rng.seed()
                    );
                }
            }

            // The gradient through the mask, with its column sums: a contiguous gradient, one
            // row read by every row through stride-0 dims (as a sum's gradient comes), and rows
            // padded apart (read through their strides).
            for layout in ["contiguous", "broadcast over rows", "padded rows"] {
                let label = format!("{label} (gradient {layout})");
                let (grad, grad_handle, grad_view_strides) = if layout == "broadcast over rows" {
                    let row = fmar_tests::HostTensor::random(&[n], &mut rng, precision);
                    let (handle, _) = upload(&client, &row, precision);
                    let data = row.data.iter().copied().cycle().take(rows * n).collect();
                    let mut strides = vec![0; out_shape.len()];
                    strides[out_shape.len() - 1] = 1;
                    (
                        fmar_tests::HostTensor::new(out_shape.clone(), data),
                        handle,
                        strides,
                    )
                } else if layout == "padded rows" {
                    // Each row 3 elements longer than `n`: every stride is neither 0 nor dense.
                    let grad = fmar_tests::HostTensor::random(&out_shape, &mut rng, precision);
                    let mut outer = out_shape.clone();
                    *outer.last_mut().expect("rank >= 2") += 3;
                    let zeros = vec![0; outer.len()];
                    let stored = fmar_tests::layout::scatter(&grad, &outer, &zeros, 1);
                    let (handle, _) = upload(&client, &stored, precision);
                    (grad, handle, fmar_tests::layout::contiguous_strides(&outer))
                } else {
                    let grad = fmar_tests::HostTensor::random(&out_shape, &mut rng, precision);
                    let (handle, strides) = upload(&client, &grad, precision);
                    (grad, handle, strides)
                };
                let grad_strides = fmar_tests::layout::contiguous_strides(&out_shape);
                let gated = client.create_from_slice(&precision.encode(&vec![f64::NAN; rows * n]));
                let sums = client.create_from_slice(&precision.encode(&vec![f64::NAN; n]));
                kernel::launch_masked_gradient(
                    &client,
                    kernel::MaskedGradient {
                        grad: binding(&grad_handle, &out_shape, &grad_view_strides),
                        mask: binding(
                            &client.create_from_slice(&u32_bytes(&mask_words)),
                            &mask_shape,
                            &mask_strides,
                        ),
                        out: binding(&gated, &out_shape, &grad_strides),
                        column_sums: Some(binding(&sums, &[n], &[1])),
                    },
                    dtype,
                )
                .expect("the masked gradient runs on valid operands");
                let gated = download(&client, gated, precision);
                let grad_stored = precision.decode(&precision.encode(&grad.data));
                for (i, (&got, &g)) in gated.iter().zip(&grad_stored).enumerate() {
                    let (row, col) = (i / n, i % n);
                    let open = mask_words[row * words + col / 32] >> (col % 32) & 1 == 1;
                    let expected = if open { g } else { 0.0 };
                    assert!(
                        got == expected,
                        "{label}: gradient element ({row}, {col}) is {got}, expected {expected} \
                     (mask bit {open}; seed {})",
                        rng.seed()
                    );
                }
                // Summed in f32, then rounded once to the dtype.
                let rounding = match precision {
                    Precision::F32 => 1e-7,
                    Precision::F16 => 1e-3,
                    Precision::BF16 => 8e-3,
                };
                let sums = download(&client, sums, precision);
                for (col, &got) in sums.iter().enumerate() {
                    let column = (0..rows).map(|row| gated[row * n + col]);
                    let expected: f64 = column.clone().sum();
                    let scale: f64 = column.map(f64::abs).sum::<f64>();
                    assert!(
                        (got - expected).abs() <= 1e-5 * scale + rounding * expected.abs(),
                        "{label}: column {col} sums to {got}, expected {expected} (seed {})",
                        rng.seed()
                    );
                }
            }
        }
    }
}

/// `words` as little-endian bytes, for a buffer upload.
fn u32_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|word| word.to_le_bytes()).collect()
}

/// A buffer's contents read back as `u32` words.
fn read_u32(client: &cubecl::client::Client, handle: cubecl::server::Handle) -> Vec<u32> {
    client
        .read_one(handle)
        .expect("readback")
        .chunks_exact(4)
        .map(|bytes| u32::from_le_bytes(bytes.try_into().expect("four bytes")))
        .collect()
}
