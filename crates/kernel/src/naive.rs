//! The seed's instructional kernel, made safe for any size: one unit per output element, every
//! operand read from global memory through its strides, no tiling.

use super::Operands;
use cubecl::client::Client;
use cubecl::ir::{AddressType, ElemType};
use cubecl::prelude::*;
use cubecl::server::CubeCountSelection;

/// Side length of the square output tile one cube of the naive kernel computes.
pub const NAIVE_TILE: u32 = 16;

/// Each cube walks output tiles `CUBE_POS, CUBE_POS + CUBE_COUNT, ...` until it runs out, so the
/// grid can stay within the device's limits (65,535 per axis on CUDA and wgpu) whatever the
/// batch count or the output width; the seed put batches on grid z and columns on grid y and
/// failed past those limits.
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
            // Walk the batch index over the output's batch dims, last dim fastest. Broadcast
            // operands carry stride 0 on their broadcast dims, so they need no special case.
            let mut remainder = batch;
            let mut lhs_offset = 0;
            let mut rhs_offset = 0;
            let mut bias_offset = 0;
            let mut dim = rank - 2;
            while dim > 0 {
                dim -= 1;
                let size = output.shape(dim);
                let coordinate = remainder % size;
                remainder /= size;
                lhs_offset += coordinate * lhs.stride(dim);
                rhs_offset += coordinate * rhs.stride(dim);
                bias_offset += coordinate * bias.stride(dim);
            }

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
            let biased = sum + f32::cast_from(bias[bias_offset + row * bias_sm + col * bias_sn]);
            output[batch * m * n + row * n + col] = F::cast_from(crate::relu(biased));
        }
        tile_id += CUBE_COUNT;
    }
}

pub(crate) fn launch(client: &Client, ops: Operands, dtype: ElemType) {
    let out_len: usize = ops.out.shape.iter().product();
    let rank = ops.out.shape.len();
    let (m, n) = (ops.out.shape[rank - 2], ops.out.shape[rank - 1]);
    let tile = NAIVE_TILE as usize;
    let num_tiles = m.div_ceil(tile) * n.div_ceil(tile) * (out_len / (m * n));
    // The grid only has to cover the tiles once; cubecl spreads it over x, y and z within the
    // device's limits and the kernel loops over whatever the grid does not reach.
    let cube_count =
        CubeCountSelection::new(client, num_tiles.min(u32::MAX as usize) as u32).cube_count();
    let cube_dim = CubeDim::new_2d(NAIVE_TILE, NAIVE_TILE);
    let address_type = [&ops.lhs, &ops.rhs, &ops.bias, &ops.out]
        .into_iter()
        .map(|binding| binding.required_address_type(dtype.size()))
        .max()
        .unwrap_or(AddressType::U32)
        // Tile and batch arithmetic spans the whole output (`num_tiles * tile^2` can exceed
        // `out_len` by up to a tile row and column per batch).
        .max(AddressType::from_len(num_tiles * tile * tile));

    // SAFETY: `launch` validated the shapes and that every stride stays inside its buffer; the
    // kernel only reads `lhs`, `rhs`, `bias` at in-bounds coordinates and writes `out` densely.
    unsafe {
        fused_matmul_add_relu_naive::launch_unchecked(
            client,
            cube_count,
            cube_dim,
            address_type,
            ops.lhs.into_tensor_arg(),
            ops.rhs.into_tensor_arg(),
            ops.bias.into_tensor_arg(),
            ops.out.into_tensor_arg(),
            dtype,
        );
    }
}
