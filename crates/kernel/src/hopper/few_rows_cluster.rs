//! `hopper-few-rows-cluster`: the few-row product of
//! [`few_rows_tma`](super::few_rows_tma) in one launch, at up to 8 rows: the slices of a column
//! block's `k` run in one thread-block cluster, and each cube but the first stores its sums into
//! the first one's shared memory (distributed shared memory), which adds them in slice order
//! and applies the epilogue. No partial sums in global memory and no second kernel, whose
//! launch was 3.4 of 31.6 us at one row of a `4096 x 4096` weight on an H100; the host's cost of
//! a call halves (one launch and no workspace: 9.6-12 us against 18-24 at these shapes).
//!
//! Clusters of two: two cubes a multiprocessor can always hold one whole, where wider clusters
//! span multiprocessors and fewer of them fit at once than their cubes (see [`MAX_SLICES`]).
//! So that 2 slices fill the device, a cube takes 32 weight columns and a ring of twenty 4 KiB
//! weight boxes (160 KiB of the weight in flight a multiprocessor), and four warps of FMAs, each
//! summing 8 of a stage's 32 `k`, whose sums a column's first unit adds.
//!
//! Measured on an H100 (kernel alone, `4096 x 4096` weight; one launch against two): 0.0294 ms
//! against 0.0307 at one row, 0.0305 against 0.0315 at 4 rows, 0.0332 against 0.0333 at 8; on
//! an H200 0.0221-0.0224 ms against 0.0248-0.0250 at one row (ncu 22.1 us, 66% of DRAM
//! bandwidth). Neither the bytes in flight nor the copies' shape bound it: with `lhs`'s rows
//! unswizzled (26 stages at one row), or 64 columns a cube and one cube a multiprocessor, it ran
//! as fast.
//!
//! The hand-over has no cluster barrier that releases memory (each compiles to a fence of every
//! store in flight, `MEMBAR`, and the barrier's wait), and follows the whole-tile kernel's
//! split-K order, which finishes under compute-sanitizer's racecheck: every unit arrives on the
//! cluster barrier once, relaxed, at set-up. After their loops the column units of each cube
//! wait on it; the first cube's first unit arrives on its `landed` mbarrier expecting the other
//! cubes' bytes, then on each other cube's `ready`; the other cubes' column units wait on
//! `ready`, then store their sums into slots of the first cube's shared memory with `st.async`,
//! which completes their bytes on `landed`, where the first cube's column units wait. On an
//! H100 that ran 0.0279-0.0284 ms against 0.0290-0.0295 with released cluster barriers around
//! plain remote stores at one row.

use crate::common::address_type;
use crate::contract::Dims;
use crate::epilogue::{Epilogue, bias_vector, finish_vector, write_mask_words};
use crate::hopper::cluster::{
    arrive_remote, cluster_arrive, cluster_wait, fence_barrier_init, store_remote_async_f32,
};
use crate::hopper::fold::rows_within;
use crate::hopper::layout::{f32_weight_maps, tensor_map};
use crate::hopper::mbarrier::{
    BARRIER_BYTES, arrive_expecting, init_barrier, ring_barriers, wait_barrier,
};
use crate::hopper::ptx::shared_address;
use crate::hopper::split_k::slice_bounds;
use crate::hopper::weight_ring::{
    BOX_BYTES, BOX_COLUMNS, CHUNK_K, MAX_FMA_ROWS, add_ring_stages, fill_weight_ring, fma_rows,
    fma_unavailability, lhs_stage_bytes,
};
use crate::problem::Problem;
use cubecl::client::Client;
use cubecl::prelude::*;

/// Weight boxes a stage: a cube's columns, [`BOX_COLUMNS`] each. One: at `4096` columns that
/// is 128 column blocks, so that clusters of two fill the device.
pub(crate) const BOXES: usize = 1;
/// Output columns a cube.
pub(crate) const COLUMNS: usize = BOXES * BOX_COLUMNS;
/// Stages of the ring: twenty of 5 KiB (4 of the weight, a 1 KiB swizzle atom of `lhs`), so
/// that two cubes share a multiprocessor.
pub(crate) const STAGES: usize = 20;
/// Cubes a multiprocessor holds (by shared memory), which the grid is sized to: one round.
pub(crate) const CUBES_PER_PROCESSOR: usize = 2;
/// The most cubes of a cluster, the most slices of `k`: two, which every multiprocessor can
/// hold together. Wider clusters span multiprocessors, and fewer of them are resident at once
/// than the cubes would allow (ncu's "max active clusters", two cubes a multiprocessor: 30
/// clusters of 8 and 62 of 4 on an H100, 132 of 2 on an H200), so a grid sized to the cubes
/// ran a second, short round.
pub(crate) const MAX_SLICES: usize = 2;
/// Units a column: each sums a part of every stage's `k` (8 of its 32), so that a cube has
/// four warps of FMAs, not one.
pub(crate) const PARTS: usize = 4;
/// Consumer units a cube: [`PARTS`] a column. The launch adds a producer warp.
pub(crate) const UNITS: usize = PARTS * COLUMNS;

/// `out = relu(lhs @ rhs + bias)` (or as `epilogue` says) for the `32 boxes` weight columns of
/// every row (cluster `(x, z)`: column block, batch), fed by a ring of `stages` stages of
/// `boxes` weight boxes, `k` split over the `slices` cubes of the cluster
/// (cube `y` takes slice `y`, `slice_k` deep, a multiple of 32). `rhs` is the weight's map
/// (`[batch, k, n]`, box `[1, 32, 32]`), `lhs` the rows' (`[batch, m, k]`, box `[1, rows, 32]`);
/// past the edges the TMA engine reads zeros. The output is dense, `[batch * m, n]`; under
/// [`Epilogue::BiasReluMask`] `mask` gets the ReLU mask's words of each row.
#[cube(
    launch_unchecked,
    address_type = "dynamic",
    cluster_dim = CubeDim::new_3d(1, slices as u32, 1)
)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn few_rows_cluster_product(
    lhs: &TensorMap<f32, Tiled>,
    rhs: &TensorMap<f32, Tiled>,
    bias: &Tensor<f32>,
    output: &mut Tensor<f32>,
    mask: &mut Tensor<u32>,
    m: u32,
    n: u32,
    k: u32,
    slice_k: u32,
    #[comptime] rows: usize,
    #[comptime] slices: usize,
    #[comptime] boxes: usize,
    #[comptime] stages: usize,
    #[comptime] parts: usize,
    #[comptime] epilogue: Epilogue,
    #[comptime] lhs_batched: bool,
    #[comptime] rhs_batched: bool,
) {
    let (m, n, k) = (m as usize, n as usize, k as usize);
    // A column's units: `parts` of them, each summing its part of every stage's `k`.
    let columns = comptime![boxes * BOX_COLUMNS];
    let units = comptime![parts * boxes * BOX_COLUMNS];
    let (lhs_bytes, lhs_copy_bytes) =
        comptime![(lhs_stage_bytes(rows) as u32, (rows * CHUNK_K * 4) as u32)];
    let col0 = CUBE_POS_X as usize * columns;
    // The cube's rank in its cluster: the grid's y is the cluster's.
    let slice = CUBE_POS_Y as usize;
    let batch = CUBE_POS_Z as usize;
    let (k_first, k_end) = slice_bounds(slice, slice_k as usize, k);
    let chunks = (k_end - k_first).div_ceil(CHUNK_K);

    let smem_w =
        Shared::<[f32]>::new_aligned_slice(comptime![stages * boxes * BOX_BYTES / 4], 1024usize);
    let smem_l = Shared::<[Vector<f32, Const<4>>]>::new_aligned_slice(
        comptime![stages * lhs_stage_bytes(rows) / 16],
        1024usize,
    );
    // The hand-over's slots, in the first cube: slot `s - 1` holds slice `s`'s sums, row `r`
    // of unit `u` at word `r * columns + u`, so that a plane's stores and loads are 128
    // contiguous bytes.
    let slot_words = comptime![rows * columns];
    let slots = Shared::<[f32]>::new_slice(comptime![(slices.max(2) - 1) * rows * columns]);
    // The hand-over's mbarriers: `ready` (in every cube but the first: the first one expects
    // the sums; its arrival), then `landed` (in the first cube: every other cube's sums have
    // landed; its own arrival, with the bytes it expects).
    let handover_words = Shared::<[u64]>::new_aligned_slice(2usize, 8usize);
    let ready = shared_address::<u64>(&handover_words);
    let landed = ready + BARRIER_BYTES;
    if comptime![slices > 1] {
        init_handover_barriers(ready, landed);
    }
    // `full` of each stage (the producer's arrival and the bytes of its copies), then `empty`
    // of each stage (every consumer unit's arrival). Its cube barrier also orders the
    // hand-over's initialisation before the cluster arrival below.
    let (full, empty) = ring_barriers(stages, comptime![units as u32]);
    if comptime![slices > 1] {
        // Every unit arrives once, relaxed, without waiting; a unit waits only before it
        // touches another cube's barriers, long after every cube has arrived.
        cluster_arrive();
    }

    let unit = UNIT_POS as usize;
    // The consumer units' sums (zeroed by `add_ring_stages`); no other unit reads them.
    let mut acc = Array::<f32>::new(rows);
    if unit == units {
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
            boxes,
            stages,
            lhs_bytes,
            lhs_copy_bytes,
            lhs_batched,
            rhs_batched,
        );
    } else if unit < units {
        add_ring_stages(
            &mut acc,
            &smem_w,
            &smem_l,
            full,
            empty,
            unit % columns,
            unit / columns,
            chunks,
            rows,
            boxes,
            stages,
            parts,
        );
    }
    // The parts of a column add up in its first unit, in part order.
    if comptime![parts > 1] {
        let mut sums = Shared::<[f32]>::new_slice(comptime![(parts - 1) * rows * columns]);
        if unit >= columns && unit < units {
            let at = (unit / columns - 1) * comptime![rows * columns] + unit % columns;
            #[unroll]
            for r in 0..rows {
                sums[at + comptime![r * columns]] = acc[r];
            }
        }
        sync_cube();
        if unit < columns {
            #[unroll]
            for p in 1..parts {
                #[unroll]
                for r in 0..rows {
                    acc[r] += sums[comptime![((p - 1) * rows + r) * columns] + unit];
                }
            }
        }
    }

    // The hand-over, in the main kernel's order (the only one found that also finishes under
    // racecheck). The column units of every cube wait on the cluster barrier, whole warps: with
    // one unit of a warp waiting on it, no launch finished.
    if comptime![slices > 1] {
        if slice == 0 && unit < columns {
            // Every cube's barriers are initialised; the first cube expects the other cubes'
            // sums, then lets them store, so that the expectation precedes every store.
            cluster_wait();
            if unit == 0 {
                arrive_expecting(
                    landed,
                    comptime![((slices - 1) * rows * columns * 4) as u32],
                );
                #[unroll]
                for other in 1..slices {
                    arrive_remote(ready, other as u32);
                }
            }
            wait_barrier(landed, 0u32);
        }
        if slice > 0 && unit < columns {
            cluster_wait();
            wait_barrier(ready, 0u32);
            let at = shared_address::<f32>(&slots) + ((slice - 1) * slot_words + unit) as u32 * 4;
            #[unroll]
            for r in 0..rows {
                store_remote_async_f32(
                    at + comptime![(r * columns * 4) as u32],
                    0u32,
                    landed,
                    acc[r],
                );
            }
        }
    }

    // The first cube finishes: whole planes, so the mask's shuffles below have every lane.
    if slice == 0 && unit < columns {
        let col = col0 + unit;
        #[unroll]
        for r in 0..rows {
            if r < m {
                let mut total = acc[r];
                #[unroll]
                for s in 1..slices {
                    total += slots[comptime![(s - 1) * rows * columns + r * columns] + unit];
                }
                let mut bits = 0u32;
                if col < n {
                    let mut biases = Vector::<f32, Const<1>>::new(0.0);
                    if comptime![epilogue.bias_relu()] {
                        biases = bias_vector::<f32, Const<1>>(bias, output.rank(), batch, r, col);
                    }
                    let (value, word_bits) = finish_vector::<f32, Const<1>>(
                        Vector::<f32, Const<1>>::new(total),
                        biases,
                        col,
                        epilogue,
                    );
                    output[(batch * m + r) * n + col] = value.extract(0usize);
                    bits = word_bits;
                }
                if comptime![epilogue.writes_mask()] {
                    write_mask_words::<Const<1>>(mask, bits, col, batch * m + r);
                }
            }
        }
    }
}

/// The first unit initialises the hand-over's mbarriers, `ready` and `landed`, each completing
/// on one arrival, and makes that visible to the other cubes of the cluster, through the
/// cluster barrier after it.
#[cube]
fn init_handover_barriers(ready: u32, landed: u32) {
    if UNIT_POS == 0 {
        init_barrier(ready, 1u32);
        init_barrier(landed, 1u32);
        fence_barrier_init();
    }
}

/// The most bytes of the weight (`k x n` f32 a batch) the one launch streams. It saves a
/// launch and the second kernel's few microseconds, but it streams a weight more slowly than
/// `few_rows_tma`'s 256 columns a cube (2.6 against 2.7 TB/s on an H100 at `1 x 1 x 11008 x
/// 4096`), so on a larger weight the two launches are faster: measured on an H100, one launch
/// 2% faster at `4096 x 8192` (128 MiB), 4% slower at `11008 x 4096` and 3% at `8192 x 8192`.
pub(crate) const MAX_WEIGHT_BYTES: usize = 128 << 20;

/// How the launch splits `k`: the slices (the cluster's cubes, at most [`MAX_SLICES`]) and their
/// depth, a multiple of 32, as many as the column blocks of every batch leave room for in one
/// round of `resident` cubes, at least one.
pub(crate) fn split(dims: &Dims, resident: usize) -> (usize, usize) {
    let blocks = dims.n.div_ceil(COLUMNS) * dims.batch;
    let chunks = dims.k.div_ceil(CHUNK_K);
    let wanted = (resident / blocks).clamp(1, MAX_SLICES.min(chunks));
    let per_slice = chunks.div_ceil(wanted);
    (chunks.div_ceil(per_slice), per_slice * CHUNK_K)
}

/// [`split`] where the column blocks of every batch times the slices fill one round of
/// `resident` cubes nearly whole, and the weights of every batch are at most
/// [`MAX_WEIGHT_BYTES`] (where the heuristic runs this path); `None` where the split leaves
/// more than a tenth of the round idle, needs more than one round, or the weights are larger.
pub(crate) fn cluster_split(dims: &Dims, resident: usize) -> Option<(usize, usize)> {
    if dims.batch * dims.k * dims.n * 4 > MAX_WEIGHT_BYTES {
        return None;
    }
    let blocks = dims.n.div_ceil(COLUMNS) * dims.batch;
    let chunks = dims.k.div_ceil(CHUNK_K);
    let cubes = blocks * (resident / blocks).clamp(1, MAX_SLICES.min(chunks));
    (cubes <= resident && cubes * 10 >= resident * 9).then(|| split(dims, resident))
}

/// Why this path cannot run `problem`, if it cannot ([`fma_unavailability`]).
pub(crate) fn unavailability(problem: &Problem) -> Option<String> {
    fma_unavailability(problem)
}

/// Runs the path on a problem it takes ([`unavailability`]), `k` split as [`split`] says.
pub(crate) fn launch(client: &Client, problem: &Problem) {
    let (ops, dims) = rows_within(&problem.ops, &problem.dims, MAX_FMA_ROWS)
        .expect("the caller checked the rows");
    let (lhs_layout, rhs_layout) = f32_weight_maps(&ops).expect("the caller checked the maps");
    let dtype = problem.dtype;
    let rows = fma_rows(dims.m);
    let (slices, slice_k) = split(&dims, problem.processors * CUBES_PER_PROCESSOR);
    let address_type = address_type(&ops, dtype, 0);
    let lhs_map = tensor_map(&ops.lhs, &lhs_layout, [1, rows, CHUNK_K], dtype);
    let rhs_map = tensor_map(&ops.rhs, &rhs_layout, [1, CHUNK_K, BOX_COLUMNS], dtype);
    // SAFETY: the TMA engine reads `lhs` and `rhs` through maps of their own shapes, filling
    // past the edges with zeros; the kernel reads the bias inside its shape and writes the
    // dense output and, under the mask epilogue, each of the mask's words once (the caller
    // checked its layout); a cube stores only into the slots of its cluster's first cube.
    unsafe {
        few_rows_cluster_product::launch_unchecked(
            client,
            CubeCount::Static(
                dims.n.div_ceil(COLUMNS) as u32,
                slices as u32,
                dims.batch as u32,
            ),
            CubeDim::new_1d(UNITS as u32 + 32),
            address_type,
            lhs_map,
            rhs_map,
            ops.bias.into_tensor_arg(),
            ops.out.into_tensor_arg(),
            problem.mask_argument().into_tensor_arg(),
            dims.m as u32,
            dims.n as u32,
            dims.k as u32,
            slice_k as u32,
            rows,
            slices,
            BOXES,
            STAGES,
            PARTS,
            problem.epilogue,
            lhs_layout.batched,
            rhs_layout.batched,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes of a stage's weight.
    const WEIGHT_STAGE_BYTES: usize = BOXES * BOX_BYTES;

    /// Bytes of a cube's shared memory at `rows` rows: the ring (aligned to 1 KiB), the
    /// parts' sums, the hand-over's slots (a `rows x COLUMNS` f32 slot per other cube) and the
    /// mbarriers (the ring's two a stage, the hand-over's two).
    const fn cube_bytes(rows: usize) -> usize {
        let ring = STAGES * (WEIGHT_STAGE_BYTES + lhs_stage_bytes(rows));
        let parts = (PARTS - 1) * rows * COLUMNS * 4;
        let slots = (MAX_SLICES - 1) * rows * COLUMNS * 4;
        let barriers = (2 * STAGES + 2) * 8;
        ring + 1024 + parts + slots + barriers
    }

    #[test]
    fn two_cubes_share_a_multiprocessor() {
        for rows in 1..=MAX_FMA_ROWS {
            let bytes = cube_bytes(rows);
            assert!(
                CUBES_PER_PROCESSOR * bytes <= 227 * 1024,
                "{rows} rows: {bytes} bytes"
            );
        }
    }

    /// One round of two cubes a multiprocessor on 132 of them: 128 column blocks and 2 slices
    /// of 2048 at `4096 x 4096`, 256 blocks of one slice at `4096 x 8192` or with a weight per
    /// batch; a `k` of two stages, two slices; too few or too many blocks, or more than 128 MiB
    /// of weight, take none.
    #[test]
    fn slices_fill_one_round_of_two_cubes_a_multiprocessor() {
        let dims = |batch, m, k, n| Dims { m, n, k, batch };
        let resident = 132 * CUBES_PER_PROCESSOR;
        assert_eq!(
            cluster_split(&dims(1, 1, 4096, 4096), resident),
            Some((2, 2048))
        );
        assert_eq!(
            cluster_split(&dims(1, 3, 4100, 4100), resident),
            Some((2, 2080))
        );
        assert_eq!(
            cluster_split(&dims(1, 1, 4096, 8192), resident),
            Some((1, 4096))
        );
        assert_eq!(
            cluster_split(&dims(2, 3, 2048, 4096), resident),
            Some((1, 2048))
        );
        assert_eq!(
            cluster_split(&dims(1, 2, 40, 4096), resident),
            Some((2, 32))
        );
        assert_eq!(
            cluster_split(&dims(1, 4, 1000, 8000), resident),
            Some((1, 1024))
        );
        assert_eq!(cluster_split(&dims(1, 1, 4096, 2048), resident), None);
        assert_eq!(cluster_split(&dims(1, 1, 4096, 6144), resident), None);
        assert_eq!(cluster_split(&dims(1, 1, 4096, 11008), resident), None);
        // Weights past 128 MiB: the two launches stream them faster.
        assert_eq!(cluster_split(&dims(1, 1, 8192, 8192), resident), None);
        assert_eq!(cluster_split(&dims(1, 1, 11008, 4096), resident), None);
        assert_eq!(cluster_split(&dims(2, 1, 4128, 4096), resident), None);
    }
}
