//! Random problems for property tests: ranks, shapes (0, 1 and ragged sizes), batch and bias
//! broadcast patterns, memory layouts, dtypes, and whether Fusion is on.
//!
//! `FMAR_PROPTEST_CASES` sets how many cases a property test draws (CI keeps the default low);
//! `FMAR_PROPTEST_ALIGN` rounds the dims to a multiple ([`dim_multiple`]);
//! `FMAR_PROPTEST_RANGE` checks only some of the cases drawn ([`checked_range`]);
//! `FMAR_PROPTEST_TRACE` prints each checked case with its position ([`tracing`]).

use crate::data::Precision;
use proptest::prelude::*;

/// How an operand sits in device memory. Every layout shows the same logical values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Row-major.
    Contiguous,
    /// Stored with its last two dims swapped, read through swapped strides (`w.transpose()`).
    Transposed,
    /// A window of a larger tensor whose other elements are NaN: a read outside the window
    /// poisons the result.
    Sliced {
        /// Extra rows and columns around the window (each at least 1).
        pad: [usize; 2],
        /// Where the window starts inside the padded matrix.
        offset: [usize; 2],
    },
    /// Every other column of a tensor twice as wide (a stride of 2 on the last dim).
    Strided,
}

/// One fused problem to run.
#[derive(Debug, Clone)]
pub struct Case {
    /// Shape of `lhs`, `[B.., m, k]`.
    pub lhs: Vec<usize>,
    /// Shape of `rhs`, `[B.., k, n]`.
    pub rhs: Vec<usize>,
    /// Shape of `bias`: broadcasts to the output, any rank up to the output's.
    pub bias: Vec<usize>,
    /// Layouts of `lhs`, `rhs`, `bias`.
    pub layouts: [Layout; 3],
    /// Storage dtype of all three.
    pub precision: Precision,
    /// Whether to run through `Fusion<CubeBackend>` (lazy registration) or `CubeBackend` itself.
    pub fusion: bool,
    /// Which of `lhs`, `rhs`, `bias` require a gradient.
    pub tracked: [bool; 3],
}

impl Case {
    /// The output shape.
    pub fn output(&self) -> Vec<usize> {
        crate::reference::output_shape(&self.lhs, &self.rhs)
    }
}

/// How many cases a property test runs: `FMAR_PROPTEST_CASES`, or `default`.
pub fn case_count(default: u32) -> u32 {
    std::env::var("FMAR_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `FMAR_PROPTEST_DTYPES` (a comma-separated list such as `f32`): draw only those of
/// `precisions`; unset, all of them. A kernel path that takes one dtype, pinned, then meets
/// only problems it can take.
pub fn drawn_precisions(precisions: Vec<Precision>) -> Vec<Precision> {
    match std::env::var("FMAR_PROPTEST_DTYPES") {
        Ok(names) => precisions
            .into_iter()
            .filter(|precision| {
                let name = format!("{precision:?}").to_lowercase();
                names.split(',').any(|dtype| dtype.trim() == name)
            })
            .collect(),
        Err(_) => precisions,
    }
}

/// `FMAR_PROPTEST_ALIGN`: every matrix dim, and every padding and offset of a sliced layout, a
/// multiple of this many elements (default 1). A kernel that reads through the TMA engine needs
/// 16-byte row strides, which half-precision dims give at multiples of 8: `8` draws problems
/// that such a kernel runs rather than declines, still ragged against its tiles.
pub fn dim_multiple() -> usize {
    std::env::var("FMAR_PROPTEST_ALIGN")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&a| a > 0)
        .unwrap_or(1)
}

/// A dim size: mostly small and ragged, sometimes 0 or 1, sometimes past one 16-wide tile;
/// rounded up to a multiple of `align`.
fn dim(align: usize) -> impl Strategy<Value = usize> {
    prop_oneof![
        1 => Just(0usize),
        2 => Just(1usize),
        6 => 2usize..20,
        2 => 20usize..70,
    ]
    .prop_map(move |size| size.div_ceil(align) * align)
}

/// The reduction's length: mostly a [`dim`], sometimes deep enough (512 to 1,600) that a kernel
/// splits it across cubes (split-K takes at least 8 blocks of 64 half-precision or 32 f32
/// elements a slice), so that those paths meet the same random layouts, batches and biases.
fn depth(align: usize) -> impl Strategy<Value = usize> {
    prop_oneof![
        11 => dim(align),
        1 => (512usize..1600).prop_map(move |size| size.div_ceil(align) * align),
    ]
}

fn layout(align: usize) -> impl Strategy<Value = Layout> {
    prop_oneof![
        3 => Just(Layout::Contiguous),
        2 => Just(Layout::Transposed),
        1 => (1usize..3, 1usize..3, 0usize..2, 0usize..2).prop_map(move |(pr, pc, or, oc)| {
            Layout::Sliced {
                pad: [pr * align, pc * align],
                offset: [or.min(pr) * align, oc.min(pc) * align],
            }
        }),
        1 => Just(Layout::Strided),
    ]
}

/// Random cases in `precisions`, ranks 2 to 5, dims a multiple of [`dim_multiple`].
pub fn case(precisions: Vec<Precision>) -> impl Strategy<Value = Case> {
    let align = dim_multiple();
    let batch = prop::collection::vec((1usize..4, 0usize..3), 0..4);
    (
        batch,
        dim(align),
        depth(align),
        dim(align),
        prop::collection::vec(any::<bool>(), 5),
        0usize..6,
        [layout(align), layout(align), layout(align)],
        prop::sample::select(precisions),
        any::<bool>(),
        [any::<bool>(), any::<bool>(), any::<bool>()],
    )
        .prop_map(
            |(batch, m, k, n, bias_keep, bias_drop, layouts, precision, fusion, tracked)| {
                let (mut lhs, mut rhs) = (Vec::new(), Vec::new());
                for (size, pattern) in batch {
                    let (l, r) = match pattern {
                        0 => (size, size),
                        1 => (1, size),
                        _ => (size, 1),
                    };
                    lhs.push(l);
                    rhs.push(r);
                }
                lhs.extend([m, k]);
                rhs.extend([k, n]);
                let out = crate::reference::output_shape(&lhs, &rhs);
                // A suffix of the output's dims, each kept or set to 1: `[n]`, `[1, n]`,
                // `[m, 1]`, `[b, 1, n]`, the full shape, ...
                let drop = bias_drop.min(out.len() - 1);
                let bias = out[drop..]
                    .iter()
                    .zip(&bias_keep)
                    .map(|(&size, &keep)| if keep { size } else { 1 })
                    .collect();
                Case {
                    lhs,
                    rhs,
                    bias,
                    layouts,
                    precision,
                    fusion,
                    tracked,
                }
            },
        )
}

/// `FMAR_PROPTEST_RANGE=a..b`: check only the cases drawn at positions `a` to `b - 1`
/// (counting from 0), drawing and skipping the others. With `PROPTEST_RNG_SEED` fixing the
/// sequence of cases, this cuts a run down to the cases before a failure that depends on them.
/// Unset: every case.
///
/// # Panics
///
/// When the variable is set but is not `a..b` with `a <= b`.
pub fn checked_range() -> Option<std::ops::Range<usize>> {
    let value = std::env::var("FMAR_PROPTEST_RANGE").ok()?;
    Some(
        parse_range(&value).unwrap_or_else(|| {
            panic!("FMAR_PROPTEST_RANGE must be `a..b` with a <= b, not {value:?}")
        }),
    )
}

/// `FMAR_PROPTEST_TRACE` set: [`for_random_cases`] prints each case it checks with its position
/// in the sequence (what [`checked_range`] counts), and a check may print what it draws for the
/// case (the property test prints its data seed), so a failure that depends on the cases before
/// it can be replayed.
pub fn tracing() -> bool {
    std::env::var_os("FMAR_PROPTEST_TRACE").is_some()
}

fn parse_range(value: &str) -> Option<std::ops::Range<usize>> {
    let (start, end) = value.trim().split_once("..")?;
    let (start, end) = (start.parse().ok()?, end.parse().ok()?);
    (start <= end).then_some(start..end)
}

/// Runs `check` on [`case_count`]`(default)` random cases drawn from [`case`]`(precisions)`
/// (those in [`checked_range`] when it is set). A panic inside `check` fails the run; proptest
/// shrinks the case and reports the smallest one.
pub fn for_random_cases(default: u32, precisions: Vec<Precision>, check: impl Fn(&Case)) {
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases: case_count(default),
        failure_persistence: None,
        ..Default::default()
    });
    let range = checked_range();
    let trace = tracing();
    let drawn = std::cell::Cell::new(0usize);
    if let Err(error) = runner.run(&case(precisions), |case| {
        let position = drawn.replace(drawn.get() + 1);
        if range.as_ref().is_none_or(|range| range.contains(&position)) {
            if trace {
                eprintln!("CASE #{position} {case:?}");
            }
            check(&case);
        }
        Ok(())
    }) {
        panic!("{error}");
    }
}

#[cfg(test)]
mod tests {
    use super::parse_range;

    #[test]
    fn a_checked_range_is_a_dotted_pair_in_order() {
        assert_eq!(parse_range("3..5"), Some(3..5));
        assert_eq!(parse_range(" 0..0 "), Some(0..0));
        assert_eq!(parse_range("5..3"), None);
        assert_eq!(parse_range("3-5"), None);
        assert_eq!(parse_range("a..5"), None);
    }
}
