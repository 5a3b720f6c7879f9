//! The forward on backends without fmar's kernel (Burn's pure-Rust `Flex`, the CPU fallback):
//! `relu(lhs @ rhs + bias)` composed from the backend's own matmul, add and ReLU, behind the same
//! checks as the kernel path.

use burn::backend::{Backend, TensorMetadata};
use burn::tensor::Shape;
use fmar_fusion_meta::{Error, Input, check_call, trusted_output};

type FloatTensor<B> = <B as burn::backend::BackendTypes>::FloatTensorPrimitive;

/// `relu(lhs @ rhs + bias)` from `B`'s own operations, or why not. `bias` broadcasts from the
/// right; its missing leading dims are added as a reshape (no copy).
pub fn try_composed_matmul_add_relu<B: Backend>(
    lhs: FloatTensor<B>,
    rhs: FloatTensor<B>,
    bias: FloatTensor<B>,
) -> Result<FloatTensor<B>, Error> {
    // The host backends state no per-buffer limit.
    let output = with_inputs::<B, _>([&lhs, &rhs, &bias], |[l, r, b], device| {
        check_call(l, r, b, |dtype| B::supports_dtype(device, dtype), None)
    })?;
    Ok(compose::<B>(lhs, rhs, bias, &output.shape))
}

/// [`try_composed_matmul_add_relu`], panicking with the error's message.
pub fn composed_matmul_add_relu<B: Backend>(
    lhs: FloatTensor<B>,
    rhs: FloatTensor<B>,
    bias: FloatTensor<B>,
) -> FloatTensor<B> {
    try_composed_matmul_add_relu::<B>(lhs, rhs, bias).unwrap_or_else(|error| panic!("{error}"))
}

/// The composed forward of a call already checked ([`crate::prechecked`]).
pub(crate) fn compose_prechecked<B: Backend>(
    lhs: FloatTensor<B>,
    rhs: FloatTensor<B>,
    bias: FloatTensor<B>,
) -> FloatTensor<B> {
    let output = with_inputs::<B, _>([&lhs, &rhs, &bias], |[l, r, b], device| {
        trusted_output(l, r, b, |dtype| B::supports_dtype(device, dtype), || None)
    });
    compose::<B>(lhs, rhs, bias, &output.shape)
}

/// `rule` applied to the tensors' metadata as the rules read it, and to the first one's device.
/// (A host backend's tensors hand their device and shape out by value, so they are held here.)
fn with_inputs<B: Backend, T>(
    tensors: [&FloatTensor<B>; 3],
    rule: impl FnOnce([Input<'_, B::Device>; 3], &B::Device) -> T,
) -> T {
    let devices = tensors.map(|tensor| tensor.device());
    let shapes = tensors.map(|tensor| tensor.shape());
    let inputs = std::array::from_fn(|i| Input::new(&devices[i], tensors[i].dtype(), &shapes[i]));
    rule(inputs, &devices[0])
}

/// `relu(lhs @ rhs + bias)` for an output of shape `out_shape`, from `B`'s own operations.
fn compose<B: Backend>(
    lhs: FloatTensor<B>,
    rhs: FloatTensor<B>,
    bias: FloatTensor<B>,
    out_shape: &Shape,
) -> FloatTensor<B> {
    let bias_shape = bias.shape();
    let mut dims = vec![1; out_shape.num_dims() - bias_shape.num_dims()];
    dims.extend(bias_shape.iter().copied());
    let bias = B::float_reshape(bias, Shape::from(dims));
    B::relu(B::float_add(B::float_matmul(lhs, rhs), bias))
}
