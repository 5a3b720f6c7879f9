//! Host-side builders for the memory layouts of [`Layout`](crate::Layout): the stored values a
//! device view reads, so that every layout shows the same logical tensor.

use crate::reference::HostTensor;

/// `host` with its last two dims swapped, stored row-major: reading it through swapped strides
/// gives `host` back.
pub fn transposed(host: &HostTensor) -> HostTensor {
    let rank = host.shape.len();
    let (rows, cols) = (host.shape[rank - 2], host.shape[rank - 1]);
    let mut shape = host.shape.clone();
    shape.swap(rank - 2, rank - 1);
    let mut stored = vec![0.0; host.data.len()];
    let matrix = rows * cols;
    for (index, &value) in host.data.iter().enumerate() {
        let (base, within) = (index - index % matrix, index % matrix);
        let (r, c) = (within / cols, within % cols);
        stored[base + c * rows + r] = value;
    }
    HostTensor::new(shape, stored)
}

/// A NaN tensor of shape `outer` with `host` written into it from `starts`, its last dim
/// spaced by `step`. Reading outside the window reads NaN, which poisons any result it reaches.
pub fn scatter(host: &HostTensor, outer: &[usize], starts: &[usize], step: usize) -> HostTensor {
    let rank = outer.len();
    let mut values = vec![f64::NAN; outer.iter().product()];
    for (flat, &value) in host.data.iter().enumerate() {
        let mut rest = flat;
        let mut offset = 0;
        let mut stride = 1;
        for dim in (0..rank).rev() {
            let coordinate = rest % host.shape[dim];
            rest /= host.shape[dim];
            let spacing = if dim == rank - 1 { step } else { 1 };
            offset += (starts[dim] + coordinate * spacing) * stride;
            stride *= outer[dim];
        }
        values[offset] = value;
    }
    HostTensor::new(outer.to_vec(), values)
}

/// Row-major strides of `shape`.
pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for dim in (0..shape.len().saturating_sub(1)).rev() {
        strides[dim] = strides[dim + 1] * shape[dim + 1];
    }
    strides
}
