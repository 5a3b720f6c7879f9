//! f32 at few rows with an N-major `rhs` (Burn's `Linear` weight `[d_in, d_out]`), without the
//! K-major copy the TF32 MMAs would need: split-K with f32 FMAs. Each cube takes 256 units'
//! columns and one slice of `k`, stages that slice of `lhs` in shared memory, streams the
//! weight's rows (each unit one column, so a plane reads 128 contiguous bytes a row, or at up to
//! 4 rows, where the weight's rows allow it, four adjacent columns in one 16-byte load, 512
//! bytes a plane) and writes its partial sums; a second kernel adds the slices, the bias and the
//! ReLU, and writes the ReLU mask when the backward will read it. At few rows the weight's bytes
//! set the time, so FMAs at f32's rate keep up with the memory, and the result is exact f32. The
//! `lhs` tile is read 4 rows at a time (one 16-byte shared-memory load a unit, the same address
//! across the plane), so a weight element costs `rows` FMAs and `rows / 4` such loads.
//! Measured on an H200 (`4096 x 4096` weight): 0.0255 ms at batch 1 against 0.067 with the copy
//! and TF32 MMAs, 0.039 against 0.067 at 16 rows, 0.065 against 0.068 at 32; above that the
//! FMAs outweigh the weight's bytes and the copy's TF32 MMAs win, so at most 32 rows.
//!
//! Where the TMA engine can read both operands, [`few_rows_tma`](super::few_rows_tma) feeds the
//! partial sums at up to 8 rows; where the column blocks fill the device and the weight is at
//! most 128 MiB, [`few_rows_cluster`](super::few_rows_cluster) runs the whole product in one
//! launch.

use crate::Operands;
use crate::common::{address_type, batch_offset, relu};
use crate::contract::Dims;
use crate::hopper::few_rows_cluster::{self, few_rows_cluster_product};
use crate::hopper::few_rows_tma::{self, few_rows_tma_partials};
use crate::hopper::plan::MapLayout;
use crate::hopper::swapped::{self, CHUNK_K, copies_in_vectors};
use crate::hopper::swapped_tma::BOX_COLUMNS;
use crate::hopper::{Epilogue, processors, tensor_map};
use cubecl::client::Client;
use cubecl::ir::{AddressType, ElemType};
use cubecl::prelude::*;
use cubecl::zspace::Tiling;

/// Units per cube, one vector of output columns each.
const UNITS: usize = 256;
/// Depth of one slice of `k` (one cube's share of a column block's sum) where a unit reads one
/// weight column.
const SLICE_K: usize = 128;
/// The deepest slice where a unit reads [`VECTOR`] columns (the `lhs` tile's capacity); the
/// depth itself is chosen per problem ([`vector_slice_k`]), since a cube's 256 units span four
/// times the columns and the grid needs more slices to fill the device.
const VECTOR_SLICE_K: usize = 256;
/// Weight columns a unit reads in one 16-byte load where the weight's rows allow it.
const VECTOR: usize = 4;
/// The most rows read with [`VECTOR`]-column loads: a unit's sums are `rows x 4` registers; at
/// 8 rows that is 96 registers a unit (`ptxas -c`), two cubes a multiprocessor, fewer bytes in
/// flight than 16 scalar loads in three.
const VECTOR_ROWS: usize = 4;
/// The shallowest slice where a unit reads [`VECTOR`] columns. Shallower slices mean more of
/// them, and their partial sums' bytes and second kernel outweighed the wider loads on the H200:
/// at `1 x 1 x 4096 x 4096` (slices 44 deep, 94 of them) 0.0271 ms against 0.0252 with one
/// column a unit, where at `1 x 1 x 8192 x 8192` (168 deep) 0.0715 against 0.0758 and at
/// `1 x 1 x 4096 x 11008` (116 deep) 0.0516 against 0.0553.
const VECTOR_MIN_SLICE_K: usize = 64;
/// Cubes of [`VECTOR`] columns a multiprocessor holds at once (66 registers a unit, allocated
/// as 72: three cubes of 256 units), which the grid is sized to: one round.
const VECTOR_CUBES_PER_PROCESSOR: usize = 3;
/// Weight rows a unit loads before their FMAs (the loads it keeps in flight) at `rows` rows,
/// `vector` columns a load. The kernel is bound by the bytes in flight where its registers
/// allow few cubes: on an H200 at 8 and 16 rows, two or three cubes a multiprocessor either
/// way, 16 scalar loads beat 8 (0.039 against 0.044 ms at `1 x 16 x 4096 x 4096`, 0.087
/// against 0.100 at `1 x 8 x 4096 x 16384`). At 4 rows 16 loads cost a cube a multiprocessor
/// (80 registers a unit against 64) and were 5% slower; at 32 rows, where the FMAs weigh more,
/// 1-4% slower. Three 16-byte loads keep 48 bytes a unit in flight, against 32 for eight scalar
/// ones, in 12 registers (66 a unit in all, `ptxas -c`: three cubes a multiprocessor).
const fn loads_in_flight(rows: usize, vector: usize) -> usize {
    if vector > 1 {
        3
    } else if rows == 8 || rows == 16 {
        16
    } else {
        8
    }
}
/// Partial sums the second kernel loads before adding them, for the same reason.
const SUMS_IN_FLIGHT: usize = 8;
/// The row counts compiled: a problem takes the smallest that holds its `m`.
pub(crate) const ROWS: [usize; 4] = [4, 8, 16, 32];

/// One slice of `k`'s partial sums for `256 N` columns of every row (cube `(x, y, z)`: column
/// block, slice, batch) into `partials`, `[slices, batch * m, n]`; each unit reads `N`
/// adjacent weight columns at once (`N = 1`, or 4 where `n` and the weight's rows allow
/// 16-byte loads).
#[cube(launch_unchecked, address_type = "dynamic")]
pub(crate) fn few_rows_partials<F: Float, N: Size>(
    lhs: &Tensor<F>,
    rhs: &Tensor<Vector<F, N>>,
    partials: &mut Tensor<Vector<f32, N>>,
    slice_k: u32,
    #[comptime] rows: usize,
    #[comptime] capacity: usize,
    #[define(F)] _dtype: ElemType,
) {
    let size = rhs.vector_size();
    let rank = lhs.rank();
    let m = lhs.shape(rank - 2);
    let k = lhs.shape(rank - 1);
    let n = rhs.shape(rank - 1);
    let (lhs_sm, lhs_sk) = (lhs.stride(rank - 2), lhs.stride(rank - 1));
    let (rhs_sk, rhs_sn) = (rhs.stride(rank - 2), rhs.stride(rank - 1));
    let unit = UNIT_POS as usize;
    // The unit's first column; its vector is whole or wholly past `n` (`n % N == 0`).
    let col = (CUBE_POS_X as usize * UNITS + unit) * size;
    let slice = CUBE_POS_Y as usize;
    let batch = CUBE_POS_Z as usize;
    let (k0, k_end) = slice_bounds(slice, slice_k as usize, k);
    let lhs_offset = batch_offset::<F>(lhs, batch);
    let rhs_offset = batch_offset::<Vector<F, N>>(rhs, batch);

    // The slice of `lhs`, `[capacity][rows]` (`slice_k <= capacity` of them the slice's) as
    // vectors of 4 rows, zero past `m` and `k`: a unit reads 4 rows of one `k` in one 16-byte
    // load, the same address across the plane (a broadcast), so that shared-memory reads stay a
    // quarter of the FMAs.
    let mut tile = Shared::<[Vector<f32, Const<4>>]>::new_slice(comptime![capacity * rows / 4]);
    #[unroll]
    for i in 0..comptime![(capacity * rows / 4).div_ceil(UNITS)] {
        let v = unit + i * UNITS;
        if v < comptime![capacity * rows / 4] {
            let kk = v / comptime![rows / 4];
            let r0 = (v % comptime![rows / 4]) * 4;
            let mut values = Vector::<f32, Const<4>>::empty();
            #[unroll]
            for e in 0..4usize {
                let r = r0 + e;
                let mut value = 0.0f32;
                if r < m && k0 + kk < k {
                    value = f32::cast_from(lhs[lhs_offset + r * lhs_sm + (k0 + kk) * lhs_sk]);
                }
                values.insert(e, value);
            }
            tile[v] = values;
        }
    }
    sync_cube();

    if col < n {
        let mut acc = Array::<Vector<f32, N>>::new(rows);
        #[unroll]
        for r in 0..rows {
            acc[r] = Vector::<f32, N>::new(0.0);
        }
        let vector = N::value();
        let unroll = comptime![loads_in_flight(rows, vector)];
        let mut w = Array::<Vector<f32, N>>::new(unroll);
        // Element offsets, in vectors: under `N > 1` the weight's rows are contiguous and its
        // strides and start multiples of `N` (the launch checked), so these divide exactly.
        let column = (rhs_offset + col * rhs_sn) / size;
        let row_step = rhs_sk / size;
        let mut kk = k0;
        while kk + unroll <= k_end {
            #[unroll]
            for u in 0..unroll {
                w[u] = Vector::<f32, N>::cast_from(rhs[column + (kk + u) * row_step]);
            }
            #[unroll]
            for u in 0..unroll {
                let at = (kk - k0 + u) * comptime![rows / 4];
                add_weight_row::<N>(&mut acc, &tile, at, w[u], rows);
            }
            kk += unroll;
        }
        while kk < k_end {
            let weight = Vector::<f32, N>::cast_from(rhs[column + kk * row_step]);
            let at = (kk - k0) * comptime![rows / 4];
            add_weight_row::<N>(&mut acc, &tile, at, weight, rows);
            kk += 1;
        }
        let out_rows = partials.shape(1);
        #[unroll]
        for r in 0..rows {
            if r < m {
                partials[((slice * out_rows + batch * m + r) * n + col) / size] = acc[r];
            }
        }
    }
}

/// `acc[r] += lhs[r] * weight` for each of the `rows` rows of one `k` of the `lhs` tile, which
/// start at vector `at` (four rows a vector); `weight` holds `N` adjacent columns.
#[cube]
fn add_weight_row<N: Size>(
    acc: &mut Array<Vector<f32, N>>,
    tile: &[Vector<f32, Const<4>>],
    at: usize,
    weight: Vector<f32, N>,
    #[comptime] rows: usize,
) {
    #[unroll]
    for g in 0..comptime![rows / 4] {
        let x = tile[at + g];
        #[unroll]
        for e in 0..4usize {
            acc[comptime![4 * g + e]] += Vector::<f32, N>::new(x.extract(e)) * weight;
        }
    }
}

/// The `k` range `[first, end)` of slice `slice`, each slice `slice_k` deep (the last one
/// ending at `k`): split-K's slices, here, in [`swapped`](super::swapped) and in
/// [`swapped_tma`](super::swapped_tma).
#[cube]
pub(crate) fn slice_bounds(slice: usize, slice_k: usize, k: usize) -> (usize, usize) {
    let first = slice * slice_k;
    (first, select(first + slice_k > k, k, first + slice_k))
}

/// Which of split-K's second kernels adds the slices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Finish {
    /// [`few_rows_finish`]: 256 columns a cube, each unit summing every slice of its columns:
    /// where the slices are few (the swapped path's, at most 16 at `4096 x 4096`). The slice
    /// groups' kernel was 1-7% slower there on the H200 (0.0390 against 0.0375 ms at
    /// `1 x 128 x 4096 x 4096`, 0.0309 against 0.0288 at `4 x 100 x 1000 x 2056`).
    Columns,
    /// [`few_rows_finish_groups`]: where the slices are many and the rows few (32 slices at
    /// `1 x 1 x 4096 x 4096`, a grid of 16 cubes, whose units would otherwise load their slices
    /// one batch after the other). 3-4% faster than `Columns` on the H200 at 1 to 8 rows
    /// (0.0252 against 0.0261 ms at `1 x 1 x 4096 x 4096`, 0.0758 against 0.0787 at
    /// `1 x 1 x 8192 x 8192`).
    SliceGroups,
}

/// Output columns a cube of [`few_rows_finish`]: `256 / N` units of `N` columns.
const FINISH_COLUMNS: usize = 256;
/// Vectors of columns a cube of [`few_rows_finish_groups`].
const GROUP_VECTORS: usize = 64;
/// Groups of units in a cube of [`few_rows_finish_groups`], each summing every fourth slice.
const SLICE_GROUPS: usize = 4;

/// Adds the partial sums of [`FINISH_COLUMNS`] columns of one row of one batch (cube
/// `(x, y, z)`: column block, row `y`, batch `z`), `N` adjacent columns a unit (4 where the
/// output's rows allow 16-byte loads, else 1), then finishes them as [`finish_vector`] says.
/// A cube has the same columns at either width, so the grid, and the bytes each
/// multiprocessor has in flight, are the same; four columns a unit take a quarter of the units
/// and of the load instructions.
#[cube(launch_unchecked, address_type = "dynamic")]
pub(crate) fn few_rows_finish<F: Float, N: Size>(
    partials: &Tensor<Vector<f32, N>>,
    bias: &Tensor<F>,
    output: &mut Tensor<Vector<F, N>>,
    mask: &mut Tensor<u32>,
    #[comptime] epilogue: Epilogue,
    #[define(F)] _dtype: ElemType,
) {
    let size = N::value();
    let slices = partials.shape(0);
    let rank = output.rank();
    let m = output.shape(rank - 2);
    let n = output.shape(rank - 1);
    // Vectors of one slice; `n % N == 0`, so none straddles a row.
    let slice_vectors = partials.shape(1) * n / size;
    let col = (CUBE_POS_X as usize * comptime![FINISH_COLUMNS / size] + UNIT_POS as usize) * size;
    let row = CUBE_POS_Y as usize;
    let batch = CUBE_POS_Z as usize;
    let mut bits = 0u32;
    if col < n {
        // The bias first: its loads overlap the partial sums'.
        let mut biases = Vector::<f32, N>::new(0.0);
        if comptime![epilogue.bias_relu()] {
            biases = bias_vector::<F, N>(bias, rank, batch, row, col);
        }
        let index = ((batch * m + row) * n + col) / size;
        let sum = sum_slices::<N>(partials, index, slice_vectors, 0, slices, 1usize);
        let (value, word_bits) = finish_vector::<F, N>(sum, biases, col, epilogue);
        output[index] = value;
        bits = word_bits;
    }
    if comptime![epilogue.writes_mask()] {
        write_mask_words::<N>(mask, bits, col, batch * m + row);
    }
}

/// [`few_rows_finish`] for many slices: the partial sums of [`GROUP_VECTORS`] vectors of `N`
/// columns for one row of one batch (cube `(x, y, z)`: column block, row `y`, batch `z`), `N`
/// adjacent columns a unit (4 where the output's rows allow 16-byte loads, else 1), summed by
/// [`SLICE_GROUPS`] groups of units side by side, group `g` the slices `s` with `s % 4 == g`
/// (four times the loads in flight a cube), then the first group adds the groups' sums in group
/// order (the same sum whatever the batching of the loads) and finishes them as
/// [`finish_vector`] says.
#[cube(launch_unchecked, address_type = "dynamic")]
pub(crate) fn few_rows_finish_groups<F: Float, N: Size>(
    partials: &Tensor<Vector<f32, N>>,
    bias: &Tensor<F>,
    output: &mut Tensor<Vector<F, N>>,
    mask: &mut Tensor<u32>,
    #[comptime] epilogue: Epilogue,
    #[define(F)] _dtype: ElemType,
) {
    let size = N::value();
    let (groups, vectors) = comptime![(SLICE_GROUPS, GROUP_VECTORS)];
    let slices = partials.shape(0);
    let rank = output.rank();
    let m = output.shape(rank - 2);
    let n = output.shape(rank - 1);
    // Vectors of one slice; `n % N == 0`, so none straddles a row.
    let slice_vectors = partials.shape(1) * n / size;
    let unit = UNIT_POS as usize;
    let group = unit / vectors;
    let vector = unit % vectors;
    let col = (CUBE_POS_X as usize * vectors + vector) * size;
    let row = CUBE_POS_Y as usize;
    let batch = CUBE_POS_Z as usize;
    let index = ((batch * m + row) * n + col) / size;

    let mut sums = Shared::<[Vector<f32, N>]>::new_slice(comptime![groups * vectors]);
    let mut sum = Vector::<f32, N>::new(0.0);
    // The bias first, by the group that finishes: its loads overlap the partial sums'.
    let mut biases = Vector::<f32, N>::new(0.0);
    if col < n {
        if group == 0 && comptime![epilogue.bias_relu()] {
            biases = bias_vector::<F, N>(bias, rank, batch, row, col);
        }
        sum = sum_slices::<N>(partials, index, slice_vectors, group, slices, groups);
    }
    sums[unit] = sum;
    sync_cube();

    // The first group: whole planes, so the mask's shuffles below have every lane.
    if group == 0 {
        let mut bits = 0u32;
        if col < n {
            let mut total = sums[vector];
            #[unroll]
            for g in 1..groups {
                total += sums[comptime![g * vectors] + vector];
            }
            let (value, word_bits) = finish_vector::<F, N>(total, biases, col, epilogue);
            output[index] = value;
            bits = word_bits;
        }
        if comptime![epilogue.writes_mask()] {
            write_mask_words::<N>(mask, bits, col, batch * m + row);
        }
    }
}

/// The sum, in slice order, of vector `index` of the slices `first`, `first + step`, ... below
/// `slices` (each `slice_vectors` vectors apart): [`SUMS_IN_FLIGHT`] loads issued before their
/// adds, the last batch too (its loads past `slices` not made, nor added), so that a unit waits
/// for memory once per batch, never once per slice; and the same sum whatever the batching.
#[cube]
fn sum_slices<N: Size>(
    partials: &Tensor<Vector<f32, N>>,
    index: usize,
    slice_vectors: usize,
    first: usize,
    slices: usize,
    #[comptime] step: usize,
) -> Vector<f32, N> {
    let mut sum = Vector::<f32, N>::new(0.0);
    let mut part = Array::<Vector<f32, N>>::new(SUMS_IN_FLIGHT);
    let mut s = first;
    while s < slices {
        #[unroll]
        for i in 0..SUMS_IN_FLIGHT {
            let slice = s + comptime![i * step];
            if slice < slices {
                part[i] = partials[slice * slice_vectors + index];
            }
        }
        #[unroll]
        for i in 0..SUMS_IN_FLIGHT {
            if s + comptime![i * step] < slices {
                sum += part[i];
            }
        }
        s += comptime![SUMS_IN_FLIGHT * step];
    }
    sum
}

/// The bias at columns `col..col + N` of row `row` of batch `batch`, in f32, through its
/// broadcast view (`rank`: the output's, which the bias's view has).
#[cube]
pub(crate) fn bias_vector<F: Float, N: Size>(
    bias: &Tensor<F>,
    rank: usize,
    batch: usize,
    row: usize,
    col: usize,
) -> Vector<f32, N> {
    let offset = batch_offset::<F>(bias, batch) + row * bias.stride(rank - 2);
    let sn = bias.stride(rank - 1);
    let mut values = Vector::<f32, N>::empty();
    #[unroll]
    for e in 0..N::value() {
        values.insert(e, f32::cast_from(bias[offset + (col + e) * sn]));
    }
    values
}

/// Split-K's last step for the `N` columns from `col`: under the fused epilogues `relu(total +
/// biases)`, then the output's dtype; with the ReLU mask's bits of those columns, each at its
/// place in the row's 32-column word (set where the stored value is not `<= 0`, as the
/// backward reads it).
#[cube]
pub(crate) fn finish_vector<F: Float, N: Size>(
    total: Vector<f32, N>,
    biases: Vector<f32, N>,
    col: usize,
    #[comptime] epilogue: Epilogue,
) -> (Vector<F, N>, u32) {
    let mut value = Vector::<F, N>::empty();
    let mut bits = 0u32;
    #[unroll]
    for e in 0..N::value() {
        let mut x = total.extract(e);
        if comptime![epilogue.bias_relu()] {
            x = relu(x + biases.extract(e));
        }
        let stored = F::cast_from(x);
        value.insert(e, stored);
        bits |= select(stored <= F::from_int(0), 0u32, 1u32) << ((col + e) % 32) as u32;
    }
    (value, bits)
}

/// Writes the ReLU mask's words of output row `out_row` from each unit's `bits` (its `N`
/// columns from `col`): the `32 / N` lanes of a word OR their bits, which are distinct, and the
/// first of them stores the word. Every lane of the plane takes part, past `n` too (with zero
/// bits), so the caller runs it in whole planes.
#[cube]
pub(crate) fn write_mask_words<N: Size>(
    mask: &mut Tensor<u32>,
    bits: u32,
    col: usize,
    out_row: usize,
) {
    let size = N::value();
    let lane = UNIT_POS % 32;
    let mut word_bits = bits;
    #[unroll]
    for step in 0..comptime![(32 / size).trailing_zeros()] {
        word_bits |= plane_shuffle_xor(word_bits, comptime![1u32 << step]);
    }
    let row_words = mask.shape(mask.rank() - 1);
    let word = col / 32;
    // The first lane of each word's (a power of two).
    if lane & comptime![(32 / size - 1) as u32] == 0 && word < row_words {
        mask[out_row * row_words + word] = word_bits;
    }
}

/// Whether the few-row path takes this problem: at most 32 rows, and batches and slices of `k`
/// within the grid's 65,535 along y and z. (Where it does not, the K-major copy and the TF32
/// MMAs run it, so there is no reason to report.)
pub(crate) fn takes(dims: &Dims) -> bool {
    let max = u32::from(u16::MAX) as usize;
    dims.m <= ROWS[ROWS.len() - 1] && dims.batch <= max && dims.k.div_ceil(SLICE_K) <= max
}

/// Runs the few-row path: partial sums per slice of `k`, then their sum ([`split_k`]).
pub(crate) fn launch(
    client: &Client,
    ops: Operands,
    dtype: ElemType,
    dims: Dims,
    epilogue: Epilogue,
    mask: TensorBinding,
) {
    debug_assert!(takes(&dims));
    let rows = ROWS
        .into_iter()
        .find(|&rows| dims.m <= rows)
        .expect("the caller checked `takes`");
    // A weight shared by several batches stays on the loads below: the TMA-fed cubes of each
    // batch stream the whole weight again, 32% slower at `4 x 1 x 4096 x 4096` on an H100.
    if rows <= TMA_ROWS
        && let Some(layouts) = swapped::tma_layouts(&ops)
        && (dims.batch == 1 || layouts.1.batched)
    {
        launch_tma(client, ops, dtype, dims, epilogue, mask, rows, layouts);
        return;
    }
    let vector_depth = vector_slice_k(&dims, processors(client));
    let vector = match vector_depth {
        Some(_) if rows <= VECTOR_ROWS && vectors_fit(&ops.rhs, &dims) => VECTOR,
        _ => 1,
    };
    let (slice_k, capacity) = match vector_depth {
        Some(depth) if vector > 1 => (depth, VECTOR_SLICE_K),
        _ => (SLICE_K, SLICE_K),
    };
    let slices = dims.k.div_ceil(slice_k);
    split_k(
        client,
        ops,
        dtype,
        dims,
        epilogue,
        mask,
        slices,
        Finish::SliceGroups,
        |lhs, rhs, partials, address_type| {
            // SAFETY: the contract check bounded every operand by its buffer; the partials kernel
            // reads `lhs` and `rhs` only inside their shapes (a vector of `rhs` is whole or
            // wholly past `n`) and writes each partial sum once, inside the buffer it was given.
            unsafe {
                few_rows_partials::launch_unchecked(
                    client,
                    CubeCount::Static(
                        dims.n.div_ceil(UNITS * vector) as u32,
                        slices as u32,
                        dims.batch as u32,
                    ),
                    CubeDim::new_1d(UNITS as u32),
                    address_type,
                    vector,
                    lhs.into_tensor_arg(),
                    rhs.into_tensor_arg(),
                    partials.into_tensor_arg(),
                    slice_k as u32,
                    rows,
                    capacity,
                    dtype,
                );
            }
        },
    );
}

/// The most rows the TMA-fed partial sums ([`few_rows_tma`](super::few_rows_tma)) are
/// compiled for: where the weight's bytes set the time.
const TMA_ROWS: usize = 8;

/// The few-row path fed by the TMA engine ([`few_rows_tma_partials`]), where both operands'
/// maps (`layouts`: `lhs`'s, the weight's) allow it: `k` split so that the cubes, two a
/// multiprocessor, run in one round, in slices of whole 32-`k` stages; then split-K's second
/// kernel by slice groups.
#[allow(clippy::too_many_arguments)]
fn launch_tma(
    client: &Client,
    ops: Operands,
    dtype: ElemType,
    dims: Dims,
    epilogue: Epilogue,
    mask: TensorBinding,
    rows: usize,
    (lhs_layout, rhs_layout): (MapLayout, MapLayout),
) {
    let processors = processors(client);
    if rows <= few_rows_cluster::MAX_ROWS
        && let Some(split) = few_rows_cluster::cluster_split(
            &dims,
            processors * few_rows_cluster::CUBES_PER_PROCESSOR,
        )
    {
        launch_cluster(
            client,
            ops,
            dtype,
            dims,
            epilogue,
            mask,
            rows,
            (lhs_layout, rhs_layout),
            split,
        );
        return;
    }
    let slice_k = swapped::stage_slice_k(
        &dims,
        few_rows_tma::UNITS,
        processors * few_rows_tma::CUBES_PER_PROCESSOR,
    );
    let slices = dims.k.div_ceil(slice_k);
    split_k(
        client,
        ops,
        dtype,
        dims,
        epilogue,
        mask,
        slices,
        Finish::SliceGroups,
        |lhs, rhs, partials, address_type| {
            let lhs_map = tensor_map(&lhs, &lhs_layout, [1, rows, CHUNK_K], dtype);
            let rhs_map = tensor_map(&rhs, &rhs_layout, [1, CHUNK_K, BOX_COLUMNS], dtype);
            // SAFETY: the TMA engine reads `lhs` and `rhs` through maps of their own shapes,
            // filling past the edges with zeros; the kernel writes each partial sum once,
            // inside the buffer it was given.
            unsafe {
                few_rows_tma_partials::launch_unchecked(
                    client,
                    CubeCount::Static(
                        dims.n.div_ceil(few_rows_tma::UNITS) as u32,
                        slices as u32,
                        dims.batch as u32,
                    ),
                    CubeDim::new_1d(few_rows_tma::UNITS as u32 + 32),
                    address_type,
                    lhs_map,
                    rhs_map,
                    partials.into_tensor_arg(),
                    dims.m as u32,
                    dims.n as u32,
                    dims.k as u32,
                    slice_k as u32,
                    rows,
                    few_rows_tma::STAGES,
                    lhs_layout.batched,
                    rhs_layout.batched,
                );
            }
        },
    );
}

/// The few-row product in one launch ([`few_rows_cluster_product`]): `split` is the slices of `k`
/// (the cubes of a cluster) and their depth, as [`few_rows_cluster::cluster_split`] chose them.
#[allow(clippy::too_many_arguments)]
fn launch_cluster(
    client: &Client,
    ops: Operands,
    dtype: ElemType,
    dims: Dims,
    epilogue: Epilogue,
    mask: TensorBinding,
    rows: usize,
    (lhs_layout, rhs_layout): (MapLayout, MapLayout),
    (slices, slice_k): (usize, usize),
) {
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
                dims.n.div_ceil(few_rows_cluster::COLUMNS) as u32,
                slices as u32,
                dims.batch as u32,
            ),
            CubeDim::new_1d(few_rows_cluster::UNITS as u32 + 32),
            address_type,
            lhs_map,
            rhs_map,
            ops.bias.into_tensor_arg(),
            ops.out.into_tensor_arg(),
            mask.into_tensor_arg(),
            dims.m as u32,
            dims.n as u32,
            dims.k as u32,
            slice_k as u32,
            rows,
            slices,
            few_rows_cluster::BOXES,
            few_rows_cluster::STAGES,
            few_rows_cluster::PARTS,
            epilogue,
            lhs_layout.batched,
            rhs_layout.batched,
        );
    }
}

/// Whether `binding` (the weight, or the output, of `dims.n` columns) can be read [`VECTOR`]
/// columns at a time: its rows contiguous with `n`, every other stride and its start multiples
/// of it (aligned 16-byte accesses that never straddle a row's end).
fn vectors_fit(binding: &TensorBinding, dims: &Dims) -> bool {
    dims.n.is_multiple_of(VECTOR) && copies_in_vectors(binding, VECTOR)
}

/// The slice depth where a unit reads [`VECTOR`] columns: `k` split into as many slices as
/// keep the grid within one round of resident cubes ([`VECTOR_CUBES_PER_PROCESSOR`] a
/// multiprocessor), rounded up to a multiple of 4; `None` where that depth would pass the tile's
/// capacity (too many column blocks to split `k` that finely), fall short of
/// [`VECTOR_MIN_SLICE_K`] (too few column blocks, or too short a `k`), or need more than the
/// grid's 65,535 slices.
fn vector_slice_k(dims: &Dims, processors: usize) -> Option<usize> {
    let blocks = dims.n.div_ceil(UNITS * VECTOR) * dims.batch;
    let wanted = (processors * VECTOR_CUBES_PER_PROCESSOR / blocks).max(1);
    let depth = dims.k.div_ceil(wanted).next_multiple_of(4);
    ((VECTOR_MIN_SLICE_K..=VECTOR_SLICE_K).contains(&depth)
        && dims.k.div_ceil(depth) <= u16::MAX as usize)
        .then_some(depth)
}

/// Split-K in two launches: `partials_kernel` writes each of `slices` slices of `k`'s sums of
/// `lhs @ rhs` into the partial sums it is given (`[slices, batch * m, n]` f32, a fresh buffer;
/// with the address type every kernel here needs), then the second kernel adds them, finished
/// as `epilogue` says (`mask`: the mask's binding under [`Epilogue::BiasReluMask`], else any
/// binding, never touched), its work spread as `finish` says.
#[allow(clippy::too_many_arguments)]
pub(crate) fn split_k(
    client: &Client,
    ops: Operands,
    dtype: ElemType,
    dims: Dims,
    epilogue: Epilogue,
    mask: TensorBinding,
    slices: usize,
    finish: Finish,
    partials_kernel: impl FnOnce(TensorBinding, TensorBinding, TensorBinding, AddressType),
) {
    let out_rows = dims.batch * dims.m;
    let partials_len = slices * out_rows * dims.n;
    let partials = TensorBinding {
        handle: client.empty(partials_len * 4).binding(),
        strides: [out_rows * dims.n, dims.n, 1].into(),
        shape: [slices, out_rows, dims.n].into(),
        tiling: Tiling::default(),
    };
    let address_type = address_type(&ops, dtype, partials_len);
    partials_kernel(ops.lhs, ops.rhs, partials.clone(), address_type);
    launch_finish(
        client,
        partials,
        ops.bias,
        ops.out,
        mask,
        epilogue,
        finish,
        dtype,
        dims,
        address_type,
    );
}

/// The second kernel: adds `partials`' slices (`[slices, batch * m, n]`) into `out`, finished
/// as `epilogue` says, with the ReLU mask into `mask` under [`Epilogue::BiasReluMask`], its
/// work spread as `finish` says.
#[allow(clippy::too_many_arguments)]
fn launch_finish(
    client: &Client,
    partials: TensorBinding,
    bias: TensorBinding,
    out: TensorBinding,
    mask: TensorBinding,
    epilogue: Epilogue,
    finish: Finish,
    dtype: ElemType,
    dims: Dims,
    address_type: AddressType,
) {
    // Four columns a unit where the output's rows are whole 16-byte vectors (the partial sums,
    // `[slices, rows, n]` f32, then are too).
    let vector = if vectors_fit(&out, &dims) { VECTOR } else { 1 };
    let (columns, units) = match finish {
        Finish::Columns => (FINISH_COLUMNS, FINISH_COLUMNS / vector),
        Finish::SliceGroups => (GROUP_VECTORS * vector, SLICE_GROUPS * GROUP_VECTORS),
    };
    let grid = CubeCount::Static(
        dims.n.div_ceil(columns) as u32,
        dims.m as u32,
        dims.batch as u32,
    );
    let (partials, bias, out, mask) = (
        partials.into_tensor_arg(),
        bias.into_tensor_arg(),
        out.into_tensor_arg(),
        mask.into_tensor_arg(),
    );
    let cube = CubeDim::new_1d(units as u32);
    // SAFETY: `partials` holds every slice's sums of the output's rows; the kernels read those
    // and the bias inside their shapes, and write the dense output (a vector of it whole or
    // wholly past `n`) and, under the mask epilogue, each of the mask's words once (the caller
    // checked its layout).
    unsafe {
        match finish {
            Finish::Columns => few_rows_finish::launch_unchecked(
                client,
                grid,
                cube,
                address_type,
                vector,
                partials,
                bias,
                out,
                mask,
                epilogue,
                dtype,
            ),
            Finish::SliceGroups => few_rows_finish_groups::launch_unchecked(
                client,
                grid,
                cube,
                address_type,
                vector,
                partials,
                bias,
                out,
                mask,
                epilogue,
                dtype,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cubecl::ir::FloatKind;
    use cubecl::ir::features::Plane;
    use cubecl::server::Handle;
    use cubecl::zspace::{Shape, Strides};
    use fmar_tests::{Precision, Rng};

    /// The wgpu runtime's default device; with the `cuda` feature and `FMAR_TEST_DEVICE=cuda`,
    /// the first CUDA device.
    fn client() -> Client {
        #[cfg(feature = "cuda")]
        if std::env::var("FMAR_TEST_DEVICE").as_deref() == Ok("cuda") {
            return cubecl::Device::Cuda(cubecl::cuda::CudaDevice::new(0)).client();
        }
        cubecl::Device::Wgpu(cubecl::wgpu::WgpuDevice::default()).client()
    }

    fn binding(handle: &Handle, shape: &[usize], strides: &[usize]) -> TensorBinding {
        TensorBinding {
            handle: handle.clone().binding(),
            shape: Shape::from(shape.to_vec()),
            strides: Strides::new(strides),
            tiling: Tiling::default(),
        }
    }

    /// One problem for split-K's second kernels: `slices` slices of partial sums for `batch x
    /// m` rows of `n` columns (the output contiguous, as the launch contract has it), and the
    /// bias `[n]` broadcast to every row, or `[m, 1]` (one value a row) where `per_row`.
    #[derive(Debug, Clone, Copy)]
    struct Case {
        batch: usize,
        m: usize,
        n: usize,
        slices: usize,
        per_row: bool,
    }

    impl Case {
        /// The output's rows, every batch's.
        fn rows(self) -> usize {
            self.batch * self.m
        }

        /// The ReLU mask's 32-column words a row.
        fn words(self) -> usize {
            self.n.div_ceil(32)
        }
    }

    /// How one problem is finished: the second kernel, the epilogue, the output's precision.
    #[derive(Debug, Clone, Copy)]
    struct Finishing {
        finish: Finish,
        epilogue: Epilogue,
        precision: Precision,
    }

    /// What the second kernel must store, computed on the host in the kernel's order of f32
    /// additions (every slice in order, or, under `SliceGroups`, each group's slices in order,
    /// then the groups in order), so the comparison is exact: the output values as f64 and the
    /// mask's words.
    fn expected(
        case: Case,
        how: Finishing,
        partials: &[f32],
        bias: &[f32],
    ) -> (Vec<f64>, Vec<u32>) {
        let Case {
            m,
            n,
            slices,
            per_row,
            ..
        } = case;
        let (rows, words) = (case.rows(), case.words());
        let (mut out, mut mask) = (vec![0.0; rows * n], vec![0u32; rows * words]);
        for row in 0..rows {
            for col in 0..n {
                let part = |s: usize| partials[(s * rows + row) * n + col];
                let sum = |first: usize, step: usize| {
                    (first..slices)
                        .step_by(step)
                        .fold(0.0f32, |sum, s| sum + part(s))
                };
                let mut total = match how.finish {
                    Finish::Columns => sum(0, 1),
                    Finish::SliceGroups => (1..SLICE_GROUPS)
                        .fold(sum(0, SLICE_GROUPS), |total, g| {
                            total + sum(g, SLICE_GROUPS)
                        }),
                };
                if how.epilogue.bias_relu() {
                    total += if per_row { bias[row % m] } else { bias[col] };
                    total = if total <= 0.0 { 0.0 } else { total };
                }
                let stored = how.precision.round(f64::from(total));
                out[row * n + col] = stored;
                if stored > 0.0 {
                    mask[row * words + col / 32] |= 1 << (col % 32);
                }
            }
        }
        (out, mask)
    }

    /// Runs the second kernel `how` says on random partial sums and bias of `case`, through
    /// its launch, and compares the output (and the mask, under its epilogue) with
    /// [`expected`], exactly.
    fn check_finish(client: &Client, rng: &mut Rng, case: Case, how: Finishing) {
        let Case {
            batch,
            m,
            n,
            slices,
            per_row,
        } = case;
        let (rows, words) = (case.rows(), case.words());
        let mut random = |len: usize, scale: f64| -> Vec<f32> {
            (0..len)
                .map(|_| rng.uniform(-scale, scale) as f32)
                .collect()
        };
        let partials = random(slices * rows * n, 1.0);
        // The bias in the output's precision, as the device holds it.
        let bias: Vec<f32> = random(if per_row { m } else { n }, 0.5)
            .into_iter()
            .map(|x| how.precision.round(f64::from(x)) as f32)
            .collect();
        let widen = |values: &[f32]| values.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
        let partials_handle = client.create_from_slice(&Precision::F32.encode(&widen(&partials)));
        let bias_handle = client.create_from_slice(&how.precision.encode(&widen(&bias)));
        let out_handle = client.create_from_slice(&how.precision.encode(&vec![f64::NAN; rows * n]));
        let mask_handle = client.create_from_slice(u32::as_bytes(&vec![0xDEAD_BEEF; rows * words]));
        let dtype = ElemType::Float(match how.precision {
            Precision::F32 => FloatKind::F32,
            Precision::F16 => FloatKind::F16,
            Precision::BF16 => FloatKind::BF16,
        });
        launch_finish(
            client,
            binding(&partials_handle, &[slices, rows, n], &[rows * n, n, 1]),
            binding(
                &bias_handle,
                &[batch, m, n],
                &if per_row { [0, 1, 0] } else { [0, 0, 1] },
            ),
            binding(&out_handle, &[batch, m, n], &[m * n, n, 1]),
            binding(&mask_handle, &[batch, m, words], &[m * words, words, 1]),
            how.epilogue,
            how.finish,
            dtype,
            Dims { m, n, k: 1, batch },
            AddressType::U32,
        );
        let got = how
            .precision
            .decode(&client.read_one(out_handle).expect("readback"));
        let (want, want_mask) = expected(case, how, &partials, &bias);
        let what = format!("{how:?} {case:?} (seed {})", rng.seed());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                g == w,
                "{what}: row {} column {}: {g} against {w}",
                i / n,
                i % n
            );
        }
        if how.epilogue.writes_mask() {
            let bytes = client.read_one(mask_handle).expect("readback");
            assert_eq!(u32::from_bytes(&bytes), &want_mask[..], "{what}: mask");
        }
    }

    /// Split-K's second kernels through their launch, against the host, exactly: both ways of
    /// spreading the work, one and four columns a unit (the output's width decides), slice
    /// counts on either side of a batch of loads and of the slice groups, ragged column blocks,
    /// batches, both bias patterns, f32 and f16 outputs, and each epilogue (the mask's where
    /// the device has plane operations, which its words are gathered with).
    #[test]
    fn finish_kernels_match_the_host_exactly() {
        let client = client();
        let planes = client.properties().features.plane.contains(Plane::Ops);
        if !planes {
            eprintln!("no plane operations here: the mask's epilogue is not run");
        }
        let case = |batch, m, n, slices, per_row| Case {
            batch,
            m,
            n,
            slices,
            per_row,
        };
        let cases = [
            // Four columns a unit; 32 slices (the few-row path's at 4096 deep), one batch of
            // loads a group; a column block past `n`.
            case(1, 1, 1540, 32, false),
            // Four slices (the swapped path's at 128 rows), fewer than a batch of loads.
            case(2, 3, 520, 4, false),
            // Slices past one batch of loads, and not a multiple of the groups.
            case(1, 5, 264, 19, true),
            // One column a unit: `n` not a multiple of 4.
            case(1, 2, 262, 9, false),
            case(3, 2, 258, 3, true),
            case(1, 1, 33, 1, false),
        ];
        let f16 = ElemType::Float(FloatKind::F16);
        let precisions = [Precision::F32, Precision::F16]
            .into_iter()
            .filter(|&p| p == Precision::F32 || client.properties().supports_type(f16));
        let epilogues = [Epilogue::Plain, Epilogue::BiasRelu, Epilogue::BiasReluMask]
            .into_iter()
            .filter(|epilogue| planes || !epilogue.writes_mask());
        let mut rng = Rng::fresh();
        let mut checked = 0;
        for precision in precisions {
            for epilogue in epilogues.clone() {
                for finish in [Finish::Columns, Finish::SliceGroups] {
                    for case in cases {
                        let how = Finishing {
                            finish,
                            epilogue,
                            precision,
                        };
                        check_finish(&client, &mut rng, case, how);
                        checked += 1;
                    }
                }
            }
        }
        assert!(
            checked >= 2 * 2 * cases.len(),
            "only {checked} problems checked"
        );
    }

    fn dims(batch: usize, m: usize, k: usize, n: usize) -> Dims {
        Dims { m, n, k, batch }
    }

    #[test]
    fn few_rows_takes_up_to_32_rows_and_a_grid_that_fits() {
        for m in [1, 2, 4, 5, 8, 16, 17, 32] {
            assert!(takes(&dims(1, m, 4096, 4096)), "m = {m}");
        }
        assert!(!takes(&dims(1, 33, 4096, 4096)));
        // The grid's y (slices of `k`) and z (batches) stop at 65,535.
        assert!(!takes(&dims(70_000, 1, 64, 64)));
        assert!(!takes(&dims(1, 1, 65_535 * SLICE_K + 1, 64)));
        assert!(takes(&dims(65_535, 1, 65_535 * SLICE_K, 64)));
        // Each row count is the smallest that holds `m`.
        let rows = |m: usize| ROWS.into_iter().find(|&rows| m <= rows);
        assert_eq!(
            (rows(1), rows(4), rows(5), rows(16), rows(17)),
            (Some(4), Some(4), Some(8), Some(16), Some(32))
        );
    }

    #[test]
    fn vector_slices_fill_one_round_of_resident_cubes() {
        // 8 column blocks of 1024 at `8192 x 8192` on 132 multiprocessors, three cubes each:
        // 49 slices wanted, 168 deep (a multiple of 4), 49 slices, 392 cubes within 396.
        assert_eq!(vector_slice_k(&dims(1, 1, 8192, 8192), 132), Some(168));
        // 11 blocks at `4096 x 11008`: 36 slices wanted, 116 deep.
        assert_eq!(vector_slice_k(&dims(1, 1, 4096, 11008), 132), Some(116));
        // 4 blocks at `4096 x 4096`: 99 slices wanted, 44 deep, too shallow.
        assert_eq!(vector_slice_k(&dims(1, 1, 4096, 4096), 132), None);
        // More blocks than resident cubes: one slice would be all of `k`, past the tile.
        assert_eq!(vector_slice_k(&dims(1, 1, 4096, 1 << 20), 132), None);
        // A short `k` is one slice of its own depth, too shallow.
        assert_eq!(vector_slice_k(&dims(1, 1, 30, 4096), 132), None);
        // The test shapes that take the vector kernel: ragged, batched, broadcast.
        assert_eq!(vector_slice_k(&dims(2, 3, 8200, 4100), 132), Some(212));
        assert_eq!(vector_slice_k(&dims(3, 4, 6000, 2052), 132), Some(140));
    }
}
