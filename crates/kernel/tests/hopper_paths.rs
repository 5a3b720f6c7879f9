//! Each Hopper path pinned on problems it takes, whatever the device's size: the fused forward
//! (through `launch_variant`), the tracked forward with its mask and the plain product (both
//! with the path pinned by `force_variant`), each checked against the f64 reference, and each
//! asserted to have run on the path pinned (`last_launched_variant`). Off Hopper every path
//! must decline, naming itself.
//!
//! One test in its own binary: the last launched variant is the process's, so no other test
//! may launch beside it.

use fmar_kernel as kernel; // the harness reaches the crate under test as `crate::kernel`

#[allow(dead_code, unused_macros, unused_imports)]
mod contract;
#[allow(dead_code)]
mod hopper_support;

use fmar_tests::{HostTensor, Precision, Problem, Rng, assert_close, should_run};
use hopper_support::{expect_every_path_declines, hopper_device, hopper_operands};
use kernel::{HopperPath, Variant};

/// A problem: the shapes of `lhs`, `rhs` and the bias, and whether `lhs` is stored M-major and
/// `rhs` K-major (else each is row-major).
type PathProblem = (
    &'static [usize],
    &'static [usize],
    &'static [usize],
    bool,
    bool,
);

/// The problems each path runs pinned: ragged sizes, batched and broadcast operands, and each
/// layout the path reads, including problems the heuristic would give another path.
fn problems(path: HopperPath) -> &'static [PathProblem] {
    match path {
        // Whole tiles: each major order (f32 copies what TF32 cannot read), a batch-broadcast
        // weight, a ragged `k`; and few rows, which the heuristic would split.
        HopperPath::Tiles => &[
            (&[2, 130, 72], &[1, 72, 264], &[264], false, false),
            (&[504, 136], &[136, 2000], &[2000], true, true),
            (&[200, 77], &[77, 136], &[136], true, false),
            (&[1, 3, 4104], &[1, 4104, 264], &[1, 264], false, true),
        ],
        // Split-K: five slices of `k`, a full bias and an M-major `lhs`; and tiles enough for
        // every multiprocessor, which the heuristic would not split.
        HopperPath::SplitK => &[
            (&[3, 1, 4104], &[1, 4104, 1000], &[1, 1000], false, false),
            (
                &[2, 120, 1000],
                &[1, 1000, 200],
                &[2, 120, 200],
                true,
                false,
            ),
            (&[1000, 200], &[200, 4000], &[4000], false, true),
        ],
        // f32 FMAs with plain loads: unaligned rows, an M-major `lhs`, a shared weight's
        // batches as rows, 32 rows.
        HopperPath::FewRows => &[
            (&[1, 7, 1001], &[1, 1001, 2055], &[2055], false, false),
            (&[3, 16, 517], &[1, 517, 1030], &[3, 16, 1030], true, false),
            (&[4, 2, 1024], &[1, 1024, 520], &[4, 2, 520], false, false),
            (&[1, 32, 300], &[1, 300, 70], &[70], false, false),
        ],
        // The TMA-fed FMAs: a ragged `k` and last column block, a shared weight's batches as
        // rows, a weight per batch.
        HopperPath::FewRowsTma => &[
            (&[1, 3, 4100], &[1, 4100, 4100], &[4100], false, false),
            (&[4, 1, 2048], &[1, 2048, 1000], &[1000], false, false),
            (&[2, 3, 2048], &[2, 2048, 4096], &[2, 3, 4096], false, false),
        ],
        // One launch in clusters: a `k` of two stages, a bias per row and a ragged last column
        // block, and a problem too small to fill the device.
        HopperPath::FewRowsCluster => &[
            (&[1, 2, 40], &[1, 40, 4096], &[4096], false, false),
            (&[1, 7, 2000], &[1, 2000, 4104], &[1, 7, 4104], false, false),
            (&[3, 1, 512], &[1, 512, 200], &[200], false, false),
        ],
        // The transposed product fed by `cp.async`: an M-major `lhs`, unaligned rows, 128 rows,
        // and strides the TMA engine could read.
        HopperPath::Swapped => &[
            (&[2, 29, 517], &[1, 517, 1030], &[1030], true, false),
            (
                &[2, 128, 1001],
                &[1, 1001, 258],
                &[2, 128, 258],
                true,
                false,
            ),
            (&[1, 12, 512], &[1, 512, 1000], &[1000], false, false),
            (&[1, 20, 1028], &[1, 1028, 4100], &[4100], false, false),
        ],
        // The same fed by the TMA engine: ragged stages and column blocks, a weight per batch,
        // a shared weight, 3 rows (which the heuristic gives the FMAs).
        HopperPath::SwappedTma => &[
            (&[1, 20, 1028], &[1, 1028, 4100], &[4100], false, false),
            (&[3, 50, 4096], &[3, 4096, 196], &[196], false, false),
            (
                &[2, 128, 1000],
                &[1, 1000, 260],
                &[2, 128, 260],
                false,
                false,
            ),
            (&[1, 3, 512], &[1, 512, 264], &[264], false, false),
        ],
        // Whole transposed tiles: ragged tiles with a full bias, a bias per batch with a
        // weight per batch, and few rows, which the heuristic gives the split-K products.
        HopperPath::SwappedTiles => &[
            (&[2100, 40], &[40, 2056], &[2100, 2056], false, false),
            (&[3, 700, 32], &[3, 32, 2056], &[3, 1, 2056], false, false),
            (&[1, 100, 64], &[1, 64, 520], &[520], false, false),
        ],
    }
}

/// The dtypes a path takes: every one for the whole-tile kernel, f32 for the others.
fn precisions(path: HopperPath) -> Vec<Precision> {
    let all: &[Precision] = match path {
        HopperPath::Tiles | HopperPath::SplitK => {
            &[Precision::BF16, Precision::F16, Precision::F32]
        }
        _ => &[Precision::F32],
    };
    all.iter()
        .copied()
        .filter(|&precision| should_run(precision, contract::supports(precision)))
        .collect()
}

#[test]
fn each_hopper_path_runs_the_problems_it_takes_when_pinned() {
    let client = contract::client();
    if !hopper_device(&client) {
        every_path_declines_off_hopper(&client);
        return;
    }
    let mut ran = 0;
    for path in HopperPath::ALL {
        for precision in precisions(path) {
            for (i, &problem) in problems(path).iter().enumerate() {
                run_forward(&client, path, precision, problem);
                // The tracked forward and the plain product, on each path's first problem.
                if i == 0 {
                    run_keeping_mask(&client, path, precision, problem);
                    run_product(&client, path, precision, problem);
                }
                ran += 1;
            }
        }
    }
    kernel::force_variant(None);
    assert!(ran >= 2 * HopperPath::ALL.len(), "only {ran} problems ran");
}

/// Off Hopper each path declines before it launches, naming itself.
fn every_path_declines_off_hopper(client: &cubecl::client::Client) {
    let precision = Precision::F32;
    let mut rng = Rng::fresh();
    let problem = Problem::random(&[1, 9, 40], &[1, 40, 72], &[72], &mut rng, precision);
    let (operands, _) = hopper_operands(client, &problem, precision, false, false);
    expect_every_path_declines(client, &operands, contract::elem_type(precision));
}

/// What one run is called in a failure message.
fn label(
    path: HopperPath,
    precision: Precision,
    (lhs, rhs, bias, m_major, k_major): PathProblem,
) -> String {
    format!(
        "{} {precision:?} lhs {lhs:?} (M-major: {m_major}) rhs {rhs:?} (K-major: {k_major}) bias \
         {bias:?}",
        path.name()
    )
}

/// Asserts that the last launch ran `path`.
fn assert_ran(path: HopperPath, what: &str) {
    assert_eq!(
        kernel::last_launched_variant(),
        Some(Variant::Hopper(path)),
        "{what}: not run on the path pinned"
    );
}

fn run_forward(
    client: &cubecl::client::Client,
    path: HopperPath,
    precision: Precision,
    problem: PathProblem,
) {
    let what = label(path, precision, problem);
    let (lhs_shape, rhs_shape, bias_shape, lhs_m_major, rhs_k_major) = problem;
    let mut rng = Rng::fresh();
    let problem = Problem::random(lhs_shape, rhs_shape, bias_shape, &mut rng, precision);
    let (operands, out) = hopper_operands(client, &problem, precision, lhs_m_major, rhs_k_major);
    kernel::launch_variant(
        client,
        operands,
        contract::elem_type(precision),
        path.into(),
    )
    .unwrap_or_else(|error| panic!("{what}: {error}"));
    assert_ran(path, &what);
    let got = contract::download(client, out, precision);
    assert_close(
        &what,
        &got,
        &problem.output.data,
        contract::tolerance(precision),
        problem.forward_scale(),
        rng.seed(),
    );
}

fn run_keeping_mask(
    client: &cubecl::client::Client,
    path: HopperPath,
    precision: Precision,
    problem: PathProblem,
) {
    let what = format!("{} (tracked)", label(path, precision, problem));
    let (lhs_shape, rhs_shape, bias_shape, lhs_m_major, rhs_k_major) = problem;
    let mut rng = Rng::fresh();
    let problem = Problem::random(lhs_shape, rhs_shape, bias_shape, &mut rng, precision);
    let (operands, out) = hopper_operands(client, &problem, precision, lhs_m_major, rhs_k_major);
    let out_shape = problem.output.shape.clone();
    let n = out_shape[out_shape.len() - 1];
    let rows = out_shape.iter().product::<usize>() / n;
    let mask_shape = kernel::mask_shape(&out_shape);
    let words = mask_shape[mask_shape.len() - 1];
    // A pattern no mask has (bits past `n` set): an unwritten word fails.
    let pattern: Vec<u8> = std::iter::repeat_n(0xAAu8, rows * words * 4).collect();
    let mask = client.create_from_slice(&pattern);
    let mask_binding = contract::binding(
        &mask,
        &mask_shape,
        &fmar_tests::layout::contiguous_strides(&mask_shape),
    );
    kernel::force_variant(Some(path.into()));
    kernel::launch_keeping_mask(
        client,
        operands,
        mask_binding,
        contract::elem_type(precision),
    )
    .unwrap_or_else(|error| panic!("{what}: {error}"));
    kernel::force_variant(None);
    assert_ran(path, &what);
    let stored = contract::download(client, out, precision);
    assert_close(
        &what,
        &stored,
        &problem.output.data,
        contract::tolerance(precision),
        problem.forward_scale(),
        rng.seed(),
    );
    let bytes = client.read_one(mask).expect("readback");
    for row in 0..rows {
        for word in 0..words {
            let at = 4 * (row * words + word);
            let got = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes"));
            let expected = (0..32)
                .filter(|bit| {
                    let col = word * 32 + bit;
                    col < n && (stored[row * n + col] > 0.0 || stored[row * n + col].is_nan())
                })
                .fold(0u32, |word, bit| word | 1 << bit);
            assert_eq!(got, expected, "{what}: mask word {word} of row {row}");
        }
    }
}

fn run_product(
    client: &cubecl::client::Client,
    path: HopperPath,
    precision: Precision,
    problem: PathProblem,
) {
    let what = format!("{} (plain product)", label(path, precision, problem));
    let (lhs_shape, rhs_shape, _, lhs_m_major, rhs_k_major) = problem;
    let mut rng = Rng::fresh();
    let lhs = HostTensor::random(lhs_shape, &mut rng, precision);
    let rhs = HostTensor::random(rhs_shape, &mut rng, precision);
    // A zero bias: the reference's pre-activation is the plain product.
    let problem = Problem::new(lhs, rhs, HostTensor::new(vec![1], vec![0.0]));
    let (operands, out) = hopper_operands(client, &problem, precision, lhs_m_major, rhs_k_major);
    let product = kernel::ProductOperands {
        lhs: operands.lhs,
        rhs: operands.rhs,
        out: operands.out,
    };
    kernel::force_variant(Some(path.into()));
    kernel::launch_product(client, product, contract::elem_type(precision))
        .unwrap_or_else(|error| panic!("{what}: {error}"));
    kernel::force_variant(None);
    assert_ran(path, &what);
    let got = contract::download(client, out, precision);
    assert_close(
        &what,
        &got,
        &problem.pre_activation.data,
        contract::tolerance(precision),
        problem.forward_scale(),
        rng.seed(),
    );
}
