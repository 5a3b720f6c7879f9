//! fmar's forward passes, one per backend family: on Burn's `CubeBackend` (every CubeCL runtime:
//! CUDA, wgpu, ...) the fused kernel, and on any other backend (Burn's pure-Rust `Flex`, the
//! CPU fallback) the same function composed from the backend's own operations. The forwards at
//! the crate's root check the operands' device, dtype and shapes first; those in [`prechecked`]
//! run a call already checked where it came in (fmar's `Tensor` functions, then Fusion's
//! execution), so that a call is checked once. On `CubeBackend` it also runs the backward's
//! gradient products ([`matmul`]) on fmar's Hopper kernel where it can.
//!
//! Layer 2 of fmar (beside `fmar-autodiff`, its sibling): it depends on `fmar-kernel` (the
//! launch) and `fmar-fusion-meta` (the rules and the error type), and re-exports the kernel's
//! variant controls ([`kernel`]) and forwards its `autotune` feature, so that the `fmar` crate
//! needs no edge to the kernel crate. It exposes plain functions rather than
//! `impl Trait for CubeBackend`: the extension trait lives in the `fmar` crate, and Rust's
//! orphan rule puts its impls there.

mod composed;
mod cube;
pub mod prechecked;

/// The kernel variants, re-exported from `fmar-kernel` so that the layer above needs no edge to
/// the kernel crate.
pub mod kernel {
    pub use fmar_kernel::{HopperPath, Routine, TileKind, Variant};
}

/// Pinning a variant, which ran last, and the launch counters: the kernel crate's controls and
/// this crate's counters in one place.
pub mod diagnostics {
    pub use crate::cube::{input_copies, kernel_launches, product_launches};
    pub use fmar_kernel::{
        KERNEL_VARIABLE, UnknownVariant, force_variant, forced_variant, hopper_unavailability,
        last_launched_variant,
    };

    /// [`forced_variant`]'s answer as fmar's error: `Err` where [`KERNEL_VARIABLE`] names no
    /// variant, so that a call refuses to run rather than fail inside its launch.
    pub fn check_kernel_variable() -> Result<(), fmar_fusion_meta::Error> {
        forced_variant()
            .map(|_| ())
            .map_err(
                |UnknownVariant { name, names }| fmar_fusion_meta::Error::UnknownKernel {
                    variable: KERNEL_VARIABLE,
                    value: name,
                    valid: names,
                },
            )
    }
}

pub use composed::{composed_matmul_add_relu, try_composed_matmul_add_relu};
pub use cube::{
    fused_matmul_add_relu, fused_matmul_add_relu_keeping_mask, masked_gradient,
    masked_gradient_with_column_sums, matmul, max_buffer_bytes, try_fused_matmul_add_relu,
    try_fused_matmul_add_relu_keeping_mask,
};
