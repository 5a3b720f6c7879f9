//! The harness's device and its buffers: the client the tests launch on, the tolerance of its
//! results, whether it runs a dtype, and operands uploaded, viewed and read back.

use crate::kernel::broadcast_strides;
use cubecl::client::Client;
use cubecl::ir::{ElemType, FloatKind};
use cubecl::prelude::*;
use cubecl::server::Handle;
use cubecl::wgpu::WgpuDevice;
use cubecl::zspace::{Shape, Strides, Tiling};
use fmar_tests::{HostTensor, Precision, Tolerance, layout};

/// The wgpu runtime's default device; with the crate's `cuda` feature and
/// `FMAR_TEST_DEVICE=cuda`, the first CUDA device instead.
pub fn client() -> Client {
    #[cfg(feature = "cuda")]
    if std::env::var("FMAR_TEST_DEVICE").as_deref() == Ok("cuda") {
        return cubecl::Device::Cuda(cubecl::cuda::CudaDevice::new(0)).client();
    }
    cubecl::Device::Wgpu(WgpuDevice::default()).client()
}

/// The device to this test alone where the adapter needs it (wgpu over OpenGL: see
/// `fmar_tests::serial`), else `None`.
pub fn one_at_a_time() -> Option<std::sync::MutexGuard<'static, ()>> {
    fmar_tests::serial::one_at_a_time(client().name())
}

/// The tolerance of a launch's `precision` results on this device: on CUDA, f32 problems may
/// run on tensor cores that round their inputs to TF32 (cubek's `allow_tf32`, its default, which
/// fmar's tensor-core variants follow as Burn's matmul does).
pub fn tolerance(precision: Precision) -> Tolerance {
    let cuda = client()
        .properties()
        .identity
        .fingerprint
        .starts_with("ptx");
    if precision == Precision::F32 && cuda {
        Tolerance::tf32()
    } else {
        Tolerance::for_precision(precision)
    }
}

/// The cubecl element type that stores `precision`.
pub fn elem_type(precision: Precision) -> ElemType {
    ElemType::Float(match precision {
        Precision::F32 => FloatKind::F32,
        Precision::F16 => FloatKind::F16,
        Precision::BF16 => FloatKind::BF16,
    })
}

/// Whether the device computes in `precision`.
pub fn supports(precision: Precision) -> bool {
    use cubecl::features::TypeUsage;
    let usage = client().properties().type_usage(elem_type(precision));
    usage.contains(TypeUsage::Arithmetic) && usage.contains(TypeUsage::Conversion)
}

/// A view of `handle` with the given shape and strides (in elements).
pub fn binding(handle: &Handle, shape: &[usize], strides: &[usize]) -> TensorBinding {
    TensorBinding {
        handle: handle.clone().binding(),
        shape: Shape::from(shape.to_vec()),
        strides: Strides::new(strides),
        tiling: Tiling::default(),
    }
}

/// `host`'s values uploaded row-major in `precision`: the buffer and its strides.
pub fn upload(client: &Client, host: &HostTensor, precision: Precision) -> (Handle, Vec<usize>) {
    let handle = client.create_from_slice(&precision.encode(&host.data));
    (handle, layout::contiguous_strides(&host.shape))
}

/// A buffer's values, read back.
pub fn download(client: &Client, handle: Handle, precision: Precision) -> Vec<f64> {
    precision.decode(&client.read_one(handle).expect("readback"))
}

/// A view of `handle`, whose tensor has `shape` and `strides`, as the launch contract wants it
/// with shape `target`: stride 0 where the tensor broadcasts ([`broadcast_strides`]).
pub fn broadcast_binding(
    handle: &Handle,
    shape: &[usize],
    strides: &[usize],
    target: &[usize],
) -> TensorBinding {
    binding(handle, target, &broadcast_strides(shape, strides, target))
}
