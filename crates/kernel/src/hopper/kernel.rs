//! The Hopper kernel, persistent: each cube walks `TILE_M x TILE_N` output tiles (grouped
//! order, batch outermost) until none are left. A producer unit brings `TILE_K`-deep slices of
//! `lhs` and `rhs` into a ring of `STAGES` shared-memory stages with the TMA engine (128-byte
//! swizzle, zero fill past the edges); two consumer warpgroups, each owning 64 rows of the
//! tile, run the warpgroup MMAs of every stage, hand the stage back, and after the last one add
//! the bias and apply the ReLU in their registers, then store through shared memory and the TMA
//! engine ([`store_tile`]). The ring runs on across tiles, so the producer fills the next
//! tile's stages while the consumers store the last one's.
//!
//! Two barriers per stage: `full` completes when the stage's bytes have landed (the producer
//! arrives once and the TMA engine counts the bytes), `empty` when all 256 consumer units are
//! done reading it. The `i`-th k-block a cube handles uses stage `i % STAGES` in round
//! `i / STAGES`; round `r` waits on `full` for parity `r & 1` and on `empty` for the opposite
//! parity, so the first round's wait on `empty` passes at once. A barrier is named by a
//! compile-time index, so each k-block picks its stage's code among `STAGES` unrolled copies.

use super::plan::{PANEL, STAGES, TILE_K, TILE_M, TILE_N};
use super::wgmma::{Accumulator, MmaShape, descriptor, mma_stage, shared_address};
use crate::common::relu;
use cubecl::prelude::barrier::Barrier;
use cubecl::prelude::*;

/// Units per cube: two consumer warpgroups, then one producer plane.
pub(crate) const CUBE_UNITS: u32 = 2 * 128 + 32;
/// The unit that issues every TMA copy: the producer plane's first.
const PRODUCER: u32 = 256;
/// Output tile rows grouped together in the launch order, so that cubes running at the same
/// time share `rhs` tiles in L2.
const GROUP_M: usize = 8;

/// Elements of one stage of `lhs` and of `rhs`.
const A_STAGE: usize = TILE_M * TILE_K;
const B_STAGE: usize = TILE_N * TILE_K;
/// Columns of one output chunk: 64 half-precision elements, one 128-byte swizzle line.
pub(crate) const CHUNK_COLS: usize = 64;
/// Elements of one output chunk of a warpgroup's 64 rows.
const OUT_CHUNK: usize = 64 * CHUNK_COLS;

/// What the kernel is compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct KernelConfig {
    /// Whether `rhs` is K-major (a transposed `[n, k]` weight), else N-major.
    pub rhs_k_major: bool,
    /// Whether `lhs` follows the batch (else it is broadcast over it).
    pub lhs_batched: bool,
    /// Whether `rhs` follows the batch (else it is broadcast over it: a shared weight).
    pub rhs_batched: bool,
    /// Whether the operands are bf16 (else f16).
    pub bf16: bool,
    /// Whether the bias is the same for every row (stride 0 along `m`): then each unit reads it
    /// once per column.
    pub bias_row_broadcast: bool,
}

impl KernelConfig {
    /// The MMAs of one stage: four `m64n256k16` along `TILE_K`. A k16 step moves 32 bytes along
    /// a K-major 128-byte swizzle row, or two 8-row groups (2 x 1024 bytes) of an MN-major one.
    pub fn mma(self) -> MmaShape {
        MmaShape {
            n: TILE_N,
            ksteps: TILE_K / 16,
            bf16: self.bf16,
            b_mn_major: !self.rhs_k_major,
            a_step: 32 >> 4,
            b_step: if self.rhs_k_major { 32 >> 4 } else { 2048 >> 4 },
        }
    }

    /// Bytes one stage brings in.
    pub fn stage_bytes(self) -> u32 {
        ((A_STAGE + B_STAGE) * 2) as u32
    }
}

#[cube(launch_unchecked, address_type = "dynamic")]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fused_matmul_add_relu_hopper<E: Float>(
    lhs: &TensorMap<E, Tiled>,
    rhs: &TensorMap<E, Tiled>,
    bias: &Tensor<E>,
    output: &mut TensorMap<E, Tiled>,
    m: u32,
    n: u32,
    k: u32,
    batches: u32,
    #[comptime] config: KernelConfig,
    #[define(E)] _dtype: ElemType,
) {
    let m = m as usize;
    let n = n as usize;
    let tiles_m = m.div_ceil(TILE_M);
    let tiles_n = n.div_ceil(TILE_N);
    let tiles_per_batch = tiles_m * tiles_n;
    let num_tiles = tiles_per_batch * batches as usize;
    let k_blocks = (k as usize).div_ceil(TILE_K);

    let mut smem_a = Shared::<[E]>::new_aligned_slice(STAGES * A_STAGE, 1024usize);
    let mut smem_b = Shared::<[E]>::new_aligned_slice(STAGES * B_STAGE, 1024usize);
    // Per consumer warpgroup, two output chunks of 64 x 64, written from the registers and
    // stored by the TMA engine while the next chunk is written.
    let mut smem_c = Shared::<[E]>::new_aligned_slice(4 * OUT_CHUNK, 1024usize);

    let mut full = Sequence::<Shared<Barrier>>::new();
    let mut empty = Sequence::<Shared<Barrier>>::new();
    #[unroll]
    for _ in 0..STAGES {
        full.push(Barrier::shared_uninit());
        empty.push(Barrier::shared_uninit());
    }
    if UNIT_POS == 0 {
        #[unroll]
        for s in 0..STAGES {
            full.index(s).init_manual(1u32);
            empty.index(s).init_manual(256u32);
        }
        // The barriers' initialisation must be visible to the TMA engine.
        sync_async_proxy_shared();
    }
    sync_cube();

    if UNIT_POS == PRODUCER {
        let mut iteration = 0usize;
        let mut tile = CUBE_POS_X as usize;
        while tile < num_tiles {
            let (batch, row0, col0) = tile_origin(tile, tiles_per_batch, tiles_m, tiles_n);
            // A broadcast operand's map has one batch: coordinate 0.
            let mut lhs_batch = 0i32;
            let mut rhs_batch = 0i32;
            if comptime![config.lhs_batched] {
                lhs_batch = batch as i32;
            }
            if comptime![config.rhs_batched] {
                rhs_batch = batch as i32;
            }
            for kb in 0..k_blocks {
                let stage = iteration % STAGES;
                let round = iteration / STAGES;
                let k0 = (kb * TILE_K) as i32;
                #[unroll]
                for s in 0..STAGES {
                    if stage == s {
                        empty.index(s).wait_parity(((round & 1) ^ 1) as u32);
                        let barrier = full.index(s);
                        let a = &mut smem_a[s * A_STAGE..(s + 1) * A_STAGE];
                        barrier.tma_load_3d(lhs, a, lhs_batch, row0 as i32, k0);
                        if comptime![config.rhs_k_major] {
                            let b = &mut smem_b[s * B_STAGE..(s + 1) * B_STAGE];
                            barrier.tma_load_3d(rhs, b, rhs_batch, col0 as i32, k0);
                        } else {
                            // Four 64-column panels, each 64 k-lines of 128 bytes.
                            #[unroll]
                            for p in 0..TILE_N / PANEL {
                                let start = s * B_STAGE + p * PANEL * TILE_K;
                                let b = &mut smem_b[start..start + PANEL * TILE_K];
                                let col = (col0 + p * PANEL) as i32;
                                barrier.tma_load_3d(rhs, b, rhs_batch, k0, col);
                            }
                        }
                        barrier.arrive_and_expect_tx(1u32, comptime![config.stage_bytes()]);
                    }
                }
                iteration += 1;
            }
            tile += CUBE_COUNT_X as usize;
        }
    } else if UNIT_POS < PRODUCER {
        let warpgroup = UNIT_POS / 128;
        // Descriptors of stage 0; a stage is a whole number of 1024-byte swizzle atoms, so
        // moving to stage `s` only adds to the address field.
        let a_base = descriptor(shared_address::<E>(&smem_a), 16u64, 1024u64)
            + u64::cast_from(warpgroup * comptime![(64 * TILE_K * 2 / 16) as u32]);
        let b_base = if comptime![config.rhs_k_major] {
            descriptor(shared_address::<E>(&smem_b), 16u64, 1024u64)
        } else {
            // MN-major: 64-element panels 8 KiB apart (leading), 8-line groups 1 KiB apart.
            descriptor(
                shared_address::<E>(&smem_b),
                comptime![(PANEL * TILE_K * 2) as u64],
                1024u64,
            )
        };
        let mut iteration = 0usize;
        let mut tile = CUBE_POS_X as usize;
        while tile < num_tiles {
            let (batch, row0, col0) = tile_origin(tile, tiles_per_batch, tiles_m, tiles_n);
            let mut acc = Accumulator::new(0.0f32);
            for _ in 0..k_blocks {
                let stage = iteration % STAGES;
                let round = iteration / STAGES;
                #[unroll]
                for s in 0..STAGES {
                    if stage == s {
                        full.index(s).wait_parity((round & 1) as u32);
                        let a = a_base + comptime![(s * A_STAGE * 2 / 16) as u64];
                        let b = b_base + comptime![(s * B_STAGE * 2 / 16) as u64];
                        acc = mma_stage(acc, a, b, comptime![config.mma()]);
                        empty.index(s).arrive();
                    }
                }
                iteration += 1;
            }
            store_tile::<E>(
                acc,
                bias,
                output,
                &mut smem_c,
                batch,
                row0,
                col0,
                m,
                n,
                warpgroup,
                config,
            );
            tile += CUBE_COUNT_X as usize;
        }
    }
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
) -> (usize, usize, usize) {
    let batch = tile / tiles_per_batch;
    let in_batch = tile % tiles_per_batch;
    let per_group = GROUP_M * tiles_n;
    let first_m = (in_batch / per_group) * GROUP_M;
    let remaining_rows = tiles_m - first_m;
    let group_rows = select(remaining_rows < GROUP_M, remaining_rows, GROUP_M);
    let in_group = in_batch % per_group;
    let row0 = (first_m + in_group % group_rows) * TILE_M;
    let col0 = (in_group / group_rows) * TILE_N;
    (batch, row0, col0)
}

/// Adds the bias to the unit's accumulator elements, applies the ReLU, and stores the
/// warpgroup's 64 x 256 rows through shared memory in four 64 x 64 chunks: every unit writes
/// its elements of a chunk into a 128-byte-swizzled buffer (the layout the output's tensor map
/// reads, and free of bank conflicts for the accumulator's layout), then one unit has the TMA
/// engine store it, which also clips the rows and columns past the output's edges. Two buffers
/// per warpgroup alternate, so a chunk is written while the one before it is stored.
///
/// Unit `u` of a warpgroup holds, for `nth` in `0..128`, row `16 (u / 32) + (u % 32) / 4 +
/// 8 ((nth / 2) % 2)` and column `8 (nth / 4) + 2 (u % 4) + nth % 2` of its 64 x 256 tile.
#[cube]
#[allow(clippy::too_many_arguments)]
// A compile-time branch (`comptime!`) holds a run-time one; merged, both would be run-time.
#[allow(clippy::collapsible_if)]
fn store_tile<E: Float>(
    acc: Accumulator,
    bias: &Tensor<E>,
    output: &mut TensorMap<E, Tiled>,
    smem_c: &mut [E],
    batch: usize,
    row0: usize,
    col0: usize,
    m: usize,
    n: usize,
    warpgroup: u32,
    #[comptime] config: KernelConfig,
) {
    let rank = bias.rank();
    // The bias's batch offset: the contract gives it the output's batch dims, stride 0 where
    // it broadcasts.
    let mut remainder = batch;
    let mut bias_offset = 0;
    let mut dim = rank - 2;
    while dim > 0 {
        dim -= 1;
        let size = bias.shape(dim);
        bias_offset += (remainder % size) * bias.stride(dim);
        remainder /= size;
    }
    let (bias_sm, bias_sn) = (bias.stride(rank - 2), bias.stride(rank - 1));

    let unit = (UNIT_POS % 128) as usize;
    let local_row = (unit / 32) * 16 + (unit % 32) / 4;
    let local_col = 2 * (unit % 4);
    let row_base = row0 + warpgroup as usize * 64;
    #[unroll]
    for chunk in 0..comptime![TILE_N / CHUNK_COLS] {
        let buffer = (warpgroup as usize * 2 + comptime![chunk % 2]) * OUT_CHUNK;
        // The store issued from this buffer two chunks ago must have read it.
        if unit == 0 {
            wait_bulk_stores_read_but_one();
        }
        warpgroup_barrier(warpgroup);
        #[unroll]
        for jj in 0..comptime![CHUNK_COLS / 8] {
            #[unroll]
            for e in 0..2usize {
                let chunk_col = local_col + comptime![8 * jj + e];
                let col = col0 + comptime![chunk * CHUNK_COLS] + chunk_col;
                let mut column_bias = 0.0f32;
                if comptime![config.bias_row_broadcast] {
                    if col < n {
                        column_bias = f32::cast_from(bias[bias_offset + col * bias_sn]);
                    }
                }
                #[unroll]
                for h in 0..2usize {
                    let chunk_row = local_row + comptime![8 * h];
                    let nth = comptime![4 * (chunk * CHUNK_COLS / 8 + jj) + 2 * h + e];
                    let mut value = acc.extract(nth);
                    if comptime![config.bias_row_broadcast] {
                        value += column_bias;
                    } else {
                        let row = row_base + chunk_row;
                        if row < m && col < n {
                            value +=
                                f32::cast_from(bias[bias_offset + row * bias_sm + col * bias_sn]);
                        }
                    }
                    // 128-byte swizzle: the 16-byte group of a line moves by the line's index
                    // modulo 8.
                    let group = comptime![jj] ^ (chunk_row % 8);
                    let offset = chunk_row * CHUNK_COLS + group * 8 + (chunk_col % 8);
                    smem_c[buffer + offset] = E::cast_from(relu(value));
                }
            }
        }
        // The TMA engine reads shared memory through the async proxy.
        sync_async_proxy_shared();
        warpgroup_barrier(warpgroup);
        if unit == 0 {
            let _ = tma_store_3d(
                &smem_c[buffer..buffer + OUT_CHUNK],
                output,
                batch as i32,
                row_base as i32,
                (col0 + comptime![chunk * CHUNK_COLS]) as i32,
            );
        }
    }
}

/// Waits until every bulk store this unit committed but the newest has read its shared memory.
#[cube]
fn wait_bulk_stores_read_but_one() {
    gpu_asm!("cp.async.bulk.wait_group.read 1;");
}

/// Synchronises the 128 units of consumer warpgroup `warpgroup` (named barrier `1 +
/// warpgroup`; barrier 0 is the whole cube's, which the producer never joins).
#[cube]
fn warpgroup_barrier(warpgroup: u32) {
    let id = warpgroup + 1;
    gpu_asm!("bar.sync {id}, 128;", id = in(_) id);
}
