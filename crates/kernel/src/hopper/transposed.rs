//! The transposed product's shared pieces: `outᵀ = rhsᵀ · lhsᵀ`, an N-major f32 weight as the
//! TF32 MMAs' register operand `A` (an `A` in registers may come from any layout, where TF32's
//! shared-memory operands must be K-major) and `lhs`'s rows as `B`. Where a unit of a
//! warpgroup finds its `A` fragments in the weight ring's boxes ([`weight_fragment`]), and how
//! it stores its share of a slice's sums ([`store_partials`]).
//!
//! A unit holds MMA rows `16 w + g` and `+ 8` at `k` `q` and `q + 4` (`w` its warp, lane
//! `4 g + q`); they are two adjacent weight columns, one 8-byte load a line. The columns of a
//! warp are groups `2 (g / 2) + w % 2` of its box: over the four lines its quads read, the
//! swizzle then spreads the warp's 256 bytes evenly over the 32 banks (two wavefronts, none
//! wasted), where contiguous columns would put all four lines on the same 16 banks.

use crate::contract::Dims;
use crate::hopper::fold::dims_within;
use crate::hopper::weight_ring::{BOX_BYTES, BOX_COLUMNS, stage_slice_k};
use crate::problem::Problem;
use cubecl::prelude::*;

/// Output columns per warpgroup: the MMA's `m`.
pub(crate) const COLUMNS: usize = 64;

/// The row counts compiled (the MMA's `n`): a problem takes the smallest that holds its `m`.
pub(crate) const ROWS: [usize; 4] = [16, 32, 64, 128];
/// The most rows.
pub(crate) const MAX_ROWS: usize = ROWS[ROWS.len() - 1];
/// Cubes a multiprocessor is given work for, for cubes of `warpgroups` warpgroups, which sets
/// how finely `k` is split. Two for cubes of one warpgroup (every row count on the TMA-fed
/// path, up to 32 rows fed by `cp.async`): as many as fit at once (their rings take 100 KiB of
/// shared memory), so that the cubes run in one round. Up to 32 rows that beat a finer split:
/// 0.0352 against 0.0399 ms at `1 x 32 x 4096 x 4096`, 0.105 against 0.111 at
/// `1 x 16 x 4096 x 16384` (H200). From 64 rows it beat four (two rounds, twice the partial
/// sums) at every shape measured on an H100: 0.0406 against 0.0465 ms at
/// `1 x 128 x 4096 x 4096`, 0.0360 against 0.0392 at `1 x 64 x 4096 x 4096`, 0.1132 against
/// 0.1190 at `1 x 128 x 8192 x 8192`, 0.0273 against 0.0310 at `4 x 100 x 1000 x 2056`. Four
/// for cubes of two warpgroups (64 rows and more fed by `cp.async`), where fewer slices won on
/// some shapes and lost on others.
const fn cubes_per_processor(warpgroups: usize) -> usize {
    if warpgroups == 1 { 2 } else { 4 }
}

/// The row count compiled for `m` rows: the smallest that holds them.
pub(crate) fn rows_for(m: usize) -> usize {
    ROWS.into_iter()
        .find(|&rows| m <= rows)
        .expect("at most the largest row count")
}

/// Depth of one slice of `k` for cubes of `warpgroups` warpgroups ([`stage_slice_k`], at most
/// [`cubes_per_processor()`] cubes a multiprocessor).
pub(crate) fn slice_k(dims: &Dims, processors: usize, warpgroups: usize) -> usize {
    stage_slice_k(
        dims,
        COLUMNS * warpgroups,
        processors * cubes_per_processor(warpgroups),
    )
}

/// Why the split-K transposed products ([`swapped`](super::swapped),
/// [`swapped_tma`](super::swapped_tma)) cannot run `problem`, if they cannot: not an f32 product
/// with an N-major weight, TF32 rounding disallowed, more than [`MAX_ROWS`] rows, or more
/// batches than the grid's z.
pub(crate) fn unavailability(problem: &Problem) -> Option<String> {
    if let Some(reason) = problem.f32_weight_unavailability() {
        return Some(reason);
    }
    if !problem.allow_tf32 {
        return Some("TF32 rounding disallowed (cubek's `allow_tf32` is off)".into());
    }
    match dims_within(&problem.ops, &problem.dims, MAX_ROWS) {
        Some(dims) if dims.batch > u16::MAX as usize => Some(format!(
            "{} batches (at most {} along the grid's z)",
            dims.batch,
            u16::MAX
        )),
        Some(_) => None,
        None => Some(format!("{} rows (at most {MAX_ROWS})", problem.dims.m)),
    }
}

/// Where consumer unit `unit` (of the cube's warpgroups, 128 each) finds its `A` fragments: its
/// weight columns (the first of its two, from the cube's first) and, in pairs of f32 from a
/// stage's first weight box, its pairs on lines `q` and `q + 4` of the first `k8` step (each
/// step's 128 pairs further). Warpgroup `w` takes boxes `2 w` and `2 w + 1`; a unit of warp
/// `v`, lane `4 g + q`, takes box `2 w + v / 2`, 16-byte group `2 (g / 2) + v % 2` of its lines
/// (at its swizzled place on each line), the group's first or second pair.
#[cube]
pub(crate) fn weight_fragment(unit: usize) -> (usize, usize, usize) {
    let warpgroup = unit / 128;
    let warp = unit / 32 % 4;
    let lane = unit % 32;
    let (g, q) = (lane / 4, lane % 4);
    let a_box = 2 * warpgroup + warp / 2;
    let group = 2 * (g / 2) + warp % 2;
    let within = 2 * (g % 2);
    let box_at = a_box * comptime![BOX_BYTES / 4];
    let first = (box_at + q * BOX_COLUMNS + (group ^ q) * 4 + within) / 2;
    let second = (box_at + (q + 4) * BOX_COLUMNS + (group ^ (q + 4)) * 4 + within) / 2;
    (BOX_COLUMNS * a_box + 4 * group + within, first, second)
}

/// Stores a unit's share of one slice's sums (`acc`, the MMA's result for the unit of lane
/// `4 g + quad`) into `partials` (`[slices, batch * m, n]`): the result's column
/// `8 j + 2 quad (+ 1)` is row `r` of the output, and its rows `g` and `g + 8` are the weight's
/// columns `col` and `col + 1`. Rows past `m` and columns past `n` are not stored.
#[cube]
#[allow(clippy::too_many_arguments)]
pub(crate) fn store_partials<R: Size>(
    partials: &mut Tensor<f32>,
    acc: Vector<f32, R>,
    slice: usize,
    batch: usize,
    col: usize,
    quad: usize,
    m: usize,
    n: usize,
    #[comptime] rows: usize,
) {
    let base = slice * partials.shape(1) + batch * m;
    #[unroll]
    for j in 0..comptime![rows / 8] {
        #[unroll]
        for dr in 0..2usize {
            let r = 8 * j + 2 * quad + dr;
            if r < m {
                let at = (base + r) * n + col;
                if col < n {
                    partials[at] = acc.extract(comptime![4 * j + dr]);
                }
                if col + 1 < n {
                    partials[at + 1] = acc.extract(comptime![4 * j + 2 + dr]);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hopper::weight_ring::CHUNK_K;

    #[test]
    fn slices_fill_the_processors_in_whole_stages() {
        let dims = |batch, m, k, n| Dims { m, n, k, batch };
        // 64 column blocks on 132 multiprocessors, at most two cubes each: 4 slices of 32
        // stages (256 cubes; 5 slices would be 320, more than 264).
        let depth = slice_k(&dims(1, 16, 4096, 4096), 132, 1);
        assert_eq!(depth % CHUNK_K, 0);
        assert_eq!((depth, 4096usize.div_ceil(depth)), (1024, 4));
        // 32 column blocks of two warpgroups at 128 rows, at most four cubes each: 16 slices of
        // 8 stages; 64 blocks of one warpgroup, at most two cubes each: 4 slices of 32 stages.
        let depth = slice_k(&dims(1, 128, 4096, 4096), 132, 2);
        assert_eq!((depth, 4096usize.div_ceil(depth)), (256, 16));
        let depth = slice_k(&dims(1, 128, 4096, 4096), 132, 1);
        assert_eq!((depth, 4096usize.div_ceil(depth)), (1024, 4));
        // More column blocks than multiprocessors can take twice: one slice.
        assert_eq!(slice_k(&dims(1, 16, 4096, 32768), 132, 1), 4096);
        // 128 blocks: `k` of 128 in four slices of one stage.
        assert_eq!(slice_k(&dims(64, 128, 128, 128), 132, 2), 32);
        // The grid's y holds at most 65,535 slices.
        let deep = dims(1, 16, 70_000 * CHUNK_K, 8192);
        assert!(deep.k.div_ceil(slice_k(&deep, 132, 1)) <= u16::MAX as usize);
        // A short `k` is one stage.
        assert_eq!(slice_k(&dims(1, 16, 5, 64), 132, 1), 32);
    }

    /// The bank argument of the module doc: a warp's 8-byte loads of one `k8` step's first
    /// line (`q` = 0..3 over its quads) cover every 4-byte bank exactly twice.
    #[test]
    fn a_warps_fragment_loads_spread_over_every_bank() {
        for warp in 0..4usize {
            let mut banks = [0usize; 32];
            for lane in 0..32usize {
                let (g, q) = (lane / 4, lane % 4);
                let group = 2 * (g / 2) + warp % 2;
                let word = q * 32 + (group ^ q) * 4 + 2 * (g % 2);
                banks[word % 32] += 1;
                banks[(word + 1) % 32] += 1;
            }
            assert!(banks.iter().all(|&b| b == 2), "warp {warp}: {banks:?}");
        }
    }
}
