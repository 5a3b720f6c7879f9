//! `hopper-swapped-tma`: [`swapped`](super::swapped)'s transposed product (the N-major f32
//! weight as the TF32 MMAs' register operand `A`, [`transposed`](super::transposed)) fed by the
//! TMA engine, where both operands' strides allow it (`lhs` K-major, every stride but the last
//! a multiple of 16 bytes). A producer unit fills the weight ring
//! ([`weight_ring`](super::weight_ring)), so the consumer warpgroups never wait on each other
//! or issue a copy: each one waits for its stage, reads its `A` fragments from the weight's
//! boxes and runs the stage's four `k8` MMAs with `lhs`'s rows as `B`, then hands the stage
//! back. A stage holds, per warpgroup, two boxes of the weight and `lhs`'s rows at the stage's
//! 32 `k` (K-major lines, the same swizzle).

use crate::hopper::fold::rows_within;
use crate::hopper::layout::{f32_weight_maps, tensor_map};
use crate::hopper::mbarrier::{BARRIER_BYTES, arrive, next_stage, ring_barriers, wait_barrier};
use crate::hopper::ptx::shared_address;
use crate::hopper::split_k::{Finish, slice_bounds, split_k};
use crate::hopper::transposed::{
    self, COLUMNS, MAX_ROWS, rows_for, slice_k, store_partials, weight_fragment,
};
use crate::hopper::weight_ring::{BOX_BYTES, BOX_COLUMNS, CHUNK_K, fill_weight_ring};
use crate::hopper::wgmma::{descriptor, mma_stage_a_in_registers};
use crate::problem::Problem;
use cubecl::client::Client;
use cubecl::prelude::*;

/// Warpgroups a cube at every row count: one measured fastest on the H200 at 16-128 rows (at
/// 128 rows 0.0417 ms against 0.0515 with two at `1 x 128 x 4096 x 4096`: its 106 registers a
/// unit let two cubes of 160 units share a multiprocessor, where two of 288 did not fit).
pub(crate) const WARPGROUPS: usize = 1;

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
/// [`swapped`](super::swapped)'s kernel writes them. `rhs` is the weight's map
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

/// Why this path cannot run `problem`, if it cannot: as [`transposed::unavailability`] says,
/// or the TMA engine cannot read both operands.
pub(crate) fn unavailability(problem: &Problem) -> Option<String> {
    transposed::unavailability(problem).or_else(|| {
        let (ops, _) = rows_within(&problem.ops, &problem.dims, MAX_ROWS)?;
        f32_weight_maps(&ops)
            .is_none()
            .then(|| "the TMA engine cannot read `lhs` K-major and `rhs` N-major".into())
    })
}

/// Runs the path on a problem it takes ([`unavailability`]): partial sums per slice of `k`, fed
/// by the TMA engine, then their sum ([`split_k`]).
pub(crate) fn launch(client: &Client, problem: &Problem) {
    let (ops, dims) =
        rows_within(&problem.ops, &problem.dims, MAX_ROWS).expect("the caller checked the rows");
    let (lhs_layout, rhs_layout) = f32_weight_maps(&ops).expect("the caller checked the maps");
    let dtype = problem.dtype;
    let rows = rows_for(dims.m);
    let slice_k = slice_k(&dims, problem.processors, WARPGROUPS);
    let slices = dims.k.div_ceil(slice_k);
    let grid = CubeCount::Static(
        dims.n.div_ceil(COLUMNS * WARPGROUPS) as u32,
        slices as u32,
        dims.batch as u32,
    );
    split_k(
        client,
        ops,
        dtype,
        dims,
        problem.epilogue,
        problem.mask_argument(),
        slices,
        Finish::Columns,
        |lhs, rhs, partials, address_type| {
            let lhs_map = tensor_map(&lhs, &lhs_layout, [1, rows, CHUNK_K], dtype);
            let rhs_map = tensor_map(&rhs, &rhs_layout, [1, CHUNK_K, BOX_COLUMNS], dtype);
            // SAFETY: the TMA engine reads `lhs` and `rhs` through maps of their own shapes,
            // filling past the edges with zeros; the kernel writes each partial sum once,
            // inside the buffer it was given.
            unsafe {
                swapped_tma_partials::launch_unchecked(
                    client,
                    grid,
                    CubeDim::new_1d(128 * WARPGROUPS as u32 + 32),
                    address_type,
                    rows / 2,
                    lhs_map,
                    rhs_map,
                    partials.into_tensor_arg(),
                    dims.m as u32,
                    dims.n as u32,
                    dims.k as u32,
                    slice_k as u32,
                    rows,
                    WARPGROUPS,
                    stages(rows, WARPGROUPS),
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
}
