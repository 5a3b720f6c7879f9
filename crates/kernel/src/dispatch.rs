//! Runs one given variant on a checked problem: the one place that knows how each variant is
//! launched, and what it does for the epilogues it does not write itself.

use crate::diagnostics::record_launch;
use crate::epilogue::Epilogue;
use crate::problem::Problem;
use crate::{LaunchError, Variant, accelerated, hopper, mask, naive, tiled};
use cubecl::client::Client;

/// Runs `variant` on `problem` and records it ([`crate::last_launched_variant`]), or returns a
/// variant-specific [`LaunchError`] and launches nothing where it cannot run it.
///
/// `k = 0` gives `relu(bias)` whatever the variant, from the tiled kernel (an empty `k` loop),
/// where cubek's routines assume a `k` step and the Hopper kernels something to read. Only the
/// Hopper kernels write the ReLU mask from their epilogue or run a plain product: the others
/// run the fused forward, and under [`Epilogue::BiasReluMask`] a light second kernel packs the
/// mask from its output.
pub(crate) fn run(client: &Client, problem: &Problem, variant: Variant) -> Result<(), LaunchError> {
    if problem.epilogue == Epilogue::Plain {
        let declined = if variant.hopper_path().is_none() {
            Some("runs the fused operation, not a plain product")
        } else if problem.dims.k == 0 {
            Some("k = 0: the product is zeros, with nothing for the TMA engine to read")
        } else {
            None
        };
        if let Some(reason) = declined {
            return Err(LaunchError::Unavailable {
                variant,
                reason: reason.into(),
            });
        }
    }
    let ran = if problem.dims.k == 0 {
        let mut ops = problem.ops.clone();
        // `lhs` and `rhs` are empty and never read, but cubecl cannot bind an empty view (its
        // offsets can pass the buffer's end): bind the bias buffer in their place, keeping
        // their shapes.
        ops.lhs.handle = ops.bias.handle.clone();
        ops.rhs.handle = ops.bias.handle.clone();
        tiled::launch(client, ops, problem.dtype);
        Variant::Tiled
    } else {
        let ops = || problem.ops.clone();
        match variant {
            Variant::Naive => naive::launch(client, ops(), problem.dtype),
            Variant::Tiled => tiled::launch(client, ops(), problem.dtype),
            Variant::Accelerated(routine) => {
                accelerated::launch(client, ops(), problem.dtype, routine)?
            }
            Variant::Hopper(path) => {
                hopper::launch(path, client, problem)?;
                record_launch(variant);
                return Ok(());
            }
        }
        variant
    };
    if let Some(mask) = &problem.mask {
        mask::launch_pack(client, problem.ops.out.clone(), mask.clone(), problem.dtype)?;
    }
    record_launch(ran);
    Ok(())
}
