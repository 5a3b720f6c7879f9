//! `hopper-swapped-tiles`: f32 with an N-major `rhs` (Burn's `Linear` weight `[d_in, d_out]`)
//! through TF32 MMAs, without a K-major copy of the weight: the transposed product
//! ([`transposed`](super::transposed)) over whole tiles, finished in the kernel. A cube takes a
//! tile of [`COLUMNS`] weight columns and [`ROWS`] rows: two consumer warpgroups of 64 columns
//! each run `m64n256k8` MMAs on the same stage of `lhs`'s rows, fed by a producer unit through
//! the weight ring ([`weight_ring`](super::weight_ring)); then each unit applies the epilogue
//! and stores its sums straight into the output, two adjacent columns of a row at a time. No
//! K-major copy of the weight (35 us a call at `4096 x 4096` on an H200), no partial sums.
//! Where the TMA engine can read both operands (`lhs` K-major, every stride but the last a
//! multiple of 16 bytes).
//!
//! Under the ReLU mask's epilogue a mask word's 32 columns are two warps' 16: each warp ORs its
//! half over its lanes, and the two halves meet in shared memory.
//!
//! Registers: a whole stage's `A` fragments (16) beside the 128 accumulators of a 256-row tile
//! pass the 168 registers a unit may hold for the assembler not to serialise the MMAs (C7512),
//! so a stage's MMAs run in two statements of two `k8` steps, each loading its own fragments:
//! 162 registers, no spills, two waits a stage ([`STEPS`]).
//!
//! Against the K-major copy and the whole-tile kernel, on an H100: 0.367 ms against 0.395 at
//! 4096³, 0.178-0.185 against 0.217-0.223 at 1280 and 2048 rows of `4096 x 4096`, as fast at
//! `16384 x 1024 x 4096` and `8 x 1024³`.

use crate::common::address_type;
use crate::contract::Dims;
use crate::epilogue::{Epilogue, bias_row_broadcast, bias_vector, finish_vector, or_across_lanes};
use crate::hopper::layout::{f32_weight_maps, tensor_map};
use crate::hopper::mbarrier::{BARRIER_BYTES, arrive, next_stage, ring_barriers, wait_barrier};
use crate::hopper::ptx::{by_value, shared_address, warpgroup_barrier};
use crate::hopper::transposed::{self, weight_fragment};
use crate::hopper::weight_ring::{BOX_BYTES, BOX_COLUMNS, CHUNK_K, fill_weight_ring};
use crate::hopper::wgmma::{descriptor, mma_steps_ptx};
use crate::problem::Problem;
use cubecl::client::Client;
use cubecl::prelude::*;

/// Rows of a tile: the MMA's `n`, its largest.
pub(crate) const ROWS: usize = 256;
/// Consumer warpgroups a cube, each [`transposed::COLUMNS`] weight columns.
pub(crate) const WARPGROUPS: usize = 2;
/// Weight columns of a tile.
pub(crate) const COLUMNS: usize = transposed::COLUMNS * WARPGROUPS;
/// Stages of the ring: four of 48 KiB (16 of the weight, 32 of `lhs`'s rows), one cube a
/// multiprocessor.
pub(crate) const STAGES: usize = 4;
/// The fewest rows the heuristic gives this path: above those the split-K transposed products
/// take.
pub(crate) const FEWEST_ROWS: usize = transposed::MAX_ROWS + 1;

/// `out = relu(lhs @ rhs + bias)` (or as `epilogue` says, never the mask's) for the tile of
/// cube `(x, y, z)`: weight columns `64 warpgroups x`, rows `rows y`, batch `z`, over all of
/// `k`, fed by a ring of `stages` stages. `rhs` is the weight's map (`[batch, k, n]`, box
/// `[1, 32, 32]`), `lhs` the rows' (`[batch, m, k]`, box `[1, rows, 32]`); past the edges the
/// TMA engine reads zeros. The output is dense, `[batch * m, n]`. `bias_row_broadcast`: the
/// bias is the same for every row, so a unit reads its two columns' once.
#[cube(launch_unchecked, address_type = "dynamic")]
#[allow(clippy::too_many_arguments)]
pub(crate) fn swapped_tiles_product<R: Size>(
    lhs: &TensorMap<f32, Tiled>,
    rhs: &TensorMap<f32, Tiled>,
    bias: &Tensor<f32>,
    output: &mut Tensor<f32>,
    mask: &mut Tensor<u32>,
    m: u32,
    n: u32,
    k: u32,
    #[comptime] rows: usize,
    #[comptime] warpgroups: usize,
    #[comptime] stages: usize,
    #[comptime] epilogue: Epilogue,
    #[comptime] bias_row_broadcast: bool,
    #[comptime] lhs_batched: bool,
    #[comptime] rhs_batched: bool,
) {
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let consumer_units = comptime![128 * warpgroups];
    let b_stage_bytes = comptime![(rows * CHUNK_K * 4) as u32];
    let col0 = CUBE_POS_X as usize * comptime![transposed::COLUMNS * warpgroups];
    let row0 = CUBE_POS_Y as usize * rows;
    let batch = CUBE_POS_Z as usize;
    let chunks = k.div_ceil(CHUNK_K);

    // The ring: the weight's boxes (`[stages][2 warpgroups]` of `[32][32]` f32) and `lhs`'s
    // stages (`[stages][rows][32]`), each a whole number of 1024-byte swizzle atoms.
    let smem_a = Shared::<[Vector<f32, Const<2>>]>::new_aligned_slice(
        comptime![stages * warpgroups * BOX_BYTES / 4],
        1024usize,
    );
    let smem_b = Shared::<[f32]>::new_aligned_slice(comptime![stages * rows * CHUNK_K], 1024usize);
    let (full, empty) = ring_barriers(stages, comptime![consumer_units as u32]);
    // Under the mask's epilogue, each warp's half of every mask word of its weight box (a
    // word's 32 columns are two warps' 16), `[box][warp parity][row]`.
    let mut halves = Shared::<[u32]>::new_slice(comptime![if epilogue.writes_mask() {
        4 * warpgroups * rows
    } else {
        1
    }]);

    if UNIT_POS as usize == consumer_units {
        fill_weight_ring(
            lhs,
            rhs,
            shared_address::<Vector<f32, Const<2>>>(&smem_a),
            shared_address::<f32>(&smem_b),
            full,
            empty,
            col0,
            row0,
            0usize,
            chunks,
            batch,
            comptime![2 * warpgroups],
            stages,
            b_stage_bytes,
            b_stage_bytes,
            lhs_batched,
            rhs_batched,
        );
    } else if (UNIT_POS as usize) < consumer_units {
        // This unit's fragments, as `swapped_tma` lays them out.
        let (_, first, second) = weight_fragment(UNIT_POS as usize);

        // The shared addresses of the unit's first pair of the first stage's two lines.
        let a_ring = shared_address::<Vector<f32, Const<2>>>(&smem_a);
        let (a_first, a_second) = (a_ring + first as u32 * 8, a_ring + second as u32 * 8);
        let a_stage_bytes = comptime![(2 * warpgroups * BOX_BYTES) as u32];
        let b_base = descriptor(shared_address::<f32>(&smem_b), 16u64, 1024u64);
        let b_stage_step = comptime![(rows * CHUNK_K * 4 / 16) as u64];
        let mut stage = 0u32;
        let mut phase = 0u32;
        let mut acc = Vector::<f32, R>::new(0.0f32);
        for _ in 0..chunks {
            let offset = stage * BARRIER_BYTES;
            wait_barrier(full + offset, phase);
            let at = stage * a_stage_bytes;
            let b = b_base + u64::cast_from(stage) * b_stage_step;
            #[unroll]
            for half in 0..comptime![4 / STEPS] {
                acc = mma_steps_a_from_shared::<R>(
                    acc,
                    a_first + at,
                    a_second + at,
                    b,
                    rows,
                    comptime![half * STEPS],
                );
            }
            arrive(empty + offset);
            (stage, phase) = next_stage(stage, phase, stages);
        }

        // Derived after the loop, so that it holds no register through it.
        let unit = UNIT_POS as usize;
        let (column, _, _) = weight_fragment(unit);
        let col = CUBE_POS_X as usize * comptime![transposed::COLUMNS * warpgroups] + column;
        store_tile::<R>(
            bias,
            output,
            mask,
            &mut halves,
            acc,
            CUBE_POS_Z as usize,
            CUBE_POS_Y as usize * rows,
            col,
            unit,
            m,
            n,
            rows,
            epilogue,
            bias_row_broadcast,
        );
    }
}

/// `k8` steps an MMA statement runs: half a stage. A whole stage's `A` fragments (16
/// registers) beside the 128 accumulators of `n = 256` and the loop's own values passed the 168
/// registers a unit has (three warps of a quarter multiprocessor), and the assembler serialised
/// every MMA (C7512); half of them (8) fit.
pub(crate) const STEPS: usize = 2;

/// The PTX of [`STEPS`] `k8` steps from step `first_step` of a stage ([`mma_steps_ptx`]): the
/// unit's `A` fragments of those steps loaded from shared memory, then their `m64nNk8` TF32
/// MMAs, commit and wait. Operands, as cubecl numbers them: `D` = `%0..%R-1` (out), `C` =
/// `%R..%2R-1` (in), the shared addresses of the unit's pairs on the stage's first step's two
/// lines `%2R` and `%2R+1` (each step's are 1024 bytes further), the stage's `B` descriptor
/// `%2R+2`, with `R = n / 2`. The loads are part of the statement, so the fragments hold
/// registers only while the MMAs run.
pub(crate) fn mma_a_from_shared_ptx(n: usize, first_step: usize) -> String {
    let (first, second) = (n, n + 1);
    let fragments = (0..STEPS)
        .map(|step| {
            let (a, at) = (4 * step, 1024 * (first_step + step));
            format!(
                "ld.shared.v2.b32 {{fmar_a{a}, fmar_a{}}}, [%{first}+{at}];\n\
                 ld.shared.v2.b32 {{fmar_a{}, fmar_a{}}}, [%{second}+{at}];\n",
                a + 1,
                a + 2,
                a + 3
            )
        })
        .collect::<String>();
    mma_steps_ptx(n, first_step, STEPS, &fragments, n + 2)
}

/// [`STEPS`] `k8` steps of a stage's MMAs from step `first_step` into `acc` (the `R = N / 2`
/// f32 registers a unit holds of the warpgroup's `64 x N` result), the unit's `A` fragments
/// read from shared memory at `a_first` and `a_second` ([`mma_a_from_shared_ptx`]).
#[cube]
fn mma_steps_a_from_shared<R: Size>(
    acc: Vector<f32, R>,
    a_first: u32,
    a_second: u32,
    desc_b: u64,
    #[comptime] n: usize,
    #[comptime] first_step: usize,
) -> Vector<f32, R> {
    let body = comptime![mma_a_from_shared_ptx(n, first_step)];
    let c = by_value::<Vector<f32, R>>(acc);
    let first = by_value::<u32>(a_first);
    let second = by_value::<u32>(a_second);
    let db = by_value::<u64>(desc_b);
    let out: Vector<f32, R>;
    // cubecl refuses an operand the text never names: the comment names them all once.
    gpu_asm!(
        "// fmar wgmma: d={d} c={c} f={f} s={s} b={db}\n{body}",
        d = out(_) out,
        c = in(_) c,
        f = in(_) first,
        s = in(_) second,
        db = in(_) db,
    );
    out
}

/// Stores the sums of consumer unit `unit` (`acc`, the MMA's result for the unit of lane
/// `4 g + q`), finished as `epilogue` says, into the dense output (`[batch * m, n]`): the
/// result's column `8 j + 2 q (+ 1)` is row `row0 + r` of the output, and its rows `g` and
/// `g + 8` are the weight's columns `col` and `col + 1`. Rows past `m` and columns past `n` are
/// not stored. Under the mask's epilogue, the ReLU mask's words of the tile's rows too: each
/// warp ORs its 16 columns' bits of a row over its lanes, the two warps of a weight box meet in
/// `halves` (`[box][warp parity][row]`), and each warp then stores half of the box's rows'
/// words. Every unit of both warpgroups takes part (the shuffles and the warpgroup barrier).
#[cube]
#[allow(clippy::too_many_arguments)]
fn store_tile<R: Size>(
    bias: &Tensor<f32>,
    output: &mut Tensor<f32>,
    mask: &mut Tensor<u32>,
    halves: &mut [u32],
    acc: Vector<f32, R>,
    batch: usize,
    row0: usize,
    col: usize,
    unit: usize,
    m: usize,
    n: usize,
    #[comptime] rows: usize,
    #[comptime] epilogue: Epilogue,
    #[comptime] bias_row_broadcast: bool,
) {
    let rank = output.rank();
    let (warp, lane) = (unit / 32, unit % 32);
    let quad = lane % 4;
    // The warp's weight box in the cube (two warps a box) and its half of it.
    let (a_box, parity) = (warp / 2, warp % 2);
    // A bias the same for every row: this unit's two columns', read once.
    let mut row_biases = Vector::<f32, Const<2>>::new(0.0);
    if comptime![epilogue.bias_relu() && bias_row_broadcast] {
        #[unroll]
        for c in 0..2usize {
            if col + c < n {
                let b = bias_vector::<f32, Const<1>>(bias, rank, batch, 0usize, col + c);
                row_biases.insert(c, b.extract(0usize));
            }
        }
    }
    #[unroll]
    for j in 0..comptime![rows / 8] {
        #[unroll]
        for dr in 0..2usize {
            let within = 8 * j + 2 * quad + dr;
            let r = row0 + within;
            let mut bits = 0u32;
            if r < m {
                let at = (batch * m + r) * n + col;
                #[unroll]
                for c in 0..2usize {
                    if col + c < n {
                        let mut biases = Vector::<f32, Const<1>>::new(0.0);
                        if comptime![epilogue.bias_relu()] {
                            if comptime![bias_row_broadcast] {
                                biases = Vector::<f32, Const<1>>::new(row_biases.extract(c));
                            } else {
                                biases =
                                    bias_vector::<f32, Const<1>>(bias, rank, batch, r, col + c);
                            }
                        }
                        let (value, word_bits) = finish_vector::<f32, Const<1>>(
                            Vector::<f32, Const<1>>::new(
                                acc.extract(comptime![4 * j + 2 * c + dr]),
                            ),
                            biases,
                            col + c,
                            epilogue,
                        );
                        output[at + c] = value.extract(0usize);
                        bits |= word_bits;
                    }
                }
            }
            if comptime![epilogue.writes_mask()] {
                // The eight lanes of quad `q` hold the warp's 16 columns of row `within`.
                bits = or_across_lanes(bits, 2u32, 3u32);
                if lane < 4 {
                    halves[(2 * a_box + parity) * rows + within] = bits;
                }
            }
        }
    }
    if comptime![epilogue.writes_mask()] {
        warpgroup_barrier((warp / 4) as u32);
        let row_words = mask.shape(mask.rank() - 1);
        // The box's word of a row (the unit's columns are in it).
        let word = col / 32;
        #[unroll]
        for i in 0..comptime![rows / 64] {
            let within = parity * comptime![rows / 2] + i * 32 + lane;
            let r = row0 + within;
            if r < m && word < row_words {
                let box_rows = 2 * a_box * rows + within;
                mask[(batch * m + r) * row_words + word] =
                    halves[box_rows] | halves[box_rows + rows];
            }
        }
    }
}

/// Where the heuristic runs this path: more than 128 rows, and tiles enough for every one of the
/// device's `processors` multiprocessors (one cube each at a time; with fewer, the whole-tile
/// kernel splits `k`).
pub(crate) fn fills_the_device(dims: &Dims, processors: usize) -> bool {
    let tiles = dims.n.div_ceil(COLUMNS) * dims.m.div_ceil(ROWS) * dims.batch;
    dims.m >= FEWEST_ROWS && tiles >= processors
}

/// Why the grid of `dims` passes its limits, if it does: at most 65,535 tiles along `m` and
/// batches along z, and an output the kernel's 32-bit indices reach (at most `2^32` elements).
fn grid_unavailability(dims: &Dims) -> Option<String> {
    let max = u16::MAX as usize;
    if dims.m.div_ceil(ROWS) > max || dims.batch > max {
        Some(format!(
            "{} tiles of {ROWS} rows and {} batches (at most {max} of each)",
            dims.m.div_ceil(ROWS),
            dims.batch
        ))
    } else if dims.m * dims.n * dims.batch > u32::MAX as usize {
        Some("an output of more than 2^32 elements".into())
    } else {
        None
    }
}

/// Why this path cannot run `problem`, if it cannot: not an f32 product with an N-major weight,
/// TF32 rounding disallowed, the TMA engine unable to read both operands, or a grid past its
/// limits.
pub(crate) fn unavailability(problem: &Problem) -> Option<String> {
    if let Some(reason) = problem.f32_weight_unavailability() {
        Some(reason)
    } else if !problem.allow_tf32 {
        Some("TF32 rounding disallowed (cubek's `allow_tf32` is off)".into())
    } else if f32_weight_maps(&problem.ops).is_none() {
        Some("the TMA engine cannot read `lhs` K-major and `rhs` N-major".into())
    } else {
        grid_unavailability(&problem.dims)
    }
}

/// Runs the tiles on a problem the path takes ([`unavailability`]).
pub(crate) fn launch(client: &Client, problem: &Problem) {
    let Problem {
        ops,
        dims,
        dtype,
        epilogue,
        ..
    } = problem;
    let (lhs_layout, rhs_layout) = f32_weight_maps(ops).expect("the caller checked the maps");
    let (dims, dtype, epilogue) = (*dims, *dtype, *epilogue);
    let address_type = address_type(ops, dtype, 0);
    let bias_row_broadcast = bias_row_broadcast(&ops.bias, &dims, epilogue);
    let lhs_map = tensor_map(&ops.lhs, &lhs_layout, [1, ROWS, CHUNK_K], dtype);
    let rhs_map = tensor_map(&ops.rhs, &rhs_layout, [1, CHUNK_K, BOX_COLUMNS], dtype);
    // SAFETY: the TMA engine reads `lhs` and `rhs` through maps of their own shapes, filling
    // past the edges with zeros; the kernel reads the bias inside its shape, writes each
    // element of the dense output once, inside its rows and columns, and under the mask's
    // epilogue each of the mask's words once (the caller checked its layout).
    unsafe {
        swapped_tiles_product::launch_unchecked(
            client,
            CubeCount::Static(
                dims.n.div_ceil(COLUMNS) as u32,
                dims.m.div_ceil(ROWS) as u32,
                dims.batch as u32,
            ),
            CubeDim::new_1d(128 * WARPGROUPS as u32 + 32),
            address_type,
            ROWS / 2,
            lhs_map,
            rhs_map,
            ops.bias.clone().into_tensor_arg(),
            ops.out.clone().into_tensor_arg(),
            problem.mask_argument().into_tensor_arg(),
            dims.m as u32,
            dims.n as u32,
            dims.k as u32,
            ROWS,
            WARPGROUPS,
            STAGES,
            epilogue,
            bias_row_broadcast,
            lhs_layout.batched,
            rhs_layout.batched,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes of one stage: `2 warpgroups` weight boxes and `rows` lines of `lhs`.
    const fn stage_bytes(rows: usize, warpgroups: usize) -> usize {
        2 * warpgroups * BOX_BYTES + rows * CHUNK_K * 4
    }

    #[test]
    fn one_cube_a_multiprocessor_holds_the_ring() {
        let ring = STAGES * stage_bytes(ROWS, WARPGROUPS);
        assert!(ring + 1024 + 2 * STAGES * 8 <= 227 * 1024, "{ring} bytes");
    }

    /// Each half stage loads its own steps' fragments (the first and second line of each step,
    /// 1024 bytes a step) and runs their two MMAs, the `B` descriptor 2 units (32 bytes) a step
    /// from the stage's.
    #[test]
    fn a_half_stage_loads_its_fragments_and_runs_two_k8_mmas() {
        let first = mma_a_from_shared_ptx(256, 0);
        let second = mma_a_from_shared_ptx(256, STEPS);
        for ptx in [&first, &second] {
            assert_eq!(ptx.matches("wgmma.mma_async").count(), STEPS);
            assert_eq!(ptx.matches("ld.shared.v2.b32").count(), 2 * STEPS);
            assert!(ptx.contains("m64n256k8.f32.tf32.tf32 {%0, %1,"));
            assert!(ptx.contains("%127}, {fmar_a0, fmar_a1, fmar_a2, fmar_a3}, fmar_db"));
            assert!(ptx.contains("{fmar_a4, fmar_a5, fmar_a6, fmar_a7}, fmar_db"));
            assert!(ptx.contains("mov.f32 %0, %128;\n") && ptx.contains("mov.b64 fmar_db, %258;"));
            assert!(ptx.ends_with("wgmma.wait_group.sync.aligned 0;\n}"));
        }
        assert!(first.contains("{fmar_a0, fmar_a1}, [%256+0];\n"));
        assert!(first.contains("{fmar_a6, fmar_a7}, [%257+1024];\n"));
        assert_eq!(first.matches("add.s64 fmar_db, fmar_db, 2;").count(), 1);
        assert!(second.contains("{fmar_a0, fmar_a1}, [%256+2048];\n"));
        assert!(second.contains("{fmar_a6, fmar_a7}, [%257+3072];\n"));
        assert!(second.contains("add.s64 fmar_db, fmar_db, 4;\nwgmma"));
        assert!(second.contains("add.s64 fmar_db, fmar_db, 2;\nwgmma"));
    }

    #[test]
    fn it_takes_what_the_swapped_path_leaves_with_tiles_for_every_processor() {
        let takes = |dims: &Dims, processors| {
            fills_the_device(dims, processors) && grid_unavailability(dims).is_none()
        };
        let dims = |m| Dims {
            m,
            n: 4096,
            k: 4096,
            batch: 1,
        };
        // 32 column blocks: 5 tiles of rows fill 132 multiprocessors, 4 do not.
        assert!(!takes(&dims(128), 32));
        assert!(takes(&dims(129), 32));
        assert!(!takes(&dims(1024), 132));
        assert!(takes(&dims(1025), 132));
        assert!(takes(&dims(4096), 132));
        // More than 2^32 output elements: 32-bit indices would wrap.
        assert!(!takes(
            &Dims {
                m: 1 << 20,
                n: 1 << 13,
                k: 64,
                batch: 1
            },
            132
        ));
    }
}
