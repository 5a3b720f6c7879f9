//! fmar's forward passes, one per backend family: on Burn's `CubeBackend` (every CubeCL runtime:
//! CUDA, wgpu, ...) the fused kernel, and on any other backend (Burn's pure-Rust `Flex`, the
//! CPU fallback) the same function composed from the backend's own operations. Each checks the
//! operands' device, dtype and shapes first.
//!
//! Layer 1 of fmar: it depends on `fmar-kernel` (the launch) and `fmar-fusion-meta` (the rules
//! and the error type). It exposes plain functions rather than `impl Trait for CubeBackend`: the
//! extension trait lives in the `fmar` crate, and Rust's orphan rule puts its impls there.

mod composed;
mod cube;

pub use composed::{composed_matmul_add_relu, try_composed_matmul_add_relu};
pub use cube::{fused_matmul_add_relu, input_copies, kernel_launches, try_fused_matmul_add_relu};
