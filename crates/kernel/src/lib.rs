//! The `#[cube]` kernels behind fmar's fused `relu(lhs @ rhs + bias)`, and [`launch`], the one
//! function the backend calls to run them.
//!
//! Layer 0 of fmar. This crate depends on cubecl only, never on Burn: the layer above hands it
//! plain [`TensorBinding`]s and a client, so any crate that exports the same [`launch`]
//! signature (and the [`Operands`] / [`LaunchError`] types it names) can replace this one.
//!
//! # The launch contract
//!
//! [`launch`] computes, for every output element,
//! `out[b.., i, j] = max(sum_k lhs[b.., i, k] * rhs[b.., k, j] + bias[b.., i, j], 0)`
//! with the sum accumulated in f32 whatever the storage dtype. The four operands:
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
#![allow(unsafe_code)] // `launch_unchecked`: every index is validated on the host before launch.

mod naive;

use cubecl::client::Client;
use cubecl::ir::{ElemType, FloatKind};
use cubecl::prelude::*;
use std::fmt;

pub use naive::NAIVE_TILE;

/// The tensors of one fused launch, laid out as the [crate-level contract](crate) says.
#[derive(Debug)]
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

/// Why [`launch`] refused to launch: the operands break the [launch contract](crate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaunchError {
    /// An operand's rank differs from the output's, or the output has fewer than two dims.
    Rank {
        /// Which operand (`"lhs"`, `"rhs"`, `"bias"` or `"out"`).
        operand: &'static str,
        /// Its shape.
        shape: Vec<usize>,
        /// The rank the contract requires.
        expected_rank: usize,
    },
    /// An operand's shape is not the one the output's shape implies.
    Shape {
        /// Which operand.
        operand: &'static str,
        /// Its shape.
        shape: Vec<usize>,
        /// The shape the contract requires.
        expected: Vec<usize>,
    },
    /// The output is not contiguous.
    OutputNotContiguous {
        /// The output's shape.
        shape: Vec<usize>,
        /// The output's strides.
        strides: Vec<usize>,
    },
    /// The dtype is not one of `f32`, `f16`, `bf16`.
    UnsupportedDtype {
        /// The dtype, as cubecl names it.
        dtype: String,
    },
    /// An operand's strides reach past the end of its buffer.
    OutOfBounds {
        /// Which operand.
        operand: &'static str,
        /// Its shape.
        shape: Vec<usize>,
        /// Its strides.
        strides: Vec<usize>,
        /// How many elements its buffer holds.
        buffer_len: usize,
    },
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rank {
                operand,
                shape,
                expected_rank,
            } => write!(
                f,
                "fused matmul kernel: `{operand}` has shape {shape:?} (rank {}), expected rank \
                 {expected_rank}",
                shape.len()
            ),
            Self::Shape {
                operand,
                shape,
                expected,
            } => write!(
                f,
                "fused matmul kernel: `{operand}` has shape {shape:?}, expected {expected:?}"
            ),
            Self::OutputNotContiguous { shape, strides } => write!(
                f,
                "fused matmul kernel: `out` must be contiguous, got shape {shape:?} with strides \
                 {strides:?}"
            ),
            Self::UnsupportedDtype { dtype } => write!(
                f,
                "fused matmul kernel: dtype {dtype} is not supported (expected f32, f16 or bf16)"
            ),
            Self::OutOfBounds {
                operand,
                shape,
                strides,
                buffer_len,
            } => write!(
                f,
                "fused matmul kernel: `{operand}` with shape {shape:?} and strides {strides:?} \
                 reaches past its buffer of {buffer_len} elements"
            ),
        }
    }
}

impl std::error::Error for LaunchError {}

/// Launches the fused `relu(lhs @ rhs + bias)` kernel on `client`'s device.
///
/// The work is queued, not awaited: the output is ready once the client's stream reaches it.
/// Returns an error, and launches nothing, when `operands` break the [launch contract](crate).
/// An output with no elements launches nothing.
pub fn launch(client: &Client, operands: Operands, dtype: ElemType) -> Result<(), LaunchError> {
    check_dtype(dtype)?;
    check_operands(&operands, dtype.size())?;
    naive::launch(client, operands, dtype);
    Ok(())
}

fn check_dtype(dtype: ElemType) -> Result<(), LaunchError> {
    match dtype {
        ElemType::Float(FloatKind::F32 | FloatKind::F16 | FloatKind::BF16) => Ok(()),
        other => Err(LaunchError::UnsupportedDtype {
            dtype: format!("{other:?}"),
        }),
    }
}

fn check_operands(ops: &Operands, elem_size: usize) -> Result<(), LaunchError> {
    let out = ops.out.shape.to_vec();
    let rank = out.len();
    if rank < 2 {
        return Err(LaunchError::Rank {
            operand: "out",
            shape: out,
            expected_rank: 2,
        });
    }
    let batch = &out[..rank - 2];
    let (m, n) = (out[rank - 2], out[rank - 1]);
    let k = ops.lhs.shape.last().copied().unwrap_or(0);
    let expect = |tail: [usize; 2]| -> Vec<usize> { batch.iter().copied().chain(tail).collect() };

    for (operand, binding, expected) in [
        ("lhs", &ops.lhs, expect([m, k])),
        ("rhs", &ops.rhs, expect([k, n])),
        ("bias", &ops.bias, expect([m, n])),
    ] {
        let shape = binding.shape.to_vec();
        if shape.len() != rank {
            return Err(LaunchError::Rank {
                operand,
                shape,
                expected_rank: rank,
            });
        }
        if shape != expected {
            return Err(LaunchError::Shape {
                operand,
                shape,
                expected,
            });
        }
        check_in_bounds(operand, binding, elem_size)?;
    }

    let strides = ops.out.strides.to_vec();
    let mut dense = 1usize;
    let contiguous = out.iter().zip(&strides).rev().all(|(&size, &stride)| {
        let ok = size <= 1 || stride == dense;
        dense *= size;
        ok
    });
    if !contiguous || strides.len() != rank {
        return Err(LaunchError::OutputNotContiguous {
            shape: out,
            strides,
        });
    }
    check_in_bounds("out", &ops.out, elem_size)
}

/// The largest element offset a strided view reaches must lie inside its buffer.
fn check_in_bounds(
    operand: &'static str,
    binding: &TensorBinding,
    elem_size: usize,
) -> Result<(), LaunchError> {
    let shape = binding.shape.to_vec();
    if shape.contains(&0) {
        return Ok(()); // Nothing is read. (An empty view's offsets may even pass its end.)
    }
    let handle = &binding.handle;
    let offsets = handle.offset_start.unwrap_or(0) + handle.offset_end.unwrap_or(0);
    let buffer_len = handle.size.saturating_sub(offsets) as usize / elem_size;
    let strides = binding.strides.to_vec();
    let last = shape
        .iter()
        .zip(&strides)
        .map(|(&size, &stride)| (size - 1) as u128 * stride as u128)
        .sum::<u128>();
    if last >= buffer_len as u128 {
        return Err(LaunchError::OutOfBounds {
            operand,
            shape,
            strides,
            buffer_len,
        });
    }
    Ok(())
}
