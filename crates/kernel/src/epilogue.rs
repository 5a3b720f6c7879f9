//! The epilogue every kernel applies to its f32 sums before it stores them: what is done
//! ([`Epilogue`]), the rule for one value (the bias added, then Burn's ReLU, [`finish_sum`]),
//! the ReLU mask's bit of a stored value ([`mask_bit`]), and the mask's words gathered across
//! the lanes of a plane ([`or_across_lanes`], [`write_mask_words`]). The kernels differ only in
//! where their sums, biases and outputs live; the values they store come from here.
//!
//! ReLU is Burn's: `x <= 0` is filled with `+0`, so NaN passes through (`NaN <= 0` is false)
//! and `-0` becomes `+0`. A hardware `max` would leave NaN to the backend's whim. The mask bit
//! follows the stored value as the backward reads it: set where the output is not `<= 0`
//! (positive, or NaN).
//!
//! The portable kernels' ReLU ([`portable_relu`], [`relu_vector`]) asks `is_nan` as well as
//! `<= 0`. Under IEEE comparisons the extra test changes nothing (`NaN <= 0` is already false),
//! but a shader compiler may assume that no value is NaN: on llvmpipe over OpenGL,
//! `x <= 0 ? 0 : x` came out as `max(x, 0)`, which is 0 for NaN. cubecl's WGSL `is_nan` tests
//! the bits, which no such assumption removes. The Hopper kernels run only through NVRTC, which
//! keeps IEEE comparisons, and there the extra test is not folded away (it adds hundreds of
//! instructions to a tile's epilogue), so they use the plain [`relu`].

use crate::common::batch_offset;
use crate::contract::Dims;
use cubecl::prelude::*;

/// What a kernel does with an output element's sum before it stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Epilogue {
    /// `relu(sum + bias)`: the fused operation.
    BiasRelu,
    /// `relu(sum + bias)`, and the ReLU mask, one bit per element, into the mask argument
    /// (the layout of [`crate::mask`]): the forward of a call whose backward will run.
    BiasReluMask,
    /// The sum alone: a plain product, such as the backward's gradient products. The bias
    /// argument is never read.
    Plain,
}

impl Epilogue {
    /// Whether the bias is added and the ReLU applied.
    pub const fn bias_relu(self) -> bool {
        matches!(self, Self::BiasRelu | Self::BiasReluMask)
    }

    /// Whether the ReLU mask is written.
    pub const fn writes_mask(self) -> bool {
        matches!(self, Self::BiasReluMask)
    }
}

/// Whether the epilogue adds one bias row to every output row (a bias broadcast along the
/// rows, or a single row), which a kernel then reads once per column rather than per element.
pub(crate) fn bias_row_broadcast(bias: &TensorBinding, dims: &Dims, epilogue: Epilogue) -> bool {
    let rank = bias.shape.len();
    epilogue.bias_relu() && (bias.strides[rank - 2] == 0 || dims.m == 1)
}

/// Burn's ReLU for a compiler that keeps IEEE comparisons (CUDA's; see the module's doc).
#[cube]
pub(crate) fn relu(x: f32) -> f32 {
    select(x <= 0.0, 0.0, x)
}

/// Burn's ReLU for any compiler, one that may assume no NaN included (see the module's doc).
#[cube]
pub(crate) fn portable_relu(x: f32) -> f32 {
    select(x <= 0.0 && !x.is_nan(), 0.0, x)
}

/// [`portable_relu`] on each element of a vector.
#[cube]
pub(crate) fn relu_vector<N: Size>(x: Vector<f32, N>) -> Vector<f32, N> {
    let zero = Vector::<f32, N>::new(0.0);
    select_many(x.is_nan(), x, select_many(x.less_equal(&zero), zero, x))
}

/// An output element's value from its f32 sum: `relu(sum + bias)` under the fused epilogues,
/// the sum itself under [`Epilogue::Plain`] (which never reads `bias`).
#[cube]
pub(crate) fn finish_sum(sum: f32, bias: f32, #[comptime] epilogue: Epilogue) -> f32 {
    let mut x = sum;
    if comptime![epilogue.bias_relu()] {
        x = relu(x + bias);
    }
    x
}

/// The ReLU mask's bit of a stored output value: 1 where it is not `<= 0`.
#[cube]
pub(crate) fn mask_bit<F: Float>(stored: F) -> u32 {
    select(stored <= F::from_int(0), 0u32, 1u32)
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

/// The `N` output values of columns `col..col + N` from their f32 sums ([`finish_sum`], then the
/// output's dtype), with their ReLU mask bits, each at its place in the row's 32-column word.
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
        let x = finish_sum(total.extract(e), biases.extract(e), epilogue);
        let stored = F::cast_from(x);
        value.insert(e, stored);
        bits |= mask_bit::<F>(stored) << ((col + e) % 32) as u32;
    }
    (value, bits)
}

/// `bits` ORed over the lanes whose index differs from this one's in bits `first..first +
/// count` (`plane_shuffle_xor` by `1 << first`, ...): the lanes holding disjoint bits of the
/// same mask word, which then each hold the whole word.
#[cube]
pub(crate) fn or_across_lanes(bits: u32, #[comptime] first: u32, #[comptime] count: u32) -> u32 {
    let mut word = bits;
    #[unroll]
    for step in first..first + count {
        word |= plane_shuffle_xor(word, comptime![1u32 << step]);
    }
    word
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
    let word_bits = or_across_lanes(bits, 0u32, comptime![(32 / size).trailing_zeros()]);
    let row_words = mask.shape(mask.rank() - 1);
    let word = col / 32;
    // The first lane of each word's (a power of two).
    if lane & comptime![(32 / size - 1) as u32] == 0 && word < row_words {
        mask[out_row * row_words + word] = word_bits;
    }
}
