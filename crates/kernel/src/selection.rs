//! Which variant [`launch`](crate::launch) runs: a forced one (`FMAR_KERNEL`, or
//! [`force_variant`]), else the fastest by measurement (cubecl's autotune, with this crate's
//! `autotune` feature), else a heuristic.

use crate::contract::Dims;
use crate::launch::run_checked;
use crate::{LaunchError, Operands, Routine, TileKind, Variant};
use cubecl::client::Client;
use cubecl::ir::{ElemType, FloatKind};
use cubecl::prelude::TensorBinding;
use std::sync::RwLock;

/// `None`: not read yet; `Some(None)`: no forced variant.
static FORCED: RwLock<Option<Option<Variant>>> = RwLock::new(None);

/// The variant of the last successful launch in this process.
static LAST: RwLock<Option<Variant>> = RwLock::new(None);

/// The variant that ran the last successful launch in this process: after the first calls on a
/// shape, the one autotune settled on (while tuning, candidates run in turn).
pub fn last_launched_variant() -> Option<Variant> {
    *LAST.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) fn record_launch(variant: Variant) {
    *LAST
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(variant);
}

/// Forces every later [`launch`](crate::launch) in this process to use `variant` (`None` goes
/// back to autotune or the heuristic). Overrides `FMAR_KERNEL`.
pub fn force_variant(variant: Option<Variant>) {
    *FORCED
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(variant);
}

/// The forced variant, if any: [`force_variant`]'s, else `FMAR_KERNEL`'s (a [`Variant::name`]).
///
/// # Panics
///
/// When `FMAR_KERNEL` names no variant, listing the names that exist.
pub fn forced_variant() -> Option<Variant> {
    if let Some(forced) = *FORCED
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
    {
        return forced;
    }
    let from_env = std::env::var("FMAR_KERNEL").ok().map(|name| {
        Variant::from_name(&name).unwrap_or_else(|| {
            let names: Vec<String> = Variant::ALL.iter().map(|v| v.name()).collect();
            panic!("FMAR_KERNEL={name} names no fmar kernel variant; one of {names:?}")
        })
    });
    *FORCED
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(from_env);
    from_env
}

/// Runs the forced, autotuned or heuristic variant on checked, non-empty operands.
pub(crate) fn launch_selected(
    client: &Client,
    operands: Operands,
    dtype: ElemType,
    dims: Dims,
) -> Result<(), LaunchError> {
    if let Some(variant) = forced_variant() {
        // A forced variant that cannot run this problem here (no tensor cores, say) falls back
        // to the normal choice rather than fail the user's operation; `last_launched_variant`
        // tells which ran.
        match run_checked(client, operands.clone(), dtype, dims, variant) {
            Err(error) if error.is_variant_specific() => {}
            other => return other,
        }
    }
    #[cfg(feature = "autotune")]
    {
        autotune::launch(client, operands, dtype, dims)
    }
    #[cfg(not(feature = "autotune"))]
    {
        launch_heuristic(client, operands, dtype, dims)
    }
}

/// Without autotune: fmar's Hopper kernel where the device, the dtype and the layout allow it
/// (at any size: measured on an H200 it beats every other variant from `1 x 64 x 64` up, its
/// tile shrinking with the problem); else a tensor-core routine for problems
/// big enough to feed it, when the device has tensor cores for the dtype (for f32: TF32 ones,
/// where cubek may round to TF32, as CUDA lists its f32 tensor cores); the tiled kernel
/// otherwise, and whenever the others decline.
#[cfg_attr(feature = "autotune", allow(dead_code))]
fn launch_heuristic(
    client: &Client,
    operands: Operands,
    dtype: ElemType,
    dims: Dims,
) -> Result<(), LaunchError> {
    let mut candidates = Vec::with_capacity(3);
    if crate::hopper::device_unavailability(client).is_none() {
        candidates.push(Variant::Hopper);
    }
    if dims.m * dims.n * dims.k >= 1 << 27 && has_tensor_cores(client, dtype) {
        candidates.push(Variant::Accelerated(Routine::Simple {
            tile: TileKind::Mma,
            multi_rows: true,
        }));
    }
    for variant in candidates {
        match run_checked(client, operands.clone(), dtype, dims, variant) {
            Err(error) if error.is_variant_specific() => {}
            other => return other,
        }
    }
    run_checked(client, operands, dtype, dims, Variant::Tiled)
}

fn has_tensor_cores(client: &Client, dtype: ElemType) -> bool {
    let features = &client.properties().features.matmul;
    let allow_tf32 = cubek_std::config::MatmulConfig::get().allow_tf32;
    features
        .mma
        .iter()
        .chain(features.cmma.iter())
        .any(|config| tensor_cores_take(config.a_type, dtype, allow_tf32))
}

/// Whether tensor-core instructions whose inputs are `a_type` can run a `dtype` problem: their
/// own type, or f32 rounded to TF32 where cubek may round (`allow_tf32`, its default), which is
/// how CUDA lists its f32 tensor cores and how cubek's routines run f32.
fn tensor_cores_take(a_type: ElemType, dtype: ElemType, allow_tf32: bool) -> bool {
    a_type == dtype
        || (allow_tf32
            && dtype == ElemType::Float(FloatKind::F32)
            && a_type == ElemType::Float(FloatKind::TF32))
}

#[cfg_attr(not(feature = "autotune"), allow(dead_code))]
/// Whether `binding`'s last dim is contiguous (stride 1): row-major for `lhs`/`rhs`, or a bias
/// that can be read in vectors along the output's rows.
fn last_dim_contiguous(binding: &TensorBinding) -> bool {
    let rank = binding.shape.len();
    binding.strides[rank - 1] == 1 || binding.shape[rank - 1] <= 1
}

#[cfg(feature = "autotune")]
mod autotune {
    use super::*;
    use cubecl::tune::{LocalTuner, Tunable, TunableSet, local_tuner};
    use cubecl::{AutotuneKey, CubeTuneId};
    use serde::{Deserialize, Serialize};

    /// What the tuner keys a choice by: the dtype, the sizes (rounded to powers of two) and which
    /// operands are row-major.
    #[derive(Hash, Eq, PartialEq, Debug, Clone, Serialize, Deserialize, AutotuneKey)]
    pub(super) struct FusedKey {
        dtype: String,
        #[autotune(anchor)]
        m: usize,
        #[autotune(anchor)]
        n: usize,
        #[autotune(anchor)]
        k: usize,
        #[autotune(anchor)]
        batch: usize,
        lhs_row_major: bool,
        rhs_row_major: bool,
        bias_row_contiguous: bool,
    }

    /// One launch, as the tuner replays it: every candidate writes the whole output.
    #[derive(Clone)]
    struct Launch {
        client: Client,
        operands: Operands,
        dtype: ElemType,
        dims: Dims,
    }

    fn key(launch: &Launch) -> FusedKey {
        let dims = launch.dims;
        FusedKey::new(
            format!("{:?}", launch.dtype),
            dims.m,
            dims.n,
            dims.k,
            dims.batch,
            last_dim_contiguous(&launch.operands.lhs),
            last_dim_contiguous(&launch.operands.rhs),
            last_dim_contiguous(&launch.operands.bias),
        )
    }

    /// The candidates: every variant but the naive baseline, which never wins.
    fn candidates() -> impl Iterator<Item = Variant> {
        Variant::ALL.into_iter().filter(|v| *v != Variant::Naive)
    }

    pub(super) fn launch(
        client: &Client,
        operands: Operands,
        dtype: ElemType,
        dims: Dims,
    ) -> Result<(), LaunchError> {
        static TUNER: LocalTuner<FusedKey, CubeTuneId> = local_tuner!("fmar-fused-matmul");
        let device = cubecl::Device::from_id(client.service_id().device);
        let tune_id = CubeTuneId::new(client, &device);
        let tunables = TUNER.init(&tune_id, || {
            let mut set = TunableSet::<FusedKey, Launch, ()>::new_cloning_inputs(key);
            for variant in candidates() {
                // A candidate that cannot run this problem here returns an error, and the tuner
                // skips it; the tiled kernel always runs, so the set never comes up empty.
                set = set.with(Tunable::new(&variant.name(), move |launch: Launch| {
                    let Launch {
                        client,
                        operands,
                        dtype,
                        dims,
                    } = launch;
                    run_checked(&client, operands, dtype, dims, variant)
                        .map_err(|error| error.to_string())
                }));
            }
            set
        });
        TUNER.execute(
            &tune_id,
            client,
            tunables,
            Launch {
                client: client.clone(),
                operands,
                dtype,
                dims,
            },
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::tensor_cores_take;
    use cubecl::ir::{ElemType, FloatKind};

    const F32: ElemType = ElemType::Float(FloatKind::F32);
    const TF32: ElemType = ElemType::Float(FloatKind::TF32);
    const F16: ElemType = ElemType::Float(FloatKind::F16);

    /// CUDA lists its f32 tensor cores as TF32: an f32 problem takes them while cubek may round
    /// to TF32, and only then.
    #[test]
    fn f32_takes_tf32_tensor_cores_only_where_rounding_is_allowed() {
        assert!(tensor_cores_take(TF32, F32, true));
        assert!(!tensor_cores_take(TF32, F32, false));
        assert!(tensor_cores_take(F32, F32, false));
        assert!(tensor_cores_take(F16, F16, false));
        assert!(!tensor_cores_take(TF32, F16, true));
        assert!(!tensor_cores_take(F16, F32, true));
    }
}
