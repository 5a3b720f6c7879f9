//! Device work one test at a time, on the adapters that need it.
//!
//! wgpu's OpenGL backend shares one GL context between threads and gives up waiting for it after
//! a few seconds ("Could not lock adapter context"). On a software driver (llvmpipe) one test's
//! submission can hold the context that long, so tests that run on GL at once fail at random.
//! Each test that works on a device holds [`one_at_a_time`] for it; on every other adapter the
//! guard is `None` and tests run side by side as usual.

use std::sync::{Mutex, MutexGuard, PoisonError};

static DEVICE: Mutex<()> = Mutex::new(());

/// The process's device lock where the runtime cubecl names `runtime_name` (`Client::name`)
/// takes device work from one thread at a time, else `None`. A test that panicked while holding
/// it leaves it usable for the next.
pub fn one_at_a_time(runtime_name: &str) -> Option<MutexGuard<'static, ()>> {
    needs_one_at_a_time(runtime_name).then(|| DEVICE.lock().unwrap_or_else(PoisonError::into_inner))
}

/// Whether the runtime `runtime_name` takes device work from one thread at a time: wgpu over
/// OpenGL (`wgpu<wgsl-gl>`).
fn needs_one_at_a_time(runtime_name: &str) -> bool {
    runtime_name.starts_with("wgpu") && runtime_name.ends_with("-gl>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_gl_is_serialized() {
        assert!(needs_one_at_a_time("wgpu<wgsl-gl>"));
        for other in [
            "wgpu<spirv>",
            "wgpu<wgsl-vulkan>",
            "wgpu<wgsl-metal>",
            "cuda",
            "cpu",
        ] {
            assert!(!needs_one_at_a_time(other), "{other}");
        }
        assert!(one_at_a_time("wgpu<spirv>").is_none());
        let first = one_at_a_time("wgpu<wgsl-gl>");
        assert!(first.is_some());
        drop(first);
        assert!(
            one_at_a_time("wgpu<wgsl-gl>").is_some(),
            "released when dropped"
        );
    }
}
