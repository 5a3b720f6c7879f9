//! `hopper-few-rows`: f32 at few rows with an N-major `rhs` (Burn's `Linear` weight
//! `[d_in, d_out]`), without the K-major copy the TF32 MMAs would need: split-K with f32 FMAs.
//! Each cube takes 256 units' columns and one slice of `k`, stages that slice of `lhs` in
//! shared memory, streams the weight's rows (each unit one column, so a plane reads 128
//! contiguous bytes a row, or at up to 4 rows, where the weight's rows allow it, four adjacent
//! columns in one 16-byte load, 512 bytes a plane) and writes its partial sums; split-K's second
//! kernel adds the slices and applies the epilogue ([`split_k`]). At few rows the weight's bytes
//! set the time, so FMAs at f32's rate keep up with the memory, and the result is exact f32. The
//! `lhs` tile is read 4 rows at a time (one 16-byte shared-memory load a unit, the same address
//! across the plane), so a weight element costs `rows` FMAs and `rows / 4` such loads.
//! Measured on an H200 (`4096 x 4096` weight): 0.0255 ms at batch 1 against 0.067 with the copy
//! and TF32 MMAs, 0.039 against 0.067 at 16 rows, 0.065 against 0.068 at 32; above that the
//! FMAs outweigh the weight's bytes and the copy's TF32 MMAs win, so at most 32 rows. Any
//! strides: the weight and the rows are read by plain loads.

use crate::common::batch_offset;
use crate::contract::Dims;
use crate::hopper::fold::{dims_within, rows_within};
use crate::hopper::split_k::{Finish, VECTOR, slice_bounds, split_k, vectors_fit};
use crate::problem::Problem;
use cubecl::client::Client;
use cubecl::prelude::*;

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

/// The most rows: a problem's rows, or its batches' rows where they share the weight.
pub(crate) const MAX_ROWS: usize = ROWS[ROWS.len() - 1];

/// Why this path cannot run `problem`, if it cannot: not an f32 product with an N-major weight,
/// more than [`MAX_ROWS`] rows, or a grid past its limits.
pub(crate) fn unavailability(problem: &Problem) -> Option<String> {
    if let Some(reason) = problem.f32_weight_unavailability() {
        return Some(reason);
    }
    match dims_within(&problem.ops, &problem.dims, MAX_ROWS) {
        Some(dims) => grid_unavailability(&dims),
        None => Some(format!("{} rows (at most {MAX_ROWS})", problem.dims.m)),
    }
}

/// Why the grid of `dims` (at most [`MAX_ROWS`] rows) passes its limits, if it does: batches
/// and slices of `k` within the grid's 65,535 along z and y.
fn grid_unavailability(dims: &Dims) -> Option<String> {
    let max = u32::from(u16::MAX) as usize;
    if dims.m > MAX_ROWS {
        Some(format!("{} rows (at most {MAX_ROWS})", dims.m))
    } else if dims.batch > max || dims.k.div_ceil(SLICE_K) > max {
        Some(format!(
            "{} batches and {} slices of `k` (at most {max} of each)",
            dims.batch,
            dims.k.div_ceil(SLICE_K)
        ))
    } else {
        None
    }
}

/// Runs the path on a problem it takes ([`unavailability`]): partial sums per slice of `k`,
/// then their sum ([`split_k`]).
pub(crate) fn launch(client: &Client, problem: &Problem) {
    let (ops, dims) =
        rows_within(&problem.ops, &problem.dims, MAX_ROWS).expect("the caller checked the rows");
    let dtype = problem.dtype;
    let rows = ROWS
        .into_iter()
        .find(|&rows| dims.m <= rows)
        .expect("the caller checked the rows");
    let vector_depth = vector_slice_k(&dims, problem.processors);
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
        problem.epilogue,
        problem.mask_argument(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(batch: usize, m: usize, k: usize, n: usize) -> Dims {
        Dims { m, n, k, batch }
    }

    #[test]
    fn few_rows_takes_up_to_32_rows_and_a_grid_that_fits() {
        let takes = |dims: Dims| grid_unavailability(&dims).is_none();
        for m in [1, 2, 4, 5, 8, 16, 17, 32] {
            assert!(takes(dims(1, m, 4096, 4096)), "m = {m}");
        }
        assert!(!takes(dims(1, 33, 4096, 4096)));
        // The grid's y (slices of `k`) and z (batches) stop at 65,535.
        assert!(!takes(dims(70_000, 1, 64, 64)));
        assert!(!takes(dims(1, 1, 65_535 * SLICE_K + 1, 64)));
        assert!(takes(dims(65_535, 1, 65_535 * SLICE_K, 64)));
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
