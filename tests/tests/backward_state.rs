//! The memory the backward keeps alive between forward and backward, measured with Burn's
//! device memory report: fmar keeps the ReLU mask at one bit per output element beyond the
//! inputs; Burn's composed reference keeps the whole output (its ReLU saves it).

mod common;

use burn::tensor::{Device, Distribution, Tensor};

/// Device bytes in use after the forward of `op` and a loss built on it, with the output
/// itself dropped, minus the bytes in use before: what the autodiff graph holds for backward.
fn bytes_kept(op: fn(Tensor<3>, Tensor<3>, Tensor<1>) -> Tensor<3>, [m, k, n]: [usize; 3]) -> u64 {
    let device = Device::default().autodiff();
    let in_use = || {
        device
            .memory_pool_usage()
            .expect("memory report")
            .bytes_in_use
    };
    let lhs = Tensor::<3>::random([1, m, k], Distribution::Default, &device).require_grad();
    let rhs = Tensor::<3>::random([1, k, n], Distribution::Default, &device).require_grad();
    let bias = Tensor::<1>::random([n], Distribution::Default, &device).require_grad();
    let upstream = Tensor::<3>::random([1, m, n], Distribution::Default, &device);
    let before = in_use();
    let output = op(lhs.clone(), rhs.clone(), bias.clone());
    let loss = (output * upstream.clone()).sum();
    let after = in_use();
    // The graph is still alive here: backward runs from `loss`.
    let grads = loss.backward();
    assert!(lhs.grad(&grads).is_some() && rhs.grad(&grads).is_some());
    after.saturating_sub(before)
}

#[test]
fn the_backward_keeps_one_bit_per_output_element() {
    let shape = [256, 64, 512];
    let output_bytes = (shape[0] * shape[2] * 4) as u64;
    let mask_bytes = output_bytes / 32;
    let fmar = bytes_kept(fmar::matmul_add_relu_nd, shape);
    let reference = bytes_kept(fmar::matmul_add_relu_reference_nd, shape);
    eprintln!(
        "kept for backward at {shape:?} f32: fmar {fmar} B, Burn's composition {reference} B, \
         the output {output_bytes} B, one bit per element {mask_bytes} B"
    );
    // The loss scalar and allocator rounding come on top of the mask; the output does not.
    assert!(
        fmar <= mask_bytes + 1024,
        "fmar keeps {fmar} B, more than the mask's {mask_bytes} B"
    );
    assert!(
        reference >= output_bytes,
        "the reference was expected to keep its output ({output_bytes} B), kept {reference} B"
    );
}
