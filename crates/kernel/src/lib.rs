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

mod accelerated;
mod naive;
mod selection;
mod tiled;

use cubecl::client::Client;
use cubecl::ir::{ElemType, FloatKind};
use cubecl::prelude::*;
use std::fmt;

pub use accelerated::Routine;
pub use naive::NAIVE_TILE;
pub use selection::{force_variant, forced_variant, last_launched_variant};

/// One implementation of the launch contract. Every variant computes the same function (each
/// passes the same tests); they differ in speed, by shape, dtype and device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// The seed's instructional kernel: one unit per output, operands read from global memory.
    /// Kept as the baseline.
    Naive,
    /// Shared-memory tiles (64 x 64 x 16) with a 4 x 4 register block per unit, for every
    /// runtime (no tensor cores).
    Tiled,
    /// A cubek-matmul routine (tensor cores where the device has them) carrying fmar's
    /// epilogue: the bias loaded as the accumulator, the ReLU applied on write.
    Accelerated(Routine),
}

impl Variant {
    /// Every variant, baseline first.
    pub const ALL: [Variant; 14] = {
        let mut all = [Variant::Naive; 14];
        all[1] = Variant::Tiled;
        let mut i = 0;
        while i < Routine::ALL.len() {
            all[i + 2] = Variant::Accelerated(Routine::ALL[i]);
            i += 1;
        }
        all
    };

    /// The variant's name, as `FMAR_KERNEL` and the benchmark spell it.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Naive => "naive",
            Variant::Tiled => "tiled",
            Variant::Accelerated(routine) => routine.name(),
        }
    }

    /// The variant `name` spells, if any.
    pub fn from_name(name: &str) -> Option<Variant> {
        Self::ALL.into_iter().find(|variant| variant.name() == name)
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// ReLU exactly as Burn's reference computes it (`x <= 0` is filled with `+0`): NaN passes
/// through (`NaN <= 0` is false) and `-0` becomes `+0`. A hardware `max` would leave NaN to the
/// backend's whim.
#[cube]
pub(crate) fn relu(x: f32) -> f32 {
    select(x <= 0.0, 0.0, x)
}

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
#[non_exhaustive]
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
    /// The variant cannot run this problem on this device (no tensor cores, a tile that does
    /// not fit, ...). Nothing was launched; another variant can run it.
    Unavailable {
        /// The variant that refused.
        variant: Variant,
        /// cubek's reason.
        reason: String,
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
            Self::Unavailable { variant, reason } => write!(
                f,
                "fused matmul kernel: variant {variant} cannot run here: {reason}"
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
    check_dtype(dtype)?;
    check_operands(&operands, dtype.size())?;
    selection::launch_selected(client, operands, dtype)
}

/// [`launch`] with the given [`Variant`], for experiments and benchmarks.
pub fn launch_variant(
    client: &Client,
    mut operands: Operands,
    dtype: ElemType,
    variant: Variant,
) -> Result<(), LaunchError> {
    check_dtype(dtype)?;
    check_operands(&operands, dtype.size())?;
    let out_len: usize = operands.out.shape.iter().product();
    if out_len == 0 {
        return Ok(());
    }
    let rank = operands.out.shape.len();
    if operands.lhs.shape[rank - 1] == 0 {
        // k = 0: `lhs` and `rhs` are empty and never read, but cubecl cannot bind an empty view
        // (its offsets can pass the buffer's end). Bind the bias buffer in their place; their
        // shapes, which say k = 0, are kept.
        operands.lhs.handle = operands.bias.handle.clone();
        operands.rhs.handle = operands.bias.handle.clone();
    }
    match variant {
        Variant::Naive => naive::launch(client, operands, dtype),
        Variant::Tiled => tiled::launch(client, operands, dtype),
        Variant::Accelerated(routine) => accelerated::launch(client, operands, dtype, routine)
            .map_err(|error| LaunchError::Unavailable {
                variant,
                reason: format!("{error:?}"),
            })?,
    }
    selection::record_launch(variant);
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
