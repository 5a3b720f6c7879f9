//! `hopper-swapped`: f32 at up to 128 rows with an N-major `rhs` (Burn's `Linear` weight `[d_in,
//! d_out]`) through TF32 MMAs, without a K-major copy of the weight: the transposed product
//! ([`transposed`](super::transposed)), `lhs`'s rows padded to the row count compiled
//! ([`ROWS`](crate::hopper::transposed::ROWS)). Both operands go through a ring of shared-memory
//! stages, 32 `k` each, that every unit fills with `cp.async`: its own `A` fragments, laid out so
//! that it reads them back with four 16-byte loads, and its share of `lhs`'s rows, stored with the
//! 128-byte swizzle the MMA reads `B` with. Any strides (an M-major `lhs`, unaligned rows); where
//! the TMA engine can read both operands, [`swapped_tma`](super::swapped_tma) runs the same product
//! 17-30% faster on the H200. The copies hold no registers, so the bytes in flight from memory
//! (three stages a cube) do not compete with the accumulators. Split-K over cubes, whose second
//! kernel adds the slices and applies the epilogue ([`split_k`]). At few rows the weight's bytes
//! set the time; the MMAs make the arithmetic free up to 128 rows, where f32 FMAs would not keep up
//! with the memory past a few dozen.

use crate::common::batch_offset;
use crate::contract::Dims;
use crate::hopper::fold::rows_within;
use crate::hopper::layout::copies_in_vectors;
use crate::hopper::mbarrier::fence_proxy_async;
use crate::hopper::ptx::{global_address, shared_address};
use crate::hopper::split_k::{Finish, slice_bounds, split_k};
use crate::hopper::transposed::{COLUMNS, MAX_ROWS, rows_for, slice_k, store_partials};
use crate::hopper::weight_ring::CHUNK_K;
use crate::hopper::wgmma::{descriptor, mma_stage_a_in_registers};
use crate::problem::Problem;
use cubecl::client::Client;
use cubecl::prelude::*;

/// Warpgroups per cube at `rows` rows: they share the cube's stages of `lhs`, so that more
/// columns a cube read `lhs` fewer times (every column block reads all of it from L2), which
/// weighs most at many rows.
pub(crate) const fn warpgroups(rows: usize) -> usize {
    if rows >= 64 { 2 } else { 1 }
}
/// Stages of the shared-memory ring: copies for `STAGES - 1` stages are in flight while one is
/// computed, so that the bytes a multiprocessor has in flight from memory are not bounded by the
/// registers a unit can hold.
const STAGES: usize = 4;

/// Copies `BYTES` (4, 8 or 16) from global address `source` to shared address `destination`
/// without the unit's registers (`cp.async`), of which `valid` bytes are read and the rest
/// zero-filled.
#[cube]
fn copy_async(destination: u32, source: u64, valid: u32, #[comptime] bytes: u32) {
    let size = comptime![bytes.to_string()];
    gpu_asm!(
        "cp.async.ca.shared.global [{d}], [{s}], {size}, {v};",
        d = in(_) destination,
        s = in(_) source,
        v = in(_) valid,
    );
}

/// Closes this unit's group of copies issued since the last one.
#[cube]
fn commit_copies() {
    gpu_asm!("cp.async.commit_group;");
}

/// Waits until at most `pending` of this unit's groups of copies are still in flight.
#[cube]
fn wait_copies(#[comptime] pending: usize) {
    let pending = comptime![pending.to_string()];
    gpu_asm!("cp.async.wait_group {pending};");
}

/// Where a cube's operands are: global byte addresses of `lhs`'s and `rhs`'s buffers, this
/// unit's two weight columns (element offsets into `rhs`, batch included) and `lhs`'s batch
/// offset and strides.
#[derive(CubeType, Clone, Copy)]
struct Sources {
    lhs: u64,
    rhs: u64,
    columns: (usize, usize),
    rhs_sk: usize,
    lhs_at: usize,
    lhs_sm: usize,
    lhs_sk: usize,
    m: usize,
    k_end: usize,
}

/// Issues the copies of stage `chunk` of the slice starting at `k_first` (`k` from
/// `k_first + 32 chunk`) into ring slot `chunk % STAGES`, then closes the group; past the
/// slice's `chunks` stages it closes an empty group, which keeps one group per stage for
/// [`wait_copies`] to count.
///
/// `A`: this unit's 16 fragment values, weight columns `columns` at `k0 + 8 s + quad (+ 4)`, into
/// 16-byte words `s` of the slot's `[4][units]` array (word `s` of unit `u` at `s units + u`), in
/// the order the MMA reads them, so that [`read_a()`] takes them with four conflict-free 16-byte
/// loads; under `pairs` the two columns are adjacent and one 8-byte copy moves both.
/// `B`: `lhs`'s rows at `k0..k0 + 32`, K-major with the 128-byte swizzle (16-byte piece `p` of
/// row `r` at piece `p ^ (r % 8)`); under `pieces` (`lhs` K-major, rows 16-byte aligned) in
/// 16-byte copies, else one element a copy. Past `k_end` the copies read nothing and write zero;
/// rows past `m` copy row `m - 1`, the MMA's columns of output rows never stored.
#[cube]
#[allow(clippy::too_many_arguments)]
fn issue_stage(
    src: &Sources,
    a_ring: u32,
    b_ring: u32,
    chunk: usize,
    chunks: usize,
    k_first: usize,
    unit: usize,
    #[comptime] rows: usize,
    #[comptime] units: usize,
    #[comptime] pairs: bool,
    #[comptime] pieces: bool,
) {
    if chunk < chunks {
        copy_stage(
            src,
            a_ring,
            b_ring,
            chunk % STAGES,
            k_first + chunk * CHUNK_K,
            unit,
            rows,
            units,
            pairs,
            pieces,
        );
    }
    commit_copies();
}

/// [`issue_stage()`]'s copies of the stage at `k0` into ring slot `slot`.
#[cube]
#[allow(clippy::too_many_arguments)]
fn copy_stage(
    src: &Sources,
    a_ring: u32,
    b_ring: u32,
    slot: usize,
    k0: usize,
    unit: usize,
    #[comptime] rows: usize,
    #[comptime] units: usize,
    #[comptime] pairs: bool,
    #[comptime] pieces: bool,
) {
    let lane = unit % 32;
    let quad = lane % 4;
    #[unroll]
    for s in 0..4usize {
        #[unroll]
        for half in 0..2usize {
            let kk = k0 + comptime![8 * s + 4 * half] + quad;
            let valid = kk < src.k_end;
            let row = select(valid, kk, k0) * src.rhs_sk;
            let destination = a_ring
                + (((slot * 4 + comptime![s]) * units + unit) * 16) as u32
                + comptime![8 * half] as u32;
            if comptime![pairs] {
                copy_async(
                    destination,
                    src.rhs + u64::cast_from(src.columns.0 + row) * 4,
                    select(valid, 8u32, 0u32),
                    8u32,
                );
            } else {
                let bytes = select(valid, 4u32, 0u32);
                copy_async(
                    destination,
                    src.rhs + u64::cast_from(src.columns.0 + row) * 4,
                    bytes,
                    4u32,
                );
                copy_async(
                    destination + 4,
                    src.rhs + u64::cast_from(src.columns.1 + row) * 4,
                    bytes,
                    4u32,
                );
            }
        }
    }
    let stage = b_ring + (slot * rows * CHUNK_K * 4) as u32;
    if comptime![pieces] {
        // `rows` lines of eight 16-byte pieces.
        #[unroll]
        for i in 0..comptime![(rows * 8).div_ceil(units)] {
            let p = unit + comptime![units * i];
            if p < comptime![rows * 8] {
                let (r, piece) = (p / 8, p % 8);
                let kk = k0 + 4 * piece;
                let valid = kk < src.k_end;
                // The piece's elements before `k_end`: 0 to 4.
                let left = select(valid, src.k_end - kk, 0);
                let bytes = u32::cast_from(select(left > 4, 4, left)) * 4;
                let row = src.lhs_at + select(r < src.m, r, src.m - 1) * src.lhs_sm;
                copy_async(
                    stage + ((r * CHUNK_K + (piece ^ (r % 8)) * 4) * 4) as u32,
                    src.lhs + u64::cast_from(row + select(valid, kk, k0)) * 4,
                    bytes,
                    16u32,
                );
            }
        }
    } else {
        // Plane `plane` copies element `lane` of rows `plane + planes i`.
        let planes = comptime![units / 32];
        let plane = unit / 32;
        let kk = k0 + lane;
        let valid = kk < src.k_end;
        #[unroll]
        for i in 0..comptime![rows / (units / 32)] {
            let r = plane + planes * i;
            let row = src.lhs_at + select(r < src.m, r, src.m - 1) * src.lhs_sm;
            copy_async(
                stage + ((r * CHUNK_K + ((lane / 4) ^ (r % 8)) * 4 + lane % 4) * 4) as u32,
                src.lhs + u64::cast_from(row + select(valid, kk, k0) * src.lhs_sk) * 4,
                select(valid, 4u32, 0u32),
                4u32,
            );
        }
    }
}

/// This unit's `A` fragments of ring slot `slot`, as [`issue_stage()`] placed them.
#[cube]
fn read_a(
    a_words: &[Vector<f32, Const<4>>],
    slot: usize,
    unit: usize,
    #[comptime] units: usize,
) -> Vector<f32, Const<16>> {
    let mut a = Vector::<f32, Const<16>>::empty();
    #[unroll]
    for s in 0..4usize {
        let word = a_words[(slot * 4 + comptime![s]) * units + unit];
        #[unroll]
        for j in 0..4usize {
            a.insert(comptime![4 * s + j], word.extract(j));
        }
    }
    a
}

/// One slice of `k`'s partial sums for `64 warpgroups` columns of every row (cube `(x, y, z)`:
/// column block, slice, batch) into `partials`, `[slices, batch * m, n]`; each warpgroup takes
/// 64 columns. The weight's columns are the MMA's rows in pairs: unit `(warp w, lane 4 g + q)`
/// of a warpgroup holds MMA rows `16 w + g` and `16 w + g + 8`, which here are the adjacent
/// columns `16 w + 2 g` and `+ 1`. Both operands come through a [`STAGES`]-deep shared ring
/// filled with `cp.async` ([`issue_stage()`]).
#[cube(launch_unchecked, address_type = "dynamic")]
#[allow(clippy::too_many_arguments)]
pub(crate) fn swapped_partials<R: Size>(
    lhs: &Tensor<f32>,
    rhs: &Tensor<f32>,
    partials: &mut Tensor<f32>,
    slice_k: u32,
    #[comptime] rows: usize,
    #[comptime] warpgroups: usize,
    #[comptime] pairs: bool,
    #[comptime] pieces: bool,
) {
    let rank = lhs.rank();
    let m = lhs.shape(rank - 2);
    let k = lhs.shape(rank - 1);
    let n = rhs.shape(rank - 1);
    let unit = UNIT_POS as usize;
    let plane = unit / 32;
    let lane = unit % 32;
    let (group, quad) = (lane / 4, lane % 4);
    let units = comptime![128 * warpgroups];
    // Plane `plane` is warp `plane % 4` of warpgroup `plane / 4`.
    let col = CUBE_POS_X as usize * comptime![COLUMNS * warpgroups] + plane * 16 + 2 * group;
    let slice = CUBE_POS_Y as usize;
    let batch = CUBE_POS_Z as usize;
    let (k_first, k_end) = slice_bounds(slice, slice_k as usize, k);
    let rhs_at = batch_offset::<f32>(rhs, batch);
    let rhs_sn = rhs.stride(rank - 1);
    // This unit's two columns of the weight; past `n`, the last valid ones: they are the MMA's
    // rows of output columns never stored, and each MMA row touches only its own result row.
    // Under `pairs` (`n` even), `col` is even and a pair is whole or wholly past `n`.
    let columns = if comptime![pairs] {
        let first = rhs_at + select(col < n, col, n - 2);
        (first, first + 1)
    } else {
        (
            rhs_at + select(col < n, col, n - 1) * rhs_sn,
            rhs_at + select(col + 1 < n, col + 1, n - 1) * rhs_sn,
        )
    };
    let src = Sources {
        lhs: global_address(lhs.as_slice()),
        rhs: global_address(rhs.as_slice()),
        columns,
        rhs_sk: rhs.stride(rank - 2),
        lhs_at: batch_offset::<f32>(lhs, batch),
        lhs_sm: lhs.stride(rank - 2),
        lhs_sk: lhs.stride(rank - 1),
        m,
        k_end,
    };

    // The ring: `A`'s words (`[STAGES][4][units]` of 16 bytes) and `B`'s stages (`[STAGES]`
    // of `[rows][32]` f32, each a whole number of 1024-byte swizzle atoms).
    let a_words = Shared::<[Vector<f32, Const<4>>]>::new_aligned_slice(
        comptime![STAGES * 4 * units],
        16usize,
    );
    let b_stages =
        Shared::<[f32]>::new_aligned_slice(comptime![STAGES * rows * CHUNK_K], 1024usize);
    let a_ring = shared_address::<Vector<f32, Const<4>>>(&a_words);
    let b_ring = shared_address::<f32>(&b_stages);
    let desc = descriptor(b_ring, 16u64, 1024u64);
    let stage_units = comptime![(rows * CHUNK_K * 4 / 16) as u64];

    let mut acc = Vector::<f32, R>::new(0.0f32);
    let chunks = (k_end - k_first).div_ceil(CHUNK_K);
    #[unroll]
    for t in 0..comptime![STAGES - 1] {
        issue_stage(
            &src, a_ring, b_ring, t, chunks, k_first, unit, rows, units, pairs, pieces,
        );
    }
    for c in 0..chunks {
        // This unit's copies of stage `c` have landed; after the barrier, every unit's have,
        // and every unit's MMAs of stage `c - 1` are done, so its slot may be refilled.
        wait_copies(comptime![STAGES - 2]);
        fence_proxy_async();
        sync_cube();
        issue_stage(
            &src,
            a_ring,
            b_ring,
            c + comptime![STAGES - 1],
            chunks,
            k_first,
            unit,
            rows,
            units,
            pairs,
            pieces,
        );
        let slot = c % STAGES;
        let a = read_a(&a_words, slot, unit, units);
        acc =
            mma_stage_a_in_registers::<R>(acc, a, desc + u64::cast_from(slot) * stage_units, rows);
    }

    store_partials::<R>(partials, acc, slice, batch, col, quad, m, n, rows);
}

/// Whether a unit's two weight columns are one aligned 8-byte copy: `rhs` N-major with an even
/// `n`, every other stride even and its start 8-byte aligned.
fn copies_in_pairs(rhs: &TensorBinding, dims: &Dims) -> bool {
    dims.n.is_multiple_of(2) && copies_in_vectors(rhs, 2)
}

/// Whether `lhs`'s rows are copied 16 bytes at a time: K-major, every other stride a multiple of
/// four elements and its start 16-byte aligned.
fn copies_in_pieces(lhs: &TensorBinding) -> bool {
    copies_in_vectors(lhs, 4)
}

/// Runs the path on a problem it takes ([`unavailability`]): partial sums per slice of `k`, fed
/// by `cp.async`, then their sum ([`split_k`]).
pub(crate) fn launch(client: &Client, problem: &Problem) {
    let (ops, dims) =
        rows_within(&problem.ops, &problem.dims, MAX_ROWS).expect("the caller checked the rows");
    let rows = rows_for(dims.m);
    let warpgroups = warpgroups(rows);
    let slice_k = slice_k(&dims, problem.processors, warpgroups);
    let slices = dims.k.div_ceil(slice_k);
    let grid = CubeCount::Static(
        dims.n.div_ceil(COLUMNS * warpgroups) as u32,
        slices as u32,
        dims.batch as u32,
    );
    split_k(
        client,
        ops,
        problem.dtype,
        dims,
        problem.epilogue,
        problem.mask_argument(),
        slices,
        Finish::Columns,
        |lhs, rhs, partials, address_type| {
            let (pairs, pieces) = (copies_in_pairs(&rhs, &dims), copies_in_pieces(&lhs));
            // SAFETY: the contract check bounded every operand by its buffer; the partials
            // kernel copies from `lhs` and `rhs` only inside their shapes (rows and columns
            // past the edges copy the last valid ones, and copies past `k` read no bytes from
            // a valid address) and writes each partial sum once, inside the buffer it was
            // given.
            unsafe {
                swapped_partials::launch_unchecked(
                    client,
                    grid,
                    CubeDim::new_1d(128 * warpgroups as u32),
                    address_type,
                    rows / 2,
                    lhs.into_tensor_arg(),
                    rhs.into_tensor_arg(),
                    partials.into_tensor_arg(),
                    slice_k as u32,
                    rows,
                    warpgroups,
                    pairs,
                    pieces,
                );
            }
        },
    );
}
