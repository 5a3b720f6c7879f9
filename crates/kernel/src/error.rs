//! [`LaunchError`]: why the kernel crate launched nothing.

use crate::Variant;
use crate::diagnostics::UnknownVariant;

/// Why [`launch`](crate::launch) refused to launch. The first group means the operands break
/// the [launch contract](crate) (a bug in the caller); the last two mean one variant cannot run
/// a valid problem here, and another variant can.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    // ---- the contract -----------------------------------------------------------------------
    /// An operand's rank differs from the output's, or the output has fewer than two dims.
    #[error(
        "fused matmul kernel: `{operand}` has shape {shape:?} (rank {}), expected rank \
         {expected_rank}",
        shape.len()
    )]
    Rank {
        /// Which operand (`"lhs"`, `"rhs"`, `"bias"` or `"out"`).
        operand: &'static str,
        /// Its shape.
        shape: Vec<usize>,
        /// The rank the contract requires.
        expected_rank: usize,
    },
    /// An operand's shape is not the one the output's shape implies.
    #[error("fused matmul kernel: `{operand}` has shape {shape:?}, expected {expected:?}")]
    Shape {
        /// Which operand.
        operand: &'static str,
        /// Its shape.
        shape: Vec<usize>,
        /// The shape the contract requires.
        expected: Vec<usize>,
    },
    /// The output is not contiguous.
    #[error(
        "fused matmul kernel: `out` must be contiguous, got shape {shape:?} with strides \
         {strides:?}"
    )]
    OutputNotContiguous {
        /// The output's shape.
        shape: Vec<usize>,
        /// The output's strides.
        strides: Vec<usize>,
    },
    /// A tensor of the mask or the masked gradient, which are read and written densely, is
    /// not contiguous.
    #[error(
        "fused matmul kernel: `{operand}` must be contiguous, got shape {shape:?} with strides \
         {strides:?}"
    )]
    NotContiguous {
        /// Which tensor (`"grad"`, `"mask"`, `"out"` or `"column_sums"`).
        operand: &'static str,
        /// Its shape.
        shape: Vec<usize>,
        /// Its strides.
        strides: Vec<usize>,
    },
    /// The dtype is not one of `f32`, `f16`, `bf16`.
    #[error("fused matmul kernel: dtype {dtype} is not supported (expected f32, f16 or bf16)")]
    UnsupportedDtype {
        /// The dtype, as cubecl names it.
        dtype: String,
    },
    /// An operand has a different number of strides than dims.
    #[error(
        "fused matmul kernel: `{operand}` has shape {shape:?} but {} strides {strides:?}",
        strides.len()
    )]
    StrideCount {
        /// Which operand.
        operand: &'static str,
        /// Its shape.
        shape: Vec<usize>,
        /// Its strides.
        strides: Vec<usize>,
    },
    /// An operand's strides reach past the end of its buffer.
    #[error(
        "fused matmul kernel: `{operand}` with shape {shape:?} and strides {strides:?} reaches \
         past its buffer of {buffer_len} elements"
    )]
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

    /// `FMAR_KERNEL` names no variant ([`UnknownVariant`]).
    #[error("fused matmul kernel: {0}")]
    UnknownVariant(#[from] UnknownVariant),

    // ---- one variant cannot run it ------------------------------------------------------------
    /// cubek-matmul's setup refused the routine for this problem on this device (no tensor
    /// cores for the dtype, a tile that does not fit, ...). Nothing was launched.
    #[error("fused matmul kernel: variant {variant} cannot run here: {reason}")]
    Unavailable {
        /// The variant that refused.
        variant: Variant,
        /// cubek's reason.
        reason: String,
    },
    /// fmar itself refuses the variant for this problem: a combination seen to fault the
    /// device or fail its launch, which is no candidate to run or measure. Nothing was
    /// launched.
    #[error("fused matmul kernel: variant {variant} is refused by fmar: {reason}")]
    Refused {
        /// The variant refused.
        variant: Variant,
        /// Why, with what was seen.
        reason: &'static str,
    },
}

impl LaunchError {
    /// Whether another variant can run the same operands: the refusal concerns this variant,
    /// not the operands.
    pub fn is_variant_specific(&self) -> bool {
        matches!(self, Self::Unavailable { .. } | Self::Refused { .. })
    }
}
