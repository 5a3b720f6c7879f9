//! The second kernel of a split-K launch: each unit adds one output element's partial sums
//! (one per slice of `k`, from the f32 workspace the Hopper kernel wrote), then, for the fused
//! operation, the bias through its broadcast view and the ReLU, and writes the contiguous
//! output.

use super::kernel::Epilogue;
use crate::common::{batch_offset, relu};
use cubecl::prelude::*;

/// Units per cube of [`finish_split_k`].
pub(crate) const FINISH_UNITS: u32 = 256;

/// `out[i] = relu(sum over s of workspace[s * len + i] + bias[i])` (or the sum alone under
/// [`Epilogue::Plain`]), `len` the output's length (`batch x m x n`, contiguous), for `i` the
/// unit's absolute position.
#[cube(launch_unchecked, address_type = "dynamic")]
pub(crate) fn finish_split_k<E: Float>(
    workspace: &Tensor<f32>,
    bias: &Tensor<E>,
    out: &mut Tensor<E>,
    m: u32,
    n: u32,
    splits: u32,
    #[comptime] epilogue: Epilogue,
    #[define(E)] _dtype: ElemType,
) {
    let (m, n) = (m as usize, n as usize);
    let len = out.len();
    let index = ABSOLUTE_POS;
    if index < len {
        let batch = index / (m * n);
        let row = (index / n) % m;
        let col = index % n;
        let mut sum = 0.0f32;
        for split in 0..splits as usize {
            sum += workspace[split * len + index];
        }
        if comptime![epilogue.bias_relu()] {
            let rank = bias.rank();
            let at = batch_offset::<E>(bias, batch)
                + row * bias.stride(rank - 2)
                + col * bias.stride(rank - 1);
            sum = relu(sum + f32::cast_from(bias[at]));
        }
        out[index] = E::cast_from(sum);
    }
}
