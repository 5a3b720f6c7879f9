//! [`few_rows`](super::few_rows)'s partial sums fed by the TMA engine, where both operands'
//! strides allow it (`lhs` K-major, the weight N-major, starts and strides 16-byte aligned).
//! The few-row kernel holds the weight's bytes in flight in its units' registers (eight 4-byte
//! loads a unit, 32 KiB a multiprocessor), which held it at 77% of DRAM bandwidth on an H100 at
//! `1 x 1 x 4096 x 4096`; here a producer unit keeps a ring of whole stages in flight (up to
//! 96 KiB a cube, two cubes a multiprocessor), and the consumers' FMAs read them from shared
//! memory. Measured on an H100 (`4096 x 4096` weight): 14% faster at 8 rows (0.0338 against
//! 0.0392 ms), alike at one row (76% of DRAM bandwidth: the bytes in flight were not what held
//! the one-row kernel there).
//!
//! A stage holds the weight's `[32 k][256 columns]` as eight boxes of `[32 k][32 columns]` (the
//! TMA engine's 128-byte swizzle: 16-byte group `c` of line `k` at group `c ^ (k % 8)`), and
//! `lhs`'s rows at the stage's 32 `k` (a box `[rows][32 k]`, the same swizzle). Unit `u`
//! computes column `u` of the cube's 256: a warp reads one box line a `k`, its 32 words a
//! permutation of 32 consecutive ones (no bank conflict), and four `k` of a row of `lhs` in one
//! 16-byte load, the same address across the cube (a broadcast).

use crate::hopper::few_rows::slice_bounds;
use crate::hopper::mbarrier::{BARRIER_BYTES, arrive, next_stage, ring_barriers, wait_barrier};
use crate::hopper::swapped::CHUNK_K;
use crate::hopper::swapped_tma::{BOX_BYTES, BOX_COLUMNS, fill_weight_ring};
use crate::hopper::wgmma::shared_address;
use cubecl::prelude::*;

/// Consumer units a cube, one output column each.
pub(crate) const UNITS: usize = 256;
/// Weight boxes a stage: [`UNITS`] columns.
const BOXES: usize = UNITS / BOX_COLUMNS;
/// Bytes of a stage's weight.
const WEIGHT_STAGE_BYTES: usize = BOXES * BOX_BYTES;
/// Stages of the ring: three of 33 KiB, so that two cubes share a multiprocessor.
pub(crate) const STAGES: usize = 3;
/// Cubes a multiprocessor holds (by shared memory), which the grid is sized to: one round.
pub(crate) const CUBES_PER_PROCESSOR: usize = 2;

/// Bytes of a stage's `lhs` at `rows` rows: whole 1024-byte swizzle atoms (8 lines of 128
/// bytes), so that each stage's box starts on one.
pub(crate) const fn lhs_stage_bytes(rows: usize) -> usize {
    let lines = if rows < 8 { 8 } else { rows };
    lines * CHUNK_K * 4
}

/// One slice of `k`'s partial sums for 256 weight columns of every row (cube `(x, y, z)`:
/// column block, slice, batch) into `partials`, `[slices, batch * m, n]`, as
/// [`few_rows_partials`](super::few_rows::few_rows_partials) writes them. `rhs` is the weight's
/// map (`[batch, k, n]`, box `[1, 32, 32]`), `lhs` the rows' (`[batch, m, k]`, box
/// `[1, rows, 32]`); past the edges the TMA engine reads zeros. `slice_k` is a multiple of 32.
#[cube(launch_unchecked, address_type = "dynamic")]
#[allow(clippy::too_many_arguments)]
pub(crate) fn few_rows_tma_partials(
    lhs: &TensorMap<f32, Tiled>,
    rhs: &TensorMap<f32, Tiled>,
    partials: &mut Tensor<f32>,
    m: u32,
    n: u32,
    k: u32,
    slice_k: u32,
    #[comptime] rows: usize,
    #[comptime] stages: usize,
    #[comptime] lhs_batched: bool,
    #[comptime] rhs_batched: bool,
) {
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let (lhs_bytes, lhs_copy_bytes) =
        comptime![(lhs_stage_bytes(rows) as u32, (rows * CHUNK_K * 4) as u32)];
    let col0 = CUBE_POS_X as usize * UNITS;
    let slice = CUBE_POS_Y as usize;
    let batch = CUBE_POS_Z as usize;
    let (k_first, k_end) = slice_bounds(slice, slice_k as usize, k);
    let chunks = (k_end - k_first).div_ceil(CHUNK_K);

    let smem_w =
        Shared::<[f32]>::new_aligned_slice(comptime![stages * WEIGHT_STAGE_BYTES / 4], 1024usize);
    let smem_l = Shared::<[Vector<f32, Const<4>>]>::new_aligned_slice(
        comptime![stages * lhs_stage_bytes(rows) / 16],
        1024usize,
    );
    // `full` of each stage (the producer's arrival and the bytes of its copies), then `empty`
    // of each stage (every consumer unit's arrival).
    let (full, empty) = ring_barriers(stages, comptime![UNITS as u32]);

    if UNIT_POS as usize == UNITS {
        fill_weight_ring(
            lhs,
            rhs,
            shared_address::<f32>(&smem_w),
            shared_address::<Vector<f32, Const<4>>>(&smem_l),
            full,
            empty,
            col0,
            0usize,
            k_first,
            chunks,
            batch,
            BOXES,
            stages,
            lhs_bytes,
            lhs_copy_bytes,
            lhs_batched,
            rhs_batched,
        );
    } else if (UNIT_POS as usize) < UNITS {
        let unit = UNIT_POS as usize;
        let mut acc = Array::<f32>::new(rows);
        add_ring_stages(
            &mut acc, &smem_w, &smem_l, full, empty, unit, 0usize, chunks, rows, BOXES, stages,
            1usize,
        );

        let col = col0 + unit;
        if col < n {
            let out_rows = partials.shape(1);
            #[unroll]
            for r in 0..rows {
                if r < m {
                    partials[(slice * out_rows + batch * m + r) * n + col] = acc[r];
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_cubes_share_a_multiprocessor() {
        for rows in [4, 8] {
            let ring = STAGES * (WEIGHT_STAGE_BYTES + lhs_stage_bytes(rows));
            assert!(
                CUBES_PER_PROCESSOR * (ring + 1024) <= 227 * 1024,
                "{rows} rows: {ring} bytes"
            );
        }
        assert_eq!(lhs_stage_bytes(4) % 1024, 0);
    }

    /// One round of cubes, two a multiprocessor, in whole stages: 16 column blocks at
    /// `4096 x 4096` on 132 multiprocessors, 16 slices of 8 stages (256 cubes of 264); at
    /// `8192 x 8192` 32 blocks, 8 slices of 32 stages; batched, the blocks of every batch.
    #[test]
    fn slices_fill_one_round_of_two_cubes_a_multiprocessor() {
        use crate::contract::Dims;
        use crate::hopper::swapped::stage_slice_k;
        let dims = |batch, m, k, n| Dims { m, n, k, batch };
        let resident = 132 * CUBES_PER_PROCESSOR;
        assert_eq!(stage_slice_k(&dims(1, 1, 4096, 4096), UNITS, resident), 256);
        assert_eq!(
            stage_slice_k(&dims(1, 1, 8192, 8192), UNITS, resident),
            1024
        );
        assert_eq!(
            stage_slice_k(&dims(4, 1, 4096, 4096), UNITS, resident),
            1024
        );
        // A ragged `k` and `n`: 34 blocks, 7 slices of 37 stages, the last one short.
        assert_eq!(
            stage_slice_k(&dims(2, 3, 8200, 4100), UNITS, resident),
            1184
        );
    }

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
