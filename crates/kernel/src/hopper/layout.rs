//! How the TMA engine reads an operand: whether a problem's layout is one it can read, how each
//! operand is addressed (which dim is contiguous, how the batch folds into one TMA coordinate),
//! and the tensor maps built from that. Plain Rust but for the maps: unit-tested on any machine.

use crate::Operands;
use cubecl::ir::ElemType;
use cubecl::prelude::*;
use cubecl::zspace::Tiling;

/// Bytes of one 128-byte swizzle line: a stage's depth along `k` in a K-major operand, and the
/// width of one TMA box of an MN-major one.
pub(crate) const LINE_BYTES: usize = 128;

/// Elements of `elem_size` bytes in one swizzle line: a stage's depth along `k` (64
/// half-precision elements, 32 f32 ones), and the width along `m` or `n` of one TMA box of an
/// MN-major operand (a panel).
pub(crate) const fn line_elems(elem_size: usize) -> usize {
    LINE_BYTES / elem_size
}

/// Which dim of `lhs` is contiguous.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum LhsMajor {
    /// `lhs[.., m, k]` with stride 1 along `k`: activations, row-major.
    K,
    /// `lhs[.., m, k]` with stride 1 along `m`: a transposed view, as in `lhsᵀ @ grad`.
    M,
}

/// Which dim of `rhs` is contiguous.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum RhsMajor {
    /// `rhs[.., k, n]` with stride 1 along `n`: Burn's `Linear` weight `[d_in, d_out]`.
    N,
    /// `rhs[.., k, n]` with stride 1 along `k`: a `[d_out, d_in]` weight transposed by strides.
    K,
}

/// How one of `lhs`/`rhs` is read through a rank-3 tensor map `[batch, rows, cols]`, `cols`
/// contiguous. Strides in elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MapLayout {
    /// `[batch, rows, cols]`; `batch` is 1 for an operand broadcast over every batch dim.
    pub shape: [usize; 3],
    /// `[batch, rows, 1]`.
    pub strides: [usize; 3],
    /// Whether the output's flattened batch index is this map's batch coordinate (else 0).
    pub batched: bool,
}

/// How the Hopper kernel reads a problem, or why it cannot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// `lhs` as `[batch, m, k]` (K-major) or `[batch, k, m]` (M-major).
    pub lhs: MapLayout,
    /// Which dim of `lhs` is contiguous.
    pub lhs_major: LhsMajor,
    /// `rhs` as `[batch, k, n]` (N-major) or `[batch, n, k]` (K-major).
    pub rhs: MapLayout,
    /// Which dim of `rhs` is contiguous.
    pub rhs_major: RhsMajor,
    /// The output as `[batch, m, n]`, written through a tensor map too.
    pub out: MapLayout,
}

/// Builds the [`Plan`] of a problem that passed the launch contract, or says in words why TMA
/// cannot read it (another variant then runs it).
pub(crate) fn plan(
    lhs: &TensorBinding,
    rhs: &TensorBinding,
    out: &TensorBinding,
    elem_size: usize,
) -> Result<Plan, String> {
    let out_shape: &[usize] = &out.shape;
    let rank = out_shape.len();
    let (m, n) = (out_shape[rank - 2], out_shape[rank - 1]);
    let k = lhs.shape[rank - 1];
    let batch_shape = &out_shape[..rank - 2];
    for (name, binding) in [("lhs", lhs), ("rhs", rhs), ("out", out)] {
        let offset = binding.handle.offset_start.unwrap_or(0);
        if !offset.is_multiple_of(16) {
            return Err(format!(
                "`{name}` starts {offset} bytes into its buffer, not 16-aligned"
            ));
        }
    }

    let (lhs_k_major, lhs_map) = operand_map("lhs", lhs, batch_shape, [m, k], elem_size)?;
    let lhs_major = if lhs_k_major {
        LhsMajor::K
    } else {
        LhsMajor::M
    };
    let (rhs_n_major, rhs_map) = operand_map("rhs", rhs, batch_shape, [k, n], elem_size)?;
    let rhs_major = if rhs_n_major {
        RhsMajor::N
    } else {
        RhsMajor::K
    };
    // The contract makes the output contiguous: its batch dims fold into one.
    let out_map = map_layout("out", out, batch_shape, [m, n], n, elem_size)?;
    Ok(Plan {
        lhs: lhs_map,
        lhs_major,
        rhs: rhs_map,
        rhs_major,
        out: out_map,
    })
}

/// The map of an operand `[.., rows, cols]`: read as it is when `cols` is contiguous (`true`),
/// else through its transpose when `rows` is (`false`); an error when neither is.
fn operand_map(
    name: &str,
    binding: &TensorBinding,
    batch_shape: &[usize],
    [rows, cols]: [usize; 2],
    elem_size: usize,
) -> Result<(bool, MapLayout), String> {
    let rank = binding.strides.len();
    let strides = &binding.strides[rank - 2..];
    if strides[1] == 1 || cols == 1 {
        let map = map_layout(
            name,
            binding,
            batch_shape,
            [rows, cols],
            strides[0],
            elem_size,
        )?;
        Ok((true, map))
    } else if strides[0] == 1 || rows == 1 {
        let map = map_layout(
            name,
            binding,
            batch_shape,
            [cols, rows],
            strides[1],
            elem_size,
        )?;
        Ok((false, map))
    } else {
        Err(format!(
            "`{name}` has no contiguous dim among its last two (strides {:?})",
            binding.strides
        ))
    }
}

/// The rank-3 map of one operand whose last two dims, in memory order, are `[rows, cols]` with
/// `cols` contiguous and `rows` at `row_stride`.
fn map_layout(
    name: &str,
    binding: &TensorBinding,
    batch_shape: &[usize],
    [rows, cols]: [usize; 2],
    row_stride: usize,
    elem_size: usize,
) -> Result<MapLayout, String> {
    // TMA: every stride but the innermost a multiple of 16 bytes, under 2^40.
    let row_stride = if rows <= 1 { cols } else { row_stride };
    let aligned =
        |stride: usize| (stride * elem_size).is_multiple_of(16) && stride * elem_size < 1 << 40;
    if !aligned(row_stride) {
        return Err(format!(
            "`{name}`'s row stride of {row_stride} elements is not a multiple of 16 bytes"
        ));
    }
    let batch_stride =
        fold_batch(&binding.strides[..batch_shape.len()], batch_shape).ok_or_else(|| {
            format!(
                "`{name}`'s batch strides {:?} over batch dims {batch_shape:?} are neither all \
                 broadcast nor one evenly strided run",
                &binding.strides[..batch_shape.len()]
            )
        })?;
    let (batched, shape_b, stride_b) = match batch_stride {
        // Broadcast over every batch dim (or no batch): one batch, coordinate 0. Its stride is
        // never followed; any aligned value will do.
        None => (false, 1, (rows * row_stride).max(row_stride).max(1)),
        Some(stride) => (true, batch_shape.iter().product(), stride),
    };
    if !aligned(stride_b) {
        return Err(format!(
            "`{name}`'s batch stride of {stride_b} elements is not a multiple of 16 bytes"
        ));
    }
    Ok(MapLayout {
        shape: [shape_b, rows, cols],
        strides: [stride_b, row_stride, 1],
        batched,
    })
}

/// The one stride that takes the flattened batch index (last dim fastest) to an operand's
/// batch offset: `Some(None)` when the operand is broadcast over every batch dim of more than
/// one element, `Some(Some(s))` when `offset = index * s`, `None` when neither holds (a mix of
/// broadcast and strided dims, or dims that do not nest).
fn fold_batch(strides: &[usize], shape: &[usize]) -> Option<Option<usize>> {
    let dims: Vec<(usize, usize)> = shape
        .iter()
        .zip(strides)
        .filter(|(size, _)| **size > 1)
        .map(|(size, stride)| (*size, *stride))
        .collect();
    if dims.iter().all(|(_, stride)| *stride == 0) {
        return Some(None);
    }
    let (_, innermost) = *dims.last()?;
    if innermost == 0 {
        return None;
    }
    let mut expected = innermost;
    for (size, stride) in dims.iter().rev() {
        if *stride != expected {
            return None;
        }
        expected = stride * size;
    }
    Some(Some(innermost))
}

/// The maps of `lhs` (K-major, `[batch, m, k]`) and of an N-major f32 weight (`[batch, k, n]`),
/// where the TMA engine can read both so (starts and strides 16-byte aligned): the layouts the
/// few-row and transposed products read through the TMA engine.
pub(crate) fn f32_weight_maps(ops: &Operands) -> Option<(MapLayout, MapLayout)> {
    let plan = plan(&ops.lhs, &ops.rhs, &ops.out, 4).ok()?;
    (plan.lhs_major == LhsMajor::K && plan.rhs_major == RhsMajor::N).then_some((plan.lhs, plan.rhs))
}

/// Whether an f32 operand's rows can be read `elems` elements at a time, aligned: its last
/// stride 1, every other stride a multiple of `elems`, and its start a multiple of `elems`
/// elements into its buffer.
pub(crate) fn copies_in_vectors(binding: &TensorBinding, elems: usize) -> bool {
    let (last, others) = binding.strides.split_last().expect("a matrix has two dims");
    *last == 1
        && others.iter().all(|s| s.is_multiple_of(elems))
        && binding
            .handle
            .offset_start
            .unwrap_or(0)
            .is_multiple_of(4 * elems as u64)
}

/// A 128-byte-swizzled tensor map over `binding`'s buffer, laid out as `layout` says, that
/// copies `tile` (`[batch, rows, cols]`) at a time.
pub(crate) fn tensor_map(
    binding: &TensorBinding,
    layout: &MapLayout,
    tile: [usize; 3],
    dtype: ElemType,
) -> TensorMapArg<Tiled> {
    let view = TensorBinding {
        handle: binding.handle.clone(),
        strides: layout.strides.into(),
        shape: layout.shape.into(),
        tiling: Tiling::default(),
    };
    TensorMapArg::new(
        TiledArgs {
            tile_size: tile.into(),
        },
        view.into_tensor_arg(),
        dtype,
    )
    .with_swizzle(TensorMapSwizzle::B128)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_batch_and_full_broadcast_fold_to_no_coordinate() {
        assert_eq!(fold_batch(&[], &[]), Some(None));
        assert_eq!(fold_batch(&[0, 0], &[3, 4]), Some(None));
        // A dim of one element never moves the offset, whatever its stride.
        assert_eq!(fold_batch(&[77, 0], &[1, 4]), Some(None));
    }

    #[test]
    fn nested_batch_dims_fold_into_one_stride() {
        assert_eq!(fold_batch(&[40, 10], &[3, 4]), Some(Some(10)));
        assert_eq!(fold_batch(&[10], &[5]), Some(Some(10)));
        assert_eq!(fold_batch(&[99, 40, 10], &[1, 3, 4]), Some(Some(10)));
    }

    #[test]
    fn mixed_or_gapped_batch_dims_do_not_fold() {
        // Broadcast on one dim, strided on the other.
        assert_eq!(fold_batch(&[0, 10], &[3, 4]), None);
        assert_eq!(fold_batch(&[10, 0], &[3, 4]), None);
        // Strided but not nested (a sliced batch).
        assert_eq!(fold_batch(&[80, 10], &[3, 4]), None);
    }
}
