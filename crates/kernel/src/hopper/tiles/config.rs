//! What the whole-tile kernel is compiled for ([`KernelConfig`]) and the shapes that follow
//! from it: the MMAs of a stage, the units of a cube, the elements of a stage and of an output
//! chunk, and under split-K the slots where a cluster's first cube receives the others' sums.

use crate::epilogue::Epilogue;
use crate::hopper::cluster::slot_bytes;
use crate::hopper::layout::{LINE_BYTES, line_elems};
use crate::hopper::schedule::TileShape;
use crate::hopper::wgmma::{MmaShape, Operand};

/// What the kernel is compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct KernelConfig {
    /// The output tile and the ring's depth.
    pub tile: TileShape,
    /// Whether `lhs` is M-major (a transposed view), else K-major.
    pub lhs_m_major: bool,
    /// Whether `rhs` is K-major (a transposed `[n, k]` weight), else N-major.
    pub rhs_k_major: bool,
    /// Whether `lhs` follows the batch (else it is broadcast over it).
    pub lhs_batched: bool,
    /// Whether `rhs` follows the batch (else it is broadcast over it: a shared weight).
    pub rhs_batched: bool,
    /// The operands' and the output's type, as the MMAs read it.
    pub operand: Operand,
    /// Whether the bias is the same for every row (stride 0 along `m`): then it is staged in
    /// shared memory once per tile.
    pub bias_row_broadcast: bool,
    /// Slices of `k` per tile, each one cube's work item (split-K); the slices of a tile run in
    /// one cluster of `splits` cubes, launched by [`fused_matmul_add_relu_hopper_split_k`]. 1:
    /// each cube sums whole tiles.
    pub splits: usize,
    /// What is done to the sums before they are stored.
    pub epilogue: Epilogue,
}

impl KernelConfig {
    /// The MMAs of one stage: four `m64nNkK` along one swizzle line (`K` = 16 half-precision
    /// or 8 TF32 elements), `N` the tile's columns. A step moves 32 bytes along a K-major
    /// 128-byte swizzle row, or two 8-row groups (2 x 1024 bytes) of an MN-major one (half
    /// precision only).
    pub fn mma(self) -> MmaShape {
        let step = |k_major: bool| if k_major { 32 >> 4 } else { 2048 >> 4 };
        MmaShape {
            n: self.tile.n,
            ksteps: self.tile_k() / self.operand.mma_k(),
            operand: self.operand,
            a_mn_major: self.lhs_m_major,
            b_mn_major: !self.rhs_k_major,
            a_step: step(!self.lhs_m_major),
            b_step: step(self.rhs_k_major),
        }
    }

    /// Units per cube: the consumer warpgroups, then one producer plane.
    pub fn cube_units(self) -> u32 {
        (self.consumer_units() + 32) as u32
    }

    /// Consumer units; the first unit after them issues every TMA copy.
    pub fn consumer_units(self) -> usize {
        self.tile.consumers() * 128
    }

    /// Depth of one stage along `k`, in elements: one swizzle line. Also the width of one
    /// TMA box (a panel) of an MN-major operand, and the columns of one output chunk.
    pub fn tile_k(self) -> usize {
        line_elems(self.operand.bytes())
    }

    /// Elements of one stage of `lhs`: one line per row it holds.
    pub fn a_stage(self) -> usize {
        self.tile.lhs_rows * self.tile_k()
    }

    /// Elements after the `lhs` ring's last stage, where its MMAs read the rows past the
    /// stage's own ([`TileShape::lhs_rows`]).
    pub fn a_ring_tail(self) -> usize {
        self.tile.lhs_tail_bytes() / self.operand.bytes()
    }

    /// Elements of one stage of `rhs`.
    pub fn b_stage(self) -> usize {
        self.tile.n * self.tile_k()
    }

    /// Elements of one 64-row output chunk, one swizzle line per row.
    pub fn out_chunk(self) -> usize {
        64 * self.tile_k()
    }

    /// Under split-K, where the first cube of a cluster receives the other cubes' sums: slot
    /// `q` (sums of cube `1 + q / consumers`, warpgroup `q % consumers`) is the `q`-th
    /// [`slot_bytes`] of the `lhs` ring, then of the `rhs` ring. This many fit in the `lhs`
    /// ring.
    pub fn slots_in_lhs_ring(self) -> usize {
        self.tile.stages * self.a_stage() * self.operand.bytes() / slot_bytes(self.tile.n / 2)
    }

    /// Slots the two rings hold: at least `(splits - 1) * consumers` for a split-K
    /// configuration.
    pub fn slots(self) -> usize {
        let per_slot = slot_bytes(self.tile.n / 2);
        self.slots_in_lhs_ring()
            + self.tile.stages * self.b_stage() * self.operand.bytes() / per_slot
    }

    /// Shared-memory bytes of one 64-row panel of an MN-major stage (`tile_k` lines along
    /// `k`), or of one warpgroup's 64 rows of a K-major one: the distance between them.
    pub fn panel_bytes(self) -> usize {
        64 * LINE_BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hopper::schedule::Schedule;

    #[test]
    fn a_split_k_clusters_first_cube_has_a_slot_for_every_other_cubes_sums() {
        for (operand, tile) in [Operand::Bf16, Operand::F16, Operand::Tf32]
            .into_iter()
            .flat_map(|operand| Schedule::split_tiles().map(move |tile| (operand, tile)))
        {
            let config = KernelConfig {
                tile,
                lhs_m_major: false,
                rhs_k_major: true,
                lhs_batched: false,
                rhs_batched: false,
                operand,
                bias_row_broadcast: true,
                splits: Schedule::MAX_SPLITS,
                epilogue: Epilogue::BiasRelu,
            };
            let needed = (config.splits - 1) * config.tile.consumers();
            assert!(config.slots() >= needed, "{config:?}: {}", config.slots());
            // The slots in the `lhs` ring end within it.
            let lhs_ring = config.tile.stages * config.a_stage() * operand.bytes();
            assert!(config.slots_in_lhs_ring() * slot_bytes(config.tile.n / 2) <= lhs_ring);
        }
    }
}
