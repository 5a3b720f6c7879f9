//! `hopper-tiles` and `hopper-split-k`: the whole-tile kernel ([`kernel`]), on every dtype and
//! every layout the TMA engine can read. Half-precision MMAs read either major order through
//! their transpose bits; TF32 ones read K-major operands only, so an f32 `rhs` in Burn's
//! `Linear` layout (N-major) or an M-major `lhs` (a transposed view, as in the backward's
//! `lhsᵀ @ grad`) is first copied K-major ([`transpose`](super::transpose)).
//!
//! | module | what it holds |
//! |---|---|
//! | `config` | [`KernelConfig`], what the kernel is compiled for, and the shapes that follow |
//! | `kernel` | the `#[cube]` kernel: producer unit, consumer warpgroups, split-K hand-over |
//! | `store` | the epilogue's store through shared memory and the TMA engine, and the mask |

mod config;
pub(super) mod kernel;
mod store;

pub(crate) use config::KernelConfig;

use crate::epilogue::bias_row_broadcast;
use crate::hopper::layout::{LhsMajor, Plan, RhsMajor, line_elems, plan, tensor_map};
use crate::hopper::schedule::Schedule;
use crate::hopper::transpose::{copy_unavailability, k_major_copy};
use crate::hopper::wgmma::Operand;
use crate::problem::Problem;
use cubecl::client::Client;
use cubecl::ir::{AddressType, ElemType, FloatKind};
use cubecl::prelude::*;
use kernel::{fused_matmul_add_relu_hopper, fused_matmul_add_relu_hopper_split_k};

/// How the kernel reads a problem it can run.
struct Reading {
    /// The operands' type, as the MMAs read it.
    operand: Operand,
    /// How the TMA engine reads the operands as they are.
    plan: Plan,
    /// Whether `lhs` is first copied K-major (TF32 and an M-major `lhs`).
    copy_lhs: bool,
    /// Whether `rhs` is first copied K-major (TF32 and an N-major `rhs`).
    copy_rhs: bool,
}

impl Reading {
    /// How the kernel reads `problem`, or why it cannot: a dtype the MMAs do not take (f32 only
    /// through TF32, where cubek allows it), a layout the TMA engine cannot read, an output
    /// past the kernel's 32-bit tile arithmetic, or an operand the K-major copy cannot take.
    fn of(problem: &Problem) -> Result<Self, String> {
        let operand = match problem.dtype {
            ElemType::Float(FloatKind::BF16) => Operand::Bf16,
            ElemType::Float(FloatKind::F16) => Operand::F16,
            ElemType::Float(FloatKind::F32) if problem.allow_tf32 => Operand::Tf32,
            ElemType::Float(FloatKind::F32) => {
                return Err(
                    "f32 operands with TF32 rounding disallowed (cubek's `allow_tf32` is off)"
                        .into(),
                );
            }
            other => {
                return Err(format!(
                    "{other:?} operands (f16, bf16, and f32 through TF32)"
                ));
            }
        };
        let ops = &problem.ops;
        let plan = plan(&ops.lhs, &ops.rhs, &ops.out, problem.dtype.size())?;
        let dims = problem.dims;
        if dims.m * dims.n * dims.batch > u32::MAX as usize {
            return Err("an output of more than 2^32 elements".into());
        }
        let copy_lhs = operand == Operand::Tf32 && plan.lhs_major == LhsMajor::M;
        let copy_rhs = operand == Operand::Tf32 && plan.rhs_major == RhsMajor::N;
        for (copied, layout) in [(copy_lhs, &plan.lhs), (copy_rhs, &plan.rhs)] {
            if copied && let Some(reason) = copy_unavailability(layout) {
                return Err(reason);
            }
        }
        Ok(Self {
            operand,
            plan,
            copy_lhs,
            copy_rhs,
        })
    }

    /// Whether the kernel reads `lhs` K-major, as it is or from its copy.
    fn lhs_k_major(&self) -> bool {
        self.plan.lhs_major == LhsMajor::K || self.copy_lhs
    }

    /// The schedule of `problem`: whole tiles, or under `split` each tile's `k` split across a
    /// cluster (`None` where `k` has too few k-blocks to split).
    fn schedule(&self, problem: &Problem, split: bool) -> Option<Schedule> {
        let dims = problem.dims;
        if split {
            Schedule::split_k(
                problem.processors,
                dims.batch,
                dims.m,
                dims.n,
                dims.k,
                problem.dtype.size(),
                self.lhs_k_major(),
            )
        } else {
            Some(Schedule::whole_tiles(
                problem.processors,
                dims.batch,
                dims.m,
                dims.n,
            ))
        }
    }
}

/// How the kernel runs a problem it takes: how it reads the operands, and its schedule.
pub(crate) struct Prepared {
    reading: Reading,
    schedule: Schedule,
}

/// How the kernel runs `problem` (whole tiles, or under `split` split-K), or why it cannot.
pub(crate) fn prepare(problem: &Problem, split: bool) -> Result<Prepared, String> {
    let reading = Reading::of(problem)?;
    let schedule = reading.schedule(problem, split).ok_or_else(|| {
        format!(
            "k = {} spans one 128-byte line: nothing to split",
            problem.dims.k
        )
    })?;
    Ok(Prepared { reading, schedule })
}

/// Whether the heuristic's schedule ([`Schedule::choose`]) splits `problem`'s `k`: where its
/// 64 x 64 tiles are too few to keep two cubes on every multiprocessor.
pub(crate) fn splits_by_schedule(problem: &Problem) -> bool {
    let dims = problem.dims;
    Reading::of(problem).is_ok_and(|reading| {
        let schedule = Schedule::choose(
            problem.processors,
            dims.batch,
            dims.m,
            dims.n,
            dims.k,
            problem.dtype.size(),
            reading.lhs_k_major(),
        );
        schedule.splits > 1
    })
}

/// Runs the kernel on a problem as [`prepare`] prepared it. Every reason to decline came
/// before, so the copies and the kernel all launch.
pub(crate) fn launch(client: &Client, problem: &Problem, prepared: Prepared) {
    let Prepared {
        reading,
        schedule: Schedule { tile, splits },
    } = prepared;
    let Problem {
        ops, dims, dtype, ..
    } = problem;
    let (dims, dtype, epilogue) = (*dims, *dtype, problem.epilogue);
    let Reading {
        operand,
        mut plan,
        copy_lhs,
        copy_rhs,
    } = reading;
    // TF32 MMAs have no transpose bits: an operand that is not K-major is read from a K-major
    // copy.
    let (mut lhs, mut rhs) = (ops.lhs.clone(), ops.rhs.clone());
    if copy_lhs {
        (lhs, plan.lhs) = k_major_copy(client, &ops.lhs, &plan.lhs, dtype);
        plan.lhs_major = LhsMajor::K;
    }
    if copy_rhs {
        (rhs, plan.rhs) = k_major_copy(client, &ops.rhs, &plan.rhs, dtype);
        plan.rhs_major = RhsMajor::K;
    }

    let split_k = splits > 1;
    let config = KernelConfig {
        tile,
        lhs_m_major: plan.lhs_major == LhsMajor::M,
        rhs_k_major: plan.rhs_major == RhsMajor::K,
        lhs_batched: plan.lhs.batched,
        rhs_batched: plan.rhs.batched,
        operand,
        bias_row_broadcast: bias_row_broadcast(&ops.bias, &dims, epilogue),
        splits,
        epilogue,
    };
    debug_assert!(
        config.slots() >= (splits - 1) * tile.consumers(),
        "a split-K cluster's first cube holds every other cube's sums"
    );
    // One swizzle line along the contiguous dim: `k` for a K-major operand, one panel of `m`
    // or `n` for an MN-major one.
    let line = line_elems(dtype.size());
    let rhs_box = match plan.rhs_major {
        RhsMajor::N => [1, line, line],
        RhsMajor::K => [1, tile.n, line],
    };
    // A K-major stage holds `tile.lhs_rows` rows: fewer than the tile's when the problem has
    // no more.
    let lhs_box = match plan.lhs_major {
        LhsMajor::K => [1, tile.lhs_rows, line],
        LhsMajor::M => [1, line, line],
    };
    let lhs_map = tensor_map(&lhs, &plan.lhs, lhs_box, dtype);
    let rhs_map = tensor_map(&rhs, &plan.rhs, rhs_box, dtype);
    let out_map = tensor_map(&ops.out, &plan.out, [1, 64, line], dtype);

    // Persistent: one cube per multiprocessor, each walking tiles until none are left. Under
    // split-K, one cube per work item (a slice of a tile), in clusters of a tile's slices: the
    // schedule keeps them within two cubes per multiprocessor, and a cluster's first cube
    // receives the others' sums in its ring, which a next item would refill.
    let out_len = dims.batch * dims.m * dims.n;
    let items = dims.m.div_ceil(tile.m) * dims.n.div_ceil(tile.n) * dims.batch * splits;
    let cubes = if split_k {
        items
    } else {
        items.min(problem.processors)
    };
    let cube_count = CubeCount::Static(cubes as u32, 1, 1);
    let address_type = ops
        .bias
        .required_address_type(dtype.size())
        .max(AddressType::from_len(out_len));

    // SAFETY: the contract check bounded every operand's strides by its buffer; the TMA engine
    // reads `lhs` and `rhs` through maps of their own shapes, filling past the edges with zeros,
    // and writes the output through a map of its shape, clipping past the edges; the epilogue
    // reads the bias only at in-bounds rows and columns.
    unsafe {
        let launch = if split_k {
            fused_matmul_add_relu_hopper_split_k::launch_unchecked
        } else {
            fused_matmul_add_relu_hopper::launch_unchecked
        };
        launch(
            client,
            cube_count,
            CubeDim::new_1d(config.cube_units()),
            address_type,
            tile.n / 2,
            lhs_map,
            rhs_map,
            ops.bias.clone().into_tensor_arg(),
            out_map,
            problem.mask_argument().into_tensor_arg(),
            dims.m as u32,
            dims.n as u32,
            dims.k as u32,
            dims.batch as u32,
            config,
            dtype,
        );
    }
}
