//! The baseline kernel, safe for any size: one unit per output element, every
//! operand read from global memory through its strides, no tiling.

use crate::Operands;
use crate::common::{batch_offsets, tile_walk_setup};
use crate::epilogue::portable_relu;
use cubecl::client::Client;
use cubecl::ir::ElemType;
use cubecl::prelude::*;

/// Side length of the square output tile one cube of the naive kernel computes.
const NAIVE_TILE: u32 = 16;

/// Each cube walks output tiles `CUBE_POS, CUBE_POS + CUBE_COUNT, ...` until it runs out, so the
/// grid can stay within the device's limits (65,535 per axis on CUDA and wgpu) whatever the
/// batch count or the output width (a grid with batches on z and columns on y would fail past
/// those limits).
#[cube(launch_unchecked, address_type = "dynamic")]
fn fused_matmul_add_relu_naive<F: Float>(
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
    let tile = NAIVE_TILE as usize;
    let tiles_m = m.div_ceil(tile);
    let tiles_n = n.div_ceil(tile);
    let tiles_per_batch = tiles_m * tiles_n;
    let num_tiles = tiles_per_batch * (output.len() / (m * n));

    let (lhs_sm, lhs_sk) = (lhs.stride(rank - 2), lhs.stride(rank - 1));
    let (rhs_sk, rhs_sn) = (rhs.stride(rank - 2), rhs.stride(rank - 1));
    let (bias_sm, bias_sn) = (bias.stride(rank - 2), bias.stride(rank - 1));

    let mut tile_id = CUBE_POS;
    while tile_id < num_tiles {
        let batch = tile_id / tiles_per_batch;
        let in_batch = tile_id % tiles_per_batch;
        // Adjacent units take adjacent columns, so reads of `rhs` and writes of `output` coalesce.
        let row = (in_batch / tiles_n) * tile + UNIT_POS_Y as usize;
        let col = (in_batch % tiles_n) * tile + UNIT_POS_X as usize;

        if row < m && col < n {
            let (lhs_offset, rhs_offset, bias_offset) = batch_offsets(lhs, rhs, bias, batch);

            // Half-precision operands accumulate in f32: an f16 accumulator drifts visibly by
            // k = 4096.
            let mut sum = f32::new(0.0);
            let lhs_row = lhs_offset + row * lhs_sm;
            let rhs_col = rhs_offset + col * rhs_sn;
            for kk in 0..k {
                let a = f32::cast_from(lhs[lhs_row + kk * lhs_sk]);
                let b = f32::cast_from(rhs[rhs_col + kk * rhs_sk]);
                sum += a * b;
            }
            let bias = f32::cast_from(bias[bias_offset + row * bias_sm + col * bias_sn]);
            let value = portable_relu(sum + bias);
            output[batch * m * n + row * n + col] = F::cast_from(value);
        }
        tile_id += CUBE_COUNT;
    }
}

pub(crate) fn launch(client: &Client, ops: Operands, dtype: ElemType) {
    let tile = NAIVE_TILE as usize;
    let (cube_count, address_type) = tile_walk_setup(client, &ops, dtype, tile, tile);

    // SAFETY: `launch` validated the shapes and that every stride stays inside its buffer; the
    // kernel only reads `lhs`, `rhs`, `bias` at in-bounds coordinates and writes `out` densely.
    unsafe {
        fused_matmul_add_relu_naive::launch_unchecked(
            client,
            cube_count,
            CubeDim::new_2d(NAIVE_TILE, NAIVE_TILE),
            address_type,
            ops.lhs.into_tensor_arg(),
            ops.rhs.into_tensor_arg(),
            ops.bias.into_tensor_arg(),
            ops.out.into_tensor_arg(),
            dtype,
        );
    }
}
