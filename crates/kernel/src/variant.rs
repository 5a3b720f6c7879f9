//! [`Variant`]: the implementations of the launch contract, and their names.

use crate::Routine;
use std::fmt;

/// One implementation of the launch contract. Every variant computes the same function (each
/// passes the same tests); they differ in speed, by shape, dtype and device, and in where they
/// can run at all (a variant that cannot run a problem declines, launching nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// The simplest kernel: one unit per output, operands read from global memory.
    /// Kept as the baseline.
    Naive,
    /// Shared-memory tiles (64 x 64 x 16) with a 4 x 4 register block per unit, for every
    /// runtime (no tensor cores).
    Tiled,
    /// One of fmar's Hopper kernels (CUDA, compute capability 9.0, through cubecl's CUDA C++
    /// compiler): see [`HopperPath`].
    Hopper(HopperPath),
    /// A cubek-matmul routine (tensor cores where the device has them) carrying fmar's
    /// epilogue.
    Accelerated(Routine),
}

/// fmar's Hopper kernels: warpgroup MMAs (`wgmma`) or f32 FMAs fed by the tensor memory
/// accelerator (TMA) or `cp.async`, the bias, ReLU and mask applied from the registers. Each
/// runs on CUDA devices of compute capability 9.0 through cubecl's CUDA C++ (NVRTC) compiler,
/// and declines elsewhere and on the problems it cannot take (named below).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HopperPath {
    /// Whole output tiles (128 x 256 down to 64 x 64) walked by a persistent grid: a producer
    /// unit fills a ring of shared-memory stages through the TMA engine, one or two consumer
    /// warpgroups run warpgroup MMAs, and the epilogue stores through shared memory and the TMA
    /// engine. f16 and bf16 in any layout the TMA engine can read (16-byte strides); f32
    /// through TF32 MMAs where cubek allows TF32, an operand they cannot read (an N-major
    /// `rhs`, an M-major `lhs`) first copied K-major.
    Tiles,
    /// [`Tiles`](Self::Tiles)' kernel with each tile's `k` split across a thread-block cluster
    /// of two to five cubes, the first adding the others' sums from its shared memory: for
    /// problems with fewer tiles than multiprocessors. Where the TMA engine can read the
    /// operands and `k` spans two 128-byte lines.
    SplitK,
    /// f32 with an N-major `rhs`, at up to 32 rows (the batches of a weight they share counted
    /// together): split-K with f32 FMAs, the weight read by plain loads, then a second kernel
    /// that adds the slices. Exact f32, any strides.
    FewRows,
    /// [`FewRows`](Self::FewRows)' partial sums fed by a TMA ring, at up to 8 rows, where the
    /// TMA engine can read both operands.
    FewRowsTma,
    /// The same product in one launch, at up to 8 rows: a cluster of two cubes splits `k`,
    /// the first adds the other's sums from its shared memory and finishes. Where the TMA
    /// engine can read both operands.
    FewRowsCluster,
    /// f32 with an N-major `rhs` at up to 128 rows through TF32 MMAs, without a copy of the
    /// weight: the product computed transposed, the weight as the MMAs' register operand;
    /// split-K fed by `cp.async`, any strides, then a second kernel that adds the slices.
    Swapped,
    /// [`Swapped`](Self::Swapped)'s product fed by a TMA ring, where the TMA engine can read
    /// both operands.
    SwappedTma,
    /// The transposed product over whole 256-row tiles, finished in the kernel, where the TMA
    /// engine can read both operands: f32 with an N-major `rhs` at any number of rows.
    SwappedTiles,
}

impl HopperPath {
    /// Every Hopper path.
    pub const ALL: [HopperPath; 8] = [
        HopperPath::Tiles,
        HopperPath::SplitK,
        HopperPath::FewRows,
        HopperPath::FewRowsTma,
        HopperPath::FewRowsCluster,
        HopperPath::Swapped,
        HopperPath::SwappedTma,
        HopperPath::SwappedTiles,
    ];

    /// The path's name, as `FMAR_KERNEL` and the benchmark spell it.
    pub const fn name(self) -> &'static str {
        match self {
            HopperPath::Tiles => "hopper-tiles",
            HopperPath::SplitK => "hopper-split-k",
            HopperPath::FewRows => "hopper-few-rows",
            HopperPath::FewRowsTma => "hopper-few-rows-tma",
            HopperPath::FewRowsCluster => "hopper-few-rows-cluster",
            HopperPath::Swapped => "hopper-swapped",
            HopperPath::SwappedTma => "hopper-swapped-tma",
            HopperPath::SwappedTiles => "hopper-swapped-tiles",
        }
    }
}

impl Variant {
    /// Every variant: the baseline, the tiled kernel, the Hopper paths, then [`Routine::ALL`].
    pub const ALL: [Variant; 2 + HopperPath::ALL.len() + Routine::ALL.len()] = {
        let mut all = [Variant::Naive; 2 + HopperPath::ALL.len() + Routine::ALL.len()];
        all[1] = Variant::Tiled;
        let mut i = 0;
        while i < HopperPath::ALL.len() {
            all[2 + i] = Variant::Hopper(HopperPath::ALL[i]);
            i += 1;
        }
        let mut i = 0;
        while i < Routine::ALL.len() {
            all[2 + HopperPath::ALL.len() + i] = Variant::Accelerated(Routine::ALL[i]);
            i += 1;
        }
        all
    };

    /// The variant's name, as `FMAR_KERNEL` and the benchmark spell it.
    pub fn name(self) -> String {
        match self {
            Variant::Naive => "naive".into(),
            Variant::Tiled => "tiled".into(),
            Variant::Hopper(path) => path.name().into(),
            Variant::Accelerated(routine) => routine.name(),
        }
    }

    /// The variant `name` spells, if any.
    pub fn from_name(name: &str) -> Option<Variant> {
        Self::ALL.into_iter().find(|variant| variant.name() == name)
    }

    /// The Hopper path this variant is, if it is one.
    pub const fn hopper_path(self) -> Option<HopperPath> {
        match self {
            Variant::Hopper(path) => Some(path),
            _ => None,
        }
    }
}

impl From<HopperPath> for Variant {
    fn from(path: HopperPath) -> Self {
        Variant::Hopper(path)
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_has_one_name_that_names_it_back() {
        for variant in Variant::ALL {
            assert_eq!(Variant::from_name(&variant.name()), Some(variant));
        }
        let mut names: Vec<String> = Variant::ALL.iter().map(|v| v.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Variant::ALL.len(), "two variants share a name");
        assert_eq!(Variant::from_name("hopper"), None);
    }
}
