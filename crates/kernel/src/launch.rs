//! The launch facade: [`launch`] (the variant the crate picks), [`launch_variant`] (a given
//! one), and `run_checked`, which both end in once the contract holds; and [`launch_product`],
//! the plain product `lhs @ rhs` on the Hopper kernel, and [`product_device_unavailability`].

use crate::contract::{self, Dims};
use crate::{
    LaunchError, Operands, ProductOperands, Variant, accelerated, hopper, mask, naive, selection,
    tiled,
};
use cubecl::client::Client;
use cubecl::ir::ElemType;
use cubecl::prelude::TensorBinding;

/// Launches the fused `relu(lhs @ rhs + bias)` kernel on `client`'s device.
///
/// The variant is the forced one ([`force_variant`](crate::force_variant), or `FMAR_KERNEL`
/// naming a [`Variant::name`]); else, with the `autotune` feature, the fastest by measurement
/// for this dtype, size and layout (measured once per process and cached); else a heuristic
/// (fmar's Hopper kernel where the device and the layout allow it, a tensor-core routine for
/// large problems where the device has tensor cores, the tiled kernel otherwise).
///
/// The work is queued, not awaited: the output is ready once the client's stream reaches it.
/// Returns an error, and launches nothing, when `operands` break the [launch contract](crate).
/// An output with no elements launches nothing.
pub fn launch(client: &Client, operands: Operands, dtype: ElemType) -> Result<(), LaunchError> {
    let dims = contract::check(&operands, dtype)?;
    if dims.is_empty() {
        return Ok(());
    }
    selection::launch_selected(client, operands, dtype, dims)
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
    run_checked(client, operands, dtype, dims, variant)
}

/// Runs `variant` on operands that passed the contract check and have a non-empty output.
pub(crate) fn run_checked(
    client: &Client,
    mut operands: Operands,
    dtype: ElemType,
    dims: Dims,
    variant: Variant,
) -> Result<(), LaunchError> {
    let ran = if dims.k == 0 {
        // k = 0: the output is relu(bias), whatever the variant; the tiled kernel's k loop is
        // empty, while cubek's routines assume at least one k step. `lhs` and `rhs` are empty
        // and never read, but cubecl cannot bind an empty view (its offsets can pass the
        // buffer's end): bind the bias buffer in their place, keeping their shapes.
        operands.lhs.handle = operands.bias.handle.clone();
        operands.rhs.handle = operands.bias.handle.clone();
        tiled::launch(client, operands, dtype);
        Variant::Tiled
    } else {
        match variant {
            Variant::Naive => naive::launch(client, operands, dtype),
            Variant::Tiled => tiled::launch(client, operands, dtype),
            Variant::Accelerated(routine) => accelerated::launch(client, operands, dtype, routine)?,
            Variant::Hopper => hopper::launch(
                client,
                operands,
                dtype,
                dims,
                hopper::Epilogue::BiasRelu,
                None,
            )?,
        }
        variant
    };
    selection::record_launch(ran);
    Ok(())
}

/// Launches the plain product `out = lhs @ rhs` (no bias, no ReLU) on fmar's Hopper kernel: the
/// backward's gradient products, `grad @ rhsᵀ` and `lhsᵀ @ grad`, whose transposes are views
/// read through their strides.
///
/// The operands follow the [launch contract](crate) without the bias. Only the Hopper kernel
/// runs plain products: where it cannot (another device, `k = 0`, an `f32` product while
/// cubek's `allow_tf32` is off, a layout the TMA engine cannot read; with an N-major `rhs` in
/// f32 the last two run all the same, at up to 128 rows where TF32 is allowed and up to 32
/// where it is not), this
/// returns [`LaunchError::Unavailable`] and launches nothing, and the caller runs its own
/// matmul. An output with no elements launches nothing.
pub fn launch_product(
    client: &Client,
    operands: ProductOperands,
    dtype: ElemType,
) -> Result<(), LaunchError> {
    // The fused contract's checks, with the output standing in for the bias (same shape, in
    // bounds); the plain kernel never reads it.
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
    if dims.k == 0 {
        return Err(LaunchError::Unavailable {
            variant: Variant::Hopper,
            reason: "k = 0: the product is zeros, with nothing for the TMA engine to read".into(),
        });
    }
    hopper::launch(client, operands, dtype, dims, hopper::Epilogue::Plain, None)
}

/// [`launch`], also writing the output's ReLU mask, one bit per element, into `mask`
/// (`[B.., m, ceil(n / 32)]` `u32`, contiguous: the layout [`mask_shape`](crate::mask_shape)
/// and [`launch_masked_gradient`](crate::launch_masked_gradient) share): the forward of a
/// call whose backward will run, which then keeps the mask instead of the output.
///
/// fmar's Hopper kernel writes the mask from its epilogue, so it runs wherever it can (unless
/// another variant is forced), without autotune; elsewhere the variant [`launch`] would pick
/// runs and a second, light kernel packs the mask from its output.
pub fn launch_keeping_mask(
    client: &Client,
    operands: Operands,
    mask: TensorBinding,
    dtype: ElemType,
) -> Result<(), LaunchError> {
    let dims = contract::check(&operands, dtype)?;
    mask::check_mask(&mask, &operands.out.shape)?;
    if dims.is_empty() {
        return Ok(());
    }
    let hopper_first =
        dims.k > 0 && matches!(selection::forced_variant(), None | Some(Variant::Hopper));
    if hopper_first {
        let epilogue = hopper::Epilogue::BiasReluMask;
        match hopper::launch(
            client,
            operands.clone(),
            dtype,
            dims,
            epilogue,
            Some(mask.clone()),
        ) {
            Ok(()) => {
                selection::record_launch(Variant::Hopper);
                return Ok(());
            }
            Err(error) if error.is_variant_specific() => {}
            Err(error) => return Err(error),
        }
    }
    let out = operands.out.clone();
    selection::launch_selected(client, operands, dtype, dims)?;
    mask::launch_pack(client, out, mask, dtype)
}

/// Why [`launch_product`] can run nothing on `client`'s device, whatever the operands (not a
/// Hopper GPU, or not through cubecl's CUDA C++ compiler); `None` when it may run, subject to
/// the operands' dtype and layout. Lets a caller skip preparing an output it would not use.
pub fn product_device_unavailability(client: &Client) -> Option<&'static str> {
    hopper::device_unavailability(client)
}
