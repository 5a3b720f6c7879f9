//! [`Operands`] and the launch contract's host-side checks: every operand's rank, shape,
//! strides and buffer bounds, checked once per launch before any kernel sees them.

use crate::LaunchError;
use cubecl::ir::{ElemType, FloatKind};
use cubecl::prelude::TensorBinding;

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

/// The tensors of one plain product `out = lhs @ rhs`
/// ([`launch_product`](crate::launch_product)), laid out as the [crate-level contract](crate)
/// says for the fused launch's `lhs`, `rhs` and `out`.
#[derive(Debug, Clone)]
pub struct ProductOperands {
    /// Left matrix operand, `[B.., m, k]`.
    pub lhs: TensorBinding,
    /// Right matrix operand, `[B.., k, n]`.
    pub rhs: TensorBinding,
    /// The output, `[B.., m, n]`, contiguous.
    pub out: TensorBinding,
}

/// The strides through which a tensor of `shape` and `strides` (in elements) reads as `target`,
/// a shape it broadcasts to, matched from the right: the view the [launch contract](crate) wants
/// for a broadcast operand. The dims `shape` lacks, and its size-1 dims that `target` stretches,
/// get stride 0; the others keep their own. No data moves.
///
/// The one statement of that rule: callers use it to lay their operands out, and the contract
/// tests to build theirs.
///
/// # Panics
///
/// Where `shape` has more dims than `target`, or `strides` fewer than `shape`.
pub fn broadcast_strides(shape: &[usize], strides: &[usize], target: &[usize]) -> Vec<usize> {
    let skip = target.len() - shape.len();
    (0..target.len())
        .map(|dim| match dim.checked_sub(skip) {
            Some(own) if shape[own] == target[dim] => strides[own],
            _ => 0,
        })
        .collect()
}

/// The sizes of a problem that passed [`check`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dims {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// The product of the output's batch dims.
    pub batch: usize,
}

impl Dims {
    /// The sizes of `operands`, which must have passed [`check`].
    pub fn of(operands: &Operands) -> Self {
        let shape = &operands.out.shape;
        let rank = shape.len();
        Self {
            m: shape[rank - 2],
            n: shape[rank - 1],
            k: operands.lhs.shape[rank - 1],
            batch: shape[..rank - 2].iter().product(),
        }
    }

    /// Whether the output has no elements (nothing to launch).
    pub fn is_empty(self) -> bool {
        self.m == 0 || self.n == 0 || self.batch == 0
    }
}

/// Checks `operands` and `dtype` against the [launch contract](crate).
pub(crate) fn check(operands: &Operands, dtype: ElemType) -> Result<Dims, LaunchError> {
    check_dtype(dtype)?;
    check_operands(operands, dtype.size())?;
    Ok(Dims::of(operands))
}

pub(crate) fn check_dtype(dtype: ElemType) -> Result<(), LaunchError> {
    match dtype {
        ElemType::Float(FloatKind::F32 | FloatKind::F16 | FloatKind::BF16) => Ok(()),
        other => Err(LaunchError::UnsupportedDtype {
            dtype: format!("{other:?}"),
        }),
    }
}

fn check_operands(ops: &Operands, elem_size: usize) -> Result<(), LaunchError> {
    for (operand, binding) in [
        ("lhs", &ops.lhs),
        ("rhs", &ops.rhs),
        ("bias", &ops.bias),
        ("out", &ops.out),
    ] {
        if binding.strides.len() != binding.shape.len() {
            return Err(LaunchError::StrideCount {
                operand,
                shape: binding.shape.to_vec(),
                strides: binding.strides.to_vec(),
            });
        }
    }
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
pub(crate) fn check_in_bounds(
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

#[cfg(test)]
mod tests {
    use super::broadcast_strides;

    #[test]
    fn broadcast_dims_read_with_stride_zero() {
        // A `[n]` bias seen as `[b, m, n]`: the missing dims stride 0.
        assert_eq!(broadcast_strides(&[5], &[1], &[2, 3, 5]), [0, 0, 1]);
        // A transposed view with one batch, seen with 4: the stretched 1 strides 0.
        assert_eq!(
            broadcast_strides(&[1, 4, 3], &[12, 1, 4], &[4, 4, 3]),
            [0, 1, 4]
        );
        // A dim of size 1 that stays 1 keeps its own stride.
        assert_eq!(broadcast_strides(&[1, 7], &[7, 1], &[1, 7]), [7, 1]);
    }
}
