//! The one probe of the device the Hopper kernels need: compute capability 9.0 (`wgmma` exists
//! only for the `sm_90a` target), the tensor memory accelerator, and cubecl-cuda's CUDA C++
//! (NVRTC) compiler, which the kernels' inline PTX is written for.

use cubecl::client::Client;
use cubecl::ir::features::Tma;

/// How cubecl-cuda names a device of compute capability 9.0: the PTX target it compiles for
/// (`ptx_sm{major}{minor}`).
pub(crate) const HOPPER_FINGERPRINT: &str = "ptx_sm90";

/// Why no Hopper kernel can run on `client`'s device, if none can.
pub(crate) fn unavailability(client: &Client) -> Option<&'static str> {
    let properties = client.properties();
    if properties.identity.fingerprint != HOPPER_FINGERPRINT {
        return Some("needs a CUDA device of compute capability 9.0 (Hopper)");
    }
    if !properties.features.tma.contains(Tma::Base) {
        return Some("the device has no TMA engine");
    }
    // Of cubecl-cuda's two compilers only the LLVM one advertises warpgroup MMA configurations
    // (cubecl-llvm's lowered features); the CUDA C++ one advertises none, and emits inline PTX
    // as it is written.
    if !properties.features.matmul.wgmma.is_empty() {
        return Some("needs cubecl-cuda's CUDA C++ (NVRTC) compiler, not its LLVM backend");
    }
    None
}
