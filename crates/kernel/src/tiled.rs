//! A shared-memory tiled kernel with register blocking, for every runtime (no tensor cores):
//! each cube computes a `BLOCK_M x BLOCK_N` output tile, staging `BLOCK_K`-deep slices of `lhs`
//! and `rhs` through shared memory (converted to f32 once), and each unit accumulates a
//! `THREAD_M x THREAD_N` block of it in registers. Bias and ReLU are applied on the way out.

use crate::Operands;
use crate::common::{batch_offsets, tile_walk_setup};
use crate::epilogue::portable_relu;
use cubecl::client::Client;
use cubecl::ir::ElemType;
use cubecl::prelude::*;

/// Output rows per cube.
const BLOCK_M: usize = 64;
/// Output columns per cube.
const BLOCK_N: usize = 64;
/// Depth of the staged `k` slice.
const BLOCK_K: usize = 16;
/// Output rows per unit.
const THREAD_M: usize = 4;
/// Output columns per unit.
const THREAD_N: usize = 4;
/// Units per cube along columns and rows.
const UNITS_X: u32 = (BLOCK_N / THREAD_N) as u32;
const UNITS_Y: u32 = (BLOCK_M / THREAD_M) as u32;
const UNITS: usize = (UNITS_X * UNITS_Y) as usize;

#[cube(launch_unchecked, address_type = "dynamic")]
fn fused_matmul_add_relu_tiled<F: Float>(
    lhs: &Tensor<F>,
    rhs: &Tensor<F>,
    bias: &Tensor<F>,
    output: &mut Tensor<F>,
    #[define(F)] _dtype: ElemType,
) {
    let rank = output.rank();
    let m = output.shape(rank - 2);
    let n = output.shape(rank - 1);
    let k = lhs.shape(rank - 1);
    let tiles_m = m.div_ceil(BLOCK_M);
    let tiles_n = n.div_ceil(BLOCK_N);
    let tiles_per_batch = tiles_m * tiles_n;
    let num_tiles = tiles_per_batch * (output.len() / (m * n));

    let (lhs_sm, lhs_sk) = (lhs.stride(rank - 2), lhs.stride(rank - 1));
    let (rhs_sk, rhs_sn) = (rhs.stride(rank - 2), rhs.stride(rank - 1));
    let (bias_sm, bias_sn) = (bias.stride(rank - 2), bias.stride(rank - 1));

    // `lhs` is staged k-major (`[BLOCK_K][BLOCK_M]`) so that the inner loop reads a unit's rows
    // from consecutive addresses; `rhs` stays `[BLOCK_K][BLOCK_N]`.
    let mut lhs_tile = Shared::<[f32]>::new_slice(BLOCK_K * BLOCK_M);
    let mut rhs_tile = Shared::<[f32]>::new_slice(BLOCK_K * BLOCK_N);
    let mut acc = Array::<f32>::new(THREAD_M * THREAD_N);
    let mut lhs_frag = Array::<f32>::new(THREAD_M);
    let mut rhs_frag = Array::<f32>::new(THREAD_N);

    let unit = UNIT_POS as usize;
    let unit_row = UNIT_POS_Y as usize * THREAD_M;
    let unit_col = UNIT_POS_X as usize * THREAD_N;

    // Each cube walks tiles until none are left, so the grid fits the device's limits.
    let mut tile_id = CUBE_POS;
    while tile_id < num_tiles {
        let batch = tile_id / tiles_per_batch;
        let in_batch = tile_id % tiles_per_batch;
        let row0 = (in_batch / tiles_n) * BLOCK_M;
        let col0 = (in_batch % tiles_n) * BLOCK_N;

        let (lhs_offset, rhs_offset, bias_offset) = batch_offsets(lhs, rhs, bias, batch);

        #[unroll]
        for i in 0..THREAD_M * THREAD_N {
            acc[i] = 0.0;
        }

        let mut k0 = 0;
        while k0 < k {
            // Stage the `lhs` slice: element `e` of the tile is (row e / BLOCK_K, k e % BLOCK_K),
            // so consecutive units read consecutive `k` (coalesced for a row-major `lhs`).
            #[unroll]
            for i in 0..BLOCK_M * BLOCK_K / UNITS {
                let e = unit + i * UNITS;
                let row = e / BLOCK_K;
                let kk = e % BLOCK_K;
                let mut value = 0.0;
                if row0 + row < m && k0 + kk < k {
                    value = f32::cast_from(
                        lhs[lhs_offset + (row0 + row) * lhs_sm + (k0 + kk) * lhs_sk],
                    );
                }
                lhs_tile[kk * BLOCK_M + row] = value;
            }
            // Stage the `rhs` slice: consecutive units read consecutive columns.
            #[unroll]
            for i in 0..BLOCK_K * BLOCK_N / UNITS {
                let e = unit + i * UNITS;
                let kk = e / BLOCK_N;
                let col = e % BLOCK_N;
                let mut value = 0.0;
                if k0 + kk < k && col0 + col < n {
                    value = f32::cast_from(
                        rhs[rhs_offset + (k0 + kk) * rhs_sk + (col0 + col) * rhs_sn],
                    );
                }
                rhs_tile[kk * BLOCK_N + col] = value;
            }
            sync_cube();

            #[unroll]
            for kk in 0..BLOCK_K {
                #[unroll]
                for i in 0..THREAD_M {
                    lhs_frag[i] = lhs_tile[kk * BLOCK_M + unit_row + i];
                }
                #[unroll]
                for j in 0..THREAD_N {
                    rhs_frag[j] = rhs_tile[kk * BLOCK_N + unit_col + j];
                }
                #[unroll]
                for i in 0..THREAD_M {
                    #[unroll]
                    for j in 0..THREAD_N {
                        acc[i * THREAD_N + j] += lhs_frag[i] * rhs_frag[j];
                    }
                }
            }
            sync_cube();
            k0 += BLOCK_K;
        }

        let out_base = batch * m * n;
        #[unroll]
        for i in 0..THREAD_M {
            #[unroll]
            for j in 0..THREAD_N {
                let row = row0 + unit_row + i;
                let col = col0 + unit_col + j;
                if row < m && col < n {
                    let bias = f32::cast_from(bias[bias_offset + row * bias_sm + col * bias_sn]);
                    let value = portable_relu(acc[i * THREAD_N + j] + bias);
                    output[out_base + row * n + col] = F::cast_from(value);
                }
            }
        }
        tile_id += CUBE_COUNT;
    }
}

pub(crate) fn launch(client: &Client, ops: Operands, dtype: ElemType) {
    let (cube_count, address_type) = tile_walk_setup(client, &ops, dtype, BLOCK_M, BLOCK_N);

    // SAFETY: `crate::launch` validated the operands; every read is bounds-checked against the
    // logical shape and every write lands inside the dense output.
    unsafe {
        fused_matmul_add_relu_tiled::launch_unchecked(
            client,
            cube_count,
            CubeDim::new_2d(UNITS_X, UNITS_Y),
            address_type,
            ops.lhs.into_tensor_arg(),
            ops.rhs.into_tensor_arg(),
            ops.bias.into_tensor_arg(),
            ops.out.into_tensor_arg(),
            dtype,
        );
    }
}
