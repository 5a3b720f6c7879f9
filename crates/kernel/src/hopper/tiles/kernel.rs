//! The whole-tile kernel (`hopper-tiles`, and under split-K `hopper-split-k`), persistent: each
//! cube walks output tiles of its [`TileShape`](crate::hopper::schedule::TileShape) (grouped order,
//! batch outermost) until none are left. A producer unit brings slices of `lhs` and `rhs` one
//! 128-byte swizzle line deep along `k` (64 half-precision or 32 f32 elements) into a ring of
//! shared-memory stages with the TMA engine (128-byte swizzle, zero fill past the edges); one
//! consumer warpgroup per 64 rows of the tile runs the warpgroup MMAs of every stage, hands the
//! stage back, and after the last one applies the epilogue in its registers, then stores through
//! shared memory and the TMA engine ([`store_tile`]). The ring runs on across tiles, so the
//! producer fills the next tile's stages while the consumers store the last one's.
//!
//! Under split-K ([`KernelConfig::splits`] > 1, [`fused_matmul_add_relu_hopper_split_k`]) a work
//! item is one slice of `k` of one tile, and the slices of a tile run in one thread-block cluster,
//! one cube each: every cube but the first stores its f32 partial sums into the first one's shared
//! memory (the ring, which the first cube hands over once its own MMAs are done), and the first
//! adds them to its own and runs the epilogue ([`crate::hopper::cluster`]). With few rows (at most
//! 8, 16 or 32, `lhs` K-major) a split-K stage holds only that many rows of `lhs`
//! ([`TileShape::lhs_rows`](crate::hopper::schedule::TileShape::lhs_rows)), so the ring holds more
//! stages of `rhs`: the 64-row MMAs read the other rows from what follows in the ring (and from a
//! tail after its last stage), rows whose sums are never stored (the output's tensor map clips rows
//! past `m`, and the mask and a per-row bias are only touched at rows below it).
//!
//! Two barriers per stage: `full` completes when the stage's bytes have landed (the producer
//! arrives once and the TMA engine counts the bytes), `empty` when every consumer unit is done
//! reading it. The `i`-th k-block a cube handles uses stage `i % stages` in round
//! `i / stages`; round `r` waits on `full` for parity `r & 1` and on `empty` for the opposite
//! parity, so the first round's wait on `empty` passes at once. The stage is a run-time index
//! (with its phase, carried from one k-block to the next and across work items), and both the
//! producer and the consumers run a single copy of their code, shared by all stages: the
//! consumers carry the stage's MMA descriptors along with it, computed for the next stage
//! before its wait. One copy per stage instead (compile-time barrier and descriptor offsets)
//! compiled in twice the time (1.0 s against 0.45 s of NVRTC and `ptxas` for a 128 x 256 tile)
//! and ran within 0.6%.

use super::config::KernelConfig;
use super::store::store_tile;
use crate::common::batch_offset;
use crate::hopper::cluster::{
    add_slot, arrive_remote, cluster_arrive, cluster_wait, fence_barrier_init, slot_bytes,
    store_remote, unit_offset,
};
use crate::hopper::mbarrier::{
    BARRIER_BYTES, arrive, arrive_expecting, fence_proxy_async, init_barrier, init_ring,
    next_stage, wait_barrier,
};
use crate::hopper::ptx::{shared_address, warpgroup_barrier};
use crate::hopper::tma::{load_3d, wait_stores_read};
use crate::hopper::wgmma::{descriptor, mma_stage};
use cubecl::prelude::*;

/// Output tile rows grouped together in the launch order, so that cubes running at the same
/// time share `lhs` and `rhs` tiles in L2. With 128 x 256 tiles on 132 multiprocessors, 16
/// tile rows by about 8 tile columns run at once: 16 blocks of 128 `lhs` rows and 8 of 256 `rhs`
/// columns, the fewest bytes from DRAM for that many tiles (8 rows read `rhs` twice as often).
const GROUP_M: usize = 16;

/// The kernel, each cube walking whole tiles (`config.splits == 1`).
#[cube(launch_unchecked, address_type = "dynamic")]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fused_matmul_add_relu_hopper<E: Float, R: Size>(
    lhs: &TensorMap<E, Tiled>,
    rhs: &TensorMap<E, Tiled>,
    bias: &Tensor<E>,
    output: &mut TensorMap<E, Tiled>,
    mask: &mut Tensor<u32>,
    m: u32,
    n: u32,
    k: u32,
    batches: u32,
    #[comptime] config: KernelConfig,
    #[define(E)] _dtype: ElemType,
) {
    hopper_body::<E, R>(lhs, rhs, bias, output, mask, m, n, k, batches, config);
}

/// The kernel under split-K (`config.splits > 1`): clusters of `splits` cubes, one per slice of
/// a tile's `k`, launched as exactly one cube per work item.
#[cube(
    launch_unchecked,
    address_type = "dynamic",
    cluster_dim = CubeDim::new_1d(config.splits as u32)
)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fused_matmul_add_relu_hopper_split_k<E: Float, R: Size>(
    lhs: &TensorMap<E, Tiled>,
    rhs: &TensorMap<E, Tiled>,
    bias: &Tensor<E>,
    output: &mut TensorMap<E, Tiled>,
    mask: &mut Tensor<u32>,
    m: u32,
    n: u32,
    k: u32,
    batches: u32,
    #[comptime] config: KernelConfig,
    #[define(E)] _dtype: ElemType,
) {
    hopper_body::<E, R>(lhs, rhs, bias, output, mask, m, n, k, batches, config);
}

#[cube]
#[allow(clippy::too_many_arguments)]
// A compile-time branch (`comptime!`) holds a run-time one; merged, both would be run-time.
#[allow(clippy::collapsible_if)]
fn hopper_body<E: Float, R: Size>(
    lhs: &TensorMap<E, Tiled>,
    rhs: &TensorMap<E, Tiled>,
    bias: &Tensor<E>,
    output: &mut TensorMap<E, Tiled>,
    mask: &mut Tensor<u32>,
    m: u32,
    n: u32,
    k: u32,
    batches: u32,
    #[comptime] config: KernelConfig,
) {
    let m = m as usize;
    let n = n as usize;
    let splits = comptime![config.splits];
    let shape = comptime![config.tile];
    let (tile_m, tile_n, stages) = comptime![(shape.m, shape.n, shape.stages)];
    let (a_stage, b_stage) = comptime![(config.a_stage(), config.b_stage())];
    let (tile_k, elem_bytes) = comptime![(config.tile_k(), config.operand.bytes())];
    let consumer_units = comptime![config.consumer_units()];
    let tiles_m = m.div_ceil(tile_m);
    let tiles_n = n.div_ceil(tile_n);
    let tiles_per_batch = tiles_m * tiles_n;
    let num_tiles = tiles_per_batch * batches as usize;
    let k_blocks = (k as usize).div_ceil(tile_k);
    // A work item is one slice of `k` of one tile; without split-K, one whole tile.
    let num_items = num_tiles * splits;
    let slice_blocks = k_blocks.div_ceil(splits);

    let smem_a = Shared::<[E]>::new_aligned_slice(
        comptime![stages * a_stage + config.a_ring_tail()],
        1024usize,
    );
    let smem_b = Shared::<[E]>::new_aligned_slice(stages * b_stage, 1024usize);
    // Per consumer warpgroup, two output chunks of 64 x 64, written from the registers and
    // stored by the TMA engine while the next chunk is written.
    let mut smem_c = Shared::<[E]>::new_aligned_slice(
        comptime![2 * shape.consumers() * config.out_chunk()],
        1024usize,
    );
    // Per consumer warpgroup, the bias of the tile's columns when it is the same for every row:
    // loaded while the MMAs run, so the epilogue reads it from shared memory, not from global
    // memory with a load's latency in every chunk.
    let mut smem_bias = Shared::<[E]>::new_slice(comptime![shape.consumers() * shape.n]);
    // The mbarriers: `full` of each stage, then `empty` of each stage, then under split-K those
    // of the hand-over to the cluster's first cube: `ready` (that cube's ring is free; one
    // arrival per warpgroup of the first cube), then one per other cube (cube `r`'s sums have
    // landed; one arrival per warpgroup of the first cube, with the bytes it expects).
    let barrier_words = Shared::<[u64]>::new_aligned_slice(comptime![2 * stages + splits], 8usize);
    let full = shared_address::<u64>(&barrier_words);
    let empty = full + comptime![stages as u32 * BARRIER_BYTES];
    let ready = empty + comptime![stages as u32 * BARRIER_BYTES];
    if UNIT_POS == 0 {
        init_ring(full, empty, stages, comptime![consumer_units as u32]);
        if comptime![splits > 1] {
            #[unroll]
            for barrier in 0..splits {
                init_barrier(
                    ready + comptime![barrier as u32 * BARRIER_BYTES],
                    comptime![shape.consumers() as u32],
                );
            }
            fence_barrier_init();
        }
        // The barriers' initialisation must be visible to the TMA engine.
        fence_proxy_async();
    }
    sync_cube();
    if comptime![splits > 1] {
        // The consumers wait for it before they touch another cube's barriers; the producer
        // never does, so its loads start at once.
        cluster_arrive();
    }

    if UNIT_POS as usize == consumer_units {
        let (a_ring, b_ring) = (shared_address::<E>(&smem_a), shared_address::<E>(&smem_b));
        let (a_stage_bytes, b_stage_bytes) =
            comptime![((a_stage * elem_bytes) as u32, (b_stage * elem_bytes) as u32)];
        let mut stage = 0u32;
        let mut phase = 0u32;
        let mut item = CUBE_POS_X as usize;
        while item < num_items {
            let tile = item / splits;
            let (first_block, end_block) = slice_blocks_of(item % splits, slice_blocks, k_blocks);
            let (batch, row0, col0) = tile_origin(tile, tiles_per_batch, tiles_m, tiles_n, config);
            // A broadcast operand's map has one batch: coordinate 0.
            let mut lhs_batch = 0i32;
            let mut rhs_batch = 0i32;
            if comptime![config.lhs_batched] {
                lhs_batch = batch as i32;
            }
            if comptime![config.rhs_batched] {
                rhs_batch = batch as i32;
            }
            for kb in first_block..end_block {
                let k0 = (kb * tile_k) as i32;
                wait_barrier(empty + stage * BARRIER_BYTES, phase ^ 1);
                let barrier = full + stage * BARRIER_BYTES;
                let a_at = a_ring + stage * a_stage_bytes;
                let b_at = b_ring + stage * b_stage_bytes;
                if comptime![config.lhs_m_major] {
                    // 64-row panels, each 64 k-lines of 128 bytes.
                    #[unroll]
                    for p in 0..comptime![tile_m / tile_k] {
                        let a = a_at + comptime![(p * tile_k * tile_k * elem_bytes) as u32];
                        let row = (row0 + p * tile_k) as i32;
                        load_3d::<E>(lhs, a, barrier, lhs_batch, k0, row);
                    }
                } else {
                    load_3d::<E>(lhs, a_at, barrier, lhs_batch, row0 as i32, k0);
                }
                if comptime![config.rhs_k_major] {
                    load_3d::<E>(rhs, b_at, barrier, rhs_batch, col0 as i32, k0);
                } else {
                    // 64-column panels, each 64 k-lines of 128 bytes.
                    #[unroll]
                    for p in 0..comptime![tile_n / tile_k] {
                        let b = b_at + comptime![(p * tile_k * tile_k * elem_bytes) as u32];
                        let col = (col0 + p * tile_k) as i32;
                        load_3d::<E>(rhs, b, barrier, rhs_batch, k0, col);
                    }
                }
                arrive_expecting(barrier, comptime![shape.stage_bytes() as u32]);
                (stage, phase) = next_stage(stage, phase, stages);
            }
            item += CUBE_COUNT_X as usize;
        }
    } else if (UNIT_POS as usize) < consumer_units {
        let warpgroup = UNIT_POS / 128;
        // Descriptors of stage 0; a stage is a whole number of 1024-byte swizzle atoms, so
        // moving to stage `s` only adds to the address field. A warpgroup's 64 rows are 8 KiB
        // into the stage either way: 64 K-major lines, or one M-major panel.
        let a_leading = comptime![if config.lhs_m_major {
            config.panel_bytes() as u64
        } else {
            16u64
        }];
        let a_base = descriptor(shared_address::<E>(&smem_a), a_leading, 1024u64)
            + u64::cast_from(warpgroup * comptime![(config.panel_bytes() / 16) as u32]);
        let b_base = if comptime![config.rhs_k_major] {
            descriptor(shared_address::<E>(&smem_b), 16u64, 1024u64)
        } else {
            // MN-major: 64-element panels 8 KiB apart (leading), 8-line groups 1 KiB apart.
            descriptor(
                shared_address::<E>(&smem_b),
                comptime![config.panel_bytes() as u64],
                1024u64,
            )
        };
        let smem_c_address = shared_address::<E>(&smem_c);
        let (a_stage_step, b_stage_step) = comptime![(
            (a_stage * elem_bytes / 16) as u64,
            (b_stage * elem_bytes / 16) as u64
        )];
        let mut stage = 0u32;
        let mut phase = 0u32;
        // The MMA descriptors of stage `stage`'s slots.
        let mut stage_a = a_base;
        let mut stage_b = b_base;
        let mut item = CUBE_POS_X as usize;
        while item < num_items {
            let tile = item / splits;
            let split = item % splits;
            let (first_block, end_block) = slice_blocks_of(split, slice_blocks, k_blocks);
            let (batch, row0, col0) = tile_origin(tile, tiles_per_batch, tiles_m, tiles_n, config);
            let bias_offset = batch_offset::<E>(bias, batch);
            // Each of the first `tile_n / 2` units of a warpgroup fetches two of the tile's bias
            // columns now and stores them after the main loop, by when the loads have landed.
            let unit = (UNIT_POS % 128) as usize;
            let mut bias_pair = (E::from_int(0), E::from_int(0));
            if comptime![config.bias_row_broadcast] {
                if 2 * unit < tile_n {
                    let stride = bias.stride(bias.rank() - 1);
                    let col = col0 + 2 * unit;
                    if col < n {
                        bias_pair.0 = bias[bias_offset + col * stride];
                    }
                    if col + 1 < n {
                        bias_pair.1 = bias[bias_offset + (col + 1) * stride];
                    }
                }
            }
            let mut acc = Vector::<f32, R>::new(0.0f32);
            for _ in first_block..end_block {
                let offset = stage * comptime![BARRIER_BYTES];
                wait_barrier(full + offset, phase);
                acc = mma_stage::<R>(acc, stage_a, stage_b, comptime![config.mma()]);
                arrive(empty + offset);
                (stage, phase) = next_stage(stage, phase, stages);
                // The next stage's descriptors, ready before its wait.
                let wrapped = stage == 0;
                stage_a = select(wrapped, a_base, stage_a + comptime![a_stage_step]);
                stage_b = select(wrapped, b_base, stage_b + comptime![b_stage_step]);
            }
            if comptime![config.bias_row_broadcast] {
                if 2 * unit < tile_n {
                    let at = warpgroup as usize * tile_n + 2 * unit;
                    smem_bias[at] = bias_pair.0;
                    smem_bias[at + 1] = bias_pair.1;
                }
            }
            let mut finishes = true;
            if comptime![splits > 1] {
                let values = comptime![tile_n / 2];
                // Slot `q` of the first cube's rings, as `KernelConfig::slots_in_lhs_ring` says.
                let lhs_ring = shared_address::<E>(&smem_a);
                let rhs_ring = shared_address::<E>(&smem_b);
                let consumers = comptime![shape.consumers()];
                let rank = split;
                // Every cube's barriers are initialised.
                cluster_wait();
                if rank == 0 {
                    // This warpgroup's MMAs are done with the ring: once every warpgroup's
                    // are, the other cubes may write their sums into it.
                    warpgroup_barrier(warpgroup);
                    if unit == 0 {
                        fence_proxy_async();
                        #[unroll]
                        for other in 1..splits {
                            let bytes = comptime![slot_bytes(tile_n / 2) as u32];
                            arrive_expecting(
                                ready + comptime![other as u32 * BARRIER_BYTES],
                                bytes,
                            );
                        }
                        #[unroll]
                        for other in 1..splits {
                            arrive_remote(ready, other as u32);
                        }
                    }
                    // One barrier per other cube, so that each slot is added as soon as it has
                    // landed. One slot's values are live at a time: a slot's loads and adds are
                    // one PTX statement (`add_slot`; as separate statements, NVVM moved every
                    // slot's loads ahead of every add), and the slots are a loop, not unrolled
                    // (unrolled, the assembler moved them there itself). Two cubes of five
                    // warps share a multiprocessor only at 168 registers a unit or fewer (a
                    // quarter of it holds 16 Ki registers, three warps of 168); on an H200 the
                    // unrolled slots took 170 with 16 or 32 `lhs` rows a stage in bf16, and
                    // those kernels ran one cube per multiprocessor, 15-20% slower.
                    for other in 1..splits {
                        wait_barrier(ready + other as u32 * BARRIER_BYTES, 0u32);
                        let q = (other - 1) * consumers + warpgroup as usize;
                        let slot = slot_address(q, lhs_ring, rhs_ring, config);
                        acc = add_slot::<R>(acc, slot + unit_offset(unit), values);
                    }
                } else {
                    wait_barrier(ready, 0u32);
                    let q = (rank - 1) * consumers + warpgroup as usize;
                    let slot = slot_address(q, lhs_ring, rhs_ring, config);
                    let sums = ready + rank as u32 * BARRIER_BYTES;
                    store_remote::<R>(slot + unit_offset(unit), 0u32, sums, acc, values);
                    finishes = false;
                }
            }
            if finishes {
                store_tile::<E, R>(
                    acc,
                    bias,
                    bias_offset,
                    &smem_bias,
                    output,
                    &mut smem_c,
                    smem_c_address,
                    mask,
                    batch,
                    row0,
                    col0,
                    m,
                    n,
                    warpgroup,
                    config,
                );
            }
            item += CUBE_COUNT_X as usize;
        }
        // The cube's shared memory must outlive the output stores' reads of it.
        if UNIT_POS & 127 == 0 {
            wait_stores_read();
        }
    }
}

/// The k-blocks `[first, end)` of slice `split`, each slice `slice_blocks` long (the last one
/// shorter, or empty when the slices outnumber the blocks).
#[cube]
fn slice_blocks_of(split: usize, slice_blocks: usize, k_blocks: usize) -> (usize, usize) {
    let first = split * slice_blocks;
    let end = first + slice_blocks;
    let end = select(end > k_blocks, k_blocks, end);
    let first = select(first > end, end, first);
    (first, end)
}

/// The shared address of slot `q` (see [`KernelConfig::slots_in_lhs_ring`]), given the
/// addresses of the `lhs` and `rhs` rings: the same in every cube of the cluster.
#[cube]
fn slot_address(q: usize, lhs_ring: u32, rhs_ring: u32, #[comptime] config: KernelConfig) -> u32 {
    let in_lhs = comptime![config.slots_in_lhs_ring()];
    let bytes = comptime![slot_bytes(config.tile.n / 2)];
    let in_rhs = select(q >= in_lhs, q - in_lhs, 0usize);
    select(
        q < in_lhs,
        lhs_ring + (q * bytes) as u32,
        rhs_ring + (in_rhs * bytes) as u32,
    )
}

/// The batch, first row and first column of output tile `tile`: batches one after the other,
/// and within a batch `GROUP_M` tile rows sweep the tile columns together, so that cubes
/// running at the same time share `rhs` tiles in L2.
#[cube]
fn tile_origin(
    tile: usize,
    tiles_per_batch: usize,
    tiles_m: usize,
    tiles_n: usize,
    #[comptime] config: KernelConfig,
) -> (usize, usize, usize) {
    let batch = tile / tiles_per_batch;
    let in_batch = tile % tiles_per_batch;
    let per_group = GROUP_M * tiles_n;
    let first_m = (in_batch / per_group) * GROUP_M;
    let remaining_rows = tiles_m - first_m;
    let group_rows = select(remaining_rows < GROUP_M, remaining_rows, GROUP_M);
    let in_group = in_batch % per_group;
    let row0 = (first_m + in_group % group_rows) * comptime![config.tile.m];
    let col0 = (in_group / group_rows) * comptime![config.tile.n];
    (batch, row0, col0)
}
