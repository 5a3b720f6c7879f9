//! fmar's forward pass on Burn's `CubeBackend`, the one backend type behind every CubeCL runtime
//! (CUDA, wgpu, ...): it checks the operands' device, dtype and shapes, lays them out for the
//! kernel, allocates the output and launches [`fmar_kernel::launch`].
//!
//! Layer 1 of fmar: it depends on `fmar-kernel` (the launch) and `fmar-fusion-meta` (the shape
//! rule). It exposes a plain function rather than an `impl Trait for CubeBackend`: the extension
//! trait lives in the `fmar` crate, and Rust's orphan rule puts every impl of it there too.

use burn::backend::cubecl::dtype_to_storage_type;
use burn::tensor::{DType, Shape};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_contiguous_dtype;
use burn_cubecl::tensor::CubeTensor;
use cubecl::prelude::TensorBinding;
use fmar_fusion_meta::{OP_NAME, output_shape};
use std::sync::atomic::{AtomicU64, Ordering};

static KERNEL_LAUNCHES: AtomicU64 = AtomicU64::new(0);

/// How many times this process has handed a fused forward to the kernel crate.
///
/// Tests read it to tell fmar's kernel from the composed reference, whose result may be equal:
/// an equal result proves nothing about which path produced it.
pub fn kernel_launches() -> u64 {
    KERNEL_LAUNCHES.load(Ordering::SeqCst)
}

/// The dtypes the kernel computes in; every one accumulates in f32.
pub const SUPPORTED_DTYPES: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

/// `relu(lhs @ rhs + bias)` on a CubeCL device, in one kernel.
///
/// # Panics
///
/// With a message naming the argument and its shape, dtype or device when the operands are on
/// different devices, have different or unsupported dtypes, or have shapes that
/// [`fmar_fusion_meta::try_output_shape`] rejects.
pub fn fused_matmul_add_relu(lhs: CubeTensor, rhs: CubeTensor, bias: CubeTensor) -> CubeTensor {
    for (name, other) in [("rhs", &rhs), ("bias", &bias)] {
        if other.device != lhs.device {
            panic!(
                "{OP_NAME}: `{name}` is on device {:?} but `lhs` is on device {:?}",
                other.device, lhs.device
            );
        }
        if other.dtype != lhs.dtype {
            panic!(
                "{OP_NAME}: `{name}` has dtype {:?} but `lhs` has dtype {:?}",
                other.dtype, lhs.dtype
            );
        }
    }
    let dtype = lhs.dtype;
    if !SUPPORTED_DTYPES.contains(&dtype) {
        panic!("{OP_NAME}: dtype {dtype:?} is not supported (expected F32, F16 or BF16)");
    }
    let out_shape = output_shape(lhs.meta.shape(), rhs.meta.shape(), bias.meta.shape());

    let lhs = into_contiguous(lhs);
    let rhs = into_contiguous(rhs);
    let bias = into_contiguous(bias);

    let output = empty_device_contiguous_dtype(
        lhs.client.clone(),
        lhs.device.clone(),
        out_shape.clone(),
        dtype,
    );
    let client = output.client.clone();
    let operands = fmar_kernel::Operands {
        lhs: expand_batch(lhs.binding(), &out_shape),
        rhs: expand_batch(rhs.binding(), &out_shape),
        bias: expand_batch(bias.binding(), &out_shape),
        out: output.clone().binding(),
    };
    KERNEL_LAUNCHES.fetch_add(1, Ordering::SeqCst);
    if let Err(error) = fmar_kernel::launch(&client, operands, dtype_to_storage_type(dtype)) {
        // The shape rule above admits only operands the kernel contract accepts, so this is a
        // bug in fmar, never in the caller's input.
        panic!("{OP_NAME}: internal error, the kernel refused its operands: {error}");
    }
    output
}

/// Gives `binding` the output's batch dims: a batch dim of size 1 that the output broadcasts to
/// a larger size gets that size and a stride of 0, which reads the one slice for every batch
/// without copying it. The last two dims are left alone.
fn expand_batch(mut binding: TensorBinding, out_shape: &Shape) -> TensorBinding {
    let rank = out_shape.num_dims();
    let mut shape = binding.shape.to_vec();
    let mut strides = binding.strides.to_vec();
    for dim in 0..rank - 2 {
        if shape[dim] != out_shape[dim] {
            debug_assert_eq!(shape[dim], 1, "only size-1 dims broadcast");
            shape[dim] = out_shape[dim];
            strides[dim] = 0;
        }
    }
    binding.shape = shape.into();
    binding.strides = strides.into();
    binding
}
