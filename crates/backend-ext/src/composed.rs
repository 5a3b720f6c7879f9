//! The forward on backends without fmar's kernel (Burn's pure-Rust `Flex`, the CPU fallback):
//! `relu(lhs @ rhs + bias)` composed from the backend's own matmul, add and ReLU, behind the same
//! checks as the kernel path.

use burn::backend::{Backend, TensorMetadata};
use burn::tensor::Shape;
use fmar_fusion_meta::{Error, Input, check_call};

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
