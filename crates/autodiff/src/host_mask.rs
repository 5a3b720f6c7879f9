//! The ReLU mask's two operations computed on the host, for inner backends that keep their
//! tensors in host memory (Burn's `Flex`, the CPU fallback) and for testing the backward apart
//! from fmar's kernels. The mask's layout is fmar's ([`mask_shape`]: one bit per output element,
//! `u32` words, a row of `ceil(n / 32)` words per output row), the same as the kernels write.

use crate::{FloatTensor, IntTensor};
use burn::backend::{Backend, TensorMetadata};
use burn::tensor::{Shape, TensorData, read_sync};
use fmar_fusion_meta::{MASK_WORD_BITS, mask_shape};

/// The ReLU mask of `output`, packed on the host: bit `j % 32` of word `j / 32` of a row is set
/// where element `j` of that row is not `<= 0` (NaN included), which is where Burn's
/// `relu_backward` lets the gradient through.
pub fn pack_relu_mask<B: Backend>(output: &FloatTensor<B>) -> IntTensor<B> {
    let (shape, device) = (output.shape(), output.device());
    let values = host_values(read(B::float_into_data(output.clone())));
    let n = shape[shape.num_dims() - 1];
    let mask_shape = mask_shape(&shape);
    let words = mask_shape[mask_shape.num_dims() - 1];
    let mut mask = vec![0u32; mask_shape.num_elements()];
    for (index, value) in values.iter().enumerate() {
        if *value > 0.0 || value.is_nan() {
            let (row, col) = (index / n, index % n);
            mask[row * words + col / MASK_WORD_BITS] |= 1 << (col % MASK_WORD_BITS);
        }
    }
    B::int_from_data(TensorData::new(mask, mask_shape), &device)
}

/// `grad ⊙ mask` on the host (`mask` as [`pack_relu_mask`] makes it).
pub fn masked_gradient<B: Backend>(grad: FloatTensor<B>, mask: IntTensor<B>) -> FloatTensor<B> {
    let (shape, device, dtype) = (grad.shape(), grad.device(), grad.dtype());
    let values = gate::<B>(grad, mask, |_, _| {});
    B::float_from_data(TensorData::new(values, shape).convert_dtype(dtype), &device)
}

/// `grad ⊙ mask` and its sum over every dim but the last (`[n]`, in `grad`'s dtype), from the
/// same host pass.
pub fn masked_gradient_with_column_sums<B: Backend>(
    grad: FloatTensor<B>,
    mask: IntTensor<B>,
) -> (FloatTensor<B>, FloatTensor<B>) {
    let (shape, device, dtype) = (grad.shape(), grad.device(), grad.dtype());
    let n = shape[shape.num_dims() - 1];
    let mut sums = vec![0.0f64; n];
    let values = gate::<B>(grad, mask, |col, value| sums[col] += value);
    let tensor = |values: Vec<f64>, shape: Shape| {
        B::float_from_data(TensorData::new(values, shape).convert_dtype(dtype), &device)
    };
    (tensor(values, shape), tensor(sums, Shape::from(vec![n])))
}

/// `grad`'s values with those the mask clears set to 0, each kept value also handed to `visit`
/// with its column.
fn gate<B: Backend>(
    grad: FloatTensor<B>,
    mask: IntTensor<B>,
    mut visit: impl FnMut(usize, f64),
) -> Vec<f64> {
    let shape = grad.shape();
    let mut values = host_values(read(B::float_into_data(grad)));
    let words: Vec<u32> = read(B::int_into_data(mask))
        .convert::<u32>()
        .try_into_vec()
        .expect("the mask holds u32 words");
    let n = shape[shape.num_dims() - 1];
    let row_words = n.div_ceil(MASK_WORD_BITS);
    for (index, value) in values.iter_mut().enumerate() {
        let (row, col) = (index / n, index % n);
        if words[row * row_words + col / MASK_WORD_BITS] >> (col % MASK_WORD_BITS) & 1 == 0 {
            *value = 0.0;
        } else {
            visit(col, *value);
        }
    }
    values
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
