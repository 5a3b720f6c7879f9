//! What fmar's own kernels share: the batch offsets of strided operands, the host-side grid and
//! address-width setup of a kernel that walks output tiles, and the device's multiprocessors.

use crate::Operands;
use cubecl::client::Client;
use cubecl::ir::{AddressType, ElemType};
use cubecl::prelude::*;
use cubecl::server::CubeCountSelection;

/// The element offset of batch `batch` (the output's batch dims flattened, last dim fastest) in
/// `tensor` (of any element type, vectors included). The contract gives every operand the
/// output's batch dims, and broadcast operands stride 0 on theirs, so they need no special case.
#[cube]
pub(crate) fn batch_offset<T: CubePrimitive>(tensor: &Tensor<T>, batch: usize) -> usize {
    let mut remainder = batch;
    let mut offset = 0;
    let mut dim = tensor.rank() - 2;
    while dim > 0 {
        dim -= 1;
        let size = tensor.shape(dim);
        offset += (remainder % size) * tensor.stride(dim);
        remainder /= size;
    }
    offset
}

/// [`batch_offset`] of `lhs`, `rhs` and `bias`.
#[cube]
pub(crate) fn batch_offsets<F: Float>(
    lhs: &Tensor<F>,
    rhs: &Tensor<F>,
    bias: &Tensor<F>,
    batch: usize,
) -> (usize, usize, usize) {
    (
        batch_offset::<F>(lhs, batch),
        batch_offset::<F>(rhs, batch),
        batch_offset::<F>(bias, batch),
    )
}

/// The launch setup of a kernel whose cubes walk `tile_m x tile_n` output tiles until none are
/// left: a grid that covers the tiles once within the device's limits (cubecl spreads it over
/// x, y and z; the kernel loops over whatever the grid does not reach), and an address width
/// for every operand and for the tile arithmetic, which spans up to a tile row and column per
/// batch past the output's end.
pub(crate) fn tile_walk_setup(
    client: &Client,
    ops: &Operands,
    dtype: ElemType,
    tile_m: usize,
    tile_n: usize,
) -> (CubeCount, AddressType) {
    let out_len: usize = ops.out.shape.iter().product();
    let rank = ops.out.shape.len();
    let (m, n) = (ops.out.shape[rank - 2], ops.out.shape[rank - 1]);
    let num_tiles = m.div_ceil(tile_m) * n.div_ceil(tile_n) * (out_len / (m * n));
    let cube_count =
        CubeCountSelection::new(client, num_tiles.min(u32::MAX as usize) as u32).cube_count();
    (
        cube_count,
        address_type(ops, dtype, num_tiles * tile_m * tile_n),
    )
}

/// The address width that reaches every element of the four operands and every index below
/// `len` (the kernel's own arithmetic, or a buffer of its own).
pub(crate) fn address_type(ops: &Operands, dtype: ElemType, len: usize) -> AddressType {
    [&ops.lhs, &ops.rhs, &ops.bias, &ops.out]
        .into_iter()
        .map(|binding| binding.required_address_type(dtype.size()))
        .max()
        .unwrap_or(AddressType::U32)
        .max(AddressType::from_len(len))
}

/// The device's multiprocessors, which the schedules spread work over.
pub(crate) fn processors(client: &Client) -> usize {
    client
        .properties()
        .hardware
        .num_streaming_multiprocessors
        .unwrap_or(1) as usize
}
