//! [`Variant`]: the implementations of the launch contract, and their names.

use crate::Routine;
use std::fmt;

/// One implementation of the launch contract. Every variant computes the same function (each
/// passes the same tests); they differ in speed, by shape, dtype and device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// The seed's instructional kernel: one unit per output, operands read from global memory.
    /// Kept as the baseline.
    Naive,
    /// Shared-memory tiles (64 x 64 x 16) with a 4 x 4 register block per unit, for every
    /// runtime (no tensor cores).
    Tiled,
    /// A cubek-matmul routine (tensor cores where the device has them) carrying fmar's
    /// epilogue.
    Accelerated(Routine),
}

impl Variant {
    /// Every variant: the baseline, the tiled kernel, then [`Routine::ALL`].
    pub const ALL: [Variant; Routine::ALL.len() + 2] = {
        let mut all = [Variant::Naive; Routine::ALL.len() + 2];
        all[1] = Variant::Tiled;
        let mut i = 0;
        while i < Routine::ALL.len() {
            all[i + 2] = Variant::Accelerated(Routine::ALL[i]);
            i += 1;
        }
        all
    };

    /// The variant's name, as `FMAR_KERNEL` and the benchmark spell it.
    pub fn name(self) -> String {
        match self {
            Variant::Naive => "naive".into(),
            Variant::Tiled => "tiled".into(),
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
