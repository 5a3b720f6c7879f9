//! The catalogue of cubek-matmul routines fmar runs its epilogue on, modelled on the routine
//! families (as burn-cubecl-fusion's `FusedMatmulSelector` does) rather than one flat name each.

use cubecl::ir::{ElemType, FloatKind};
use std::fmt;

/// How a routine's tiles reach the tensor cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TileKind {
    /// Warp-level matrix multiply-accumulate (`cmma`, WMMA on CUDA).
    Cmma,
    /// Register-level `mma.sync`.
    Mma,
}

impl TileKind {
    /// Both kinds, `cmma` first.
    pub const ALL: [TileKind; 2] = [TileKind::Cmma, TileKind::Mma];

    fn suffix(self) -> &'static str {
        match self {
            TileKind::Cmma => "cmma",
            TileKind::Mma => "mma",
        }
    }
}

/// A cubek-matmul routine carrying fmar's epilogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Routine {
    /// One shared-memory stage per k step; `multi_rows` gives each plane several tile rows.
    Simple {
        /// Tensor-core instruction.
        tile: TileKind,
        /// Several tile rows per plane.
        multi_rows: bool,
    },
    /// Two stages, the next loaded while the current is computed; `specialized` splits the
    /// planes into loaders and computers.
    DoubleBuffering {
        /// Tensor-core instruction.
        tile: TileKind,
        /// Loader/computer plane specialization.
        specialized: bool,
    },
    /// Double buffering with ordered (row-by-row) loading of `lhs`.
    OrderedDoubleBuffering {
        /// Tensor-core instruction.
        tile: TileKind,
    },
    /// One stage, no tensor cores (unit matmul): runs everywhere, software rasterizers included.
    SimpleUnit,
    /// Double-buffered, no tensor cores.
    DoubleUnit,
    /// Vector-matrix inner products, one stage: for `m = 1` and other thin problems.
    SimpleVecMat,
    /// Vector-matrix inner products, double-buffered.
    DoubleVecMat,
    /// A general matmul without shared-memory stages (units read global memory directly).
    GemmNoStage,
    /// Matrix-vector with each unit along the output's columns, for `m = 1`-like problems.
    GemvUnitPerpendicular,
}

impl Routine {
    /// The catalogue: every routine, tensor-core ones first, then the ones without tensor
    /// cores, then the vector and gemv ones. It holds every candidate of Burn's fused matmul.
    pub const ALL: [Routine; 16] = {
        let mut all = [Routine::SimpleUnit; 16];
        let mut i = 0;
        while i < TileKind::ALL.len() {
            let tile = TileKind::ALL[i];
            all[5 * i] = Routine::Simple {
                tile,
                multi_rows: false,
            };
            all[5 * i + 1] = Routine::Simple {
                tile,
                multi_rows: true,
            };
            all[5 * i + 2] = Routine::DoubleBuffering {
                tile,
                specialized: false,
            };
            all[5 * i + 3] = Routine::DoubleBuffering {
                tile,
                specialized: true,
            };
            all[5 * i + 4] = Routine::OrderedDoubleBuffering { tile };
            i += 1;
        }
        all[10] = Routine::SimpleUnit;
        all[11] = Routine::DoubleUnit;
        all[12] = Routine::SimpleVecMat;
        all[13] = Routine::DoubleVecMat;
        all[14] = Routine::GemmNoStage;
        all[15] = Routine::GemvUnitPerpendicular;
        all
    };

    /// The routine's name, as `FMAR_KERNEL` and the benchmark spell it (`simple_multi_rows_mma`,
    /// `specialized_double_cmma`, `simple_unit`, ...).
    pub fn name(self) -> String {
        match self {
            Routine::Simple { tile, multi_rows } => {
                let rows = if multi_rows { "multi_rows_" } else { "" };
                format!("simple_{rows}{}", tile.suffix())
            }
            Routine::DoubleBuffering { tile, specialized } => {
                let role = if specialized { "specialized_" } else { "" };
                format!("{role}double_{}", tile.suffix())
            }
            Routine::OrderedDoubleBuffering { tile } => format!("ordered_double_{}", tile.suffix()),
            Routine::SimpleUnit => "simple_unit".into(),
            Routine::DoubleUnit => "double_unit".into(),
            Routine::SimpleVecMat => "simple_vec_mat".into(),
            Routine::DoubleVecMat => "double_vec_mat".into(),
            Routine::GemmNoStage => "gemm_no_stage".into(),
            Routine::GemvUnitPerpendicular => "gemv_unit_perpendicular".into(),
        }
    }

    /// Why fmar refuses this routine for `dtype`, if it does. These are the combinations that
    /// fail at run time on an H200 through CUDA/NVRTC instead of being refused by cubek's setup;
    /// a fault can poison the device, so they are refused before launch and never measured.
    ///
    /// - `simple_unit` and `double_unit` in f16 or bf16 fail their launch with "too many
    ///   resources requested".
    /// - `specialized_double_cmma` faults the device ("illegal instruction", CUDA error 715, or
    ///   "illegal address", 700) when the bias is loaded as the accumulator, which its load
    ///   planes read out of bounds. fmar adds the bias on write instead, but this routine is not
    ///   verified against the property harness in that mode, so it stays refused. Its
    ///   `mma.sync` counterpart, `specialized_double_mma`, passes that harness in every dtype
    ///   and is allowed.
    pub(crate) fn known_fault(self, dtype: ElemType) -> Option<&'static str> {
        let half = matches!(dtype, ElemType::Float(FloatKind::F16 | FloatKind::BF16));
        match self {
            Routine::DoubleBuffering {
                specialized: true,
                tile: TileKind::Cmma,
            } => Some(
                "the plane-specialized cmma routine faulted the device (CUDA error 715/700) and is \
                 not yet verified with the bias added on write",
            ),
            Routine::SimpleUnit | Routine::DoubleUnit if half => {
                Some("unit routines in half precision fail their launch (too many resources)")
            }
            _ => None,
        }
    }
}

impl fmt::Display for Routine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}
