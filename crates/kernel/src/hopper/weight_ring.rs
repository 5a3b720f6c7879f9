//! The weight ring: a producer unit streams boxes of an N-major f32 weight (`[32 k][32
//! columns]`, the TMA engine's 128-byte swizzle: 16-byte group `c` of line `k` at group
//! `c ^ (k % 8)`) beside the rows of `lhs` at the same 32 `k` into a ring of shared-memory
//! stages, each with a `full` and an `empty` mbarrier ([`fill_weight_ring`]); consumers take
//! the stages in turn. The few-row products' consumers sum them with f32 FMAs
//! ([`add_ring_stages`]), the transposed product's with TF32 MMAs. And the split of `k` that
//! fills the device with such cubes in one round ([`stage_slice_k`]).
//!
//! A unit of [`add_ring_stages`] computes one column: a warp reads one box line a `k`, its 32
//! words a permutation of 32 consecutive ones (no bank conflict), and four `k` of a row of
//! `lhs` in one 16-byte load, the same address across the cube (a broadcast).

use crate::contract::Dims;
use crate::hopper::fold::rows_within;
use crate::hopper::layout::f32_weight_maps;
use crate::hopper::mbarrier::{BARRIER_BYTES, arrive, arrive_expecting, next_stage, wait_barrier};
use crate::hopper::tma::load_3d;
use crate::problem::Problem;
use cubecl::prelude::*;

/// `k` per stage of `lhs` in shared memory: one 128-byte swizzle line of f32, four `k8` MMAs.
pub(crate) const CHUNK_K: usize = 32;

/// Weight columns in one box: one 128-byte swizzle line of f32.
pub(crate) const BOX_COLUMNS: usize = 32;

/// Bytes of one weight box: [`CHUNK_K`] lines of `k`, [`BOX_COLUMNS`] f32 columns each.
pub(crate) const BOX_BYTES: usize = CHUNK_K * BOX_COLUMNS * 4;

/// Bytes of a stage's `lhs` at `rows` rows: whole 1024-byte swizzle atoms (8 lines of 128
/// bytes), so that each stage's box starts on one.
pub(crate) const fn lhs_stage_bytes(rows: usize) -> usize {
    let lines = if rows < 8 { 8 } else { rows };
    lines * CHUNK_K * 4
}

/// The producer unit of a ring whose stages hold `boxes` boxes of the weight (`[32 k][32
/// columns]` from column `col0`, [`BOX_BYTES`] apart from `weight_ring`) beside `lhs`'s rows at
/// the stage's 32 `k` (a `[rows][32 k]` box from row `row0`, `rows_stage_bytes` apart from
/// `rows_ring`, of which the copy fills `rows_copy_bytes`): for each of `chunks` stages from
/// `k_first`, it waits for the consumers to hand the stage back (`empty`), has the TMA engine
/// copy the boxes and the rows, and arrives on the stage's `full` barrier expecting their
/// bytes. Shared by the transposed product and [`few_rows_tma`](super::few_rows_tma).
#[cube]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fill_weight_ring(
    lhs: &TensorMap<f32, Tiled>,
    rhs: &TensorMap<f32, Tiled>,
    weight_ring: u32,
    rows_ring: u32,
    full: u32,
    empty: u32,
    col0: usize,
    row0: usize,
    k_first: usize,
    chunks: usize,
    batch: usize,
    #[comptime] boxes: usize,
    #[comptime] stages: usize,
    #[comptime] rows_stage_bytes: u32,
    #[comptime] rows_copy_bytes: u32,
    #[comptime] lhs_batched: bool,
    #[comptime] rhs_batched: bool,
) {
    let weight_stage_bytes = comptime![(boxes * BOX_BYTES) as u32];
    // A broadcast operand's map has one batch: coordinate 0.
    let mut lhs_batch = 0i32;
    let mut rhs_batch = 0i32;
    if comptime![lhs_batched] {
        lhs_batch = batch as i32;
    }
    if comptime![rhs_batched] {
        rhs_batch = batch as i32;
    }
    let mut stage = 0u32;
    let mut phase = 0u32;
    for c in 0..chunks {
        let k0 = (k_first + c * CHUNK_K) as i32;
        wait_barrier(empty + stage * BARRIER_BYTES, phase ^ 1);
        let barrier = full + stage * BARRIER_BYTES;
        let weight_at = weight_ring + stage * weight_stage_bytes;
        #[unroll]
        for p in 0..boxes {
            let col = (col0 + comptime![BOX_COLUMNS * p]) as i32;
            load_3d::<f32>(
                rhs,
                weight_at + comptime![(p * BOX_BYTES) as u32],
                barrier,
                rhs_batch,
                k0,
                col,
            );
        }
        load_3d::<f32>(
            lhs,
            rows_ring + stage * rows_stage_bytes,
            barrier,
            lhs_batch,
            row0 as i32,
            k0,
        );
        arrive_expecting(barrier, comptime![weight_stage_bytes + rows_copy_bytes]);
        (stage, phase) = next_stage(stage, phase, stages);
    }
}

/// Consumer unit `unit`'s sums, into `acc` (one per row, zeroed here), over `chunks` stages of
/// a ring whose stages hold `boxes` boxes of the weight (`weight_ring`, [`BOX_BYTES`] each, the
/// unit's column `unit` of their `32 boxes` columns) beside `lhs`'s rows (`rows_ring`, in
/// stages of [`lhs_stage_bytes`]): for each stage it waits for the producer's copies (`full`),
/// adds its part of the stage's 32 `k`, and hands the stage back (`empty`). The stage's `k` are
/// split into `parts` parts (1, 2 or 4), `part` this unit's: the units of a column then sum
/// the parts.
#[cube]
#[allow(clippy::too_many_arguments)]
pub(crate) fn add_ring_stages(
    acc: &mut Array<f32>,
    weight_ring: &[f32],
    rows_ring: &[Vector<f32, Const<4>>],
    full: u32,
    empty: u32,
    unit: usize,
    part: usize,
    chunks: usize,
    #[comptime] rows: usize,
    #[comptime] boxes: usize,
    #[comptime] stages: usize,
    #[comptime] parts: usize,
) {
    // A part is `groups` groups of four `k`; whole pairs of groups, so that a `k`'s line is
    // at the same swizzle phase (`k % 8`) in every part.
    let groups = comptime![CHUNK_K / 4 / parts];
    // This unit's column: box `unit / 32`, 16-byte group `column / 4` of its lines (at
    // `group ^ (k % 8)`), word `column % 4` of the group.
    let column = unit % BOX_COLUMNS;
    let group = column / 4;
    let mut box_at = (unit / BOX_COLUMNS) * comptime![BOX_BYTES / 4] + column % 4;
    let mut first_group = 0usize;
    if comptime![parts > 1] {
        first_group = part * groups;
        box_at += first_group * comptime![4 * BOX_COLUMNS];
    }
    #[unroll]
    for r in 0..rows {
        acc[r] = 0.0;
    }
    let mut w = Array::<f32>::new(4usize);
    let mut stage = 0u32;
    let mut phase = 0u32;
    for _ in 0..chunks {
        let offset = stage * BARRIER_BYTES;
        wait_barrier(full + offset, phase);
        let w_at = stage as usize * comptime![boxes * BOX_BYTES / 4] + box_at;
        let l_at = stage as usize * comptime![lhs_stage_bytes(rows) / 16];
        #[unroll]
        for g in 0..groups {
            #[unroll]
            for e in 0..4usize {
                let kk = comptime![4 * g + e];
                w[e] = weight_ring
                    [w_at + comptime![kk * BOX_COLUMNS] + (group ^ comptime![kk % 8]) * 4];
            }
            #[unroll]
            for r in 0..rows {
                // Four `k` of row `r`: group `g` of its line, at `g ^ (r % 8)`.
                let mut at = l_at + comptime![r * 8 + (g ^ (r % 8))];
                if comptime![parts > 1] {
                    at = l_at + comptime![r * 8] + ((first_group + g) ^ comptime![r % 8]);
                }
                let x = rows_ring[at];
                #[unroll]
                for e in 0..4usize {
                    acc[r] += x.extract(e) * w[e];
                }
            }
        }
        arrive(empty + offset);
        (stage, phase) = next_stage(stage, phase, stages);
    }
}

/// Depth of one slice of `k` for cubes of `columns` columns: a whole number of stages
/// ([`CHUNK_K`]), `k` split so that the grid has at most `resident` cubes (as many as fit the
/// device at once). At most, not about: the cubes run in rounds of as many as fit at once, and
/// one slice more than fits starts a round that leaves most multiprocessors idle (at
/// `1 x 128 x 4096 x 4096`, 5 slices of 64 column blocks would be 320 cubes, 1.2 rounds of
/// 264, where 4 slices are one).
pub(crate) fn stage_slice_k(dims: &Dims, columns: usize, resident: usize) -> usize {
    let blocks = dims.n.div_ceil(columns) * dims.batch;
    let chunks = dims.k.div_ceil(CHUNK_K);
    let wanted = (resident / blocks).clamp(1, chunks);
    // Never more than the grid's y allows.
    let per_slice = chunks
        .div_ceil(wanted)
        .max(chunks.div_ceil(u16::MAX as usize));
    per_slice * CHUNK_K
}

/// The row counts the FMA consumers ([`add_ring_stages`]) are compiled for: a problem takes the
/// smallest that holds its rows.
pub(crate) const FMA_ROWS: [usize; 2] = [4, 8];
/// The most rows the few-row products fed by this ring take: where the weight's bytes set the
/// time.
pub(crate) const MAX_FMA_ROWS: usize = FMA_ROWS[FMA_ROWS.len() - 1];

/// The row count compiled for `m` rows (at most [`MAX_FMA_ROWS`]).
pub(crate) fn fma_rows(m: usize) -> usize {
    FMA_ROWS
        .into_iter()
        .find(|&rows| m <= rows)
        .expect("at most the largest row count")
}

/// Why the few-row products fed by this ring cannot run `problem`, if they cannot: not an f32
/// product with an N-major weight, more than [`MAX_FMA_ROWS`] rows, the TMA engine unable to
/// read both operands, or more batches than the grid's z.
pub(crate) fn fma_unavailability(problem: &Problem) -> Option<String> {
    if let Some(reason) = problem.f32_weight_unavailability() {
        return Some(reason);
    }
    let Some((ops, dims)) = rows_within(&problem.ops, &problem.dims, MAX_FMA_ROWS) else {
        return Some(format!("{} rows (at most {MAX_FMA_ROWS})", problem.dims.m));
    };
    if f32_weight_maps(&ops).is_none() {
        return Some("the TMA engine cannot read `lhs` K-major and `rhs` N-major".into());
    }
    (dims.batch > u16::MAX as usize).then(|| {
        format!(
            "{} batches (at most {} along the grid's z)",
            dims.batch,
            u16::MAX
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bank argument of the module doc: a warp's words of one line of a box (any `k`) are
    /// 32 distinct banks.
    #[test]
    fn a_warps_weight_loads_hit_every_bank_once() {
        for k in 0..CHUNK_K {
            let mut banks = [0usize; 32];
            for lane in 0..32usize {
                let word = k * BOX_COLUMNS + ((lane / 4) ^ (k % 8)) * 4 + lane % 4;
                banks[word % 32] += 1;
            }
            assert!(banks.iter().all(|&b| b == 1), "k {k}: {banks:?}");
        }
    }
}
