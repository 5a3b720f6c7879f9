//! fmar's forward passes, one per backend family: on Burn's `CubeBackend` (every CubeCL runtime:
//! CUDA, wgpu, ...) the fused kernel, and on any other backend (Burn's pure-Rust `Flex`, the
//! CPU fallback) the same function composed from the backend's own operations. The forwards at
//! the crate's root check the operands' device, dtype and shapes first; those in [`prechecked`]
//! run a call already checked where it came in (fmar's `Tensor` functions, then Fusion's
//! execution), so that a call is checked once. On `CubeBackend` it also runs the backward's
//! gradient products ([`matmul`]) on fmar's Hopper kernel where it can.
//!
//! Layer 1 of fmar (beside `fmar-autodiff`, its sibling): it depends on `fmar-kernel` (the
//! launch) and `fmar-fusion-meta` (the rules and the error type), and re-exports the kernel's
//! variant controls ([`kernel`]) and forwards its `autotune` feature, so that the `fmar` crate
//! needs no edge to the kernel crate. It exposes plain functions rather than
//! `impl Trait for CubeBackend`: the extension trait lives in the `fmar` crate, and Rust's
//! orphan rule puts its impls there.

mod composed;
mod cube;
pub mod prechecked;

/// The kernel variants and control over which one runs, re-exported from `fmar-kernel` so that
/// the layer above needs no edge to the kernel crate.
pub mod kernel {
    pub use fmar_kernel::{
        Routine, TileKind, Variant, force_variant, forced_variant, last_launched_variant,
    };
}

pub use composed::{composed_matmul_add_relu, try_composed_matmul_add_relu};
pub use cube::{
    fused_matmul_add_relu, fused_matmul_add_relu_keeping_mask, input_copies, kernel_launches,
    masked_gradient, masked_gradient_with_column_sums, matmul, max_buffer_bytes, product_launches,
    try_fused_matmul_add_relu, try_fused_matmul_add_relu_keeping_mask,
};
