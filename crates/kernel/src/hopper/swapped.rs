//! f32 at 9 to 128 rows with an N-major `rhs` (Burn's `Linear` weight `[d_in, d_out]`) through
//! TF32 MMAs, without a K-major copy of the weight: the product is computed transposed,
//! `outᵀ = rhsᵀ · lhsᵀ`. The weight becomes the MMA's 64-row `A` operand, which the MMA reads
//! from registers (an `A` in registers may come from any layout, where TF32's shared-memory
//! operands must be K-major), and `lhs`'s rows, padded to the row count compiled ([`ROWS`]),
//! become `B`, which a K-major `lhs` already is. Where the TMA engine can read both operands
//! (`lhs` K-major, 16-byte strides: Burn's `Linear`), [`swapped_tma`](super::swapped_tma) feeds
//! the product, 17-30% faster on the H200. Elsewhere (an M-major `lhs`, unaligned strides) both
//! go through a ring of shared-memory stages, 32 `k` each, that every unit fills with
//! `cp.async`: its own `A` fragments, laid out so that it reads them back with four 16-byte
//! loads, and its share of `lhs`'s rows, stored with the 128-byte swizzle the MMA reads `B`
//! with. The copies hold no registers, so the bytes in flight from memory (three stages a cube)
//! do not compete with the accumulators. Split-K over cubes as in [`few_rows`](super::few_rows),
//! whose second kernel adds the slices and applies the epilogue. At few rows the weight's bytes
//! set the time; the MMAs make the arithmetic free up to 128 rows, where f32 FMAs would not keep
//! up with the memory past a few dozen.

use crate::Operands;
use crate::common::batch_offset;
use crate::contract::Dims;
use crate::hopper::Epilogue;
use crate::hopper::few_rows::{Finish, slice_bounds, split_k};
use crate::hopper::mbarrier::fence_proxy_async;
use crate::hopper::plan::{LhsMajor, MapLayout, RhsMajor, plan};
use crate::hopper::swapped_tma::{self, swapped_tma_partials};
use crate::hopper::wgmma::{by_value, descriptor, shared_address};
use crate::hopper::{processors, tensor_map};
use cubecl::client::Client;
use cubecl::ir::ElemType;
use cubecl::prelude::*;

/// Output columns per warpgroup: the MMA's `m`.
pub(crate) const COLUMNS: usize = 64;
/// Warpgroups per cube at `rows` rows: they share the cube's stages of `lhs`, so that more
/// columns a cube read `lhs` fewer times (every column block reads all of it from L2), which
/// weighs most at many rows.
pub(crate) const fn warpgroups(rows: usize) -> usize {
    if rows >= 64 { 2 } else { 1 }
}
/// `k` per stage of `lhs` in shared memory: one 128-byte swizzle line of f32, four `k8` MMAs.
pub(crate) const CHUNK_K: usize = 32;
/// The row counts compiled (the MMA's `n`): a problem takes the smallest that holds its `m`.
pub(crate) const ROWS: [usize; 4] = [16, 32, 64, 128];
/// The fewest rows the swapped path takes ([`takes()`]).
pub(crate) const FEWEST_ROWS: usize = 9;
/// Cubes a multiprocessor is given work for, for cubes of `warpgroups` warpgroups, which sets
/// how finely `k` is split. Two for cubes of one warpgroup (every row count on the TMA-fed
/// path, up to 32 rows fed by `cp.async`): as many as fit at once (their rings take 100 KiB of
/// shared memory), so that the cubes run in one round. Up to 32 rows that beat a finer split:
/// 0.0352 against 0.0399 ms at `1 x 32 x 4096 x 4096`, 0.105 against 0.111 at
/// `1 x 16 x 4096 x 16384` (H200). From 64 rows it beat four (two rounds, twice the partial
/// sums) at every shape measured on an H100: 0.0406 against 0.0465 ms at
/// `1 x 128 x 4096 x 4096`, 0.0360 against 0.0392 at `1 x 64 x 4096 x 4096`, 0.1132 against
/// 0.1190 at `1 x 128 x 8192 x 8192`, 0.0273 against 0.0310 at `4 x 100 x 1000 x 2056`. Four
/// for cubes of two warpgroups (64 rows and more fed by `cp.async`), where fewer slices won on
/// some shapes and lost on others.
const fn cubes_per_processor(warpgroups: usize) -> usize {
    if warpgroups == 1 { 2 } else { 4 }
}

/// The PTX of one stage: four `m64nNk8` TF32 MMAs with `A` in registers, then commit and wait.
/// Operands, as cubecl numbers them: `D` = `%0..%R-1` (out), `C` = `%R..%2R-1` (in), `A` =
/// `%2R..%2R+15` (four registers a step), the `B` descriptor `%2R+16`, with `R = n / 2`.
pub(crate) fn mma_a_in_registers_ptx(n: usize) -> String {
    let a = n;
    // The MMA's `A` registers are untyped 32-bit words holding the f32 bits (TF32 ignores the
    // low 13 bits of the mantissa).
    let fragments = (0..16)
        .map(|i| format!("mov.b32 fmar_a{i}, %{};\n", a + i))
        .collect::<String>();
    mma_steps_ptx(n, 0, 4, &fragments, a + 16)
}

/// The PTX of `steps` `k8` steps of a stage from step `first_step`: `m64nNk8` TF32 MMAs whose
/// `A` fragments `fragments` (PTX lines) puts in `fmar_a0..` (four registers a step), then
/// commit and wait. `D` is `%0..%R-1` (out), `C` `%R..%2R-1` (in), with `R = n / 2`; `db` the
/// operand of the stage's `B` descriptor, which moves 32 bytes along `k` a step.
pub(crate) fn mma_steps_ptx(
    n: usize,
    first_step: usize,
    steps: usize,
    fragments: &str,
    db: usize,
) -> String {
    let r = n / 2;
    let d = (0..r)
        .map(|i| format!("%{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut s = format!(
        "{{\n.reg .b64 fmar_db;\n.reg .b32 fmar_one;\n.reg .b32 fmar_a<{}>;\n\
         .reg .pred fmar_acc;\nmov.b32 fmar_one, 1;\nsetp.ne.b32 fmar_acc, fmar_one, 0;\n",
        4 * steps
    );
    for i in 0..r {
        s.push_str(&format!("mov.f32 %{i}, %{};\n", r + i));
    }
    s.push_str(fragments);
    s.push_str("wgmma.fence.sync.aligned;\n");
    s.push_str(&format!("mov.b64 fmar_db, %{db};\n"));
    for step in 0..steps {
        // 32 bytes a step along `k` in the 128-byte line (descriptor units of 16 bytes).
        let advance = if step == 0 { 2 * first_step } else { 2 };
        if advance > 0 {
            s.push_str(&format!("add.s64 fmar_db, fmar_db, {advance};\n"));
        }
        let regs = (0..4)
            .map(|j| format!("fmar_a{}", 4 * step + j))
            .collect::<Vec<_>>()
            .join(", ");
        s.push_str(&format!(
            "wgmma.mma_async.sync.aligned.m64n{n}k8.f32.tf32.tf32 {{{d}}}, {{{regs}}}, fmar_db, \
             fmar_acc, 1, 1;\n"
        ));
    }
    s.push_str("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n}");
    s
}

/// One stage's MMAs into `acc` (the `R = N / 2` f32 registers a unit holds of the warpgroup's
/// `64 x N` result): `a` holds this unit's `A` fragments of the stage's four `k8` steps.
#[cube]
pub(crate) fn mma_stage_a_in_registers<R: Size>(
    acc: Vector<f32, R>,
    a: Vector<f32, Const<16>>,
    desc_b: u64,
    #[comptime] n: usize,
) -> Vector<f32, R> {
    let body = comptime![mma_a_in_registers_ptx(n)];
    let c = by_value::<Vector<f32, R>>(acc);
    let a = by_value::<Vector<f32, Const<16>>>(a);
    let db = by_value::<u64>(desc_b);
    let out: Vector<f32, R>;
    // cubecl refuses an operand the text never names: the comment names them all once.
    gpu_asm!(
        "// fmar wgmma: d={d} c={c} a={a} b={db}\n{body}",
        d = out(_) out,
        c = in(_) c,
        a = in(_) a,
        db = in(_) db,
    );
    out
}

/// Stages of the shared-memory ring: copies for `STAGES - 1` stages are in flight while one is
/// computed, so that the bytes a multiprocessor has in flight from memory are not bounded by the
/// registers a unit can hold.
const STAGES: usize = 4;

/// The global-window address of a global tensor's buffer (`cvta.to.global`), for `cp.async`.
#[cube]
fn global_address(buffer: &[f32]) -> u64 {
    let pointer = buffer.as_ptr();
    let address: u64;
    gpu_asm!(
        "cvta.to.global.u64 {a}, {p};",
        a = out(_) address,
        p = in(_) pointer,
        options(pure, nomem),
    );
    address
}

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

/// Stores a unit's share of one slice's sums (`acc`, the MMA's result for the unit of lane
/// `4 g + quad`) into `partials` (`[slices, batch * m, n]`): the result's column
/// `8 j + 2 quad (+ 1)` is row `r` of the output, and its rows `g` and `g + 8` are the weight's
/// columns `col` and `col + 1`. Rows past `m` and columns past `n` are not stored.
#[cube]
#[allow(clippy::too_many_arguments)]
pub(crate) fn store_partials<R: Size>(
    partials: &mut Tensor<f32>,
    acc: Vector<f32, R>,
    slice: usize,
    batch: usize,
    col: usize,
    quad: usize,
    m: usize,
    n: usize,
    #[comptime] rows: usize,
) {
    let base = slice * partials.shape(1) + batch * m;
    #[unroll]
    for j in 0..comptime![rows / 8] {
        #[unroll]
        for dr in 0..2usize {
            let r = 8 * j + 2 * quad + dr;
            if r < m {
                let at = (base + r) * n + col;
                if col < n {
                    partials[at] = acc.extract(comptime![4 * j + dr]);
                }
                if col + 1 < n {
                    partials[at + 1] = acc.extract(comptime![4 * j + 2 + dr]);
                }
            }
        }
    }
}

/// Whether the swapped path takes this problem: 9 to 128 rows (below [`FEWEST_ROWS`]
/// the f32 FMA kernels of [`few_rows`](super::few_rows) were faster on the H200: 0.0321 against
/// 0.0335 ms at `1 x 8 x 4096 x 4096`, 0.0254 against 0.0321 at one row), and batches within
/// the grid's 65,535 along z (`slice_k` keeps the slices within y's).
pub(crate) fn takes(dims: &Dims) -> bool {
    (FEWEST_ROWS..=ROWS[ROWS.len() - 1]).contains(&dims.m) && dims.batch <= u16::MAX as usize
}

/// The row count compiled for `m` rows: the smallest that holds them.
fn rows_for(m: usize) -> usize {
    ROWS.into_iter()
        .find(|&rows| m <= rows)
        .expect("at most the largest row count")
}

/// Depth of one slice of `k` for cubes of `warpgroups` warpgroups ([`stage_slice_k`], at most
/// [`cubes_per_processor()`] cubes a multiprocessor).
fn slice_k(dims: &Dims, processors: usize, warpgroups: usize) -> usize {
    stage_slice_k(
        dims,
        COLUMNS * warpgroups,
        processors * cubes_per_processor(warpgroups),
    )
}

/// Depth of one slice of `k` for cubes of `columns` columns: a whole number of stages
/// ([`CHUNK_K`]), `k` split so that the grid has at most `resident` cubes (as many as fit the
/// device at once). At most, not about: the cubes run in rounds of as many as fit at once, and
/// one slice more than fits starts a round that leaves most multiprocessors idle (at
/// `1 x 128 x 4096 x 4096`, 5 slices of 64 column blocks would be 320 cubes, 1.2 rounds of
/// 264, where 4 slices are one).
pub(crate) fn stage_slice_k(dims: &Dims, columns: usize, resident: usize) -> usize {
    let blocks = dims.n.div_ceil(columns) * dims.batch;
    let chunks = dims.k.div_ceil(CHUNK_K);
    let wanted = (resident / blocks).clamp(1, chunks);
    // Never more than the grid's y allows.
    let per_slice = chunks
        .div_ceil(wanted)
        .max(chunks.div_ceil(u16::MAX as usize));
    per_slice * CHUNK_K
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

/// Whether an f32 operand's rows can be copied `elems` elements at a time, aligned: its last
/// stride 1, every other stride a multiple of `elems`, and its start a multiple of `elems`
/// elements into its buffer.
pub(crate) fn copies_in_vectors(binding: &TensorBinding, elems: usize) -> bool {
    let (last, others) = binding.strides.split_last().expect("a matrix has two dims");
    *last == 1
        && others.iter().all(|s| s.is_multiple_of(elems))
        && binding
            .handle
            .offset_start
            .unwrap_or(0)
            .is_multiple_of(4 * elems as u64)
}

/// The TMA engine's maps of `lhs` and `rhs` where it can read both as the TMA-fed kernel needs
/// them ([`swapped_tma`]): `lhs` K-major, `rhs` N-major, starts and strides 16-byte aligned.
pub(crate) fn tma_layouts(ops: &Operands) -> Option<(MapLayout, MapLayout)> {
    let plan = plan(&ops.lhs, &ops.rhs, &ops.out, 4).ok()?;
    (plan.lhs_major == LhsMajor::K && plan.rhs_major == RhsMajor::N).then_some((plan.lhs, plan.rhs))
}

/// Runs the swapped path: partial sums per slice of `k` (fed by the TMA engine where it can
/// read the operands, [`swapped_tma`], else by `cp.async`), then their sum ([`split_k`]).
pub(crate) fn launch(
    client: &Client,
    ops: Operands,
    dtype: ElemType,
    dims: Dims,
    epilogue: Epilogue,
    mask: TensorBinding,
) {
    debug_assert!(takes(&dims));
    let rows = rows_for(dims.m);
    let tma = tma_layouts(&ops);
    let warpgroups = if tma.is_some() {
        swapped_tma::WARPGROUPS
    } else {
        warpgroups(rows)
    };
    let slice_k = slice_k(&dims, processors(client), warpgroups);
    let slices = dims.k.div_ceil(slice_k);
    let grid = CubeCount::Static(
        dims.n.div_ceil(COLUMNS * warpgroups) as u32,
        slices as u32,
        dims.batch as u32,
    );
    split_k(
        client,
        ops,
        dtype,
        dims,
        epilogue,
        mask,
        slices,
        Finish::Columns,
        |lhs, rhs, partials, address_type| match tma {
            Some((lhs_layout, rhs_layout)) => {
                let lhs_map = tensor_map(&lhs, &lhs_layout, [1, rows, CHUNK_K], dtype);
                let rhs_map = tensor_map(
                    &rhs,
                    &rhs_layout,
                    [1, CHUNK_K, swapped_tma::BOX_COLUMNS],
                    dtype,
                );
                // SAFETY: the TMA engine reads `lhs` and `rhs` through maps of their own shapes,
                // filling past the edges with zeros; the kernel writes each partial sum once,
                // inside the buffer it was given.
                unsafe {
                    swapped_tma_partials::launch_unchecked(
                        client,
                        grid,
                        CubeDim::new_1d(128 * warpgroups as u32 + 32),
                        address_type,
                        rows / 2,
                        lhs_map,
                        rhs_map,
                        partials.into_tensor_arg(),
                        dims.m as u32,
                        dims.n as u32,
                        dims.k as u32,
                        slice_k as u32,
                        rows,
                        warpgroups,
                        swapped_tma::stages(rows, warpgroups),
                        lhs_layout.batched,
                        rhs_layout.batched,
                    );
                }
            }
            None => {
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
            }
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_is_four_k8_mmas_with_a_from_registers() {
        let ptx = mma_a_in_registers_ptx(16);
        assert_eq!(ptx.matches("wgmma.mma_async").count(), 4);
        assert!(ptx.contains(
            "m64n16k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7}, \
             {fmar_a0, fmar_a1, fmar_a2, fmar_a3}, fmar_db, fmar_acc, 1, 1;"
        ));
        assert!(ptx.contains("{fmar_a12, fmar_a13, fmar_a14, fmar_a15}, fmar_db"));
        assert!(ptx.contains("mov.b32 fmar_a0, %16;\n") && ptx.contains("mov.b32 fmar_a15, %31;"));
        assert!(ptx.contains("mov.b64 fmar_db, %32;"));
        assert_eq!(ptx.matches("add.s64 fmar_db, fmar_db, 2;").count(), 3);
        assert!(ptx.ends_with("wgmma.wait_group.sync.aligned 0;\n}"));
    }

    #[test]
    fn slices_fill_the_processors_in_whole_stages() {
        let dims = |batch, m, k, n| Dims { m, n, k, batch };
        // 64 column blocks on 132 multiprocessors, at most two cubes each: 4 slices of 32
        // stages (256 cubes; 5 slices would be 320, more than 264).
        let depth = slice_k(&dims(1, 16, 4096, 4096), 132, 1);
        assert_eq!(depth % CHUNK_K, 0);
        assert_eq!((depth, 4096usize.div_ceil(depth)), (1024, 4));
        // 32 column blocks of two warpgroups at 128 rows, at most four cubes each: 16 slices of
        // 8 stages; 64 blocks of one warpgroup, at most two cubes each: 4 slices of 32 stages.
        let depth = slice_k(&dims(1, 128, 4096, 4096), 132, 2);
        assert_eq!((depth, 4096usize.div_ceil(depth)), (256, 16));
        let depth = slice_k(&dims(1, 128, 4096, 4096), 132, 1);
        assert_eq!((depth, 4096usize.div_ceil(depth)), (1024, 4));
        // More column blocks than multiprocessors can take twice: one slice.
        assert_eq!(slice_k(&dims(1, 16, 4096, 32768), 132, 1), 4096);
        // 128 blocks: `k` of 128 in four slices of one stage.
        assert_eq!(slice_k(&dims(64, 128, 128, 128), 132, 2), 32);
        // The grid's y holds at most 65,535 slices.
        let deep = dims(1, 16, 70_000 * CHUNK_K, 8192);
        assert!(deep.k.div_ceil(slice_k(&deep, 132, 1)) <= u16::MAX as usize);
        // A short `k` is one stage.
        assert_eq!(slice_k(&dims(1, 16, 5, 64), 132, 1), 32);
    }
}
