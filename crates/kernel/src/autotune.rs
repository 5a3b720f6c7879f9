//! The choice by measurement (this crate's `autotune` feature): cubecl's autotune runs the
//! plausible candidates of a problem's key once per device and caches the fastest, in cubecl's
//! persistent tune cache, so that a shape is tuned once per machine, not per process.
//!
//! The candidates come in priority groups (cubecl's [`TuneGroup`]s): the Hopper paths first,
//! measured only where they run (each declines at once off Hopper); then cubek's routines and
//! the tiled kernel, measured only where no Hopper path ran. Within the Hopper group a path is
//! in the round only where its kind of problem is the key's (the few-row products at few rows,
//! the transposed products on an N-major f32 weight, split-K where the tiles are few); the
//! whole-tile kernel is the round's fallback where the few-row products lead. The naive
//! baseline never runs.
//!
//! A winner settled for a key may decline a later problem of the same key (a layout its
//! alignment does not allow, say): that problem then runs as the heuristic says
//! ([`crate::decision`]), rather than fail.

use crate::contract::Dims;
use crate::hopper::facts;
use crate::problem::Problem;
use crate::{HopperPath, LaunchError, Variant, decision, dispatch};
use cubecl::client::Client;
use cubecl::prelude::TensorBinding;
use cubecl::tune::{LocalTuner, Tunable, TunableSet, TuneGroup, local_tuner};
use cubecl::{AutotuneKey, CubeTuneId};
use serde::{Deserialize, Serialize};

/// What the tuner keys a choice by: the dtype, the sizes (rounded to powers of two), which
/// operands are row-major, whether the TMA engine can read them, and the facts the candidate
/// groups are chosen by.
#[derive(Hash, Eq, PartialEq, Debug, Clone, Serialize, Deserialize, AutotuneKey)]
pub(crate) struct FusedKey {
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
    /// Whether every operand starts and strides on 16 bytes, as the TMA engine needs.
    tma_aligned: bool,
    /// f32 with an N-major weight: the few-row and transposed products' problems.
    f32_weight: bool,
    /// At most 32 rows where the few-row products see them (a shared weight's batches counted
    /// together).
    few_rows: bool,
    /// At most 128 rows where the transposed split-K products see them.
    transposed_rows: bool,
    /// At most 512 tiles of 64 x 64: where split-K may win.
    few_tiles: bool,
}

/// One launch, as the tuner replays it: every candidate writes the whole output.
#[derive(Clone)]
struct Launch {
    client: Client,
    problem: Problem,
}

/// A candidate's level in its group: the round, its fallback, or never for this key.
const ROUND: i8 = 2;
const FALLBACK: i8 = 1;
const NEVER: i8 = -1;

fn key(launch: &Launch) -> FusedKey {
    let problem = &launch.problem;
    let Dims { m, n, k, batch } = problem.dims;
    let ops = &problem.ops;
    let row_major = |binding: &TensorBinding| {
        let rank = binding.shape.len();
        binding.strides[rank - 1] == 1 || binding.shape[rank - 1] <= 1
    };
    let aligned = |binding: &TensorBinding| {
        let size = problem.dtype.size();
        let (last, others) = binding.strides.split_last().expect("a matrix has two dims");
        (*last == 1 || binding.shape[binding.shape.len() - 1] <= 1)
            && others
                .iter()
                .all(|stride| (stride * size).is_multiple_of(16))
            && binding.handle.offset_start.unwrap_or(0).is_multiple_of(16)
    };
    let rows = |limit| facts::weight_rows(problem, limit).m;
    FusedKey::new(
        format!("{:?}", problem.dtype),
        m,
        n,
        k,
        batch,
        row_major(&ops.lhs),
        row_major(&ops.rhs),
        row_major(&ops.bias),
        aligned(&ops.lhs) && aligned(&ops.rhs),
        problem.is_f32() && problem.weight_n_major(),
        rows(facts::FEW_ROWS_MAX_ROWS) <= facts::FEW_ROWS_MAX_ROWS,
        rows(facts::TRANSPOSED_MAX_ROWS) <= facts::TRANSPOSED_MAX_ROWS,
        m.div_ceil(64) * n.div_ceil(64) * batch <= 512,
    )
}

/// A Hopper path's level in the Hopper group, for `key`.
fn hopper_level(path: HopperPath, key: &FusedKey) -> i8 {
    let f32_weight = key.f32_weight;
    let level = |plausible: bool| if plausible { ROUND } else { NEVER };
    match path {
        HopperPath::FewRows | HopperPath::FewRowsTma | HopperPath::FewRowsCluster => {
            level(f32_weight && key.few_rows)
        }
        HopperPath::Swapped | HopperPath::SwappedTma => level(f32_weight && key.transposed_rows),
        HopperPath::SwappedTiles => level(f32_weight && !key.few_rows),
        HopperPath::SplitK => level(key.few_tiles),
        HopperPath::Tiles if f32_weight && key.few_rows => FALLBACK,
        HopperPath::Tiles => ROUND,
    }
}

/// The candidates, in their groups.
fn tunables() -> TunableSet<FusedKey, Launch, (), Variant> {
    let hopper = TuneGroup::<FusedKey>::new("hopper", |_| 2);
    let portable = TuneGroup::<FusedKey>::new("cubek and portable", |_| 1);
    let mut set = TunableSet::new_cloning_inputs(key);
    for variant in Variant::ALL {
        let tunable = Tunable::identified(variant, move |launch: Launch| {
            dispatch::run(&launch.client, &launch.problem, variant)
                .map_err(|error| error.to_string())
        });
        let grouped = match variant {
            Variant::Naive => None,
            Variant::Hopper(path) => {
                Some(tunable.group(&hopper, move |key| hopper_level(path, key)))
            }
            Variant::Tiled | Variant::Accelerated(_) => Some(tunable.group(&portable, |_| ROUND)),
        };
        if let Some(tunable) = grouped {
            set = set.with(tunable);
        }
    }
    set
}

/// Runs the fastest candidate for `problem`'s key (measuring them first where none is settled).
pub(crate) fn launch(client: &Client, problem: &Problem) -> Result<(), LaunchError> {
    static TUNER: LocalTuner<FusedKey, CubeTuneId> = local_tuner!("fmar-fused-matmul");
    let device = cubecl::Device::from_id(client.service_id().device);
    let tune_id = CubeTuneId::new(client, &device);
    let tunables = TUNER.init(&tune_id, tunables);
    let launch = Launch {
        client: client.clone(),
        problem: problem.clone(),
    };
    if let Some(variant) =
        TUNER.fastest_identity(&tune_id, &tunables, &tunables.generate_key(&launch))
    {
        return match dispatch::run(client, problem, variant) {
            Err(error) if error.is_variant_specific() => {
                decision::launch_heuristic(client, problem)
            }
            other => other,
        };
    }
    TUNER.execute(&tune_id, client, tunables, launch);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The few-row products lead at few rows, the whole-tile kernel behind them; elsewhere the
    /// whole-tile kernel is in the round, split-K only where the tiles are few.
    #[test]
    fn each_kind_of_problem_measures_its_plausible_paths() {
        let key = |f32_weight, few_rows, transposed_rows, few_tiles| {
            FusedKey::new(
                "F32".into(),
                8,
                4096,
                4096,
                1,
                true,
                true,
                true,
                true,
                f32_weight,
                few_rows,
                transposed_rows,
                few_tiles,
            )
        };
        let round = |key: &FusedKey| -> Vec<HopperPath> {
            HopperPath::ALL
                .into_iter()
                .filter(|&path| hopper_level(path, key) == ROUND)
                .collect()
        };
        use HopperPath::*;
        let few = key(true, true, true, true);
        assert_eq!(
            round(&few),
            [
                SplitK,
                FewRows,
                FewRowsTma,
                FewRowsCluster,
                Swapped,
                SwappedTma
            ]
        );
        assert_eq!(hopper_level(Tiles, &few), FALLBACK);
        assert_eq!(
            round(&key(true, false, false, false)),
            [Tiles, SwappedTiles]
        );
        assert_eq!(round(&key(false, false, false, false)), [Tiles]);
        assert_eq!(round(&key(false, true, true, true)), [Tiles, SplitK]);
    }
}
