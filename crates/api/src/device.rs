//! [`default_device`]: the fastest device this machine can run fmar on, found by trying them.
//!
//! The choice itself ([`choose`]) is a pure function of what each runtime's probe found, so it
//! is tested without the hardware: a wgpu adapter that is a software rasterizer (llvmpipe,
//! lavapipe, SwiftShader, WARP: wgpu reports its device type as CPU) loses to Burn's Flex
//! backend, which runs the same work on the same CPU many times faster.

use burn::tensor::{Device, Tensor};
use fmar_fusion_meta::Error;
use std::fmt;

/// The environment variable that names a device instead of letting [`default_device`] choose.
pub const DEVICE_VARIABLE: &str = "BURN_DEVICE";

/// The runtime a [`DeviceChoice`] runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// NVIDIA GPUs through CUDA (the `cuda` feature).
    Cuda,
    /// Any GPU (or, when asked for by name, a software rasterizer) through wgpu.
    Wgpu,
    /// The CPU through Burn's pure-Rust Flex backend: always there.
    Cpu,
}

/// What a device is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adapter {
    /// A GPU.
    Gpu,
    /// A GPU API emulated on the CPU by a software rasterizer (wgpu's device type `Cpu`).
    SoftwareRasterizer,
    /// The host's processors, used directly (Flex).
    Host,
}

/// The device [`default_device`] picked, and what it is.
#[derive(Debug, Clone)]
pub struct DeviceChoice {
    /// The device to create tensors on.
    pub device: Device,
    /// Its runtime.
    pub runtime: Runtime,
    /// What it runs on.
    pub adapter: Adapter,
    /// Whether `BURN_DEVICE` named it (else fmar chose it).
    pub requested: bool,
    /// The adapter's own name, where the runtime reports one (`NVIDIA H200`, `llvmpipe`, ...).
    pub name: String,
}

impl fmt::Display for DeviceChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = if self.requested {
            "named by BURN_DEVICE"
        } else {
            "chosen by fmar"
        };
        write!(
            f,
            "{:?} ({:?}): {} [{how}] ({:?})",
            self.runtime, self.adapter, self.name, self.device
        )
    }
}

/// What probing one runtime on this machine found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Not compiled in, or no device or driver answered.
    Absent,
    /// A device answered; this is what it is.
    Found(Adapter),
}

/// The runtime [`default_device`] picks from what the probes found: the first runtime, in the
/// order CUDA, wgpu, whose device is a GPU; else the CPU through Flex. A wgpu software
/// rasterizer is never picked by default: Flex does the same work on the same cores far faster
/// (it is reachable with `BURN_DEVICE=wgpu`).
pub fn choose(cuda: Probe, wgpu: Probe) -> Runtime {
    if cuda == Probe::Found(Adapter::Gpu) {
        Runtime::Cuda
    } else if wgpu == Probe::Found(Adapter::Gpu) {
        Runtime::Wgpu
    } else {
        Runtime::Cpu
    }
}

/// The device names `BURN_DEVICE` accepts in this build.
pub fn device_names() -> Vec<&'static str> {
    let mut names = Vec::new();
    if cfg!(feature = "cuda") {
        names.push("cuda");
    }
    if cfg!(any(feature = "wgpu", feature = "vulkan")) {
        names.push("wgpu");
    }
    if cfg!(feature = "vulkan") {
        names.push("vulkan");
    }
    names.extend(["flex", "cpu"]);
    names
}

/// The fastest device available: a CUDA GPU, then a wgpu GPU, then the CPU through Burn's Flex
/// backend (which needs no driver at all). A wgpu software rasterizer counts as no GPU.
///
/// `BURN_DEVICE`, when set, wins: `cuda`, `wgpu` (also a software rasterizer), `vulkan` (with
/// that feature), `flex` or `cpu` (both the Flex backend).
///
/// Each candidate is opened with a one-element tensor, so a runtime that is compiled in but has
/// no device or driver on this machine is skipped rather than failing later.
///
/// # Panics
///
/// When `BURN_DEVICE` names no device of this build, with [`try_default_device`]'s message.
///
/// ```
/// let choice = fmar::default_device();
/// println!("running on {choice}");
/// let device = choice.device;
/// ```
pub fn default_device() -> DeviceChoice {
    try_default_device().unwrap_or_else(|error| panic!("{error}"))
}

/// [`default_device`], or [`Error::UnknownDevice`] when `BURN_DEVICE` names no device of this
/// build.
pub fn try_default_device() -> Result<DeviceChoice, Error> {
    if let Ok(value) = std::env::var(DEVICE_VARIABLE) {
        return requested_device(&value);
    }
    let cuda = probe(Runtime::Cuda);
    let wgpu = probe(Runtime::Wgpu);
    let runtime = choose(cuda.0, wgpu.0);
    Ok(match runtime {
        Runtime::Cuda => found(cuda, runtime, false),
        Runtime::Wgpu => found(wgpu, runtime, false),
        Runtime::Cpu => flex(false),
    })
}

/// The device `value` names, opened.
fn requested_device(value: &str) -> Result<DeviceChoice, Error> {
    let unknown = || Error::UnknownDevice {
        variable: DEVICE_VARIABLE,
        value: value.to_string(),
        valid: device_names(),
    };
    let name = value.trim().to_lowercase();
    if !device_names().contains(&name.as_str()) {
        return Err(unknown());
    }
    let runtime = match name.as_str() {
        "cuda" => Runtime::Cuda,
        "wgpu" | "vulkan" => Runtime::Wgpu,
        _ => return Ok(flex(true)),
    };
    match probe(runtime) {
        probed @ (Probe::Found(_), Some(_)) => Ok(found(probed, runtime, true)),
        _ => Err(Error::DeviceUnavailable {
            variable: DEVICE_VARIABLE,
            value: value.to_string(),
        }),
    }
}

fn found(
    (probe, device): (Probe, Option<Device>),
    runtime: Runtime,
    requested: bool,
) -> DeviceChoice {
    let (Probe::Found(adapter), Some(device)) = (probe, device) else {
        unreachable!("only a runtime whose probe found a device is chosen")
    };
    DeviceChoice {
        name: name_of(&device),
        device,
        runtime,
        adapter,
        requested,
    }
}

fn flex(requested: bool) -> DeviceChoice {
    DeviceChoice {
        device: Device::flex(),
        runtime: Runtime::Cpu,
        adapter: Adapter::Host,
        requested,
        name: "CPU (Burn Flex)".into(),
    }
}

/// Opens `runtime`'s default device, if it is compiled in and a device answers, and tells what
/// it is.
fn probe(runtime: Runtime) -> (Probe, Option<Device>) {
    let make: fn() -> Device = match runtime {
        #[cfg(feature = "cuda")]
        Runtime::Cuda => || Device::cuda(0),
        #[cfg(any(feature = "wgpu", feature = "vulkan"))]
        Runtime::Wgpu => || Device::wgpu(burn::tensor::DeviceKind::DefaultDevice),
        _ => return (Probe::Absent, None),
    };
    match open(make) {
        Some(device) => (Probe::Found(adapter_of(&device)), Some(device)),
        None => (Probe::Absent, None),
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

/// A CubeCL device reports no physical card for a CPU or a software rasterizer.
fn adapter_of(device: &Device) -> Adapter {
    match device.identity() {
        Some(identity) if identity.physical.is_none() => Adapter::SoftwareRasterizer,
        _ => Adapter::Gpu,
    }
}

fn name_of(device: &Device) -> String {
    if let Some(identity) = device.identity() {
        return identity.name;
    }
    format!("{device:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const GPU: Probe = Probe::Found(Adapter::Gpu);
    const SOFTWARE: Probe = Probe::Found(Adapter::SoftwareRasterizer);

    #[test]
    fn a_software_rasterizer_loses_to_flex() {
        assert_eq!(choose(Probe::Absent, SOFTWARE), Runtime::Cpu);
        assert_eq!(choose(Probe::Absent, Probe::Absent), Runtime::Cpu);
    }

    #[test]
    fn a_gpu_wins_cuda_first() {
        assert_eq!(choose(GPU, GPU), Runtime::Cuda);
        assert_eq!(choose(GPU, SOFTWARE), Runtime::Cuda);
        assert_eq!(choose(Probe::Absent, GPU), Runtime::Wgpu);
        assert_eq!(choose(SOFTWARE, GPU), Runtime::Wgpu);
    }

    #[test]
    fn an_unknown_name_lists_the_valid_ones() {
        let error = requested_device("tpu").unwrap_err();
        let message = error.to_string();
        assert!(matches!(error, Error::UnknownDevice { .. }), "{message}");
        for name in device_names() {
            assert!(message.contains(name), "{message} should list {name}");
        }
        assert!(message.contains("BURN_DEVICE=tpu"), "{message}");
    }

    #[test]
    fn cpu_and_flex_name_the_flex_backend() {
        for name in ["cpu", "flex", " CPU "] {
            let choice = requested_device(name).unwrap();
            assert_eq!(choice.runtime, Runtime::Cpu, "{name}");
            assert_eq!(choice.adapter, Adapter::Host);
            assert!(choice.requested);
        }
    }
}
