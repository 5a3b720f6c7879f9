//! [`Variant`]: the implementations of the launch contract, and their names.

use crate::Routine;
use std::fmt;

/// One implementation of the launch contract. Every variant computes the same function (each
/// passes the same tests); they differ in speed, by shape, dtype and device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// The simplest kernel: one unit per output, operands read from global memory.
    /// Kept as the baseline.
    Naive,
    /// Shared-memory tiles (64 x 64 x 16) with a 4 x 4 register block per unit, for every
    /// runtime (no tensor cores).
    Tiled,
    /// fmar's Hopper kernel: operand tiles brought into shared memory by the tensor memory
    /// accelerator (TMA) in a ring of stages, consumed by warpgroup MMAs (`wgmma`), with the
    /// bias and ReLU applied from the registers. CUDA on sm_90 only, for `f16` and `bf16`
    /// operands whose layout TMA can read; unavailable elsewhere.
    Hopper,
    /// A cubek-matmul routine (tensor cores where the device has them) carrying fmar's
    /// epilogue.
    Accelerated(Routine),
}

impl Variant {
    /// Every variant: the baseline, the tiled kernel, the Hopper kernel, then [`Routine::ALL`].
    pub const ALL: [Variant; Routine::ALL.len() + 3] = {
        let mut all = [Variant::Naive; Routine::ALL.len() + 3];
        all[1] = Variant::Tiled;
        all[2] = Variant::Hopper;
        let mut i = 0;
        while i < Routine::ALL.len() {
            all[i + 3] = Variant::Accelerated(Routine::ALL[i]);
            i += 1;
        }
        all
    };

    /// The variant's name, as `FMAR_KERNEL` and the benchmark spell it.
    pub fn name(self) -> String {
        match self {
            Variant::Naive => "naive".into(),
            Variant::Tiled => "tiled".into(),
            Variant::Hopper => "hopper".into(),
            Variant::Accelerated(routine) => routine.name(),
        }
    }

    /// The variant `name` spells, if any.
    pub fn from_name(name: &str) -> Option<Variant> {
        Self::ALL.into_iter().find(|variant| variant.name() == name)
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}
