//! `hopper-few-rows-tma`: [`few_rows`](super::few_rows)'s partial sums fed by the TMA engine, at up
//! to 8 rows, where both operands' strides allow it (`lhs` K-major, the weight N-major, starts and
//! strides 16-byte aligned). The few-row kernel holds the weight's bytes in flight in its units'
//! registers (eight 4-byte loads a unit, 32 KiB a multiprocessor), which held it at 77% of DRAM
//! bandwidth on an H100 at `1 x 1 x 4096 x 4096`; here a producer unit keeps a ring of whole stages
//! in flight (up to 96 KiB a cube, two cubes a multiprocessor), and the consumers' FMAs read them
//! from shared memory. Measured on an H100 (`4096 x 4096` weight): 14% faster at 8 rows (0.0338
//! against 0.0392 ms), alike at one row (76% of DRAM bandwidth: the bytes in flight were not what
//! held the one-row kernel there).
//!
//! A stage of the weight ring ([`weight_ring`](super::weight_ring)) holds the weight's
//! `[32 k][256 columns]` as eight boxes and `lhs`'s rows at the stage's 32 `k`; unit `u`
//! computes column `u` of the cube's 256. Split-K's second kernel adds the slices
//! ([`split_k`]).

use crate::hopper::fold::rows_within;
use crate::hopper::layout::{f32_weight_maps, tensor_map};
use crate::hopper::mbarrier::ring_barriers;
use crate::hopper::ptx::shared_address;
use crate::hopper::split_k::{Finish, slice_bounds, split_k};
use crate::hopper::weight_ring::{
    BOX_BYTES, BOX_COLUMNS, CHUNK_K, MAX_FMA_ROWS, add_ring_stages, fill_weight_ring, fma_rows,
    fma_unavailability, lhs_stage_bytes, stage_slice_k,
};
use crate::problem::Problem;
use cubecl::client::Client;
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

/// One slice of `k`'s partial sums for 256 weight columns of every row (cube `(x, y, z)`:
/// column block, slice, batch) into `partials`, `[slices, batch * m, n]`, as
/// [`few_rows`](super::few_rows)'s kernel writes them. `rhs` is the weight's
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

/// Why this path cannot run `problem`, if it cannot ([`fma_unavailability`]).
pub(crate) fn unavailability(problem: &Problem) -> Option<String> {
    fma_unavailability(problem)
}

/// Runs the path on a problem it takes ([`unavailability`]): `k` split so that the cubes, two
/// a multiprocessor, run in one round, in slices of whole 32-`k` stages; then split-K's second
/// kernel by slice groups.
pub(crate) fn launch(client: &Client, problem: &Problem) {
    let (ops, dims) = rows_within(&problem.ops, &problem.dims, MAX_FMA_ROWS)
        .expect("the caller checked the rows");
    let (lhs_layout, rhs_layout) = f32_weight_maps(&ops).expect("the caller checked the maps");
    let dtype = problem.dtype;
    let rows = fma_rows(dims.m);
    let slice_k = stage_slice_k(&dims, UNITS, problem.processors * CUBES_PER_PROCESSOR);
    let slices = dims.k.div_ceil(slice_k);
    split_k(
        client,
        ops,
        dtype,
        dims,
        problem.epilogue,
        problem.mask_argument(),
        slices,
        Finish::SliceGroups,
        |lhs, rhs, partials, address_type| {
            let lhs_map = tensor_map(&lhs, &lhs_layout, [1, rows, CHUNK_K], dtype);
            let rhs_map = tensor_map(&rhs, &rhs_layout, [1, CHUNK_K, BOX_COLUMNS], dtype);
            // SAFETY: the TMA engine reads `lhs` and `rhs` through maps of their own shapes,
            // filling past the edges with zeros; the kernel writes each partial sum once,
            // inside the buffer it was given.
            unsafe {
                few_rows_tma_partials::launch_unchecked(
                    client,
                    CubeCount::Static(
                        dims.n.div_ceil(UNITS) as u32,
                        slices as u32,
                        dims.batch as u32,
                    ),
                    CubeDim::new_1d(UNITS as u32 + 32),
                    address_type,
                    lhs_map,
                    rhs_map,
                    partials.into_tensor_arg(),
                    dims.m as u32,
                    dims.n as u32,
                    dims.k as u32,
                    slice_k as u32,
                    rows,
                    STAGES,
                    lhs_layout.batched,
                    rhs_layout.batched,
                );
            }
        },
    );
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
}
