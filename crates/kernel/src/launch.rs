//! The launch facade: [`launch`] (the variant the crate picks), [`launch_variant`] (a given
//! one), [`launch_keeping_mask`] (the forward of a call whose backward will run),
//! [`launch_product`] (the backward's plain products), and [`hopper_unavailability`].

use crate::contract::{self, Dims};
use crate::epilogue::Epilogue;
use crate::problem::Problem;
use crate::{LaunchError, Operands, ProductOperands, Variant, dispatch, hopper, mask, selection};
use cubecl::client::Client;
use cubecl::ir::ElemType;
use cubecl::prelude::TensorBinding;

/// Launches the fused `relu(lhs @ rhs + bias)` kernel on `client`'s device.
///
/// The variant is the pinned one ([`force_variant`](crate::force_variant), or `FMAR_KERNEL`
/// naming a [`Variant::name`]) where it can run the problem; else, with the `autotune`
/// feature, the fastest by measurement for this dtype, size and layout (measured once per
/// machine and cached); else the heuristic's ([`heuristic_table`](crate::heuristic_table):
/// fmar's Hopper kernels where the device and the layout allow them, a tensor-core routine for
/// large problems where the device has tensor cores, the tiled kernel otherwise).
///
/// The work is queued, not awaited: the output is ready once the client's stream reaches it.
/// Returns an error, and launches nothing, when `operands` break the [launch contract](crate),
/// or when `FMAR_KERNEL` names no variant. An output with no elements launches nothing.
pub fn launch(client: &Client, operands: Operands, dtype: ElemType) -> Result<(), LaunchError> {
    let dims = contract::check(&operands, dtype)?;
    if dims.is_empty() {
        return Ok(());
    }
    let problem = Problem::new(client, operands, dims, dtype, Epilogue::BiasRelu, None);
    selection::launch(client, &problem)
}

/// [`launch`] with the given [`Variant`], for experiments, benchmarks and the contract tests.
/// Returns [`LaunchError::Unavailable`] or [`LaunchError::Refused`] when that variant cannot
/// run the problem here (another can).
pub fn launch_variant(
    client: &Client,
    operands: Operands,
    dtype: ElemType,
    variant: Variant,
) -> Result<(), LaunchError> {
    let dims = contract::check(&operands, dtype)?;
    if dims.is_empty() {
        return Ok(());
    }
    let problem = Problem::new(client, operands, dims, dtype, Epilogue::BiasRelu, None);
    dispatch::run(client, &problem, variant)
}

/// Launches the plain product `out = lhs @ rhs` (no bias, no ReLU) on fmar's Hopper kernels:
/// the backward's gradient products, `grad @ rhsᵀ` and `lhsᵀ @ grad`, whose transposes are
/// views read through their strides.
///
/// The operands follow the [launch contract](crate) without the bias. Only the Hopper kernels
/// run plain products: where none can (another device, `k = 0`, a layout the TMA engine cannot
/// read and no path of the weight's takes, an `f32` product while cubek's `allow_tf32` is off
/// at more than 32 rows), this returns [`LaunchError::Unavailable`] and launches nothing, and
/// the caller runs its own matmul. A pinned Hopper path runs them where it can. An output with
/// no elements launches nothing.
pub fn launch_product(
    client: &Client,
    operands: ProductOperands,
    dtype: ElemType,
) -> Result<(), LaunchError> {
    // The fused contract's checks, with the output standing in for the bias (same shape, in
    // bounds); a plain product never reads it.
    let operands = Operands {
        lhs: operands.lhs,
        rhs: operands.rhs,
        bias: operands.out.clone(),
        out: operands.out,
    };
    let dims = contract::check(&operands, dtype)?;
    if dims.is_empty() {
        return Ok(());
    }
    let problem = Problem::new(client, operands, dims, dtype, Epilogue::Plain, None);
    selection::launch(client, &problem)
}

/// [`launch`], also writing the output's ReLU mask, one bit per element, into `mask`
/// (`[B.., m, ceil(n / 32)]` `u32`, contiguous: the layout [`mask_shape`](crate::mask_shape)
/// and [`launch_masked_gradient`](crate::launch_masked_gradient) share): the forward of a
/// call whose backward will run, which then keeps the mask instead of the output.
///
/// fmar's Hopper kernels write the mask from their epilogue, so one runs wherever one can
/// (unless another variant is pinned); elsewhere the variant [`launch`] would pick runs and a
/// second, light kernel packs the mask from its output.
pub fn launch_keeping_mask(
    client: &Client,
    operands: Operands,
    mask: TensorBinding,
    dtype: ElemType,
) -> Result<(), LaunchError> {
    let dims: Dims = contract::check(&operands, dtype)?;
    mask::check_mask(&mask, &operands.out.shape)?;
    if dims.is_empty() {
        return Ok(());
    }
    let problem = Problem::new(
        client,
        operands,
        dims,
        dtype,
        Epilogue::BiasReluMask,
        Some(mask),
    );
    selection::launch(client, &problem)
}

/// Why no Hopper kernel can run on `client`'s device, whatever the operands (not a CUDA device
/// of compute capability 9.0, no TMA engine, or not through cubecl's CUDA C++ compiler); `None`
/// when they may run, subject to the operands' dtype and layout. Lets a caller skip preparing
/// an output for [`launch_product`] it would not use.
pub fn hopper_unavailability(client: &Client) -> Option<&'static str> {
    hopper::device_unavailability(client)
}
