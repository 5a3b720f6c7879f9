//! Inline-PTX plumbing every Hopper kernel shares: operands passed by value, the shared- and
//! global-window addresses that PTX instructions name memory by, and a warpgroup's named
//! barrier.
//!
//! `gpu_asm!` (cubecl's inline PTX) passes an `in` operand's raw value: a vector held in a
//! variable is a pointer there, which cubecl's C++ would pass as one `l` operand, shifting
//! every operand number after it. [`by_value`] reads it to a value first, so that its elements
//! are passed.

use cubecl::prelude::*;

/// `v` read to a value, so that `gpu_asm!` passes its elements (see the module's doc).
#[cube]
pub(crate) fn by_value<T: CubePrimitive>(v: T) -> T {
    intrinsic!(|scope| {
        let value = v.read_value(scope);
        value.into()
    })
}

/// The shared-window address of a shared-memory slice (`cvta.to.shared`), for descriptors,
/// mbarriers and TMA copies.
#[cube]
pub(crate) fn shared_address<T: CubePrimitive>(tile: &[T]) -> u32 {
    let pointer = tile.as_ptr();
    let address: u32;
    gpu_asm!(
        "{{ .reg .u64 fmar_t; cvta.to.shared.u64 fmar_t, {p}; cvt.u32.u64 {a}, fmar_t; }}",
        a = out(_) address,
        p = in(_) pointer,
        options(pure, nomem),
    );
    address
}

/// The global-window address of a global tensor's buffer (`cvta.to.global`), for `cp.async`.
#[cube]
pub(crate) fn global_address(buffer: &[f32]) -> u64 {
    let pointer = buffer.as_ptr();
    let address: u64;
    gpu_asm!(
        "cvta.to.global.u64 {a}, {p};",
        a = out(_) address,
        p = in(_) pointer,
        options(pure, nomem),
    );
    address
}

/// Synchronises the 128 units of consumer warpgroup `warpgroup` (named barrier `1 +
/// warpgroup`; barrier 0 is the whole cube's, which a producer unit never joins).
#[cube]
pub(crate) fn warpgroup_barrier(warpgroup: u32) {
    let id = warpgroup + 1;
    gpu_asm!("bar.sync {id}, 128;", id = in(_) id);
}
