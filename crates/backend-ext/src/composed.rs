//! The forward on backends without fmar's kernel (Burn's pure-Rust `Flex`, the CPU fallback):
//! `relu(lhs @ rhs + bias)` composed from the backend's own matmul, add and ReLU, behind the same
//! checks as the kernel path.

use burn::backend::{Backend, TensorMetadata};
use burn::tensor::{Shape, TensorData};
use fmar_fusion_meta::{Error, Input, MASK_WORD_BITS, check_call, mask_shape};

type FloatTensor<B> = <B as burn::backend::BackendTypes>::FloatTensorPrimitive;

/// `relu(lhs @ rhs + bias)` from `B`'s own operations, or why not. `bias` broadcasts from the
/// right; its missing leading dims are added as a reshape (no copy).
pub fn try_composed_matmul_add_relu<B: Backend>(
    lhs: FloatTensor<B>,
    rhs: FloatTensor<B>,
    bias: FloatTensor<B>,
) -> Result<FloatTensor<B>, Error> {
    let (lhs_shape, rhs_shape, bias_shape) = (lhs.shape(), rhs.shape(), bias.shape());
    let devices = [lhs.device(), rhs.device(), bias.device()];
    let input = |device, tensor: &FloatTensor<B>, shape| Input {
        device,
        dtype: tensor.dtype(),
        shape,
    };
    // The host backends state no per-buffer limit.
    let out_shape = check_call(
        input(&devices[0], &lhs, &lhs_shape),
        input(&devices[1], &rhs, &rhs_shape),
        input(&devices[2], &bias, &bias_shape),
        |dtype| B::supports_dtype(&devices[0], dtype),
        None,
    )?
    .shape;
    let mut dims = vec![1; out_shape.num_dims() - bias_shape.num_dims()];
    dims.extend(bias_shape.iter().copied());
    let bias = B::float_reshape(bias, Shape::from(dims));
    Ok(B::relu(B::float_add(B::float_matmul(lhs, rhs), bias)))
}

/// [`try_composed_matmul_add_relu`], panicking with the error's message.
pub fn composed_matmul_add_relu<B: Backend>(
    lhs: FloatTensor<B>,
    rhs: FloatTensor<B>,
    bias: FloatTensor<B>,
) -> FloatTensor<B> {
    try_composed_matmul_add_relu::<B>(lhs, rhs, bias).unwrap_or_else(|error| panic!("{error}"))
}

type IntTensor<B> = <B as burn::backend::BackendTypes>::IntTensorPrimitive;

/// [`composed_matmul_add_relu`] for a call whose backward will run: also the output's ReLU mask
/// in fmar's layout ([`mask_shape`]: one bit per element, `u32` words), packed on the host,
/// where these backends keep their tensors.
pub fn composed_matmul_add_relu_keeping_mask<B: Backend>(
    lhs: FloatTensor<B>,
    rhs: FloatTensor<B>,
    bias: FloatTensor<B>,
) -> (FloatTensor<B>, IntTensor<B>) {
    let output = composed_matmul_add_relu::<B>(lhs, rhs, bias);
    let (shape, device) = (output.shape(), output.device());
    let values = host_values(read(B::float_into_data(output.clone())));
    let n = shape[shape.num_dims() - 1];
    let mask_shape = mask_shape(&shape);
    let words = mask_shape[mask_shape.num_dims() - 1];
    let mut mask = vec![0u32; mask_shape.num_elements()];
    for (index, value) in values.iter().enumerate() {
        // Where Burn's `relu_backward` lets the gradient through: not `<= 0` (NaN included).
        if *value > 0.0 || value.is_nan() {
            let (row, col) = (index / n, index % n);
            mask[row * words + col / MASK_WORD_BITS] |= 1 << (col % MASK_WORD_BITS);
        }
    }
    let mask = B::int_from_data(TensorData::new(mask, mask_shape), &device);
    (output, mask)
}

/// The backward's first step on these backends: `grad ⊙ mask` (`mask` from
/// [`composed_matmul_add_relu_keeping_mask`]), and with `column_sums` the result's sum over
/// every dim but the last (`[n]`, in `grad`'s dtype), computed on the host.
pub fn composed_masked_gradient<B: Backend>(
    grad: FloatTensor<B>,
    mask: IntTensor<B>,
    column_sums: bool,
) -> (FloatTensor<B>, Option<FloatTensor<B>>) {
    let (shape, device, dtype) = (grad.shape(), grad.device(), grad.dtype());
    let mut values = host_values(read(B::float_into_data(grad)));
    let words: Vec<u32> = read(B::int_into_data(mask))
        .convert::<u32>()
        .try_into_vec()
        .expect("the mask holds u32 words");
    let n = shape[shape.num_dims() - 1];
    let row_words = n.div_ceil(MASK_WORD_BITS);
    let mut sums = vec![0.0f64; n];
    for (index, value) in values.iter_mut().enumerate() {
        let (row, col) = (index / n, index % n);
        if words[row * row_words + col / MASK_WORD_BITS] >> (col % MASK_WORD_BITS) & 1 == 0 {
            *value = 0.0;
        }
        sums[col] += *value;
    }
    let tensor = |values: Vec<f64>, shape: Shape| {
        B::float_from_data(TensorData::new(values, shape).convert_dtype(dtype), &device)
    };
    let sums = column_sums.then(|| tensor(sums, Shape::from(vec![n])));
    (tensor(values, shape), sums)
}

/// A tensor's data, awaited (these backends compute on the host: nothing waits on a device).
fn read<F: std::future::Future<Output = Result<TensorData, E>>, E: std::fmt::Debug>(
    future: F,
) -> TensorData {
    cubecl::future::block_on(future).expect("a host tensor reads back")
}

/// The values of `data`, widened to f64 (exact for every float dtype fmar takes).
fn host_values(data: TensorData) -> Vec<f64> {
    data.convert::<f64>()
        .try_into_vec()
        .expect("float data converts to f64")
}
