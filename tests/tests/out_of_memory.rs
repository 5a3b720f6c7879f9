//! Requests larger than the device can hold come back as errors the caller can handle, and the
//! process stays usable for the next call.
//!
//! - An output larger than the device allocates in one buffer (on the H200 through CUDA, a
//!   quarter of its 141 GB; on wgpu, the adapter's largest storage buffer) is refused at the call
//!   with `Error::OutputTooLarge`, before anything is registered or allocated.
//! - Outputs that each fit but together exceed the device's memory fail when read, as Burn's
//!   `ExecutionError`, and after they are dropped the next call succeeds. That test is
//!   `#[ignore]`d: it is meant for a real GPU (`cargo test --test out_of_memory -- --ignored`);
//!   on a software adapter "device memory" is host memory.

mod common;

use burn::tensor::{Device, Tensor, s};
use common::values;
use fmar::{Error, matmul_add_relu_nd, try_matmul_add_relu_nd};

/// `relu(lhs @ rhs + bias)` with k = 1: an `m x n` output from `m + n + n` input elements.
fn outer_product_inputs(m: usize, n: usize, device: &Device) -> (Tensor<2>, Tensor<2>, Tensor<1>) {
    (
        Tensor::ones([m, 1], device),
        Tensor::ones([1, n], device),
        Tensor::ones([n], device),
    )
}

/// A small call whose result is known: every element is 1 * 1 * 3 + 1 = 4.
fn assert_usable(device: &Device) {
    let (lhs, rhs, bias) = (
        Tensor::<2>::ones([5, 3], device),
        Tensor::<2>::ones([3, 7], device),
        Tensor::<1>::ones([7], device),
    );
    assert_eq!(values(matmul_add_relu_nd(lhs, rhs, bias)), vec![4.0; 35]);
}

#[test]
fn an_output_over_the_device_limit_is_a_typed_error_and_the_device_stays_usable() {
    for device in [Device::default(), Device::default().autodiff()] {
        // 2^18 x 2^18 f32: 256 GiB, more than any device allocates in one buffer (the H200 has
        // 141 GB in all), from inputs of 1 MiB each.
        let side = 1 << 18;
        let (lhs, rhs, bias) = outer_product_inputs(side, side, &device);
        let error = try_matmul_add_relu_nd(lhs.clone(), rhs.clone(), bias.clone()).unwrap_err();
        let Error::OutputTooLarge {
            ref output,
            bytes,
            limit,
            ..
        } = error
        else {
            panic!("expected OutputTooLarge, got {error:?}");
        };
        assert_eq!(output.to_vec(), vec![side, side]);
        assert_eq!(bytes, (side * side * 4) as u64);
        assert!(bytes > limit);
        let message = error.to_string();
        assert!(
            message.contains("[262144, 262144]") && message.contains("F32"),
            "{message}"
        );

        // The panicking form panics with the same message.
        let panic = std::panic::catch_unwind(|| matmul_add_relu_nd(lhs, rhs, bias)).unwrap_err();
        assert_eq!(panic.downcast_ref::<String>(), Some(&message));

        assert_usable(&device);
        eprintln!("refused at the call: {message}");
    }
}

#[test]
#[ignore = "fills the device's memory: run on a real GPU with `--ignored` (on a software \
            adapter device memory is host memory)"]
fn filling_device_memory_fails_at_readback_and_the_next_call_succeeds() {
    let device = Device::default();
    let capacity = device.memory_capacity();
    eprintln!("device {device:?}, stated capacity {capacity:?} bytes");
    // Square f32 outputs of 16 GiB each (under CUDA's per-buffer limit on a large GPU), kept
    // alive until one cannot be allocated.
    let side = 1 << 16;
    let mut kept = Vec::new();
    let mut failure = None;
    for index in 0..64 {
        let (lhs, rhs, bias) = outer_product_inputs(side, side, &device);
        let output = match try_matmul_add_relu_nd(lhs, rhs, bias) {
            Ok(output) => output,
            Err(error) => {
                failure = Some(format!("typed error at the call: {error}"));
                break;
            }
        };
        // Read one element: it runs the queue and surfaces an allocation failure.
        match output.clone().slice(s![0..1, 0..1]).try_into_data() {
            Ok(data) => {
                assert_eq!(
                    data.convert::<f32>().try_to_vec::<f32>().unwrap(),
                    vec![2.0]
                );
                kept.push(output);
            }
            Err(error) => {
                failure = Some(format!("output {index} (16 GiB each) at readback: {error}"));
                break;
            }
        }
    }
    let failure = failure.expect("the device held 64 outputs of 16 GiB: nothing failed");
    eprintln!("after {} outputs held: {failure}", kept.len());
    drop(kept);
    device.memory_cleanup();
    assert_usable(&device);
    eprintln!("the next call succeeded");
}
