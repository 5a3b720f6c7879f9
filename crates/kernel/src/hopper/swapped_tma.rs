//! [`swapped`](super::swapped)'s transposed product (`outᵀ = rhsᵀ · lhsᵀ`, the N-major f32
//! weight as the TF32 MMAs' register operand `A`) fed by the TMA engine, where both operands'
//! strides allow it (`lhs` K-major, every stride but the last a multiple of 16 bytes). A
//! producer unit fills a ring of shared-memory stages as the main kernel's does (`full` and
//! `empty` mbarriers per stage), so the consumer warpgroups never wait on each other or issue
//! a copy: each one waits for its stage, reads its `A` fragments from the weight's boxes and
//! runs the stage's four `k8` MMAs with `lhs`'s rows as `B`, then hands the stage back.
//!
//! A stage holds, per warpgroup, two boxes of the weight (`[32 k][32 columns]`, as the TMA
//! engine lays them out with the 128-byte swizzle: 16-byte group `c` of line `k` at group
//! `c ^ (k % 8)`), and `lhs`'s rows at the stage's 32 `k` (K-major lines, the same swizzle).
//! A unit holds MMA rows `16 w + g` and `+ 8` at `k` `q` and `q + 4` (`w` its warp, lane
//! `4 g + q`); they are two adjacent weight columns, one 8-byte load a line. The columns of a
//! warp are groups `2 (g / 2) + w % 2` of its box: over the four lines its quads read, the
//! swizzle then spreads the warp's 256 bytes evenly over the 32 banks (two wavefronts, none
//! wasted), where contiguous columns would put all four lines on the same 16 banks.

use crate::hopper::few_rows::slice_bounds;
use crate::hopper::mbarrier::{
    BARRIER_BYTES, arrive, arrive_expecting, next_stage, ring_barriers, wait_barrier,
};
use crate::hopper::swapped::{CHUNK_K, COLUMNS, mma_stage_a_in_registers, store_partials};
use crate::hopper::tma::load_3d;
use crate::hopper::wgmma::{descriptor, shared_address};
use cubecl::prelude::*;

/// Warpgroups a cube at every row count: one measured fastest on the H200 at 16-128 rows (at
/// 128 rows 0.0417 ms against 0.0515 with two at `1 x 128 x 4096 x 4096`: its 106 registers a
/// unit let two cubes of 160 units share a multiprocessor, where two of 288 did not fit).
pub(crate) const WARPGROUPS: usize = 1;

/// Weight columns in one box: one 128-byte swizzle line of f32.
pub(crate) const BOX_COLUMNS: usize = 32;

/// Bytes of one weight box: [`CHUNK_K`] lines of `k`, [`BOX_COLUMNS`] f32 columns each.
pub(crate) const BOX_BYTES: usize = CHUNK_K * BOX_COLUMNS * 4;

/// Shared memory a cube's ring may take: two cubes fit a multiprocessor.
const RING_BYTES: usize = 100 * 1024;

/// Bytes of one stage: the weight's boxes for `warpgroups` warpgroups, and `rows` lines of
/// `lhs`.
pub(crate) const fn stage_bytes(rows: usize, warpgroups: usize) -> usize {
    2 * warpgroups * BOX_BYTES + rows * CHUNK_K * 4
}

/// Stages of the ring at `rows` rows: as many as [`RING_BYTES`] holds, two to eight.
pub(crate) const fn stages(rows: usize, warpgroups: usize) -> usize {
    let fit = RING_BYTES / stage_bytes(rows, warpgroups);
    if fit < 2 {
        2
    } else if fit > 8 {
        8
    } else {
        fit
    }
}

/// One slice of `k`'s partial sums for `64 warpgroups` weight columns of every row (cube
/// `(x, y, z)`: column block, slice, batch) into `partials`, `[slices, batch * m, n]`, as
/// [`swapped_partials`](super::swapped::swapped_partials) writes them. `rhs` is the weight's map
/// (`[batch, k, n]`, box `[1, 32, 32]`), `lhs` the rows' (`[batch, m, k]`, box
/// `[1, rows, 32]`); past the edges the TMA engine reads zeros.
#[cube(launch_unchecked, address_type = "dynamic")]
#[allow(clippy::too_many_arguments)]
pub(crate) fn swapped_tma_partials<R: Size>(
    lhs: &TensorMap<f32, Tiled>,
    rhs: &TensorMap<f32, Tiled>,
    partials: &mut Tensor<f32>,
    m: u32,
    n: u32,
    k: u32,
    slice_k: u32,
    #[comptime] rows: usize,
    #[comptime] warpgroups: usize,
    #[comptime] stages: usize,
    #[comptime] lhs_batched: bool,
    #[comptime] rhs_batched: bool,
) {
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let consumer_units = comptime![128 * warpgroups];
    let b_stage_bytes = comptime![(rows * CHUNK_K * 4) as u32];
    let col0 = CUBE_POS_X as usize * comptime![COLUMNS * warpgroups];
    let slice = CUBE_POS_Y as usize;
    let batch = CUBE_POS_Z as usize;
    let (k_first, k_end) = slice_bounds(slice, slice_k as usize, k);
    let chunks = (k_end - k_first).div_ceil(CHUNK_K);

    // The ring: the weight's boxes (`[stages][2 warpgroups]` of `[32][32]` f32) and `lhs`'s
    // stages (`[stages][rows][32]`), each a whole number of 1024-byte swizzle atoms.
    let smem_a = Shared::<[Vector<f32, Const<2>>]>::new_aligned_slice(
        comptime![stages * warpgroups * BOX_BYTES / 4],
        1024usize,
    );
    let smem_b = Shared::<[f32]>::new_aligned_slice(comptime![stages * rows * CHUNK_K], 1024usize);
    // `full` of each stage (the producer's arrival and the bytes of its copies), then `empty`
    // of each stage (every consumer unit's arrival).
    let (full, empty) = ring_barriers(stages, comptime![consumer_units as u32]);

    if UNIT_POS as usize == consumer_units {
        fill_weight_ring(
            lhs,
            rhs,
            shared_address::<Vector<f32, Const<2>>>(&smem_a),
            shared_address::<f32>(&smem_b),
            full,
            empty,
            col0,
            0usize,
            k_first,
            chunks,
            batch,
            comptime![2 * warpgroups],
            stages,
            b_stage_bytes,
            b_stage_bytes,
            lhs_batched,
            rhs_batched,
        );
    } else if (UNIT_POS as usize) < consumer_units {
        let unit = UNIT_POS as usize;
        let q = unit % 4;
        let (column, first, second) = weight_fragment(unit);
        let col = col0 + column;
        let a_stage_pairs = comptime![2 * warpgroups * BOX_BYTES / 8];

        let b_base = descriptor(shared_address::<f32>(&smem_b), 16u64, 1024u64);
        let b_stage_step = comptime![(rows * CHUNK_K * 4 / 16) as u64];
        let mut stage = 0u32;
        let mut phase = 0u32;
        let mut acc = Vector::<f32, R>::new(0.0f32);
        for _ in 0..chunks {
            let offset = stage * BARRIER_BYTES;
            wait_barrier(full + offset, phase);
            let at = stage as usize * a_stage_pairs;
            let mut a = Vector::<f32, Const<16>>::empty();
            #[unroll]
            for t in 0..4usize {
                let low = smem_a[at + first + comptime![128 * t]];
                let high = smem_a[at + second + comptime![128 * t]];
                a.insert(comptime![4 * t], low.extract(0usize));
                a.insert(comptime![4 * t + 1], low.extract(1usize));
                a.insert(comptime![4 * t + 2], high.extract(0usize));
                a.insert(comptime![4 * t + 3], high.extract(1usize));
            }
            acc = mma_stage_a_in_registers::<R>(
                acc,
                a,
                b_base + u64::cast_from(stage) * b_stage_step,
                rows,
            );
            arrive(empty + offset);
            (stage, phase) = next_stage(stage, phase, stages);
        }

        store_partials::<R>(partials, acc, slice, batch, col, q, m, n, rows);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_fits_two_cubes_a_multiprocessor() {
        // 128 rows, one warpgroup: 24 KiB a stage, four stages; two warpgroups: 32 KiB, three.
        assert_eq!((stage_bytes(128, 1), stages(128, 1)), (24 * 1024, 4));
        assert_eq!((stage_bytes(128, 2), stages(128, 2)), (32 * 1024, 3));
        assert_eq!(stages(64, 2), 4);
        assert_eq!((stages(32, 1), stages(16, 1)), (8, 8));
        for (rows, warpgroups) in [16, 32, 64, 128].into_iter().flat_map(|r| [(r, 1), (r, 2)]) {
            let ring = stages(rows, warpgroups) * stage_bytes(rows, warpgroups);
            assert!(2 * (ring + 1024) <= 228 * 1024, "{rows} rows: {ring} bytes");
        }
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
