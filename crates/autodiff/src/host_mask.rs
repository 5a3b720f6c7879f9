//! The ReLU mask's two operations computed on the host, for inner backends that keep their
//! tensors in host memory (Burn's `Flex`, the CPU fallback) and for testing the backward apart
//! from fmar's kernels. The mask's layout is fmar's ([`mask_shape`]: one bit per output element,
//! `u32` words, a row of `ceil(n / 32)` words per output row), the same as the kernels write.
//!
//! Each operation is one pass over the tensor in its own dtype: a host backend hands a tensor
//! it holds alone to [`TensorData`] and back without a copy (Flex does), so packing the mask
//! reads the output once and gating writes the gradient in place. A training step on the CPU
//! then costs what Burn's composition costs, whose ReLU backward makes a boolean mask of the
//! same output and a gated copy of the same gradient.

use crate::{FloatTensor, IntTensor};
use burn::backend::{Backend, TensorMetadata};
use burn::tensor::{DType, Element, Shape, TensorData, bf16, f16, read_sync};
use fmar_fusion_meta::{MASK_WORD_BITS, mask_shape};

/// `output` and its ReLU mask, packed on the host: bit `j % 32` of word `j / 32` of a row is set
/// where element `j` of that row is not `<= 0` (NaN included), which is where Burn's
/// `relu_backward` lets the gradient through. The output comes back as the same values (on a
/// host backend, the same memory).
pub fn pack_relu_mask<B: Backend>(output: FloatTensor<B>) -> (FloatTensor<B>, IntTensor<B>) {
    let (shape, device) = (output.shape(), output.device());
    let data = read(B::float_into_data(output));
    let n = shape[shape.num_dims() - 1];
    let mask_shape = mask_shape(&shape);
    let words = mask_shape[mask_shape.num_dims() - 1];
    let mut mask = vec![0u32; mask_shape.num_elements()];
    if n > 0 {
        match data.dtype() {
            DType::F32 => pack_rows(typed::<f32>(&data), n, words, &mut mask),
            DType::F64 => pack_rows(typed::<f64>(&data), n, words, &mut mask),
            DType::F16 => pack_rows(typed::<f16>(&data), n, words, &mut mask),
            DType::BF16 => pack_rows(typed::<bf16>(&data), n, words, &mut mask),
            _ => pack_rows(&host_values(data.clone()), n, words, &mut mask),
        }
    }
    let output = B::float_from_data(data, &device);
    (
        output,
        B::int_from_data(TensorData::new(mask, mask_shape), &device),
    )
}

/// `grad ⊙ mask` on the host (`mask` as [`pack_relu_mask`] makes it).
pub fn masked_gradient<B: Backend>(grad: FloatTensor<B>, mask: IntTensor<B>) -> FloatTensor<B> {
    let device = grad.device();
    let (data, _) = gate::<B>(grad, mask, false);
    B::float_from_data(data, &device)
}

/// `grad ⊙ mask` and its sum over every dim but the last (`[n]`, in `grad`'s dtype), from the
/// same host pass.
pub fn masked_gradient_with_column_sums<B: Backend>(
    grad: FloatTensor<B>,
    mask: IntTensor<B>,
) -> (FloatTensor<B>, FloatTensor<B>) {
    let device = grad.device();
    let (data, sums) = gate::<B>(grad, mask, true);
    let n = sums.len();
    let sums = TensorData::new(sums, Shape::from(vec![n])).convert_dtype(data.dtype());
    (
        B::float_from_data(data, &device),
        B::float_from_data(sums, &device),
    )
}

/// `grad`'s data with the values the mask clears set to 0 (in place where the data is `grad`'s
/// own memory), and, when `column_sums`, the sums of each column's kept values (`n` of them, in
/// f64; empty otherwise).
fn gate<B: Backend>(
    grad: FloatTensor<B>,
    mask: IntTensor<B>,
    column_sums: bool,
) -> (TensorData, Vec<f64>) {
    let shape = grad.shape();
    let n = shape[shape.num_dims() - 1];
    let mut data = read(B::float_into_data(grad));
    let mask = read(B::int_into_data(mask));
    let mask = match mask.dtype() {
        DType::U32 => mask,
        _ => mask.convert::<u32>(),
    };
    let words = typed::<u32>(&mask);
    let mut sums = vec![0.0f64; if column_sums { n } else { 0 }];
    if n == 0 {
        return (data, sums);
    }
    let row_words = n.div_ceil(MASK_WORD_BITS);
    match data.dtype() {
        DType::F32 => gate_rows(typed_mut::<f32>(&mut data), n, row_words, words, &mut sums),
        DType::F64 => gate_rows(typed_mut::<f64>(&mut data), n, row_words, words, &mut sums),
        DType::F16 => gate_rows(typed_mut::<f16>(&mut data), n, row_words, words, &mut sums),
        DType::BF16 => gate_rows(typed_mut::<bf16>(&mut data), n, row_words, words, &mut sums),
        dtype => {
            let mut values = host_values(data);
            gate_rows(&mut values, n, row_words, words, &mut sums);
            data = TensorData::new(values, shape).convert_dtype(dtype);
        }
    }
    (data, sums)
}

/// Elements below which a pass runs on the calling thread alone: splitting costs a thread
/// start (tens of microseconds) per part.
const ELEMENTS_PER_THREAD: usize = 1 << 16;

/// How many parts a pass over `rows` rows of `n` elements is split into, one thread each.
fn parts(rows: usize, n: usize) -> usize {
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    threads
        .min((rows * n) / ELEMENTS_PER_THREAD)
        .clamp(1, rows.max(1))
}

/// The mask's words of each row of `values` (rows of `n`, `words` words each), the rows split
/// over the host's threads as Flex splits its own passes.
fn pack_rows<T: HostFloat>(values: &[T], n: usize, words: usize, mask: &mut [u32]) {
    let rows = values.len() / n;
    let rows_per_part = rows.div_ceil(parts(rows, n)).max(1);
    std::thread::scope(|scope| {
        let mut pieces = values
            .chunks(rows_per_part * n)
            .zip(mask.chunks_mut(rows_per_part * words));
        let first = pieces.next();
        for (values, mask) in pieces {
            scope.spawn(move || pack_part(values, n, words, mask));
        }
        if let Some((values, mask)) = first {
            pack_part(values, n, words, mask);
        }
    });
}

fn pack_part<T: HostFloat>(values: &[T], n: usize, words: usize, mask: &mut [u32]) {
    for (row, row_mask) in values.chunks_exact(n).zip(mask.chunks_exact_mut(words)) {
        for (chunk, word) in row.chunks(MASK_WORD_BITS).zip(row_mask) {
            *word = chunk.iter().enumerate().fold(0, |bits, (bit, value)| {
                bits | (u32::from(value.passes_relu()) << bit)
            });
        }
    }
}

/// Clears the values of each row of `values` whose mask bit is clear, and adds each kept value
/// to its column's sum when `sums` is not empty; the rows split over the host's threads, each
/// part summing its own columns, added up after.
fn gate_rows<T: HostFloat>(
    values: &mut [T],
    n: usize,
    row_words: usize,
    mask: &[u32],
    sums: &mut [f64],
) {
    let rows = values.len() / n;
    let rows_per_part = rows.div_ceil(parts(rows, n)).max(1);
    let with_sums = !sums.is_empty();
    let part_sums = std::thread::scope(|scope| {
        let mut pieces = values
            .chunks_mut(rows_per_part * n)
            .zip(mask.chunks(rows_per_part * row_words));
        let first = pieces.next();
        let handles: Vec<_> = pieces
            .map(|(values, mask)| {
                scope.spawn(move || {
                    let mut sums = vec![0.0; if with_sums { n } else { 0 }];
                    gate_part(values, n, row_words, mask, &mut sums);
                    sums
                })
            })
            .collect();
        if let Some((values, mask)) = first {
            gate_part(values, n, row_words, mask, sums);
        }
        handles
            .into_iter()
            .map(|handle| handle.join().expect("a gating thread finishes"))
            .collect::<Vec<_>>()
    });
    for part in part_sums {
        for (sum, part) in sums.iter_mut().zip(part) {
            *sum += part;
        }
    }
}

fn gate_part<T: HostFloat>(
    values: &mut [T],
    n: usize,
    row_words: usize,
    mask: &[u32],
    sums: &mut [f64],
) {
    for (row, row_mask) in values.chunks_exact_mut(n).zip(mask.chunks_exact(row_words)) {
        for (word_index, (chunk, &word)) in row.chunks_mut(MASK_WORD_BITS).zip(row_mask).enumerate()
        {
            // A select rather than a branch on each bit, so that the loop vectorises.
            for (bit, value) in chunk.iter_mut().enumerate() {
                let kept = word >> bit & 1 != 0;
                *value = if kept { *value } else { T::ZERO };
            }
            if !sums.is_empty() {
                let first = word_index * MASK_WORD_BITS;
                for (sum, value) in sums[first..first + chunk.len()].iter_mut().zip(chunk) {
                    *sum += value.to_f64();
                }
            }
        }
    }
}

/// A float element the host operations read and write in place.
trait HostFloat: Element + Copy + Send + Sync {
    const ZERO: Self;
    /// Whether Burn's ReLU lets the gradient through here: the value is not `<= 0`.
    fn passes_relu(self) -> bool;
    fn to_f64(self) -> f64;
}

impl HostFloat for f32 {
    const ZERO: Self = 0.0;
    fn passes_relu(self) -> bool {
        self > 0.0 || self.is_nan()
    }
    fn to_f64(self) -> f64 {
        self.into()
    }
}

impl HostFloat for f64 {
    const ZERO: Self = 0.0;
    fn passes_relu(self) -> bool {
        self > 0.0 || self.is_nan()
    }
    fn to_f64(self) -> f64 {
        self
    }
}

// The half-precision tests read the bits: a value is `<= 0` where it is a zero of either sign
// or has the sign bit set and is not a NaN, so it passes where it is a NaN or a positive
// non-zero. Cheaper than widening each value, and the same answer for all 65,536 patterns
// (tested below).
impl HostFloat for f16 {
    const ZERO: Self = f16::ZERO;
    fn passes_relu(self) -> bool {
        passes_relu_bits(self.to_bits(), 0x7c00)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
}

impl HostFloat for bf16 {
    const ZERO: Self = bf16::ZERO;
    fn passes_relu(self) -> bool {
        passes_relu_bits(self.to_bits(), 0x7f80)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
}

/// Whether a 16-bit float whose infinity's bits are `infinity` passes the ReLU (see above).
fn passes_relu_bits(bits: u16, infinity: u16) -> bool {
    let magnitude = bits & 0x7fff;
    magnitude > infinity || (bits & 0x8000 == 0 && magnitude != 0)
}

/// `data`'s elements as `E`, which its dtype is.
fn typed<E: Element>(data: &TensorData) -> &[E] {
    data.as_slice::<E>()
        .expect("host data is readable as its own dtype")
}

fn typed_mut<E: Element>(data: &mut TensorData) -> &mut [E] {
    data.as_mut_slice::<E>()
        .expect("host data is writable as its own dtype")
}

/// A tensor's data, awaited.
fn read<E: std::fmt::Debug>(
    future: impl std::future::Future<Output = Result<TensorData, E>>,
) -> TensorData {
    read_sync(future).expect("a tensor reads back")
}

/// The values of `data`, widened to f64 (exact for every float dtype fmar takes).
fn host_values(data: TensorData) -> Vec<f64> {
    data.convert::<f64>()
        .try_into_vec()
        .expect("float data converts to f64")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_precision_bit_tests_agree_with_the_comparison_for_every_pattern() {
        for bits in 0..=u16::MAX {
            let half = f16::from_bits(bits);
            assert_eq!(
                half.passes_relu(),
                half.to_f32() > 0.0 || half.to_f32().is_nan(),
                "f16 bits {bits:#06x}"
            );
            let brain = bf16::from_bits(bits);
            assert_eq!(
                brain.passes_relu(),
                brain.to_f32() > 0.0 || brain.to_f32().is_nan(),
                "bf16 bits {bits:#06x}"
            );
        }
    }

    #[test]
    fn rows_pack_and_gate_by_column_across_word_boundaries() {
        // Rows of 35: a row's last word is partial, and the next row starts a new word. Two
        // rows run on the calling thread; 4099 are split over the host's threads, unevenly.
        let n: usize = 35;
        for rows in [2, 4099] {
            let values: Vec<f32> = (0..rows * n)
                .map(|i| match i % 5 {
                    0 => -1.0,
                    1 => 0.0,
                    2 => f32::NAN,
                    3 => -0.0,
                    _ => i as f32,
                })
                .collect();
            let words = n.div_ceil(MASK_WORD_BITS);
            let mut mask = vec![0u32; rows * words];
            pack_rows(&values, n, words, &mut mask);
            let mut gated = vec![1.0f32; rows * n];
            let mut sums = vec![0.0; n];
            gate_rows(&mut gated, n, words, &mask, &mut sums);
            for (index, (value, kept)) in values.iter().zip(&gated).enumerate() {
                let passes = *value > 0.0 || value.is_nan();
                assert_eq!(
                    *kept,
                    if passes { 1.0 } else { 0.0 },
                    "{rows} rows, element {index}"
                );
            }
            for (col, sum) in sums.iter().enumerate() {
                let expected = (0..rows)
                    .filter(|row| values[row * n + col].passes_relu())
                    .count();
                assert_eq!(*sum, expected as f64, "{rows} rows, column {col}");
            }
        }
    }
}
