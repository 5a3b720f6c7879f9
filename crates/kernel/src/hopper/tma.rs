//! The TMA engine's tiled copies as inline PTX: loads that complete on an mbarrier word
//! ([`super::mbarrier`]) and stores that complete in bulk groups.
//!
//! cubecl's own TMA operations compile to `cuda::device::experimental` calls, which need
//! `<cuda/barrier>` and a `cuda::barrier` to complete on; these name the tensor map by the
//! address of its kernel parameter (a `__grid_constant__ CUtensorMap`) and shared memory by
//! its 32-bit shared address, and need no header.
//!
//! Coordinates come outermost first, as cubecl's own TMA functions take them; the PTX lists
//! them innermost first.

use super::ptx::by_value;
use cubecl::prelude::*;
use cubecl_cpp::cuda::ptx::tensor_map_address;

/// Copies the box of `map` at (`outer`, `middle`, `inner`) to shared address `destination`;
/// the copy's bytes complete on this cube's mbarrier at shared address `barrier`, which must
/// expect them ([`super::mbarrier::arrive_expecting`]).
#[cube]
pub(crate) fn load_3d<E: CubePrimitive>(
    map: &TensorMap<E, Tiled>,
    destination: u32,
    barrier: u32,
    outer: i32,
    middle: i32,
    inner: i32,
) {
    let map = tensor_map_address::<E, Tiled>(map);
    let destination = by_value::<u32>(destination);
    let barrier = by_value::<u32>(barrier);
    let outer = by_value::<i32>(outer);
    let middle = by_value::<i32>(middle);
    let inner = by_value::<i32>(inner);
    gpu_asm!(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes \
         [{destination}], [{map}, {{{inner}, {middle}, {outer}}}], [{barrier}];",
        destination = in(_) destination,
        map = in(_) map,
        inner = in(_) inner,
        middle = in(_) middle,
        outer = in(_) outer,
        barrier = in(_) barrier,
    );
}

/// Copies shared memory at shared address `source` to the box of `map` at (`outer`, `middle`,
/// `inner`), and commits it as one bulk group: [`wait_stores_read_but_one`] and
/// [`wait_stores_read`] wait for the groups' reads of shared memory. Elements of the box outside
/// the tensor are not written.
#[cube]
pub(crate) fn store_3d<E: CubePrimitive>(
    map: &mut TensorMap<E, Tiled>,
    source: u32,
    outer: i32,
    middle: i32,
    inner: i32,
) {
    let map = tensor_map_address::<E, Tiled>(&*map);
    let source = by_value::<u32>(source);
    let outer = by_value::<i32>(outer);
    let middle = by_value::<i32>(middle);
    let inner = by_value::<i32>(inner);
    gpu_asm!(
        "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group \
         [{map}, {{{inner}, {middle}, {outer}}}], [{source}];\n\
         cp.async.bulk.commit_group;",
        map = in(_) map,
        inner = in(_) inner,
        middle = in(_) middle,
        outer = in(_) outer,
        source = in(_) source,
    );
}

/// Waits until every bulk group this unit committed but the newest has read its shared memory.
#[cube]
pub(crate) fn wait_stores_read_but_one() {
    gpu_asm!("cp.async.bulk.wait_group.read 1;");
}

/// Waits until every bulk group this unit committed has read its shared memory, so that the
/// cube may exit (or reuse the memory).
#[cube]
pub(crate) fn wait_stores_read() {
    gpu_asm!("cp.async.bulk.wait_group.read 0;");
}
