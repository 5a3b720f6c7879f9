//! fmar's Hopper kernels ([`HopperPath`]): warpgroup MMAs or f32 FMAs fed by the TMA engine or
//! `cp.async`, the epilogue applied from the registers. This module is their dispatch: each
//! path's [`unavailability`] on a problem, and its [`launch`]. Which path runs is decided
//! elsewhere, in one place ([`crate::decision`]).
//!
//! The modules, bottom to top; each imports only those above it in this table.
//!
//! | module | what it holds |
//! |---|---|
//! | `ptx` | inline-PTX plumbing: operands by value, shared and global addresses, a warpgroup's barrier |
//! | `device` | the one probe of the device: compute capability 9.0, the TMA engine, the CUDA C++ compiler |
//! | `wgmma` | the warpgroup MMA as inline PTX (operands in shared memory, or `A` in registers), descriptors, `stmatrix` |
//! | `mbarrier` | mbarriers as shared-memory words, through inline PTX |
//! | `tma` | the TMA engine's tiled loads and stores, through inline PTX |
//! | `cluster` | a cluster's barrier, remote arrivals and stores into another cube's shared memory |
//! | `layout` | which layouts the TMA engine can read, and the tensor maps |
//! | `schedule` | the whole-tile kernel's tile shapes and split-K schedule |
//! | `fold` | a shared weight's batches as one batch of rows |
//! | `transpose` | the K-major copy of an f32 operand that TF32 MMAs cannot read as it is |
//! | `split_k` | split-K's slices, partial sums and the second kernel that adds them |
//! | `weight_ring` | the TMA ring of weight boxes: its producer, its FMA consumers, the split of `k` |
//! | `transposed` | the transposed product's fragments, partial-sum stores and row counts |
//! | `tiles` | `hopper-tiles` and `hopper-split-k`: the whole-tile kernel |
//! | `few_rows`, `few_rows_tma`, `few_rows_cluster` | `hopper-few-rows*`: f32 FMAs at up to 32 / 8 / 8 rows |
//! | `swapped`, `swapped_tma`, `swapped_tiles` | `hopper-swapped*`: the transposed product through TF32 MMAs |
//! | `sources` (tests) | the CUDA C++ of every configuration, generated without a device |
//!
//! Every path runs on CUDA devices of compute capability 9.0 (`wgmma` exists only for the
//! `sm_90a` target) through cubecl's CUDA C++ compiler, and declines anywhere else.

mod cluster;
mod device;
mod few_rows;
mod few_rows_cluster;
mod few_rows_tma;
mod fold;
mod layout;
mod mbarrier;
mod ptx;
mod schedule;
#[cfg(test)]
mod sources;
mod split_k;
mod swapped;
mod swapped_tiles;
mod swapped_tma;
mod tiles;
mod tma;
mod transpose;
mod transposed;
mod weight_ring;
mod wgmma;

pub(crate) use device::unavailability as device_unavailability;

use crate::problem::Problem;
use crate::{HopperPath, LaunchError, Variant};
use cubecl::client::Client;

/// Why `path` cannot run `problem` on `client`'s device, if it cannot.
pub(crate) fn unavailability(
    path: HopperPath,
    client: &Client,
    problem: &Problem,
) -> Option<String> {
    if let Some(reason) = device::unavailability(client) {
        return Some(reason.into());
    }
    match path {
        HopperPath::Tiles => tiles::prepare(problem, false).err(),
        HopperPath::SplitK => tiles::prepare(problem, true).err(),
        HopperPath::FewRows => few_rows::unavailability(problem),
        HopperPath::FewRowsTma => few_rows_tma::unavailability(problem),
        HopperPath::FewRowsCluster => few_rows_cluster::unavailability(problem),
        HopperPath::Swapped => transposed::unavailability(problem),
        HopperPath::SwappedTma => swapped_tma::unavailability(problem),
        HopperPath::SwappedTiles => swapped_tiles::unavailability(problem),
    }
}

/// Runs `path` on `problem` (checked, non-empty, `k > 0`), or returns
/// [`LaunchError::Unavailable`] and launches nothing where it cannot.
pub(crate) fn launch(
    path: HopperPath,
    client: &Client,
    problem: &Problem,
) -> Result<(), LaunchError> {
    let unavailable = |reason: String| LaunchError::Unavailable {
        variant: Variant::Hopper(path),
        reason,
    };
    if let HopperPath::Tiles | HopperPath::SplitK = path {
        if let Some(reason) = device::unavailability(client) {
            return Err(unavailable(reason.into()));
        }
        let prepared = tiles::prepare(problem, path == HopperPath::SplitK).map_err(unavailable)?;
        tiles::launch(client, problem, prepared);
        return Ok(());
    }
    if let Some(reason) = unavailability(path, client, problem) {
        return Err(unavailable(reason));
    }
    match path {
        HopperPath::Tiles | HopperPath::SplitK => unreachable!("launched above"),
        HopperPath::FewRows => few_rows::launch(client, problem),
        HopperPath::FewRowsTma => few_rows_tma::launch(client, problem),
        HopperPath::FewRowsCluster => few_rows_cluster::launch(client, problem),
        HopperPath::Swapped => swapped::launch(client, problem),
        HopperPath::SwappedTma => swapped_tma::launch(client, problem),
        HopperPath::SwappedTiles => swapped_tiles::launch(client, problem),
    }
    Ok(())
}

/// What the decision table asks of the Hopper paths: the facts its conditions read, each
/// computed where the path that uses it lives.
pub(crate) mod facts {
    use super::*;
    use crate::contract::Dims;

    /// The rows (and batches) the few-row and transposed products see: every batch's rows as
    /// one batch where they share the weight and number at most `limit`, else the problem's.
    pub(crate) fn weight_rows(problem: &Problem, limit: usize) -> Dims {
        fold::dims_within(&problem.ops, &problem.dims, limit).unwrap_or(problem.dims)
    }

    /// Whether `rhs` follows the batch (each batch its own weight).
    pub(crate) fn rhs_batched(problem: &Problem) -> bool {
        let rhs = &problem.ops.rhs;
        let rank = rhs.shape.len();
        (0..rank - 2).any(|d| rhs.shape[d] > 1 && rhs.strides[d] != 0)
    }

    /// The most rows the split-K transposed products take.
    pub(crate) const TRANSPOSED_MAX_ROWS: usize = transposed::MAX_ROWS;
    /// The most rows `hopper-few-rows` takes.
    pub(crate) const FEW_ROWS_MAX_ROWS: usize = few_rows::MAX_ROWS;
    /// The most rows the TMA-fed few-row products take.
    pub(crate) const FMA_MAX_ROWS: usize = weight_ring::MAX_FMA_ROWS;

    /// Whether `hopper-few-rows-cluster`'s one launch fills one round of the device with a weight
    /// of at most 128 MiB, at `dims` (the rows it sees).
    pub(crate) fn cluster_fills_one_round(problem: &Problem, dims: &Dims) -> bool {
        few_rows_cluster::cluster_split(
            dims,
            problem.processors * few_rows_cluster::CUBES_PER_PROCESSOR,
        )
        .is_some()
    }

    /// Whether `hopper-swapped-tiles` has more than 128 rows and a tile for every
    /// multiprocessor.
    pub(crate) fn swapped_tiles_fill_the_device(problem: &Problem) -> bool {
        swapped_tiles::fills_the_device(&problem.dims, problem.processors)
    }

    /// Whether the whole-tile kernel's schedule splits `k`.
    pub(crate) fn tiles_split_k(problem: &Problem) -> bool {
        tiles::splits_by_schedule(problem)
    }
}
