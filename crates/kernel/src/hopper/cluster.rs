//! How the cubes of one split-K tile add their partial sums without leaving the chip: the
//! slices of a tile's `k` run in one thread-block cluster, and each cube but the first stores
//! its f32 sums straight into the first one's shared memory (distributed shared memory), where
//! they are added before the ordinary epilogue. No workspace in global memory, no second kernel.
//!
//! cubecl has cluster launches (`__cluster_dims__`) but no distributed shared memory, so the
//! cluster barrier, the remote mbarrier arrivals and the remote stores are inline PTX, on the
//! mbarrier words of [`super::mbarrier`], which another cube of the cluster names through
//! `mapa`.
//!
//! Nothing here fences the whole device: the remote stores are asynchronous (`st.async`) and
//! complete on the receiving cube's mbarrier by their bytes, as TMA loads do, and the arrivals
//! that carry no data are relaxed. (A release at cluster scope compiles to `MEMBAR.ALL.GPU`,
//! which waits for every store the unit has in flight.)
//!
//! Layout of one warpgroup's sums (a slot, `R` values per unit, `R / 4` groups of four): group
//! `g` of unit `u` is at byte `2048 g + 16 u`, so that a plane's 32 units read or write 512
//! contiguous bytes per 16-byte access, free of bank conflicts.

use super::ptx::by_value;
use cubecl::prelude::*;

/// Bytes of one warpgroup's f32 sums in a slot: `R` values per unit, 128 units.
pub(crate) const fn slot_bytes(values_per_unit: usize) -> usize {
    values_per_unit * 4 * 128
}

/// Bytes between two groups of four values in a slot: one 16-byte group per unit.
const GROUP_STRIDE: usize = 16 * 128;

/// Where unit `unit` (of 128, in its warpgroup) keeps its values in a slot, from the slot's
/// start: its first group of four.
#[cube]
pub(crate) fn unit_offset(unit: usize) -> u32 {
    (unit * 16) as u32
}

/// This unit arrives on the cluster barrier, without waiting: every unit of every cube arrives
/// once, after its cube's barriers are initialised (see [`fence_barrier_init`]).
#[cube]
pub(crate) fn cluster_arrive() {
    gpu_asm!("barrier.cluster.arrive.relaxed;");
}

/// Waits until every unit of the cluster that has not exited has arrived ([`cluster_arrive`]):
/// after it, every cube's barriers may be used from any cube.
#[cube]
pub(crate) fn cluster_wait() {
    gpu_asm!("barrier.cluster.wait;");
}

/// Makes the mbarriers this unit initialised visible to the other cubes of the cluster, through
/// the cluster barrier after it.
#[cube]
pub(crate) fn fence_barrier_init() {
    gpu_asm!("fence.mbarrier_init.release.cluster;");
}

/// Arrives once on the mbarrier at shared address `barrier` in cube `rank` of the cluster.
/// Relaxed: it orders none of this unit's memory accesses.
#[cube]
pub(crate) fn arrive_remote(barrier: u32, rank: u32) {
    let barrier = by_value::<u32>(barrier);
    let rank = by_value::<u32>(rank);
    gpu_asm!(
        "{{ .reg .b32 fmar_remote;\nmapa.shared::cluster.u32 fmar_remote, {barrier}, {rank};\n\
         mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [fmar_remote]; }}",
        barrier = in(_) barrier,
        rank = in(_) rank,
    );
}

/// Stores `value` at shared address `at` in cube `rank` of the cluster, asynchronously: its 4
/// bytes complete on that cube's mbarrier at shared address `barrier`, which must expect them
/// ([`super::mbarrier::arrive_expecting`]) before the store is issued.
#[cube]
pub(crate) fn store_remote_async_f32(at: u32, rank: u32, barrier: u32, value: f32) {
    let at = by_value::<u32>(at);
    let rank = by_value::<u32>(rank);
    let barrier = by_value::<u32>(barrier);
    let value = by_value::<f32>(value);
    gpu_asm!(
        "{{ .reg .b32 fmar_remote, fmar_remote_barrier;\n\
         mapa.shared::cluster.u32 fmar_remote, {at}, {rank};\n\
         mapa.shared::cluster.u32 fmar_remote_barrier, {barrier}, {rank};\n\
         st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [fmar_remote], {value}, \
         [fmar_remote_barrier]; }}",
        at = in(_) at,
        rank = in(_) rank,
        barrier = in(_) barrier,
        value = in(_) value,
    );
}

/// The PTX of [`store_remote`]: the unit's address in the slot `%0`, the cube's rank `%1`, the
/// receiving mbarrier `%2`, `values` operands from `%3`.
pub(crate) fn store_remote_ptx(values: usize) -> String {
    let mut s = String::from(
        "{\n.reg .b32 fmar_remote, fmar_remote_barrier;\n\
         mapa.shared::cluster.u32 fmar_remote, %0, %1;\n\
         mapa.shared::cluster.u32 fmar_remote_barrier, %2, %1;\n",
    );
    for group in 0..values / 4 {
        let v = 3 + 4 * group;
        s.push_str(&format!(
            "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [fmar_remote+{}], \
             {{%{v}, %{}, %{}, %{}}}, [fmar_remote_barrier];\n",
            group * GROUP_STRIDE,
            v + 1,
            v + 2,
            v + 3
        ));
    }
    s.push('}');
    s
}

/// Stores this unit's `values` (its part of a warpgroup's sums, `count` of them: `R`) into a
/// slot of cube `rank` of the cluster, `at` being the shared address of the unit's first group
/// there (the slot's address plus [`unit_offset`]). The stores are asynchronous: each completes
/// its 16 bytes on that cube's mbarrier at shared address `barrier`.
#[cube]
pub(crate) fn store_remote<R: Size>(
    at: u32,
    rank: u32,
    barrier: u32,
    values: Vector<f32, R>,
    #[comptime] count: usize,
) {
    let body = comptime![store_remote_ptx(count)];
    let at = by_value::<u32>(at);
    let rank = by_value::<u32>(rank);
    let barrier = by_value::<u32>(barrier);
    let values = by_value::<Vector<f32, R>>(values);
    // cubecl refuses an operand the text never names: the comment names them all once.
    gpu_asm!(
        "// fmar store_remote: s={at} r={rank} b={barrier} v={values}\n{body}",
        at = in(_) at,
        rank = in(_) rank,
        barrier = in(_) barrier,
        values = in(_) values,
    );
}

/// The PTX of [`add_slot`]: results `%0..%values`, then the sums so far, then the unit's
/// address in the slot. The adds sit between the loads in one statement, so that the compiler
/// cannot move every slot's loads ahead of every add: one slot's values are live at a time.
pub(crate) fn add_slot_ptx(values: usize) -> String {
    let mut s = String::from("{\n.reg .f32 fmar_slot<4>;\n");
    for group in 0..values / 4 {
        s.push_str(&format!(
            "ld.shared.v4.f32 {{fmar_slot0, fmar_slot1, fmar_slot2, fmar_slot3}}, [%{}+{}];\n",
            2 * values,
            group * GROUP_STRIDE
        ));
        for lane in 0..4 {
            let v = 4 * group + lane;
            s.push_str(&format!(
                "add.f32 %{v}, %{}, fmar_slot{lane};\n",
                values + v
            ));
        }
    }
    s.push('}');
    s
}

/// `sums` plus this unit's `count` (`R`) values in a slot of its own cube, as [`store_remote`]
/// laid them out, `at` being the shared address of the unit's first group there.
#[cube]
pub(crate) fn add_slot<R: Size>(
    sums: Vector<f32, R>,
    at: u32,
    #[comptime] count: usize,
) -> Vector<f32, R> {
    let body = comptime![add_slot_ptx(count)];
    let sums = by_value::<Vector<f32, R>>(sums);
    let at = by_value::<u32>(at);
    let out: Vector<f32, R>;
    // cubecl refuses an operand the text never names: the comment names them all once.
    gpu_asm!(
        "// fmar add_slot: d={out} s={sums} a={at}\n{body}",
        out = out(_) out,
        sums = in(_) sums,
        at = in(_) at,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_writes_and_reads_its_groups_a_plane_apart() {
        let store = store_remote_ptx(32);
        let st = "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32";
        assert_eq!(store.matches(st).count(), 8);
        assert!(store.contains("[fmar_remote+0], {%3, %4, %5, %6}, [fmar_remote_barrier]"));
        assert!(store.contains("[fmar_remote+14336], {%31, %32, %33, %34}, [fmar_remote_barrier]"));
        let add = add_slot_ptx(32);
        assert_eq!(add.matches("ld.shared.v4.f32").count(), 8);
        assert_eq!(add.matches("add.f32").count(), 32);
        assert!(add.contains("[%64+0];\nadd.f32 %0, %32, fmar_slot0;"));
        assert!(add.contains("[%64+14336];\nadd.f32 %28, %60, fmar_slot0;"));
        assert!(add.contains("add.f32 %31, %63, fmar_slot3;\n}"));
        assert_eq!(slot_bytes(32), 16 * 1024);
    }
}
