#!/bin/bash
# (A record: at commit d73b630, which selected `swapped_tiles` only in a build made with
# `FMAR_SWAPPED_TILES` set. Later commits select it always.)
# Builds, here, what `device-tf32-tiles.sh` runs on the device, and packs it as
# `.gpu/st.tar.xz`: the kernel bench with and without `swapped_tiles` selected (`hb_st`,
# `hb_lk`), `against_f64` and the kernel crate's lib tests with it (`t_st`, `l_st`), and
# `against_f64` of a mutant whose epilogue drops the bias (`t_mut`). From the repository root,
# with CUDA_CARGO the cargo command that builds for CUDA here (cargo itself, or a wrapper that
# passes the CUDA build's `--config`) and TARGET the release target folder to reuse.
set -euo pipefail
cargo=${CUDA_CARGO:?the cargo wrapper with the CUDA build configuration}
export CARGO_TARGET_DIR=${TARGET:?a release target folder}
release=$CARGO_TARGET_DIR/release
out=$(mktemp -d)
tiles=crates/kernel/src/hopper/swapped_tiles.rs
# The executable a `--no-run` build reports for `what` (unittests, or a test's file name).
executable() { sed -n "s|.*Executable $1 .*(\(.*\))$|\1|p"; }
build_tests() {
    "$cargo" test --release -p fmar-kernel --features cuda --lib --test against_f64 --no-run \
        --message-format short 2>&1 | tee "$out/tests.log" >&2
}
"$cargo" build --release -p fmar-kernel --features cuda --example hopper_bench >&2
cp "$release/examples/hopper_bench" "$out/hb_lk"
export FMAR_SWAPPED_TILES=1
"$cargo" build --release -p fmar-kernel --features cuda --example hopper_bench >&2
cp "$release/examples/hopper_bench" "$out/hb_st"
build_tests
cp "$(executable 'unittests src/lib.rs' < "$out/tests.log")" "$out/l_st"
cp "$(executable 'tests/against_f64.rs' < "$out/tests.log")" "$out/t_st"
# The mutant: the epilogue's bias multiplied by zero.
cp "$tiles" "$out/swapped_tiles.rs"
trap 'cp "$out/swapped_tiles.rs" "$tiles"' EXIT
perl -0pi -e 's/(\),\n\s*)biases,(\n\s*col \+ c,)/$1biases * Vector::<f32, Const<1>>::new(0.0),$2/' "$tiles"
grep -q 'biases \* Vector::<f32, Const<1>>::new(0.0)' "$tiles" || { echo "the mutant was not made" >&2; exit 1; }
build_tests
cp "$(executable 'tests/against_f64.rs' < "$out/tests.log")" "$out/t_mut"
cp "$out/swapped_tiles.rs" "$tiles"
trap - EXIT
git checkout -q Cargo.lock 2>/dev/null || true
mkdir -p .gpu
(cd "$out" && strip hb_lk hb_st t_st l_st t_mut && tar cf - hb_lk hb_st t_st l_st t_mut) |
    xz -6 -T2 > .gpu/st.tar.xz
ls -l .gpu/st.tar.xz
