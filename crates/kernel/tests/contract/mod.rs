//! The launch contract's tests (the contract is written at the top of `fmar-kernel`'s
//! `src/lib.rs`), written against the launch under test rather than against `fmar_kernel`: as in
//! cubek-matmul's own test harness, the launch is a parameter, so every variant of every kernel
//! crate runs the same tests. Launches go through cubecl's wgpu runtime, with no Burn in between,
//! and results are compared with `fmar-tests`' f64 reference within its tolerances, on fresh
//! random data (a failure prints the seed; `FMAR_TEST_SEED` replays it).
//!
//! Each test runs the crate's `launch` (its own choice of variant, which must run every valid
//! problem) and `launch_variant` with each variant in turn (a variant may decline with an error
//! whose `is_variant_specific()` is true; another runs the problem).
//!
//! # What the harness needs from the crate under test
//!
//! It reaches that crate as `crate::kernel` and names only what the contract names:
//! [`Operands`] (public `lhs`, `rhs`, `bias`, `out` tensor bindings), [`LaunchError`] (with
//! `is_variant_specific()` and the contract's `Shape`, `OutOfBounds` and `UnsupportedDtype`
//! variants, each carrying the offending `operand`'s name where it has one) and
//! `broadcast_strides(shape, strides, target) -> Vec<usize>`, the contract's rule for a
//! broadcast operand's view, which the harness lays its operands out with as a caller does (a
//! replacement may re-export `fmar_kernel`'s). The harness does not take that rule on trust: the
//! f64 reference broadcasts by its own loops, so a wrong rule fails the broadcast tests. The two
//! launch functions and the variants are given to [`contract_tests!`]; a variant is any `Copy +
//! Display` value, so a crate with a single implementation exports a one-value `Variant`.
//!
//! # Running these tests on a replacement kernel crate
//!
//! With `cubecl` (feature `wgpu`) and `fmar-tests` as dev-dependencies, one file in the
//! replacement's `tests/` runs every test here:
//!
//! ```ignore
//! use my_kernel as kernel; // the harness reaches the crate under test as `crate::kernel`
//!
//! #[path = "../../fmar/crates/kernel/tests/contract/mod.rs"] // or a copy of this folder
//! mod contract;
//!
//! contract::contract_tests! {
//!     launch: kernel::launch,
//!     launch_variant: kernel::launch_variant,
//!     variants: &kernel::Variant::ALL,
//! }
//! ```
//!
//! `fmar-kernel`'s own `tests/against_f64.rs` is exactly that file, plus one test of the
//! tolerance itself (an f16-accumulating mutant kernel it must reject).

use crate::kernel::{LaunchError, Operands};
use cubecl::client::Client;
use cubecl::ir::{ElemType, FloatKind};
use cubecl::prelude::*;
use cubecl::server::Handle;
use fmar_tests::{
    HostTensor, Layout, Precision, Problem, Rng, assert_close, for_random_cases, layout, should_run,
};
use std::fmt::Display;

mod device;
pub mod non_finite;

pub use device::{
    binding, broadcast_binding, client, download, elem_type, one_at_a_time, supports, tolerance,
    upload,
};

/// The launch under test: the crate's two entry points and the variants to run.
pub struct Kernel<V: 'static> {
    /// `launch`: checks the contract, then runs the variant the crate picks.
    pub launch: fn(&Client, Operands, ElemType) -> Result<(), LaunchError>,
    /// `launch_variant`: checks the contract, then runs the given variant.
    pub launch_variant: fn(&Client, Operands, ElemType, V) -> Result<(), LaunchError>,
    /// Every variant each test runs, besides `launch`'s own pick.
    pub variants: &'static [V],
}

/// Expands to one `#[test]` per contract test, each running the given launch: see the module's
/// documentation. Invoked at the test crate's root, next to `mod contract;`.
macro_rules! contract_tests {
    (
        launch: $launch:expr,
        launch_variant: $launch_variant:expr,
        variants: $variants:expr $(,)?
    ) => {
        /// The crate under test, as the contract tests take it.
        pub fn kernel() -> $crate::contract::Kernel<impl Copy + std::fmt::Display> {
            $crate::contract::Kernel {
                launch: $launch,
                launch_variant: $launch_variant,
                variants: $variants,
            }
        }

        $crate::contract::contract_tests!(
            @tests $crate::contract =>
            f32_matches_f64_loop_on_ragged_shapes,
            broadcast_batch_on_either_side,
            rank_two_and_rank_four,
            transposed_rhs_is_read_through_its_strides,
            batch_beyond_one_grid_axis,
            output_wider_than_one_grid_axis_of_tiles,
            half_precisions_where_the_device_supports_them,
            f16_sums_in_f32_at_k_4096,
            contract_violations_are_errors_not_launches,
            empty_output_launches_nothing_and_succeeds,
            zero_inner_dim_gives_relu_of_bias,
            every_operand_may_be_transposed_sliced_or_strided,
            bias_broadcasts_from_any_lower_rank,
            random_cases_through_the_launch,
        );
        $crate::contract::contract_tests!(
            @tests $crate::contract::non_finite =>
            non_finite_values_follow_ieee_then_relu,
        );
    };
    // One `#[test]` per function of the harness's module `$module`.
    (@tests $module:path => $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                use $module as harness;
                let _device = $crate::contract::one_at_a_time();
                harness::$name(&kernel());
            }
        )*
    };
}
pub(crate) use contract_tests;

/// One way into the crate under test.
#[derive(Debug, Clone, Copy)]
enum Entry<V> {
    /// `launch`, with the crate's own choice of variant.
    Launch,
    /// `launch_variant` with this variant.
    Variant(V),
}

impl<V: Display> Display for Entry<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Entry::Launch => f.write_str("launch"),
            Entry::Variant(variant) => write!(f, "variant {variant}"),
        }
    }
}

impl<V: Copy + Display> Kernel<V> {
    /// `launch`, then every variant.
    fn entries(&self) -> impl Iterator<Item = Entry<V>> + '_ {
        std::iter::once(Entry::Launch).chain(self.variants.iter().copied().map(Entry::Variant))
    }

    fn call(
        &self,
        entry: Entry<V>,
        client: &Client,
        operands: Operands,
        dtype: ElemType,
    ) -> Result<(), LaunchError> {
        match entry {
            Entry::Launch => (self.launch)(client, operands, dtype),
            Entry::Variant(variant) => (self.launch_variant)(client, operands, dtype, variant),
        }
    }
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
    // A buffer holds at least one element, so that an empty operand still binds.
    let values = if stored.data.is_empty() {
        vec![0.0]
    } else {
        stored.data
    };
    (
        client.create_from_slice(&precision.encode(&values)),
        strides,
    )
}

/// The output buffer's initial contents: NaN in every element, and one NaN element when the
/// output has none (a buffer binds only with an element), so that any element a launch does
/// not write reads as NaN and fails the comparison.
fn sentinel(out_len: usize) -> Vec<f64> {
    vec![f64::NAN; out_len.max(1)]
}

/// Launches `entry` on `problem`, each operand stored in its layout, into an output buffer
/// filled with [`sentinel`]: the whole buffer's bytes afterwards, or the launch's error.
fn launch_raw<V: Copy + Display>(
    kernel: &Kernel<V>,
    entry: Entry<V>,
    problem: &Problem,
    precision: Precision,
    layouts: [Layout; 3],
) -> Result<Vec<u8>, LaunchError> {
    let client = client();
    let out_shape = &problem.output.shape;
    let rank = out_shape.len();
    let (m, k, n) = (out_shape[rank - 2], problem.k(), out_shape[rank - 1]);
    let batch = &out_shape[..rank - 2];
    let target = |tail: [usize; 2]| -> Vec<usize> { batch.iter().copied().chain(tail).collect() };
    let view = |host: &HostTensor, layout: Layout, target: &[usize]| {
        let (handle, strides) = store(&client, host, layout, precision);
        broadcast_binding(&handle, &host.shape, &strides, target)
    };
    let out_len: usize = out_shape.iter().product();
    let out = client.create_from_slice(&precision.encode(&sentinel(out_len)));
    let operands = Operands {
        lhs: view(&problem.lhs, layouts[0], &target([m, k])),
        rhs: view(&problem.rhs, layouts[1], &target([k, n])),
        bias: view(&problem.bias, layouts[2], out_shape),
        out: binding(&out, out_shape, &layout::contiguous_strides(out_shape)),
    };
    kernel.call(entry, &client, operands, elem_type(precision))?;
    Ok(client.read_one(out).expect("readback").to_vec())
}

/// [`launch_raw`]'s output values, or `None` where this variant declines the problem (another
/// runs it). `launch` itself must run every valid problem, and no entry may refuse valid
/// operands for any other reason.
fn run<V: Copy + Display>(
    kernel: &Kernel<V>,
    entry: Entry<V>,
    problem: &Problem,
    precision: Precision,
    layouts: [Layout; 3],
) -> Option<Vec<f64>> {
    match launch_raw(kernel, entry, problem, precision, layouts) {
        Ok(bytes) => {
            let out_len = problem.output.data.len();
            Some(precision.decode(&bytes)[..out_len].to_vec())
        }
        Err(error) if error.is_variant_specific() && matches!(entry, Entry::Variant(_)) => {
            note_declined(&entry.to_string(), &error);
            None
        }
        Err(error) => panic!("valid operands refused by {entry}: {error}"),
    }
}

/// Variants that declined a problem, reported once each, so that a skipped variant is seen.
fn note_declined(entry: &str, error: &LaunchError) {
    static SEEN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if !seen.iter().any(|name| name == entry) {
        seen.push(entry.to_string());
        eprintln!("{entry} declined a problem (others cover it): {error}");
    }
}

fn check<V: Copy + Display>(
    kernel: &Kernel<V>,
    lhs: &[usize],
    rhs: &[usize],
    precision: Precision,
    layouts: [Layout; 3],
) {
    let mut rng = Rng::fresh();
    let bias_shape = fmar_tests::reference::output_shape(lhs, rhs);
    let problem = Problem::random(lhs, rhs, &bias_shape, &mut rng, precision);
    check_problem(kernel, &problem, precision, layouts, rng.seed());
}

/// Checks `launch` and every variant on `problem` against the f64 reference.
pub fn check_problem<V: Copy + Display>(
    kernel: &Kernel<V>,
    problem: &Problem,
    precision: Precision,
    layouts: [Layout; 3],
    seed: u64,
) {
    check_expected(
        kernel,
        problem,
        precision,
        layouts,
        &problem.output.data,
        problem.forward_scale(),
        seed,
    );
}

/// Checks `launch` and every variant on `problem` against `expected`.
fn check_expected<V: Copy + Display>(
    kernel: &Kernel<V>,
    problem: &Problem,
    precision: Precision,
    layouts: [Layout; 3],
    expected: &[f64],
    scale: f64,
    seed: u64,
) {
    for entry in kernel.entries() {
        let Some(actual) = run(kernel, entry, problem, precision, layouts) else {
            continue;
        };
        assert_close(
            &format!(
                "kernel {entry} {precision:?} lhs {:?} rhs {:?} bias {:?} {layouts:?}",
                problem.lhs.shape, problem.rhs.shape, problem.bias.shape
            ),
            &actual,
            expected,
            tolerance(precision),
            scale,
            seed,
        );
    }
}

const ROW_MAJOR: [Layout; 3] = [Layout::Contiguous; 3];

/// Small shapes (b x m x k x n), ragged on purpose: edges in every dim, `k = 1`, one element.
const SHAPES: &[(usize, usize, usize, usize)] = &[
    (1, 17, 33, 5),
    (3, 65, 7, 129),
    (2, 16, 1, 16),
    (1, 1, 1, 1),
    (4, 31, 64, 47),
    (2, 128, 256, 64),
];

pub fn f32_matches_f64_loop_on_ragged_shapes<V: Copy + Display>(kernel: &Kernel<V>) {
    for &(b, m, k, n) in SHAPES {
        check(kernel, &[b, m, k], &[b, k, n], Precision::F32, ROW_MAJOR);
    }
}

pub fn broadcast_batch_on_either_side<V: Copy + Display>(kernel: &Kernel<V>) {
    check(kernel, &[1, 19, 23], &[5, 23, 9], Precision::F32, ROW_MAJOR);
    check(kernel, &[5, 19, 23], &[1, 23, 9], Precision::F32, ROW_MAJOR);
    check(
        kernel,
        &[2, 1, 7, 5],
        &[1, 3, 5, 3],
        Precision::F32,
        ROW_MAJOR,
    );
}

pub fn rank_two_and_rank_four<V: Copy + Display>(kernel: &Kernel<V>) {
    check(kernel, &[33, 17], &[17, 65], Precision::F32, ROW_MAJOR);
    check(
        kernel,
        &[2, 3, 9, 11],
        &[2, 3, 11, 4],
        Precision::F32,
        ROW_MAJOR,
    );
}

pub fn transposed_rhs_is_read_through_its_strides<V: Copy + Display>(kernel: &Kernel<V>) {
    check(
        kernel,
        &[3, 21, 37],
        &[3, 37, 13],
        Precision::F32,
        [Layout::Contiguous, Layout::Transposed, Layout::Contiguous],
    );
}

/// More tiles than one grid axis holds (65,535 on CUDA and wgpu): a launch that puts every
/// tile on one axis fails here.
pub fn batch_beyond_one_grid_axis<V: Copy + Display>(kernel: &Kernel<V>) {
    check(
        kernel,
        &[70_000, 1, 3],
        &[70_000, 3, 1],
        Precision::F32,
        ROW_MAJOR,
    );
}

pub fn output_wider_than_one_grid_axis_of_tiles<V: Copy + Display>(kernel: &Kernel<V>) {
    let n = 16 * 65_536 + 3;
    check(kernel, &[1, 1, 2], &[1, 2, n], Precision::F32, ROW_MAJOR);
}

pub fn half_precisions_where_the_device_supports_them<V: Copy + Display>(kernel: &Kernel<V>) {
    for precision in [Precision::F16, Precision::BF16] {
        if !should_run(precision, supports(precision)) {
            continue;
        }
        for &(b, m, k, n) in &SHAPES[..3] {
            check(kernel, &[b, m, k], &[b, k, n], precision, ROW_MAJOR);
        }
    }
}

/// `[16, 4096] @ [4096, 16] + [16, 16]` in f16, inputs in [0, 1) and bias in [-1, 1): sums of
/// about 1024, where an f16 running sum falls about 9% short (see `fmar-tests`' tolerance).
pub fn f16_problem_at_k_4096(rng: &mut Rng) -> Problem {
    let (m, k, n) = (16, 4096, 16);
    Problem::new(
        HostTensor::new(vec![m, k], rng.values(m * k, 0.0, 1.0, Precision::F16)),
        HostTensor::new(vec![k, n], rng.values(k * n, 0.0, 1.0, Precision::F16)),
        HostTensor::new(vec![m, n], rng.values(m * n, -1.0, 1.0, Precision::F16)),
    )
}

/// The contract's sum is accumulated in f32 whatever the storage dtype: in f16 at k = 4096 the
/// f16 tolerance, which an f16 accumulator fails, holds.
pub fn f16_sums_in_f32_at_k_4096<V: Copy + Display>(kernel: &Kernel<V>) {
    if !should_run(Precision::F16, supports(Precision::F16)) {
        return;
    }
    let mut rng = Rng::fresh();
    let problem = f16_problem_at_k_4096(&mut rng);
    check_problem(kernel, &problem, Precision::F16, ROW_MAJOR, rng.seed());
}

/// Operands that break the contract are refused with the error that names the breach, by
/// `launch` and by every variant alike, before anything is launched.
pub fn contract_violations_are_errors_not_launches<V: Copy + Display>(kernel: &Kernel<V>) {
    let client = client();
    let handle = client.create_from_slice(&Precision::F32.encode(&[0.0; 64]));
    let ok = |shape: &[usize]| binding(&handle, shape, &layout::contiguous_strides(shape));
    let operands = |rhs: TensorBinding| Operands {
        lhs: ok(&[2, 3]),
        rhs,
        bias: ok(&[2, 2]),
        out: ok(&[2, 2]),
    };
    let f32 = ElemType::Float(FloatKind::F32);
    type Expected = fn(&LaunchError) -> bool;
    let violations: [(&str, Operands, ElemType, Expected); 3] = [
        (
            "k is 3 in lhs but 4 in rhs",
            operands(ok(&[4, 2])),
            f32,
            |e| matches!(e, LaunchError::Shape { operand: "rhs", .. }),
        ),
        (
            "rhs's strides reach past its buffer",
            operands(binding(&handle, &[3, 2], &[64, 1])),
            f32,
            |e| matches!(e, LaunchError::OutOfBounds { operand: "rhs", .. }),
        ),
        (
            "f64 is no contract dtype",
            operands(ok(&[3, 2])),
            ElemType::Float(FloatKind::F64),
            |e| matches!(e, LaunchError::UnsupportedDtype { .. }),
        ),
    ];
    for entry in kernel.entries() {
        for (what, operands, dtype, expected) in &violations {
            let result = kernel.call(entry, &client, operands.clone(), *dtype);
            assert!(
                result.as_ref().is_err_and(expected),
                "{entry}, {what}: {result:?}"
            );
        }
    }
}

/// An output with no elements is valid for every variant (no variant may decline it) and
/// launches nothing: the output buffer's one sentinel element keeps its bytes.
pub fn empty_output_launches_nothing_and_succeeds<V: Copy + Display>(kernel: &Kernel<V>) {
    let problem = Problem::new(
        HostTensor::new(vec![2, 0, 3], vec![]),
        HostTensor::new(vec![2, 3, 4], vec![0.5; 24]),
        HostTensor::new(vec![2, 0, 4], vec![]),
    );
    let untouched = Precision::F32.encode(&sentinel(0));
    for entry in kernel.entries() {
        let bytes = launch_raw(kernel, entry, &problem, Precision::F32, ROW_MAJOR)
            .unwrap_or_else(|error| panic!("{entry} refused an empty output: {error}"));
        assert_eq!(
            bytes,
            untouched,
            "{entry} wrote to the output buffer of an empty output: it holds {:?}",
            Precision::F32.decode(&bytes)
        );
    }
}

pub fn zero_inner_dim_gives_relu_of_bias<V: Copy + Display>(kernel: &Kernel<V>) {
    let mut rng = Rng::fresh();
    let bias = HostTensor::random(&[2, 3, 4], &mut rng, Precision::F32);
    let problem = Problem::new(
        HostTensor::new(vec![2, 3, 0], vec![]),
        HostTensor::new(vec![2, 0, 4], vec![]),
        bias.clone(),
    );
    let expected: Vec<f64> = bias.data.iter().map(|&x| x.max(0.0)).collect();
    check_expected(
        kernel,
        &problem,
        Precision::F32,
        ROW_MAJOR,
        &expected,
        0.0,
        rng.seed(),
    );
}

pub fn every_operand_may_be_transposed_sliced_or_strided<V: Copy + Display>(kernel: &Kernel<V>) {
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
        check(kernel, &[2, 19, 21], &[1, 21, 11], Precision::F32, layouts);
    }
}

pub fn bias_broadcasts_from_any_lower_rank<V: Copy + Display>(kernel: &Kernel<V>) {
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
        check_problem(kernel, &problem, Precision::F32, ROW_MAJOR, rng.seed());
    }
}

/// The same random cases as the Burn-level harness (ranks, zero and ragged sizes, batch and
/// bias broadcasts, layouts, dtypes), straight through the launch.
pub fn random_cases_through_the_launch<V: Copy + Display>(kernel: &Kernel<V>) {
    let precisions: Vec<Precision> = Precision::ALL
        .into_iter()
        .filter(|&p| supports(p))
        .collect();
    for_random_cases(24, precisions, |case| {
        let mut rng = Rng::fresh();
        let problem = Problem::random(&case.lhs, &case.rhs, &case.bias, &mut rng, case.precision);
        check_problem(kernel, &problem, case.precision, case.layouts, rng.seed());
    });
}
