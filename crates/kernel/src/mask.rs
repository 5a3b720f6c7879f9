//! The ReLU mask, packed one bit per output element, and the backward's first step, which
//! turns the output gradient into the pre-activation gradient in one pass.
//!
//! The mask of an output `[B.., m, n]` is `[B.., m, ceil(n / 32)]` `u32` words, contiguous: bit
//! `j % 32` of word `[b.., i, j / 32]` is set when `out[b.., i, j]` is not `<= 0` (positive, or
//! NaN), which is where Burn's `relu_backward` lets the gradient through. The bits past `n` in
//! a row's last word are zero.
//!
//! - [`launch_pack`] writes the mask from a finished output (the variants whose epilogue does
//!   not write it);
//! - [`launch_masked_gradient`] computes `grad ⊙ mask` and, optionally, its column sums (the
//!   gradient of a bias shared by every row) from the same reads.

use crate::LaunchError;
use crate::common::batch_offset;
use crate::epilogue::mask_bit;
use cubecl::client::Client;
use cubecl::ir::{AddressType, ElemType};
use cubecl::prelude::*;
use cubecl::server::CubeCountSelection;

/// Output columns per mask word.
pub const MASK_WORD_BITS: usize = 32;

/// Units per cube of [`pack_relu_mask`].
const PACK_UNITS: u32 = 256;
/// Units of a [`masked_gradient`] cube along a row (each takes one vector of columns) and
/// across rows.
const GRADIENT_UNITS_X: u32 = 32;
const GRADIENT_UNITS_Y: u32 = 8;
/// Rows each unit of [`masked_gradient`] takes per row block.
const ROWS_PER_UNIT: usize = 8;
/// Rows of one row block of [`masked_gradient`].
const BLOCK_ROWS: usize = GRADIENT_UNITS_Y as usize * ROWS_PER_UNIT;
/// At most this many row blocks of cubes, each walking every `count`-th block: bounds the
/// partial column sums to `MAX_ROW_CUBES x n` f32.
const MAX_ROW_CUBES: usize = 512;

/// The mask's shape for an output of shape `out_shape`.
pub fn mask_shape(out_shape: &[usize]) -> Vec<usize> {
    let mut shape = out_shape.to_vec();
    if let Some(last) = shape.last_mut() {
        *last = last.div_ceil(MASK_WORD_BITS);
    }
    shape
}

/// Bit `i` of a row's `word` for each column: set where `out` is not `<= 0`.
#[cube(launch_unchecked, address_type = "dynamic")]
fn pack_relu_mask<F: Float>(
    out: &Tensor<F>,
    mask: &mut Tensor<u32>,
    n: usize,
    words: usize,
    #[define(F)] _dtype: ElemType,
) {
    let total = mask.len();
    let mut index = CUBE_POS * CUBE_DIM as usize + UNIT_POS as usize;
    while index < total {
        let row = index / words;
        let first = (index % words) * MASK_WORD_BITS;
        let mut bits = 0u32;
        for i in 0..MASK_WORD_BITS {
            let col = first + i;
            if col < n {
                let value = out[row * n + col];
                bits |= mask_bit::<F>(value) << i as u32;
            }
        }
        mask[index] = bits;
        index += CUBE_COUNT * CUBE_DIM as usize;
    }
}

/// `out = grad ⊙ mask` over `rows x n` (`out` contiguous, read as vectors of `N` columns), and,
/// under `column_sums`, each cube row's sum of `out` per column, in f32, into `partials`
/// (`[cube rows, n]`): the bias gradient once the cube rows are added.
///
/// `grad` is read as vectors too when contiguous; under `strided_grad` (then `N = 1`) it is read
/// through its own strides, so a broadcast gradient (the gradient of a sum is one value
/// expanded with stride 0) is never materialized.
///
/// Cube `(x, y)` takes column vectors `32 x ..` of every `CUBE_COUNT_Y`-th block of 64 rows
/// from block `y`; its 8 unit rows take 8 rows each and add their sums in shared memory.
#[cube(launch_unchecked, address_type = "dynamic")]
#[allow(clippy::too_many_arguments)]
fn masked_gradient<F: Float, N: Size>(
    grad: &Tensor<Vector<F, N>>,
    mask: &Tensor<u32>,
    out: &mut Tensor<Vector<F, N>>,
    partials: &mut Tensor<Vector<f32, N>>,
    rows: usize,
    row_vectors: usize,
    words: usize,
    #[comptime] column_sums: bool,
    #[comptime] strided_grad: bool,
    #[define(F)] _dtype: ElemType,
) {
    let size = grad.vector_size();
    let rank = grad.rank();
    let vector = CUBE_POS_X as usize * GRADIENT_UNITS_X as usize + UNIT_POS_X as usize;
    let word = vector * size / MASK_WORD_BITS;
    let shift = (vector * size % MASK_WORD_BITS) as u32;
    let zero = F::from_int(0);
    let mut sum = Vector::<f32, N>::new(0.0);

    let mut block = CUBE_POS_Y as usize;
    while block < rows.div_ceil(BLOCK_ROWS) {
        #[unroll]
        for i in 0..ROWS_PER_UNIT {
            let row = block * BLOCK_ROWS + UNIT_POS_Y as usize * ROWS_PER_UNIT + i;
            if row < rows && vector < row_vectors {
                let bits = mask[row * words + word] >> shift;
                let mut value = grad[row * row_vectors + vector];
                if comptime![strided_grad] {
                    value = grad[row_offset::<F, N>(grad, row) + vector * grad.stride(rank - 1)];
                }
                #[unroll]
                for e in 0..size {
                    let keep = (bits >> e as u32) & 1u32 == 1u32;
                    value.insert(e, select(keep, value.extract(e), zero));
                }
                out[row * row_vectors + vector] = value;
                if comptime![column_sums] {
                    sum += Vector::<f32, N>::cast_from(value);
                }
            }
        }
        block += CUBE_COUNT_Y as usize;
    }

    if comptime![column_sums] {
        let mut staged = Shared::<[Vector<f32, N>]>::new_slice(comptime![
            (GRADIENT_UNITS_X * GRADIENT_UNITS_Y) as usize
        ]);
        staged[UNIT_POS as usize] = sum;
        sync_cube();
        if UNIT_POS_Y == 0 {
            let mut total = sum;
            for y in 1..GRADIENT_UNITS_Y as usize {
                total += staged[y * GRADIENT_UNITS_X as usize + UNIT_POS_X as usize];
            }
            if vector < row_vectors {
                partials[CUBE_POS_Y as usize * row_vectors + vector] = total;
            }
        }
    }
}

/// Checks that `mask` has the mask's layout for an output of shape `out_shape`.
pub(crate) fn check_mask(mask: &TensorBinding, out_shape: &[usize]) -> Result<(), LaunchError> {
    check_layout("mask", &mask.shape, &mask.strides, &mask_shape(out_shape))
}

/// The offset of row `row` of `tensor` (its dims but the last flattened, last fastest),
/// through its strides: the batch's offset and the row's within it.
#[cube]
fn row_offset<F: Float, N: Size>(tensor: &Tensor<Vector<F, N>>, row: usize) -> usize {
    let rank = tensor.rank();
    let m = tensor.shape(rank - 2);
    batch_offset::<Vector<F, N>>(tensor, row / m) + (row % m) * tensor.stride(rank - 2)
}

/// `sums[col] = Σ_r partials[r, col]` over `rows` rows (the cube rows of [`masked_gradient`]),
/// converted to `F`: the bias gradient. A cube takes 32 columns; its 8 unit rows each add every
/// 8th row, then one adds their 8 sums, so the order is fixed and the result deterministic, and
/// each unit waits on an eighth of the loads (one unit per column was latency-bound: 9.6 us for
/// 64 x 4096 on the H200).
#[cube(launch_unchecked, address_type = "dynamic")]
fn sum_column_partials<F: Float>(
    partials: &Tensor<f32>,
    sums: &mut Tensor<F>,
    rows: usize,
    #[define(F)] _dtype: ElemType,
) {
    let n = sums.len();
    let (units_x, units_y) = (GRADIENT_UNITS_X as usize, GRADIENT_UNITS_Y as usize);
    let mut staged =
        Shared::<[f32]>::new_slice(comptime![(GRADIENT_UNITS_X * GRADIENT_UNITS_Y) as usize]);
    let mut block = CUBE_POS;
    while block < n.div_ceil(units_x) {
        let col = block * units_x + UNIT_POS_X as usize;
        let mut total = 0.0f32;
        if col < n {
            let mut row = UNIT_POS_Y as usize;
            while row < rows {
                total += partials[row * n + col];
                row += units_y;
            }
        }
        staged[UNIT_POS as usize] = total;
        sync_cube();
        if UNIT_POS_Y == 0 && col < n {
            let mut sum = 0.0f32;
            for y in 0..units_y {
                sum += staged[y * units_x + UNIT_POS_X as usize];
            }
            sums[col] = F::cast_from(sum);
        }
        // The next block's writes to `staged` wait until this one's sums have read it.
        sync_cube();
        block += CUBE_COUNT;
    }
}

/// Writes the ReLU mask of `out` (`[B.., m, n]`, contiguous) into `mask` (`[B.., m, ceil(n /
/// 32)]` `u32`, contiguous). Nothing is launched for an empty output.
pub(crate) fn launch_pack(
    client: &Client,
    out: TensorBinding,
    mask: TensorBinding,
    dtype: ElemType,
) -> Result<(), LaunchError> {
    check_layout("out", &out.shape, &out.strides, &out.shape)?;
    check_layout("mask", &mask.shape, &mask.strides, &mask_shape(&out.shape))?;
    let words_total: usize = mask.shape.iter().product();
    if words_total == 0 || out.shape.contains(&0) {
        return Ok(());
    }
    let n = out.shape[out.shape.len() - 1];
    let words = mask.shape[mask.shape.len() - 1];
    let cubes = words_total.div_ceil(PACK_UNITS as usize);
    let cube_count = CubeCountSelection::new(client, cubes.min(u32::MAX as usize) as u32);
    let address_type = out
        .required_address_type(dtype.size())
        .max(AddressType::from_len(cubes * PACK_UNITS as usize));
    // SAFETY: both tensors are contiguous with the shapes checked above; every read is of a
    // column below `n` in a row of the output, every write of a word of the mask.
    unsafe {
        pack_relu_mask::launch_unchecked(
            client,
            cube_count.cube_count(),
            CubeDim::new_1d(PACK_UNITS),
            address_type,
            out.into_tensor_arg(),
            mask.into_tensor_arg(),
            n,
            words,
            dtype,
        );
    }
    Ok(())
}

/// The operands of [`launch_masked_gradient`].
#[derive(Debug, Clone)]
pub struct MaskedGradient {
    /// The output gradient, `[B.., m, n]`, any strides within its buffer (a broadcast view is
    /// read in place).
    pub grad: TensorBinding,
    /// The forward's ReLU mask, `[B.., m, ceil(n / 32)]` `u32`, contiguous, as
    /// [`launch_keeping_mask`](crate::launch_keeping_mask) writes it: bit `j % 32` of word
    /// `[b.., i, j / 32]` set where the output was not `<= 0`.
    pub mask: TensorBinding,
    /// `grad ⊙ mask`, `[B.., m, n]`, contiguous, in `grad`'s dtype.
    pub out: TensorBinding,
    /// Where the column sums of `out` go, when wanted: `[n]`, contiguous, in `grad`'s dtype
    /// (summed in f32, in a fixed order): the gradient of a bias shared by every row.
    pub column_sums: Option<TensorBinding>,
}

/// How many rows of partial column sums [`masked_gradient`] writes for a gradient of `shape`.
fn column_sum_rows(shape: &[usize]) -> usize {
    let n = shape.last().copied().unwrap_or(0);
    let rows = shape.iter().product::<usize>().checked_div(n).unwrap_or(0);
    rows.div_ceil(BLOCK_ROWS).clamp(1, MAX_ROW_CUBES)
}

/// `out = grad ⊙ mask` in one pass over `grad`, with the column sums of `out` from the same
/// reads when `column_sums` is given (see [`MaskedGradient`]). `grad` may have any strides
/// within its buffer (a broadcast view is read in place); the others must be contiguous with
/// the shapes [`MaskedGradient`] states. Otherwise nothing is launched and the error names the
/// operand. `dtype` is `grad`'s (`f32`, `f16` or `bf16`).
pub fn launch_masked_gradient(
    client: &Client,
    operands: MaskedGradient,
    dtype: ElemType,
) -> Result<(), LaunchError> {
    let MaskedGradient {
        grad,
        mask,
        out,
        column_sums,
    } = operands;
    crate::contract::check_dtype(dtype)?;
    if grad.strides.len() != grad.shape.len() {
        return Err(LaunchError::StrideCount {
            operand: "grad",
            shape: grad.shape.to_vec(),
            strides: grad.strides.to_vec(),
        });
    }
    crate::contract::check_in_bounds("grad", &grad, dtype.size())?;
    if grad.shape.len() < 2 {
        return Err(LaunchError::Rank {
            operand: "grad",
            shape: grad.shape.to_vec(),
            expected_rank: 2,
        });
    }
    check_layout("mask", &mask.shape, &mask.strides, &mask_shape(&grad.shape))?;
    crate::contract::check_in_bounds("mask", &mask, size_of::<u32>())?;
    check_layout("out", &out.shape, &out.strides, &grad.shape)?;
    crate::contract::check_in_bounds("out", &out, dtype.size())?;
    let grad_contiguous = check_layout("grad", &grad.shape, &grad.strides, &grad.shape).is_ok();
    let n = grad.shape[grad.shape.len() - 1];
    let rows = grad
        .shape
        .iter()
        .product::<usize>()
        .checked_div(n)
        .unwrap_or(0);
    let partial_rows = column_sum_rows(&grad.shape);
    if let Some(sums) = &column_sums {
        check_layout("column_sums", &sums.shape, &sums.strides, &[n])?;
        crate::contract::check_in_bounds("column_sums", sums, dtype.size())?;
    }
    if n == 0 {
        return Ok(());
    }
    if rows == 0 {
        if let Some(sums) = column_sums {
            // No rows: the sums are zeros, from the finishing kernel over no rows.
            launch_column_sums(client, None, sums, 0, dtype);
        }
        return Ok(());
    }

    // Vectors as wide as a row allows (16 bytes at most), so each unit moves whole vectors;
    // a vector never straddles two mask words, since its width divides 32.
    // A strided `grad` is read element by element.
    let vector_size = [8usize, 4, 2, 1]
        .into_iter()
        .find(|&size| n % size == 0 && size * dtype.size() <= 16 && grad_contiguous)
        .unwrap_or(1);
    let row_vectors = n / vector_size;
    let words = n.div_ceil(MASK_WORD_BITS);
    let cube_count = CubeCount::Static(
        row_vectors.div_ceil(GRADIENT_UNITS_X as usize) as u32,
        partial_rows as u32,
        1,
    );
    let address_type = grad
        .required_address_type(dtype.size())
        .max(mask.required_address_type(size_of::<u32>()))
        .max(out.required_address_type(dtype.size()));
    let wants_sums = column_sums.is_some();
    // The cube rows' partial sums, `[partial_rows, n]` f32. Without column sums the kernel
    // never touches its `partials` argument, which then is one f32 vector: a device may refuse
    // a binding shorter than one element of the array the shader declares (wgpu does), so no
    // other operand's buffer stands in (an f16 output of four elements is 8 bytes, one vector
    // of four f32 16).
    let partials_shape = match &column_sums {
        Some(_) => [partial_rows, n],
        None => [1, vector_size],
    };
    let partials = TensorBinding {
        handle: client
            .empty(partials_shape[0] * partials_shape[1] * size_of::<f32>())
            .binding(),
        shape: partials_shape.into(),
        strides: [partials_shape[1], 1].into(),
        tiling: Default::default(),
    };
    // SAFETY: every operand is contiguous with the shape checked above; reads and writes are
    // guarded by `row < rows` and `vector < row_vectors`, and the mask word of a vector lies
    // in its row.
    unsafe {
        masked_gradient::launch_unchecked(
            client,
            cube_count,
            CubeDim::new_2d(GRADIENT_UNITS_X, GRADIENT_UNITS_Y),
            address_type,
            vector_size,
            grad.into_tensor_arg(),
            mask.into_tensor_arg(),
            out.into_tensor_arg(),
            partials.clone().into_tensor_arg(),
            rows,
            row_vectors,
            words,
            wants_sums,
            !grad_contiguous,
            dtype,
        );
    }
    if let Some(sums) = column_sums {
        launch_column_sums(client, Some(partials), sums, partial_rows, dtype);
    }
    Ok(())
}

/// Launches [`sum_column_partials`] over `rows` rows of `partials` (none: zeros) into `sums`.
fn launch_column_sums(
    client: &Client,
    partials: Option<TensorBinding>,
    sums: TensorBinding,
    rows: usize,
    dtype: ElemType,
) {
    let n = sums.shape[0];
    // With no rows nothing is read: a one-element buffer stands in.
    let partials = partials.unwrap_or_else(|| TensorBinding {
        handle: client.empty(size_of::<f32>()).binding(),
        shape: [1].into(),
        strides: [1].into(),
        tiling: Default::default(),
    });
    let cubes = n.div_ceil(GRADIENT_UNITS_X as usize);
    let cube_count = CubeCountSelection::new(client, cubes.min(u32::MAX as usize) as u32);
    let address_type =
        AddressType::from_len((rows.max(1) * n).max(cubes * GRADIENT_UNITS_X as usize));
    // SAFETY: `partials` holds `rows x n` f32 (nothing is read when `rows` is 0), `sums` `n`
    // elements; every index is below those.
    unsafe {
        sum_column_partials::launch_unchecked(
            client,
            cube_count.cube_count(),
            CubeDim::new_2d(GRADIENT_UNITS_X, GRADIENT_UNITS_Y),
            address_type,
            partials.into_tensor_arg(),
            sums.into_tensor_arg(),
            rows,
            dtype,
        );
    }
}

/// `binding` has shape `expected` and row-major contiguous strides.
fn check_layout(
    operand: &'static str,
    shape: &[usize],
    strides: &[usize],
    expected: &[usize],
) -> Result<(), LaunchError> {
    if shape != expected {
        return Err(LaunchError::Shape {
            operand,
            shape: shape.to_vec(),
            expected: expected.to_vec(),
        });
    }
    let mut contiguous = vec![1usize; shape.len()];
    for dim in (0..shape.len().saturating_sub(1)).rev() {
        contiguous[dim] = contiguous[dim + 1] * shape[dim + 1];
    }
    let agrees = strides.len() == shape.len()
        && (0..shape.len()).all(|dim| shape[dim] <= 1 || strides[dim] == contiguous[dim]);
    if !agrees {
        return Err(LaunchError::NotContiguous {
            operand,
            shape: shape.to_vec(),
            strides: strides.to_vec(),
        });
    }
    Ok(())
}
