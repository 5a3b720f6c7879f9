//! The launch facade: [`launch`] (the variant the crate picks), [`launch_variant`] (a given
//! one), and `run_checked`, which both end in once the contract holds.

use crate::contract::{self, Dims};
use crate::{LaunchError, Operands, Variant, accelerated, hopper, naive, selection, tiled};
use cubecl::client::Client;
use cubecl::ir::ElemType;

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
            Variant::Hopper => hopper::launch(client, operands, dtype, dims)?,
        }
        variant
    };
    selection::record_launch(ran);
    Ok(())
}
