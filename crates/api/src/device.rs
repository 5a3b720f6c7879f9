//! [`default_device`]: the best device this machine can run fmar on, found by trying them.

use burn::tensor::{Device, Tensor};
use std::fmt;

/// The runtime a [`DeviceChoice`] runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// NVIDIA GPUs through CUDA (the `cuda` feature).
    Cuda,
    /// Any GPU (or Mesa's software rasterizer) through wgpu.
    Wgpu,
    /// The CPU through Burn's pure-Rust Flex backend: always there.
    Cpu,
    /// Whatever `BURN_DEVICE` named.
    FromEnvironment,
}

/// The device [`default_device`] picked, and what it is.
#[derive(Debug, Clone)]
pub struct DeviceChoice {
    /// The device to create tensors on.
    pub device: Device,
    /// Its runtime.
    pub runtime: Runtime,
    /// The adapter's own name, where the runtime reports one (`NVIDIA H200`, `llvmpipe`, ...).
    pub name: String,
}

impl fmt::Display for DeviceChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {} ({:?})", self.runtime, self.name, self.device)
    }
}

/// The best device available: CUDA, then wgpu (a GPU, or Mesa's software rasterizer), then the
/// CPU (Burn's Flex backend, which needs no driver at all). `BURN_DEVICE`, when set, wins.
///
/// Each candidate is opened with a one-element tensor, so a runtime that is compiled in but has
/// no device or driver on this machine is skipped rather than failing later.
///
/// ```
/// let choice = fmar::default_device();
/// println!("running on {choice}");
/// let device = choice.device;
/// ```
pub fn default_device() -> DeviceChoice {
    if std::env::var("BURN_DEVICE").is_ok() {
        let device = Device::default();
        let name = name_of(&device);
        return DeviceChoice {
            device,
            runtime: Runtime::FromEnvironment,
            name,
        };
    }
    let mut candidates: Vec<(Runtime, fn() -> Device)> = Vec::new();
    #[cfg(feature = "cuda")]
    candidates.push((Runtime::Cuda, || Device::cuda(0)));
    #[cfg(any(feature = "wgpu", feature = "vulkan"))]
    candidates.push((Runtime::Wgpu, || {
        Device::wgpu(burn::tensor::DeviceKind::DefaultDevice)
    }));
    for (runtime, make) in candidates {
        if let Some(device) = open(make) {
            let name = name_of(&device);
            return DeviceChoice {
                device,
                runtime,
                name,
            };
        }
    }
    DeviceChoice {
        device: Device::flex(),
        runtime: Runtime::Cpu,
        name: "CPU (Burn Flex)".into(),
    }
}

/// `make()`'s device, if a tensor can be created and read back on it.
fn open(make: fn() -> Device) -> Option<Device> {
    // A runtime without a device or driver panics on first use; keep that quiet and move on.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let opened = std::panic::catch_unwind(|| {
        let device = make();
        Tensor::<1>::zeros([1], &device).into_data();
        device
    });
    std::panic::set_hook(hook);
    opened.ok()
}

fn name_of(device: &Device) -> String {
    #[cfg(any(feature = "wgpu", feature = "vulkan", feature = "cuda"))]
    if let Some(identity) = device.identity() {
        return identity.name;
    }
    format!("{device:?}")
}
