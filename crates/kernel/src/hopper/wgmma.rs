//! Hopper's warpgroup MMA (`wgmma.mma_async`) through inline PTX, the shared-memory matrix
//! descriptors it reads its operands through, and the `stmatrix` store the epilogue writes its
//! accumulator fragments with.
//!
//! cubecl's CUDA C++ compiler has no warpgroup MMA of its own, so the instructions are written
//! as PTX with `gpu_asm!`. Its limits shape this module: an operand is `in` or `out`, never
//! both, and a statement has at most one result. One statement therefore takes the old
//! accumulator in, copies it to its result registers (ptxas coalesces the copies), fences,
//! issues the MMAs of one stage, commits them and waits for them: no accumulator register is
//! live across statements while an MMA writes it. The MMAs of one warpgroup overlap with the
//! other warpgroup's, not with its own next stage.

use super::ptx::by_value;
use cubecl::prelude::*;

/// What the warpgroup MMAs read: the kernel's operand and output type, and how the MMA takes
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Operand {
    /// bf16 operands, `m64nNk16`.
    Bf16,
    /// f16 operands, `m64nNk16`.
    F16,
    /// f32 operands read as TF32 (the low 13 mantissa bits ignored), `m64nNk8`. The MMA has no
    /// transpose bits for TF32: both operands must be K-major in shared memory.
    Tf32,
}

impl Operand {
    /// Bytes of one element in memory.
    pub const fn bytes(self) -> usize {
        match self {
            Self::Bf16 | Self::F16 => 2,
            Self::Tf32 => 4,
        }
    }

    /// `k` of one MMA: 32 bytes of each K-major row.
    pub const fn mma_k(self) -> usize {
        32 / self.bytes()
    }

    /// The element type the kernel is compiled for.
    #[cfg(test)]
    pub const fn elem_type(self) -> cubecl::ir::ElemType {
        use cubecl::ir::FloatKind;
        cubecl::ir::ElemType::Float(match self {
            Self::Bf16 => FloatKind::BF16,
            Self::F16 => FloatKind::F16,
            Self::Tf32 => FloatKind::F32,
        })
    }

    /// The type's name in the MMA's PTX.
    pub const fn ptx(self) -> &'static str {
        match self {
            Self::Bf16 => "bf16",
            Self::F16 => "f16",
            Self::Tf32 => "tf32",
        }
    }

    /// Whether the output is written in 16-bit elements (through `stmatrix`).
    pub const fn half(self) -> bool {
        !matches!(self, Self::Tf32)
    }
}

/// A stage's MMAs, as the PTX of one statement needs them spelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct MmaShape {
    /// `n` of each `m64nNkK` MMA.
    pub n: usize,
    /// MMAs chained along K in one statement.
    pub ksteps: usize,
    /// The operands' type.
    pub operand: Operand,
    /// Whether `A` is MN-major in shared memory (the instruction's `A` transpose bit).
    pub a_mn_major: bool,
    /// Whether `B` is MN-major in shared memory (the instruction's `B` transpose bit).
    pub b_mn_major: bool,
    /// What one MMA's step along K adds to the `A` descriptor (bytes >> 4).
    pub a_step: u64,
    /// What one MMA's step along K adds to the `B` descriptor (bytes >> 4).
    pub b_step: u64,
}

/// The PTX of one statement: `D = A * B + C` over `shape.ksteps` chained MMAs, then commit and
/// wait. Operands, as cubecl numbers them (results first, a vector taking one per element):
/// `D` = `%0..%R-1` (out), `C` = `%R..%2R-1` (in), the `A` descriptor `%2R`, the `B` descriptor
/// `%2R+1`, with `R` the f32 registers per unit (`n / 2`).
pub(crate) fn mma_ptx(shape: MmaShape) -> String {
    let r = shape.n / 2;
    let (da, db) = (2 * r, 2 * r + 1);
    let d = (0..r)
        .map(|i| format!("%{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let ty = shape.operand.ptx();
    // The half-precision MMAs take two transpose bits; TF32 has none (K-major only).
    let transpose = if shape.operand.half() {
        format!(
            ", {}, {}",
            u32::from(shape.a_mn_major),
            u32::from(shape.b_mn_major)
        )
    } else {
        assert!(
            !shape.a_mn_major && !shape.b_mn_major,
            "TF32 MMAs read K-major operands only"
        );
        String::new()
    };
    // Scale-D is a predicate operand: true, since `C` always holds the running sum.
    let mut s = String::from(
        "{\n.reg .b64 fmar_da, fmar_db;\n.reg .b32 fmar_one;\n.reg .pred fmar_acc;\n\
         mov.b32 fmar_one, 1;\nsetp.ne.b32 fmar_acc, fmar_one, 0;\n",
    );
    for i in 0..r {
        s.push_str(&format!("mov.f32 %{i}, %{};\n", r + i));
    }
    s.push_str("wgmma.fence.sync.aligned;\n");
    s.push_str(&format!(
        "mov.b64 fmar_da, %{da};\nmov.b64 fmar_db, %{db};\n"
    ));
    for step in 0..shape.ksteps {
        if step > 0 {
            s.push_str(&format!(
                "add.s64 fmar_da, fmar_da, {};\nadd.s64 fmar_db, fmar_db, {};\n",
                shape.a_step, shape.b_step
            ));
        }
        s.push_str(&format!(
            "wgmma.mma_async.sync.aligned.m64n{}k{}.f32.{ty}.{ty} {{{d}}}, fmar_da, fmar_db, \
             fmar_acc, 1, 1{transpose};\n",
            shape.n,
            shape.operand.mma_k()
        ));
    }
    s.push_str("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n}");
    s
}

/// The high half of a 128-byte-swizzled descriptor: leading and stride byte offsets (>> 4 in
/// bits 16-29 and 32-45) and the swizzle mode (1 = 128 bytes, bits 62-63). The tile starts at
/// a multiple of 1024 bytes, so the base offset (bits 49-51) stays 0.
pub(crate) const fn descriptor_high_bits(leading_bytes: u64, stride_bytes: u64) -> u64 {
    (((leading_bytes >> 4) & 0x3FFF) << 16) | (((stride_bytes >> 4) & 0x3FFF) << 32) | (1 << 62)
}

/// One stage of MMAs into `acc`, the `R = N / 2` f32 registers one unit holds of its
/// warpgroup's `64 x N` tile: see [`mma_ptx`].
#[cube]
pub(crate) fn mma_stage<R: Size>(
    acc: Vector<f32, R>,
    desc_a: u64,
    desc_b: u64,
    #[comptime] shape: MmaShape,
) -> Vector<f32, R> {
    let body = comptime![mma_ptx(shape)];
    let c = by_value::<Vector<f32, R>>(acc);
    let da = by_value::<u64>(desc_a);
    let db = by_value::<u64>(desc_b);
    let out: Vector<f32, R>;
    // cubecl refuses an operand the text never names: the comment names them all once.
    gpu_asm!(
        "// fmar wgmma: d={d} c={c} a={da} b={db}\n{body}",
        d = out(_) out,
        c = in(_) c,
        da = in(_) da,
        db = in(_) db,
    );
    out
}

/// The PTX of one stage: four `m64nNk8` TF32 MMAs with `A` in registers, then commit and wait.
/// Operands, as cubecl numbers them: `D` = `%0..%R-1` (out), `C` = `%R..%2R-1` (in), `A` =
/// `%2R..%2R+15` (four registers a step), the `B` descriptor `%2R+16`, with `R = n / 2`.
pub(crate) fn mma_a_in_registers_ptx(n: usize) -> String {
    let a = n;
    // The MMA's `A` registers are untyped 32-bit words holding the f32 bits (TF32 ignores the
    // low 13 bits of the mantissa).
    let fragments = (0..16)
        .map(|i| format!("mov.b32 fmar_a{i}, %{};\n", a + i))
        .collect::<String>();
    mma_steps_ptx(n, 0, 4, &fragments, a + 16)
}

/// The PTX of `steps` `k8` steps of a stage from step `first_step`: `m64nNk8` TF32 MMAs whose
/// `A` fragments `fragments` (PTX lines) puts in `fmar_a0..` (four registers a step), then
/// commit and wait. `D` is `%0..%R-1` (out), `C` `%R..%2R-1` (in), with `R = n / 2`; `db` the
/// operand of the stage's `B` descriptor, which moves 32 bytes along `k` a step.
pub(crate) fn mma_steps_ptx(
    n: usize,
    first_step: usize,
    steps: usize,
    fragments: &str,
    db: usize,
) -> String {
    let r = n / 2;
    let d = (0..r)
        .map(|i| format!("%{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut s = format!(
        "{{\n.reg .b64 fmar_db;\n.reg .b32 fmar_one;\n.reg .b32 fmar_a<{}>;\n\
         .reg .pred fmar_acc;\nmov.b32 fmar_one, 1;\nsetp.ne.b32 fmar_acc, fmar_one, 0;\n",
        4 * steps
    );
    for i in 0..r {
        s.push_str(&format!("mov.f32 %{i}, %{};\n", r + i));
    }
    s.push_str(fragments);
    s.push_str("wgmma.fence.sync.aligned;\n");
    s.push_str(&format!("mov.b64 fmar_db, %{db};\n"));
    for step in 0..steps {
        // 32 bytes a step along `k` in the 128-byte line (descriptor units of 16 bytes).
        let advance = if step == 0 { 2 * first_step } else { 2 };
        if advance > 0 {
            s.push_str(&format!("add.s64 fmar_db, fmar_db, {advance};\n"));
        }
        let regs = (0..4)
            .map(|j| format!("fmar_a{}", 4 * step + j))
            .collect::<Vec<_>>()
            .join(", ");
        s.push_str(&format!(
            "wgmma.mma_async.sync.aligned.m64n{n}k8.f32.tf32.tf32 {{{d}}}, {{{regs}}}, fmar_db, \
             fmar_acc, 1, 1;\n"
        ));
    }
    s.push_str("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n}");
    s
}

/// One stage's MMAs into `acc` (the `R = N / 2` f32 registers a unit holds of the warpgroup's
/// `64 x N` result): `a` holds this unit's `A` fragments of the stage's four `k8` steps.
#[cube]
pub(crate) fn mma_stage_a_in_registers<R: Size>(
    acc: Vector<f32, R>,
    a: Vector<f32, Const<16>>,
    desc_b: u64,
    #[comptime] n: usize,
) -> Vector<f32, R> {
    let body = comptime![mma_a_in_registers_ptx(n)];
    let c = by_value::<Vector<f32, R>>(acc);
    let a = by_value::<Vector<f32, Const<16>>>(a);
    let db = by_value::<u64>(desc_b);
    let out: Vector<f32, R>;
    // cubecl refuses an operand the text never names: the comment names them all once.
    gpu_asm!(
        "// fmar wgmma: d={d} c={c} a={a} b={db}\n{body}",
        d = out(_) out,
        c = in(_) c,
        a = in(_) a,
        db = in(_) db,
    );
    out
}

/// The PTX of [`store_matrix_x4`]: operand `%0` is the shared address, `%1..%8` the values.
/// `cvt.rn.{bf16,f16}x2.f32 d, a, b` puts `a` in the high half, and the lower column goes to
/// the lower address (the low half).
pub(crate) fn stmatrix_ptx(bf16: bool) -> String {
    let ty = if bf16 { "bf16x2" } else { "f16x2" };
    let mut s = String::from("{\n.reg .b32 fmar_s<4>;\n");
    for j in 0..4 {
        s.push_str(&format!(
            "cvt.rn.{ty}.f32 fmar_s{j}, %{}, %{};\n",
            2 + 2 * j,
            1 + 2 * j
        ));
    }
    s.push_str(
        "stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {fmar_s0, fmar_s1, fmar_s2, fmar_s3};\n}",
    );
    s
}

/// Rounds eight f32 values to half precision in pairs and writes four 8 x 8 blocks of 16-bit
/// elements to shared memory (`stmatrix .x4`): `values[2 j]` and `values[2 j + 1]` are this
/// unit's two adjacent elements of block `j`, and lanes `8 j..8 j + 7` give, as `address`, the
/// shared addresses of block `j`'s eight 16-byte rows.
#[cube]
pub(crate) fn store_matrix_x4(address: u32, values: Vector<f32, Const<8>>, #[comptime] bf16: bool) {
    let body = comptime![stmatrix_ptx(bf16)];
    let address = by_value::<u32>(address);
    let values = by_value::<Vector<f32, Const<8>>>(values);
    // cubecl refuses an operand the text never names: the comment names them all once.
    gpu_asm!(
        "// fmar stmatrix: p={address} v={values}\n{body}",
        address = in(_) address,
        values = in(_) values,
    );
}

/// A descriptor of the 128-byte-swizzled tile at shared address `address`.
#[cube]
pub(crate) fn descriptor(
    address: u32,
    #[comptime] leading_bytes: u64,
    #[comptime] stride_bytes: u64,
) -> u64 {
    let high = comptime![descriptor_high_bits(leading_bytes, stride_bytes)];
    u64::cast_from((address >> 4) & 0x3FFF) | high
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> MmaShape {
        MmaShape {
            n: 256,
            ksteps: 4,
            operand: Operand::Bf16,
            a_mn_major: false,
            b_mn_major: false,
            a_step: 2,
            b_step: 2,
        }
    }

    #[test]
    fn one_statement_names_every_register_once_and_waits_for_its_mmas() {
        let ptx = mma_ptx(shape());
        assert_eq!(ptx.matches("wgmma.mma_async").count(), 4);
        assert_eq!(ptx.matches("mov.f32").count(), 128);
        assert!(ptx.contains("m64n256k16.f32.bf16.bf16 {%0, %1,"));
        assert!(ptx.contains("%127}, fmar_da, fmar_db, fmar_acc, 1, 1, 0, 0;"));
        assert!(ptx.contains("mov.b64 fmar_da, %256;\nmov.b64 fmar_db, %257;"));
        assert_eq!(ptx.matches("add.s64 fmar_da, fmar_da, 2;").count(), 3);
        assert!(ptx.ends_with("wgmma.wait_group.sync.aligned 0;\n}"));
    }

    #[test]
    fn the_transpose_bit_and_type_follow_the_shape() {
        let ptx = mma_ptx(MmaShape {
            operand: Operand::F16,
            b_mn_major: true,
            b_step: 128,
            ..shape()
        });
        assert!(ptx.contains("m64n256k16.f32.f16.f16"));
        assert!(ptx.contains("fmar_db, fmar_acc, 1, 1, 0, 1;"));
        let a_transposed = mma_ptx(MmaShape {
            a_mn_major: true,
            ..shape()
        });
        assert!(a_transposed.contains("fmar_db, fmar_acc, 1, 1, 1, 0;"));
        assert_eq!(ptx.matches("add.s64 fmar_db, fmar_db, 128;").count(), 3);
    }

    #[test]
    fn tf32_mmas_are_k8_without_transpose_bits() {
        let ptx = mma_ptx(MmaShape {
            operand: Operand::Tf32,
            ..shape()
        });
        assert!(ptx.contains("m64n256k8.f32.tf32.tf32 {%0, %1,"));
        assert!(ptx.contains("%127}, fmar_da, fmar_db, fmar_acc, 1, 1;"));
        assert_eq!(ptx.matches("add.s64 fmar_da, fmar_da, 2;").count(), 3);
    }

    #[test]
    #[should_panic(expected = "K-major operands only")]
    fn tf32_refuses_an_mn_major_operand() {
        mma_ptx(MmaShape {
            operand: Operand::Tf32,
            b_mn_major: true,
            ..shape()
        });
    }

    #[test]
    fn stmatrix_packs_the_lower_column_into_the_low_half() {
        let ptx = stmatrix_ptx(true);
        assert!(ptx.contains("cvt.rn.bf16x2.f32 fmar_s0, %2, %1;"));
        assert!(ptx.contains("cvt.rn.bf16x2.f32 fmar_s3, %8, %7;"));
        assert!(ptx.contains("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {fmar_s0, fmar_s1"));
        assert!(stmatrix_ptx(false).contains("cvt.rn.f16x2.f32 fmar_s1, %4, %3;"));
    }

    #[test]
    fn descriptor_bits_match_ptx_layout() {
        // K-major, 128-byte swizzle: LBO field 1, SBO 1024 bytes, mode 1.
        let high = descriptor_high_bits(16, 1024);
        assert_eq!((high >> 16) & 0x3FFF, 1);
        assert_eq!((high >> 32) & 0x3FFF, 64);
        assert_eq!(high >> 62, 1);
        assert_eq!(high & 0x3FFF, 0);
    }

    #[test]
    fn a_stage_is_four_k8_mmas_with_a_from_registers() {
        let ptx = mma_a_in_registers_ptx(16);
        assert_eq!(ptx.matches("wgmma.mma_async").count(), 4);
        assert!(ptx.contains(
            "m64n16k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7}, \
             {fmar_a0, fmar_a1, fmar_a2, fmar_a3}, fmar_db, fmar_acc, 1, 1;"
        ));
        assert!(ptx.contains("{fmar_a12, fmar_a13, fmar_a14, fmar_a15}, fmar_db"));
        assert!(ptx.contains("mov.b32 fmar_a0, %16;\n") && ptx.contains("mov.b32 fmar_a15, %31;"));
        assert!(ptx.contains("mov.b64 fmar_db, %32;"));
        assert_eq!(ptx.matches("add.s64 fmar_db, fmar_db, 2;").count(), 3);
        assert!(ptx.ends_with("wgmma.wait_group.sync.aligned 0;\n}"));
    }
}
