//! What a caller may pin and learn of the choice of kernel: [`force_variant`] (or the
//! [`KERNEL_VARIABLE`] environment variable) pins a variant for every later launch of the
//! process, [`forced_variant`] says which is pinned, and [`last_launched_variant`] which ran
//! last. For experiments, benchmarks and tests: fmar picks its kernel itself otherwise.
//!
//! A pinned variant that cannot run a problem on the device (no tensor cores, a layout it does
//! not read) falls back to the normal choice rather than fail the operation;
//! [`last_launched_variant`] tells which ran.

use crate::Variant;
use std::sync::RwLock;

/// The environment variable that pins a variant for the process, by its [`Variant::name`].
pub const KERNEL_VARIABLE: &str = "FMAR_KERNEL";

/// [`KERNEL_VARIABLE`] names no variant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{KERNEL_VARIABLE}={name:?} names no fmar kernel variant; the variants are: {}",
    names.join(", ")
)]
pub struct UnknownVariant {
    /// The name given.
    pub name: String,
    /// Every variant's name.
    pub names: Vec<String>,
}

/// `None`: not read yet; then [`force_variant`]'s choice, or what [`KERNEL_VARIABLE`] said.
static FORCED: RwLock<Option<Result<Option<Variant>, UnknownVariant>>> = RwLock::new(None);

/// The variant of the last successful launch in this process.
static LAST: RwLock<Option<Variant>> = RwLock::new(None);

/// Pins `variant` for every later launch in this process (`None` goes back to fmar's own
/// choice). Overrides [`KERNEL_VARIABLE`].
pub fn force_variant(variant: Option<Variant>) {
    *FORCED
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(Ok(variant));
}

/// The pinned variant, if any: [`force_variant`]'s, else [`KERNEL_VARIABLE`]'s, read once per
/// process; an error when the variable names no variant.
pub fn forced_variant() -> Result<Option<Variant>, UnknownVariant> {
    if let Some(forced) = FORCED
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .as_ref()
    {
        return forced.clone();
    }
    let from_env = match std::env::var(KERNEL_VARIABLE) {
        Ok(name) => Variant::from_name(&name)
            .map(Some)
            .ok_or_else(|| UnknownVariant {
                name,
                names: Variant::ALL.iter().map(|variant| variant.name()).collect(),
            }),
        Err(_) => Ok(None),
    };
    *FORCED
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(from_env.clone());
    from_env
}

/// The variant that ran the last successful launch in this process: after the first calls on a
/// shape, the one autotune settled on (while tuning, candidates run in turn).
pub fn last_launched_variant() -> Option<Variant> {
    *LAST.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Records that `variant` ran a launch.
pub(crate) fn record_launch(variant: Variant) {
    *LAST
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(variant);
}
