//! A K-major copy of an operand the TF32 MMAs cannot read as it is. Half-precision MMAs read
//! either major order through their transpose bits; TF32 ones read K-major operands only, so an
//! f32 `rhs` in Burn's `Linear` layout (`[d_in, d_out]`, N-major) or an M-major `lhs` (a
//! transposed view, as in the backward's `lhsᵀ @ grad`) is first copied transposed. The copy
//! reads and writes each element once: at `4096 x 4096` f32, 128 MiB, measured on an H200 at
//! about a tenth of the product's time (35 us against 350).

use super::layout::MapLayout;
use cubecl::client::Client;
use cubecl::ir::{AddressType, ElemType};
use cubecl::prelude::*;
use cubecl::zspace::Tiling;

/// Rows and columns of the square block one cube transposes through shared memory.
const BLOCK: usize = 32;
/// Rows each unit moves: a cube is `BLOCK x BLOCK / ROWS_PER_UNIT` units.
const ROWS_PER_UNIT: usize = 4;

/// `output[b, c, r] = input[b, r, c]` over `input`'s `[batch, rows, cols]` (stride 1 along
/// `cols`), `output` laid out `[batch, cols, rows]` with its own strides (stride 1 along the
/// rows). One cube per `BLOCK x BLOCK` block of one batch: it reads the block's rows and writes
/// its columns, both coalesced, through a padded shared-memory block.
#[cube(launch_unchecked, address_type = "dynamic")]
fn transpose_blocks<E: Numeric>(
    input: &Tensor<E>,
    output: &mut Tensor<E>,
    #[define(E)] _dtype: ElemType,
) {
    let (rows, cols) = (input.shape(1), input.shape(2));
    // One padding column, so that a column of the block spans every bank.
    let mut block = Shared::<[E]>::new_slice(comptime![BLOCK * (BLOCK + 1)]);
    let batch = CUBE_POS_Z as usize;
    let row0 = CUBE_POS_Y as usize * BLOCK;
    let col0 = CUBE_POS_X as usize * BLOCK;
    let x = UNIT_POS_X as usize;
    let y = UNIT_POS_Y as usize;
    let step = comptime![BLOCK / ROWS_PER_UNIT];
    #[unroll]
    for i in 0..ROWS_PER_UNIT {
        let (row, col) = (row0 + y + i * step, col0 + x);
        if row < rows && col < cols {
            block[(y + i * step) * comptime![BLOCK + 1] + x] =
                input[batch * input.stride(0) + row * input.stride(1) + col];
        }
    }
    sync_cube();
    let (batch_stride, col_stride) = (output.stride(0), output.stride(1));
    #[unroll]
    for i in 0..ROWS_PER_UNIT {
        let (col, row) = (col0 + y + i * step, row0 + x);
        if row < rows && col < cols {
            output[batch * batch_stride + col * col_stride + row] =
                block[x * comptime![BLOCK + 1] + y + i * step];
        }
    }
}

/// Why the operand `layout` describes cannot be copied K-major, if it cannot: the copy's grid
/// takes blocks of rows and batches along its two shorter axes.
pub(crate) fn copy_unavailability(layout: &MapLayout) -> Option<String> {
    let [batch, rows, _] = layout.shape;
    let max_cubes = u32::from(u16::MAX) as usize;
    (rows.div_ceil(BLOCK) > max_cubes || batch > max_cubes).then(|| {
        format!(
            "an f32 operand of {batch} batches of {rows} rows read transposed (the K-major copy \
             takes at most {max_cubes} of each, in blocks of {BLOCK} rows)"
        )
    })
}

/// A K-major copy of the operand `binding` reads through `layout` (`[batch, rows, cols]`, the
/// rows K): a fresh buffer `[batch, cols, rows]` whose row stride is padded to 16 bytes, as the
/// TMA engine needs, and the layout that reads it. The layout must pass
/// [`copy_unavailability`].
pub(crate) fn k_major_copy(
    client: &Client,
    binding: &TensorBinding,
    layout: &MapLayout,
    dtype: ElemType,
) -> (TensorBinding, MapLayout) {
    debug_assert!(copy_unavailability(layout).is_none());
    let [batch, rows, cols] = layout.shape;
    let size = dtype.size();
    let padded_rows = rows.next_multiple_of(16 / size);
    let copy_len = batch * cols * padded_rows;
    let source = TensorBinding {
        handle: binding.handle.clone(),
        strides: layout.strides.into(),
        shape: layout.shape.into(),
        tiling: Tiling::default(),
    };
    let copy = TensorBinding {
        handle: client.empty(copy_len * size).binding(),
        strides: [cols * padded_rows, padded_rows, 1].into(),
        shape: [batch, cols, rows].into(),
        tiling: Tiling::default(),
    };
    let address_type = source
        .required_address_type(size)
        .max(AddressType::from_len(copy_len));
    // SAFETY: `layout` was built from `binding`'s checked strides, so every in-bounds index of
    // the source view is inside its buffer; the copy's buffer holds its whole view.
    unsafe {
        transpose_blocks::launch_unchecked(
            client,
            CubeCount::Static(
                cols.div_ceil(BLOCK) as u32,
                rows.div_ceil(BLOCK) as u32,
                batch as u32,
            ),
            CubeDim::new_2d(BLOCK as u32, (BLOCK / ROWS_PER_UNIT) as u32),
            address_type,
            source.into_tensor_arg(),
            copy.clone().into_tensor_arg(),
            dtype,
        );
    }
    let layout = MapLayout {
        shape: [batch, cols, rows],
        strides: [cols * padded_rows, padded_rows, 1],
        batched: layout.batched,
    };
    (copy, layout)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(batch: usize, rows: usize, cols: usize) -> MapLayout {
        MapLayout {
            shape: [batch, rows, cols],
            strides: [rows * cols, cols, 1],
            batched: batch > 1,
        }
    }

    #[test]
    fn the_copy_declines_only_past_its_grid() {
        let max = u32::from(u16::MAX) as usize;
        assert_eq!(copy_unavailability(&layout(1, 4096, 4096)), None);
        assert_eq!(copy_unavailability(&layout(max, BLOCK * max, 8)), None);
        // The columns run along the grid's long axis: any count.
        assert_eq!(copy_unavailability(&layout(1, 8, 1 << 31)), None);
        let reason = copy_unavailability(&layout(1, BLOCK * max + 1, 8)).unwrap();
        assert!(
            reason.contains(&format!("{} rows", BLOCK * max + 1)),
            "{reason}"
        );
        assert!(copy_unavailability(&layout(max + 1, 8, 8)).is_some());
    }
}
