//! The `#[cube]` kernels behind fmar's fused `relu(lhs @ rhs + bias)`, and [`launch`], the one
//! function the backend calls to run them.
//!
//! Layer 0 of fmar. This crate depends on cubecl and cubek-matmul, never on Burn: the layer
//! above hands it plain [`TensorBinding`](cubecl::prelude::TensorBinding)s and a client, so
//! any crate that exports the same [`launch`] signature (the [`Operands`] / [`LaunchError`]
//! types it names, and [`broadcast_strides`], the contract's broadcast rule) can replace this
//! one. The contract tests in `tests/` take the launch as a parameter, so a replacement runs
//! them unchanged.
//!
//! The modules, bottom to top; each imports only those above it in this table.
//!
//! | module | what it holds |
//! |---|---|
//! | `routine` | [`Routine`]: cubek's routines fmar runs, and the ones it refuses |
//! | `variant` | [`Variant`] and [`HopperPath`], the implementations of the contract, and their names |
//! | [`error`] | [`LaunchError`] |
//! | `contract` | [`Operands`], [`ProductOperands`], [`broadcast_strides`] and the host-side checks of the contract below |
//! | `common` | what fmar's own kernels share: batch offsets, grid setup, the device's size |
//! | `epilogue` | the one epilogue: bias, Burn's ReLU, the ReLU mask's bits and words |
//! | `problem` | one checked launch as the variants and the selection see it |
//! | [`diagnostics`] | pinning a variant, and which ran last |
//! | `naive`, `tiled` | fmar's own portable kernels (every runtime) |
//! | `mask` | the ReLU mask's packing, and the backward's masked gradient ([`launch_masked_gradient`]) |
//! | `accelerated` | cubek-matmul's routines with fmar's epilogue ([`Routine`]) |
//! | `hopper` | fmar's Hopper kernels, one per [`HopperPath`] (CUDA, sm_90a) |
//! | `dispatch` | runs one given variant |
//! | `decision` | the heuristic: one ordered table, conditions to variant, each row measured |
//! | `autotune` | the choice by measurement, candidates in priority groups (the `autotune` feature) |
//! | `selection` | which variant a launch runs: pinned, autotuned or by the table |
//! | `launch` | the facade: [`launch`], [`launch_variant`], [`launch_keeping_mask`], [`launch_product`] |
//!
//! # The launch contract
//!
//! [`launch`] computes, for every output element,
//! `out[b.., i, j] = max(sum_k lhs[b.., i, k] * rhs[b.., k, j] + bias[b.., i, j], 0)`
//! with the sum accumulated in f32 whatever the storage dtype. (On CUDA, f32 inputs of the
//! tensor-core variants, the Hopper kernels' and cubek's routines, are rounded to TF32 while
//! cubek's `allow_tf32` is on, its default, as in Burn's own matmul; `allow_tf32 = false` in a
//! `cubek.toml` keeps them f32.) The four operands:
//!
//! - have the same rank `r >= 2`;
//! - `lhs` is `[B.., m, k]`, `rhs` is `[B.., k, n]`, `bias` and `out` are `[B.., m, n]`, where
//!   `B..` are the *output's* batch dims: a broadcast operand is passed with the output's size
//!   on that dim and a stride of 0 (the caller expands it with [`broadcast_strides`], no copy);
//! - may have any strides (transposed or sliced views are read in place), except `out`, which is
//!   written densely and must be contiguous (row-major);
//! - share one dtype, `f32`, `f16` or `bf16`.
//!
//! [`launch`] checks the contract on the host and returns a [`LaunchError`] rather than launch a
//! kernel that would read out of bounds. That check is this crate's safety boundary: the kernels
//! are launched with `launch_unchecked`, so it runs on every launch, whatever the caller has
//! already checked.
mod accelerated;
#[cfg(feature = "autotune")]
mod autotune;
mod common;
mod contract;
mod decision;
pub mod diagnostics;
mod dispatch;
mod epilogue;
pub mod error;
#[allow(unsafe_code)] // `launch_unchecked`: shapes, strides and TMA layouts are checked first.
mod hopper;
mod launch;
#[allow(unsafe_code)] // `launch_unchecked`: layouts are checked first.
mod mask;
#[allow(unsafe_code)] // `launch_unchecked`: indices are validated by `contract` first.
mod naive;
mod problem;
mod routine;
mod selection;
#[allow(unsafe_code)] // `launch_unchecked`: indices are validated by `contract` first.
mod tiled;
mod variant;

pub use contract::{Operands, ProductOperands, broadcast_strides};
pub use decision::heuristic_table;
pub use diagnostics::{
    KERNEL_VARIABLE, UnknownVariant, force_variant, forced_variant, last_launched_variant,
};
pub use error::LaunchError;
pub use launch::{
    hopper_unavailability, launch, launch_keeping_mask, launch_product, launch_variant,
};
pub use mask::{MASK_WORD_BITS, MaskedGradient, launch_masked_gradient, mask_shape};
pub use routine::{Routine, TileKind};
pub use variant::{HopperPath, Variant};
