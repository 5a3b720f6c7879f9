#!/bin/bash
# Builds, here, what `call.sh` beside this script runs on a device: the kernel bench
# (`hopper_bench`) and `against_f64` of main (`hb_main`, `t_main`) and of main with each change
# of this run record applied (`persistent`: tiles-persistent.patch, `pairs`: tiles-pairs.patch,
# `both`: tiles-both.diff), and `against_f64` of `both` with its bias dropped (`t_mut`), packed
# as `.gpu/ab.tar.xz`. From the repository root, with CUDA_CARGO the cargo command that builds
# for CUDA here (cargo itself, or a wrapper that passes the CUDA build's `--config`) and TARGET
# the release target folder to reuse. Each change is built in a worktree of its own.
set -euo pipefail
cargo=${CUDA_CARGO:?the cargo wrapper with the CUDA build configuration}
export CARGO_TARGET_DIR=${TARGET:?a release target folder}
here=$(pwd)
record=$here/bench/runs/2026-12-06-tf32-tiles
out=$(mktemp -d)
executable() { sed -n "s|.*Executable $1 .*(\(.*\))$|\1|p"; }
build() { # name: the worktree's kernel bench and against_f64
    (cd "$1" &&
        "$cargo" build --release -p fmar-kernel --features cuda --example hopper_bench >&2 &&
        cp "$CARGO_TARGET_DIR/release/examples/hopper_bench" "$out/hb_$2" &&
        "$cargo" test --release -p fmar-kernel --features cuda --test against_f64 --no-run \
            --message-format short 2>&1 | tee "$out/tests.log" >&2 &&
        cp "$(executable 'tests/against_f64.rs' < "$out/tests.log")" "$out/t_$2")
}
for name in main persistent pairs both; do
    tree=$out/wt-$name
    git worktree add -q --detach "$tree" HEAD
    case $name in
        persistent) git -C "$tree" apply "$record/tiles-persistent.patch" ;;
        pairs) git -C "$tree" apply "$record/tiles-pairs.patch" ;;
        both) git -C "$tree" apply "$record/tiles-both.diff" ;;
    esac
    build "$tree" "$name"
done
# The mutant: `both` with the bias multiplied by zero in the paired store.
tiles=$out/wt-both/crates/kernel/src/hopper/swapped_tiles.rs
perl -0pi -e 's/(finish_vector::<f32, O>\(sums, )biases,/$1biases * Vector::<f32, O>::new(0.0),/' "$tiles"
grep -q 'sums, biases \* Vector::<f32, O>::new(0.0)' "$tiles" || { echo "the mutant was not made" >&2; exit 1; }
(cd "$out/wt-both" && "$cargo" test --release -p fmar-kernel --features cuda --test against_f64 \
    --no-run --message-format short 2>&1 | tee "$out/tests.log" >&2)
cp "$(executable 'tests/against_f64.rs' < "$out/tests.log")" "$out/t_mut"
for name in main persistent pairs both; do git worktree remove --force "$out/wt-$name"; done
mkdir -p .gpu
(cd "$out" && strip hb_* t_* && tar cf - hb_* t_*) | xz -6 -T2 > .gpu/ab.tar.xz
ls -l .gpu/ab.tar.xz
