//! Which variant a launch runs: a pinned one where it can run the problem
//! ([`crate::force_variant`]), else, with this crate's `autotune` feature, the fastest by
//! measurement ([`crate::autotune`]), else the heuristic ([`crate::decision`]).

use crate::diagnostics::forced_variant;
use crate::epilogue::Epilogue;
use crate::problem::Problem;
use crate::{LaunchError, decision, dispatch, mask};
use cubecl::client::Client;

/// Runs `problem` on the variant the crate picks for it.
///
/// The forward that keeps its mask runs on a Hopper kernel that writes it from its epilogue
/// where one can (by the heuristic, whatever autotune would pick for the forward alone); else
/// the forward runs as any other, and a light second kernel packs the mask from its output. A
/// plain product runs on the Hopper kernels only.
pub(crate) fn launch(client: &Client, problem: &Problem) -> Result<(), LaunchError> {
    if let Some(variant) = forced_variant()? {
        match dispatch::run(client, problem, variant) {
            Err(error) if error.is_variant_specific() => {}
            other => return other,
        }
    }
    match problem.epilogue {
        Epilogue::BiasRelu => launch_fused(client, problem),
        Epilogue::Plain => decision::launch_heuristic(client, problem),
        Epilogue::BiasReluMask => match decision::launch_heuristic(client, problem) {
            Err(error) if error.is_variant_specific() => {
                launch_fused(client, &problem.without_mask())?;
                let mask = problem
                    .mask
                    .clone()
                    .expect("the mask epilogue has its mask");
                mask::launch_pack(client, problem.ops.out.clone(), mask, problem.dtype)
            }
            other => other,
        },
    }
}

/// The fused forward, autotuned or by the heuristic.
fn launch_fused(client: &Client, problem: &Problem) -> Result<(), LaunchError> {
    #[cfg(feature = "autotune")]
    {
        crate::autotune::launch(client, problem)
    }
    #[cfg(not(feature = "autotune"))]
    {
        decision::launch_heuristic(client, problem)
    }
}
