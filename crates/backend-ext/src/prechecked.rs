//! The forwards for a call already checked where it came in: what the extension trait's impls
//! run. fmar's `Tensor` functions check every rule at the call, before the operation is
//! dispatched or registered with Fusion, and Fusion executes only what they registered; checking
//! again at execution would look the device's dtypes and buffer limit up a second time per call.
//!
//! So these take the output's shape and dtype by the rules Fusion registers them with
//! ([`fmar_fusion_meta::trusted_output`]) and ask nothing of the device. Debug builds assert the
//! trust, running the whole check again and panicking with the error's message. A caller that
//! has not checked the call wants the checking forwards at the crate's root instead
//! ([`try_fused_matmul_add_relu`](crate::try_fused_matmul_add_relu), ...). Whatever the caller,
//! the kernel crate checks its own launch contract before every launch.

use crate::{composed, cube};
use burn::backend::Backend;
use burn_cubecl::tensor::CubeTensor;

type FloatTensor<B> = <B as burn::backend::BackendTypes>::FloatTensorPrimitive;

/// `relu(lhs @ rhs + bias)` on a CubeCL device, in one kernel, for a checked call.
pub fn fused_matmul_add_relu(lhs: CubeTensor, rhs: CubeTensor, bias: CubeTensor) -> CubeTensor {
    cube::launch_prechecked(lhs, rhs, bias, false).0
}

/// [`fused_matmul_add_relu`] with the output's ReLU mask, as
/// [`try_fused_matmul_add_relu_keeping_mask`](crate::try_fused_matmul_add_relu_keeping_mask)
/// makes it, for a checked call.
pub fn fused_matmul_add_relu_keeping_mask(
    lhs: CubeTensor,
    rhs: CubeTensor,
    bias: CubeTensor,
) -> (CubeTensor, CubeTensor) {
    cube::with_mask(cube::launch_prechecked(lhs, rhs, bias, true))
}

/// `relu(lhs @ rhs + bias)` from `B`'s own operations, as
/// [`try_composed_matmul_add_relu`](crate::try_composed_matmul_add_relu) composes it, for a
/// checked call.
pub fn composed_matmul_add_relu<B: Backend>(
    lhs: FloatTensor<B>,
    rhs: FloatTensor<B>,
    bias: FloatTensor<B>,
) -> FloatTensor<B> {
    composed::compose_prechecked::<B>(lhs, rhs, bias)
}
