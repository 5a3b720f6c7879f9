//! The `#[cube]` kernels behind fmar's fused `relu(lhs @ rhs + bias)`, and [`launch`], the one
//! function the backend calls to run them.
//!
//! Layer 0 of fmar. This crate depends on cubecl and cubek-matmul, never on Burn: the layer
//! above hands it plain [`TensorBinding`]s and a client, so any crate that exports the same
//! [`launch`] signature (and the [`Operands`] / [`LaunchError`] types it names) can replace this
//! one. The contract tests in `tests/` take the launch as a parameter, so a replacement runs
//! them unchanged.
//!
//! | module | what it holds |
//! |---|---|
//! | `contract` | the host-side checks of the contract below |
//! | [`error`] | [`LaunchError`] |
//! | `variant` | [`Variant`], the implementations of the contract |
//! | `naive`, `tiled` | fmar's own kernels (every runtime) |
//! | `accelerated` | cubek-matmul's routines with fmar's epilogue ([`Routine`]) |
//! | `selection` | which variant a [`launch`] runs: forced, autotuned or by heuristic |
//!
//! # The launch contract
//!
//! [`launch`] computes, for every output element,
//! `out[b.., i, j] = max(sum_k lhs[b.., i, k] * rhs[b.., k, j] + bias[b.., i, j], 0)`
//! with the sum accumulated in f32 whatever the storage dtype. (On CUDA, f32 inputs of the
//! tensor-core routines are rounded to TF32 while cubek's `allow_tf32` is on, its default, as in
//! Burn's own matmul; `allow_tf32 = false` in a `cubek.toml` keeps them f32.) The four operands:
//!
//! - have the same rank `r >= 2`;
//! - `lhs` is `[B.., m, k]`, `rhs` is `[B.., k, n]`, `bias` and `out` are `[B.., m, n]`, where
//!   `B..` are the *output's* batch dims: a broadcast operand is passed with the output's size
//!   on that dim and a stride of 0 (the caller expands it, no copy);
//! - may have any strides (transposed or sliced views are read in place), except `out`, which is
//!   written densely and must be contiguous (row-major);
//! - share one dtype, `f32`, `f16` or `bf16`.
//!
//! [`launch`] checks the contract on the host and returns a [`LaunchError`] rather than launch a
//! kernel that would read out of bounds.
mod accelerated;
mod contract;
pub mod error;
#[allow(unsafe_code)] // `launch_unchecked`: indices are validated by `contract` first.
mod naive;
mod selection;
#[allow(unsafe_code)] // `launch_unchecked`: indices are validated by `contract` first.
mod tiled;
mod variant;

use cubecl::client::Client;
use cubecl::ir::ElemType;
use cubecl::prelude::*;

pub use accelerated::{Routine, TileKind};
pub use error::LaunchError;
pub use naive::NAIVE_TILE;
pub use selection::{force_variant, forced_variant, last_launched_variant};
pub use variant::Variant;

/// ReLU exactly as Burn's reference computes it (`x <= 0` is filled with `+0`): NaN passes
/// through (`NaN <= 0` is false) and `-0` becomes `+0`. A hardware `max` would leave NaN to the
/// backend's whim.
#[cube]
pub(crate) fn relu(x: f32) -> f32 {
    select(x <= 0.0, 0.0, x)
}

/// The tensors of one fused launch, laid out as the [crate-level contract](crate) says.
#[derive(Debug, Clone)]
pub struct Operands {
    /// Left matrix operand, `[B.., m, k]`.
    pub lhs: TensorBinding,
    /// Right matrix operand, `[B.., k, n]`.
    pub rhs: TensorBinding,
    /// Bias added before the ReLU, `[B.., m, n]` (stride 0 on broadcast dims).
    pub bias: TensorBinding,
    /// The output, `[B.., m, n]`, contiguous.
    pub out: TensorBinding,
}

/// Launches the fused `relu(lhs @ rhs + bias)` kernel on `client`'s device.
///
/// The variant is the forced one ([`force_variant`], or `FMAR_KERNEL` naming a
/// [`Variant::name`]); else, with the `autotune` feature, the fastest by measurement for this
/// dtype, size and layout (measured once per process and cached); else a heuristic (a
/// tensor-core routine for large problems where the device has tensor cores, the tiled kernel
/// otherwise).
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
    dims: contract::Dims,
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
        }
        variant
    };
    selection::record_launch(ran);
    Ok(())
}
