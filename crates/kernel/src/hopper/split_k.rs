//! Split-K's shared block: the slices of `k` a cube sums, the partial sums' workspace
//! (`[slices, batch * m, n]` f32), and the second kernel that adds the slices, applies the
//! epilogue and writes the ReLU mask: [`split_k`] runs a path's partial-sums kernel, then
//! [`launch_finish`]. The few-row and transposed products use it; the whole-tile kernel and
//! the one-launch few-row product add their slices on the chip instead (a cluster's
//! distributed shared memory).

use crate::Operands;
use crate::common::address_type;
use crate::contract::Dims;
use crate::epilogue::{Epilogue, bias_vector, finish_vector, write_mask_words};
use crate::hopper::layout::copies_in_vectors;
use cubecl::client::Client;
use cubecl::ir::{AddressType, ElemType};
use cubecl::prelude::*;
use cubecl::zspace::Tiling;

/// Columns a unit reads or writes in one 16-byte access where the rows allow it.
pub(crate) const VECTOR: usize = 4;
/// Partial sums the second kernel loads before adding them: the bytes a unit keeps in flight.
const SUMS_IN_FLIGHT: usize = 8;

/// The `k` range `[first, end)` of slice `slice`, each slice `slice_k` deep (the last one
/// ending at `k`): the slices every split-K path cuts `k` into.
#[cube]
pub(crate) fn slice_bounds(slice: usize, slice_k: usize, k: usize) -> (usize, usize) {
    let first = slice * slice_k;
    (first, select(first + slice_k > k, k, first + slice_k))
}

/// Which of split-K's second kernels adds the slices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Finish {
    /// [`finish_columns`]: 256 columns a cube, each unit summing every slice of its columns:
    /// where the slices are few (the swapped path's, at most 16 at `4096 x 4096`). The slice
    /// groups' kernel was 1-7% slower there on the H200 (0.0390 against 0.0375 ms at
    /// `1 x 128 x 4096 x 4096`, 0.0309 against 0.0288 at `4 x 100 x 1000 x 2056`).
    Columns,
    /// [`finish_slice_groups`]: where the slices are many and the rows few (32 slices at
    /// `1 x 1 x 4096 x 4096`, a grid of 16 cubes, whose units would otherwise load their slices
    /// one batch after the other). 3-4% faster than `Columns` on the H200 at 1 to 8 rows
    /// (0.0252 against 0.0261 ms at `1 x 1 x 4096 x 4096`, 0.0758 against 0.0787 at
    /// `1 x 1 x 8192 x 8192`).
    SliceGroups,
}

/// Output columns a cube of [`finish_columns`]: `256 / N` units of `N` columns.
const FINISH_COLUMNS: usize = 256;
/// Vectors of columns a cube of [`finish_slice_groups`].
const GROUP_VECTORS: usize = 64;
/// Groups of units in a cube of [`finish_slice_groups`], each summing every fourth slice.
const SLICE_GROUPS: usize = 4;

/// Adds the partial sums of [`FINISH_COLUMNS`] columns of one row of one batch (cube
/// `(x, y, z)`: column block, row `y`, batch `z`), `N` adjacent columns a unit (4 where the
/// output's rows allow 16-byte loads, else 1), then finishes them as [`finish_vector`] says.
/// A cube has the same columns at either width, so the grid, and the bytes each
/// multiprocessor has in flight, are the same; four columns a unit take a quarter of the units
/// and of the load instructions.
#[cube(launch_unchecked, address_type = "dynamic")]
pub(crate) fn finish_columns<F: Float, N: Size>(
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

/// [`finish_columns`] for many slices: the partial sums of [`GROUP_VECTORS`] vectors of `N`
/// columns for one row of one batch (cube `(x, y, z)`: column block, row `y`, batch `z`), `N`
/// adjacent columns a unit (4 where the output's rows allow 16-byte loads, else 1), summed by
/// [`SLICE_GROUPS`] groups of units side by side, group `g` the slices `s` with `s % 4 == g`
/// (four times the loads in flight a cube), then the first group adds the groups' sums in group
/// order (the same sum whatever the batching of the loads) and finishes them as
/// [`finish_vector`] says.
#[cube(launch_unchecked, address_type = "dynamic")]
pub(crate) fn finish_slice_groups<F: Float, N: Size>(
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
            Finish::Columns => finish_columns::launch_unchecked(
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
            Finish::SliceGroups => finish_slice_groups::launch_unchecked(
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

/// Whether `binding` (a weight, or an output, of `dims.n` columns) can be read [`VECTOR`]
/// columns at a time: its rows contiguous with `n`, every other stride and its start multiples
/// of it (aligned 16-byte accesses that never straddle a row's end).
pub(crate) fn vectors_fit(binding: &TensorBinding, dims: &Dims) -> bool {
    dims.n.is_multiple_of(VECTOR) && copies_in_vectors(binding, VECTOR)
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
}
