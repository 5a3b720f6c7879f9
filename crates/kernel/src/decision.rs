//! Which variant runs a problem without autotune: one ordered table, conditions to variant,
//! each row with the measurement behind it ([`TABLE`]). The first row whose condition holds and
//! whose variant can run the problem on the device runs it; a variant that declines hands the
//! problem to the next row. Nothing else in the crate decides which kernel runs: autotune
//! measures candidates instead ([`crate::autotune`]), and a pinned variant
//! ([`crate::force_variant`]) runs where it can.
//!
//! The rows' conditions say where a variant is the fastest, not where it can run: each
//! variant's own check says that ([`crate::hopper::unavailability`], cubek's setup), so that a
//! pinned variant runs every problem it can, whatever the heuristic would pick.

use crate::contract::Dims;
use crate::dispatch;
use crate::epilogue::Epilogue;
use crate::hopper::{self, facts};
use crate::problem::Problem;
use crate::{HopperPath, LaunchError, Routine, TileKind, Variant};
use cubecl::client::Client;
use cubecl::ir::{ElemType, FloatKind};

/// One row of the table: where `when` holds, `variant` is the fastest measured, for the reason
/// `why`.
pub(crate) struct Row {
    /// The variant the row picks.
    pub variant: Variant,
    /// Where it is the fastest (it may still decline the problem).
    pub when: fn(&Client, &Problem) -> bool,
    /// The measurement behind the row.
    pub why: &'static str,
}

/// The fewest rows the heuristic gives the transposed TF32 products of an N-major f32 weight:
/// below, f32 FMAs are faster.
const TRANSPOSED_FEWEST_ROWS: usize = 9;

/// The smallest product (`m n k`) given to cubek's tensor-core routine: below, the tiled kernel
/// is as fast.
const TENSOR_CORE_MIN_MNK: usize = 1 << 27;

/// The heuristic, in order: the first row that holds and whose variant runs, runs.
pub(crate) const TABLE: [Row; 10] = [
    Row {
        variant: Variant::Hopper(HopperPath::FewRowsCluster),
        when: |_, p| {
            f32_weight(p) && {
                let rows = few_weight_rows(p);
                rows.m <= facts::FMA_MAX_ROWS
                    && (rows.batch == 1 || facts::rhs_batched(p))
                    && facts::cluster_fills_one_round(p, &rows)
            }
        },
        why: "f32, an N-major weight of at most 128 MiB, up to 8 rows, its column blocks filling \
              the device: one launch, no partial sums, 0.0221 against 0.0248 ms for two launches \
              at 1 x 1 x 4096 x 4096 (H200)",
    },
    Row {
        variant: Variant::Hopper(HopperPath::FewRowsTma),
        when: |_, p| {
            f32_weight(p) && {
                let rows = few_weight_rows(p);
                rows.m <= facts::FMA_MAX_ROWS && (rows.batch == 1 || facts::rhs_batched(p))
            }
        },
        why: "f32, an N-major weight, up to 8 rows: the TMA ring keeps whole stages of the weight \
              in flight, 0.0338 against 0.0392 ms for plain loads at 1 x 8 x 4096 x 4096 (H100); \
              not for a weight several batches share, which each batch's cubes would stream \
              again: 32% slower at 4 x 1 x 4096 x 4096 (H100)",
    },
    Row {
        variant: Variant::Hopper(HopperPath::FewRows),
        when: |_, p| {
            f32_weight(p) && (few_weight_rows(p).m < TRANSPOSED_FEWEST_ROWS || !p.allow_tf32)
        },
        why: "f32, an N-major weight, up to 8 rows (32 without TF32): f32 FMAs keep up with the \
              weight's bytes, 0.0255 against 0.067 ms for the K-major copy and TF32 MMAs at \
              1 x 1 x 4096 x 4096, 0.0321 against 0.0335 for the transposed TF32 product at 8 \
              rows (H200)",
    },
    Row {
        variant: Variant::Hopper(HopperPath::SwappedTma),
        when: |_, p| f32_weight(p) && transposed_rows(p),
        why: "f32, an N-major weight, 9 to 128 rows: TF32 MMAs on the transposed product with no \
              copy of the weight (0.039 against 0.067 ms for the copy at 16 rows), fed by the TMA \
              engine 17-30% faster than by cp.async (H200)",
    },
    Row {
        variant: Variant::Hopper(HopperPath::Swapped),
        when: |_, p| f32_weight(p) && transposed_rows(p),
        why: "the same where the TMA engine cannot read the operands: still no copy of the \
              weight, any strides",
    },
    Row {
        variant: Variant::Hopper(HopperPath::SwappedTiles),
        when: |_, p| f32_weight(p) && facts::swapped_tiles_fill_the_device(p),
        why: "f32, an N-major weight, more than 128 rows and a 256 x 128 tile for every \
              multiprocessor: no copy of the weight, 0.367 against 0.395 ms for the copy and \
              whole tiles at 4096³ (H100)",
    },
    Row {
        variant: Variant::Hopper(HopperPath::SplitK),
        when: |_, p| facts::tiles_split_k(p),
        why: "fewer 64 x 64 tiles than two a multiprocessor: each tile's k split puts every \
              multiprocessor on the weight, 22.3 against 24.8 us (ncu) for whole 64 x 64 tiles \
              at 1 x 1 x 4096 x 4096 bf16 even with a second kernel adding the slices, which the \
              cluster adds on the chip instead (H200)",
    },
    Row {
        variant: Variant::Hopper(HopperPath::Tiles),
        when: |_, _| true,
        why: "every other problem the Hopper kernels read: about cuBLASLt's speed, 646 TF/s \
              (0.96x cuBLASLt back to back) at 4096³ bf16, 2-11x Burn's fused path (H200)",
    },
    Row {
        variant: Variant::Accelerated(Routine::Simple {
            tile: TileKind::Mma,
            multi_rows: true,
        }),
        when: |client, p| {
            p.dims.m * p.dims.n * p.dims.k >= TENSOR_CORE_MIN_MNK
                && has_tensor_cores(client, p.dtype, p.allow_tf32)
        },
        why: "off Hopper, tensor cores for the dtype (f32 as TF32 where cubek allows it) and at \
              least 2^27 multiply-adds: Burn's own matmul routine with fmar's epilogue, where the \
              tiled kernel ran f32 at 0.61x Burn's fused path at 4096³ (H200)",
    },
    Row {
        variant: Variant::Tiled,
        when: |_, _| true,
        why: "everywhere else, and on every runtime: no subgroups or tensor cores needed",
    },
];

/// The heuristic's table, in order: each row's variant and the measurement behind it.
pub fn heuristic_table() -> impl Iterator<Item = (Variant, &'static str)> {
    TABLE.iter().map(|row| (row.variant, row.why))
}

/// Whether the problem is f32 with an N-major weight (Burn's `Linear` layout).
fn f32_weight(problem: &Problem) -> bool {
    problem.is_f32() && problem.weight_n_major()
}

/// The rows the few-row and transposed products see (the batches of a weight they share
/// counted together, where those stay within the transposed products' reach, or without TF32
/// the few-row product's).
fn few_weight_rows(problem: &Problem) -> Dims {
    let limit = if problem.allow_tf32 {
        facts::TRANSPOSED_MAX_ROWS
    } else {
        facts::FEW_ROWS_MAX_ROWS
    };
    facts::weight_rows(problem, limit)
}

/// Whether the transposed split-K products have the rows: 9 to 128.
fn transposed_rows(problem: &Problem) -> bool {
    (TRANSPOSED_FEWEST_ROWS..=facts::TRANSPOSED_MAX_ROWS).contains(&few_weight_rows(problem).m)
}

/// Runs the first row of [`TABLE`] that holds and whose variant runs `problem`. Under
/// [`Epilogue::BiasReluMask`] and [`Epilogue::Plain`] only the Hopper rows are tried (the
/// kernels that write the mask themselves, and run plain products); the variant-specific error
/// of the last row tried where none ran.
pub(crate) fn launch_heuristic(client: &Client, problem: &Problem) -> Result<(), LaunchError> {
    let hopper_only = problem.epilogue != Epilogue::BiasRelu;
    // Off Hopper every Hopper row would decline: skip them at once.
    let hopper_device = hopper::device_unavailability(client).is_none();
    let mut declined = None;
    for row in &TABLE {
        let hopper_row = row.variant.hopper_path().is_some();
        if (hopper_only && !hopper_row)
            || (hopper_row && !hopper_device)
            || !(row.when)(client, problem)
        {
            continue;
        }
        match dispatch::run(client, problem, row.variant) {
            Err(error) if error.is_variant_specific() => declined = Some(error),
            other => return other,
        }
    }
    Err(declined.unwrap_or_else(|| LaunchError::Unavailable {
        variant: Variant::Hopper(HopperPath::Tiles),
        reason: hopper::device_unavailability(client)
            .unwrap_or("no Hopper kernel takes the problem")
            .into(),
    }))
}

/// Whether the device has tensor cores for `dtype` (f32 as TF32 where `allow_tf32`).
fn has_tensor_cores(client: &Client, dtype: ElemType, allow_tf32: bool) -> bool {
    let features = &client.properties().features.matmul;
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

#[cfg(test)]
mod tests {
    use super::*;

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

    /// Every variant but the naive baseline has a row, once, each with its reason; the last
    /// row takes everything.
    #[test]
    fn the_table_has_one_row_a_variant_and_ends_on_the_portable_kernel() {
        let mut variants: Vec<Variant> = TABLE.iter().map(|row| row.variant).collect();
        for row in &TABLE {
            assert!(row.why.len() > 40, "{}: a reason, measured", row.variant);
        }
        assert_eq!(variants.last(), Some(&Variant::Tiled));
        for path in HopperPath::ALL {
            assert!(variants.contains(&Variant::Hopper(path)), "{}", path.name());
        }
        variants.sort_by_key(|variant| variant.name());
        variants.dedup();
        assert_eq!(variants.len(), TABLE.len(), "a variant twice");
    }
}
