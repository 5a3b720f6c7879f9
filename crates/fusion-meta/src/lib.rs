//! Output metadata of fmar's fused `relu(lhs @ rhs + bias)`: the one shape rule that Fusion's lazy
//! registration and direct execution both call, so the shape Fusion announces before the kernel
//! runs is, by construction, the shape the kernel produces.
//!
//! Layer 0 of fmar: it depends on Burn's `Shape` type only.

use burn::tensor::Shape;
use std::fmt;

/// The name every message uses for the operation.
pub const OP_NAME: &str = "matmul_add_relu";

/// Why a set of operand shapes has no fused output shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShapeError {
    /// An operand has fewer than two dims.
    RankTooLow {
        /// `"lhs"` or `"rhs"`.
        operand: &'static str,
        /// Its shape.
        shape: Shape,
    },
    /// `lhs` and `rhs` have different ranks.
    RankMismatch {
        /// The shape of `lhs`.
        lhs: Shape,
        /// The shape of `rhs`.
        rhs: Shape,
    },
    /// `lhs`'s last dim differs from `rhs`'s second-to-last dim.
    InnerDim {
        /// The shape of `lhs`.
        lhs: Shape,
        /// The shape of `rhs`.
        rhs: Shape,
    },
    /// A batch dim of `lhs` and `rhs` differs and neither is 1.
    Batch {
        /// The shape of `lhs`.
        lhs: Shape,
        /// The shape of `rhs`.
        rhs: Shape,
        /// The first batch dim that does not broadcast.
        dim: usize,
    },
    /// `bias` does not have the output's shape.
    Bias {
        /// The shape of `bias`.
        bias: Shape,
        /// The shape of `lhs @ rhs`.
        output: Shape,
    },
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RankTooLow { operand, shape } => write!(
                f,
                "{OP_NAME}: `{operand}` must have at least 2 dims, got shape {shape}"
            ),
            Self::RankMismatch { lhs, rhs } => write!(
                f,
                "{OP_NAME}: `lhs` and `rhs` must have the same rank, got lhs {lhs} (rank {}) and \
                 rhs {rhs} (rank {})",
                lhs.num_dims(),
                rhs.num_dims()
            ),
            Self::InnerDim { lhs, rhs } => write!(
                f,
                "{OP_NAME}: inner dims differ: `lhs` {lhs} has k = {} but `rhs` {rhs} has k = {}",
                lhs[lhs.num_dims() - 1],
                rhs[rhs.num_dims() - 2]
            ),
            Self::Batch { lhs, rhs, dim } => write!(
                f,
                "{OP_NAME}: batch dim {dim} does not broadcast: `lhs` {lhs} has {} and `rhs` \
                 {rhs} has {} (sizes must match or one must be 1)",
                lhs[*dim], rhs[*dim]
            ),
            Self::Bias { bias, output } => write!(
                f,
                "{OP_NAME}: `bias` {bias} must have the output shape {output}"
            ),
        }
    }
}

impl std::error::Error for ShapeError {}

/// The shape of `relu(lhs @ rhs + bias)`, or why there is none.
///
/// `lhs` is `[B.., m, k]` and `rhs` is `[B.., k, n]` with the same rank `>= 2`; their batch dims
/// broadcast (each pair equal, or one of them 1). The output is `[B.., m, n]` with the broadcast
/// batch dims, and `bias` must have exactly that shape.
pub fn try_output_shape(lhs: &Shape, rhs: &Shape, bias: &Shape) -> Result<Shape, ShapeError> {
    let output = try_matmul_shape(lhs, rhs)?;
    if bias != &output {
        return Err(ShapeError::Bias {
            bias: bias.clone(),
            output,
        });
    }
    Ok(output)
}

/// [`try_output_shape`], panicking with the error's message. This is the form the Fusion
/// annotation calls; the public API validates first, so Fusion never sees bad shapes from it.
pub fn output_shape(lhs: &Shape, rhs: &Shape, bias: &Shape) -> Shape {
    try_output_shape(lhs, rhs, bias).unwrap_or_else(|error| panic!("{error}"))
}

/// The shape of `lhs @ rhs` with broadcast batch dims, or why there is none.
pub fn try_matmul_shape(lhs: &Shape, rhs: &Shape) -> Result<Shape, ShapeError> {
    for (operand, shape) in [("lhs", lhs), ("rhs", rhs)] {
        if shape.num_dims() < 2 {
            return Err(ShapeError::RankTooLow {
                operand,
                shape: shape.clone(),
            });
        }
    }
    let rank = lhs.num_dims();
    if rhs.num_dims() != rank {
        return Err(ShapeError::RankMismatch {
            lhs: lhs.clone(),
            rhs: rhs.clone(),
        });
    }
    if lhs[rank - 1] != rhs[rank - 2] {
        return Err(ShapeError::InnerDim {
            lhs: lhs.clone(),
            rhs: rhs.clone(),
        });
    }
    let mut dims = Vec::with_capacity(rank);
    for dim in 0..rank - 2 {
        dims.push(
            broadcast_dim(lhs[dim], rhs[dim]).ok_or_else(|| ShapeError::Batch {
                lhs: lhs.clone(),
                rhs: rhs.clone(),
                dim,
            })?,
        );
    }
    dims.extend([lhs[rank - 2], rhs[rank - 1]]);
    Ok(Shape::from(dims))
}

/// The size two broadcast dims take, `None` when they do not broadcast. A 1 stretches to the
/// other size, 0 included (a 0 meeting a 1 gives 0, not 1).
pub fn broadcast_dim(a: usize, b: usize) -> Option<usize> {
    match (a, b) {
        (a, b) if a == b => Some(a),
        (1, b) => Some(b),
        (a, 1) => Some(a),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(dims: &[usize]) -> Shape {
        Shape::from(dims.to_vec())
    }

    #[test]
    fn seed_example_shape() {
        let out = output_shape(
            &shape(&[1, 32, 32]),
            &shape(&[32, 32, 32]),
            &shape(&[32, 32, 32]),
        );
        assert_eq!(out, shape(&[32, 32, 32]));
    }

    #[test]
    fn zero_broadcasts_against_one() {
        assert_eq!(broadcast_dim(0, 1), Some(0));
        assert_eq!(broadcast_dim(1, 0), Some(0));
        assert_eq!(broadcast_dim(0, 2), None);
    }

    #[test]
    #[should_panic(expected = "inner dims differ: `lhs` [2, 3, 4] has k = 4 but `rhs` [2, 5, 6]")]
    fn panic_message_names_operands_and_shapes() {
        output_shape(&shape(&[2, 3, 4]), &shape(&[2, 5, 6]), &shape(&[2, 3, 6]));
    }

    #[test]
    fn rank_one_is_rejected_before_indexing() {
        let err = try_output_shape(&shape(&[4]), &shape(&[4, 2]), &shape(&[2])).unwrap_err();
        assert!(matches!(err, ShapeError::RankTooLow { operand: "lhs", .. }));
    }
}
