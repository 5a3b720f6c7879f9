//! Host data in and out of Burn (behind the `burn` feature, for the tests that run on Burn; the
//! rest of the harness needs no Burn, so a replacement kernel crate's tests can use it alone):
//! the dtype that stores each [`Precision`], [`HostTensor`]s as tensors, and tensors back as f64
//! values, through the `Tensor` API or any backend's primitives.

use crate::data::Precision;
use crate::reference::HostTensor;
use burn::backend::{Backend, BackendTypes};
use burn::tensor::{DType, Device, Tensor, TensorData, read_sync};

/// A backend's float tensor primitive.
pub type FloatTensor<B> = <B as BackendTypes>::FloatTensorPrimitive;

/// The Burn dtype that stores `precision`.
pub fn dtype(precision: Precision) -> DType {
    match precision {
        Precision::F32 => DType::F32,
        Precision::F16 => DType::F16,
        Precision::BF16 => DType::BF16,
    }
}

/// `host`'s values stored in `precision`. They are exact in f32 (the harness rounds its values
/// to the storage precision), so they pass through f32 unchanged.
pub fn data(host: &HostTensor, precision: Precision) -> TensorData {
    let values: Vec<f32> = host.data.iter().map(|&x| x as f32).collect();
    TensorData::new(values, host.shape.clone()).convert_dtype(dtype(precision))
}

/// Tensor data widened to f64.
pub fn host_values(data: TensorData) -> Vec<f64> {
    data.convert::<f64>()
        .try_into_vec::<f64>()
        .expect("f64 data")
}

/// `host` as a tensor on `device`, stored in `precision`.
pub fn tensor<const D: usize>(
    host: &HostTensor,
    device: &Device,
    precision: Precision,
) -> Tensor<D> {
    Tensor::from_data(data(host, precision), (device, dtype(precision)))
}

/// A tensor's values, widened to f64.
pub fn values<const D: usize>(tensor: Tensor<D>) -> Vec<f64> {
    host_values(tensor.into_data())
}

/// `host` as backend `B`'s float primitive on `device`, stored in `precision`.
pub fn primitive<B: Backend>(
    host: &HostTensor,
    device: &B::Device,
    precision: Precision,
) -> FloatTensor<B> {
    B::float_from_data(data(host, precision), device)
}

/// A backend primitive's values, read back and widened to f64.
pub fn primitive_values<B: Backend>(tensor: FloatTensor<B>) -> Vec<f64> {
    host_values(read_sync(B::float_into_data(tensor)).expect("readback"))
}
