//! A shared weight's batches as rows: where `rhs` is broadcast over the batch and every batch's
//! rows follow one another in `lhs`, the bias and the output, the product is one batch of
//! `batch * m` rows. Each batch of a few-row product would read the whole weight again (from
//! L2 at best: at `4 x 1 x 4096 x 4096`, four times 64 MiB), where one product of all the rows
//! reads it once.

use crate::Operands;
use crate::contract::Dims;
use cubecl::prelude::TensorBinding;
use cubecl::zspace::Tiling;

/// Whether the batches fold into rows ([`batches_as_rows`]): more than one batch, the weight
/// shared by every one, and the rows of `lhs`, the bias and the output each one stride apart
/// across batches.
fn folds(ops: &Operands, dims: &Dims) -> bool {
    let rhs = &ops.rhs;
    let rank = rhs.shape.len();
    dims.batch > 1
        && rhs.tiling == Tiling::default()
        && (0..rank - 2).all(|d| rhs.shape[d] == 1 || rhs.strides[d] == 0)
        && [&ops.lhs, &ops.bias, &ops.out]
            .into_iter()
            .all(|binding| rows_stride(binding).is_some())
}

/// `ops` and `dims` as one batch of `dims.batch * dims.m` rows, every operand `[1, rows, cols]`
/// (`rhs` `[1, k, n]`), where they fold ([`folds`]); `None` where they do not, or where there is
/// one batch.
pub(crate) fn batches_as_rows(ops: &Operands, dims: &Dims) -> Option<(Operands, Dims)> {
    if !folds(ops, dims) {
        return None;
    }
    let rhs = &ops.rhs;
    let rank = rhs.shape.len();
    let folded = Operands {
        lhs: rows_folded(&ops.lhs)?,
        rhs: TensorBinding {
            handle: rhs.handle.clone(),
            strides: [0, rhs.strides[rank - 2], rhs.strides[rank - 1]].into(),
            shape: [1, dims.k, dims.n].into(),
            tiling: Tiling::default(),
        },
        bias: rows_folded(&ops.bias)?,
        out: rows_folded(&ops.out)?,
    };
    Some((folded, folded_dims(dims)))
}

/// `dims` as one batch of every batch's rows.
fn folded_dims(dims: &Dims) -> Dims {
    Dims {
        m: dims.batch * dims.m,
        batch: 1,
        ..*dims
    }
}

/// The sizes [`rows_within`] runs, without building its operands.
pub(crate) fn dims_within(ops: &Operands, dims: &Dims, limit: usize) -> Option<Dims> {
    if dims.batch * dims.m <= limit && folds(ops, dims) {
        return Some(folded_dims(dims));
    }
    (dims.m <= limit).then_some(*dims)
}

/// The operands and sizes a path that takes at most `limit` rows runs: every batch's rows as
/// one batch where the weight is shared by every batch and they number at most `limit`
/// ([`batches_as_rows`]), else the batches as they are where each has at most `limit` rows;
/// `None` where neither.
pub(crate) fn rows_within(ops: &Operands, dims: &Dims, limit: usize) -> Option<(Operands, Dims)> {
    if dims.batch * dims.m <= limit
        && let Some(folded) = batches_as_rows(ops, dims)
    {
        return Some(folded);
    }
    (dims.m <= limit).then(|| (ops.clone(), *dims))
}

/// The one stride between consecutive rows of `binding` across its batches ([`row_stride`]),
/// where there is one and it is untiled.
fn rows_stride(binding: &TensorBinding) -> Option<usize> {
    if binding.tiling != Tiling::default() {
        return None;
    }
    let rank = binding.shape.len();
    row_stride(&binding.shape[..rank - 1], &binding.strides[..rank - 1])
}

/// `binding` (`[B.., r, c]`) as `[1, B.. x r, c]`, where its rows over every batch are one
/// stride apart ([`row_stride`]); an untiled view of the same buffer.
fn rows_folded(binding: &TensorBinding) -> Option<TensorBinding> {
    let rank = binding.shape.len();
    let stride = rows_stride(binding)?;
    let rows: usize = binding.shape[..rank - 1].iter().product();
    Some(TensorBinding {
        handle: binding.handle.clone(),
        strides: [rows * stride, stride, binding.strides[rank - 1]].into(),
        shape: [1, rows, binding.shape[rank - 1]].into(),
        tiling: Tiling::default(),
    })
}

/// The one stride that steps through every index of dims `shape` (`strides` theirs, the last
/// dim fastest) in order, if there is one: the innermost stride of a dim longer than 1, which
/// each outer dim longer than 1 must continue (its stride the inner one's times its size). Dims
/// of size 1 are never stepped over; with none longer than 1, the last dim's stride.
pub(crate) fn row_stride(shape: &[usize], strides: &[usize]) -> Option<usize> {
    let mut first = None;
    let mut next = None;
    for (&size, &stride) in shape.iter().zip(strides).rev() {
        if size == 1 {
            continue;
        }
        if next.is_some_and(|next| next != stride) {
            return None;
        }
        first.get_or_insert(stride);
        next = Some(stride * size);
    }
    Some(first.unwrap_or(strides[strides.len() - 1]))
}

#[cfg(test)]
mod tests {
    use super::row_stride;

    #[test]
    fn rows_fold_only_where_one_stride_steps_through_them() {
        // Contiguous batches of rows: `[4, 3, k]`, `[2, 2, 3, k]`.
        assert_eq!(row_stride(&[4, 3], &[3 * 40, 40]), Some(40));
        assert_eq!(row_stride(&[2, 2, 3], &[6 * 40, 3 * 40, 40]), Some(40));
        // One row a batch: the batch's stride, whatever the row's.
        assert_eq!(row_stride(&[4, 1], &[40, 7]), Some(40));
        // A bias broadcast over batches and rows.
        assert_eq!(row_stride(&[4, 3], &[0, 0]), Some(0));
        // Size-1 dims anywhere; all of them size 1.
        assert_eq!(row_stride(&[1, 4, 1, 3], &[9, 120, 5, 40]), Some(40));
        assert_eq!(row_stride(&[1, 1], &[9, 5]), Some(5));
        // A bias per batch broadcast over rows; batches with a gap between them; batches
        // transposed with rows.
        assert_eq!(row_stride(&[4, 3], &[40, 0]), None);
        assert_eq!(row_stride(&[4, 3], &[3 * 40 + 8, 40]), None);
        assert_eq!(row_stride(&[4, 3], &[40, 4 * 40]), None);
    }
}
