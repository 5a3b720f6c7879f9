#!/usr/bin/env bash
# One run of fmar's speed measurements on a machine with an NVIDIA GPU, CUDA's driver and
# NVRTC, and (for the anchor) PyTorch with Triton:
#
#   1. the property harness on CUDA with each listed variant pinned (`FMAR_KERNEL`), all dtypes;
#   2. the benchmark, one process per dtype (`bench_<dtype>.json`, the report that
#      render_benchmarks.py reads);
#   3. the PyTorch anchor, torch_anchor.py beside this script (it writes `torch_anchor.json`),
#      on the same machine, so that its figures are from the same hour.
#
# Usage: BENCH=/path/to/fmar-bench [PROPERTIES=/path/to/properties] bash bench/scripts/gpu-speed.sh
#
# The binaries, built in release with CUDA (NVRTC) and autotune:
#   cargo build --release -p fmar-bench --features cuda-nvrtc,autotune     # target/release/fmar-bench
#   cargo test --release -p fmar-tests --features fmar/cuda-nvrtc,fmar/autotune \
#       --test properties --no-run                                         # prints its path
# PROPERTIES is needed only for step 1 (PROPS_VARIANTS not empty), BENCH only for step 2
# (BENCH_DTYPES not empty).
#
# cubecl's tune cache can be carried between runs: it is read from TUNE_CACHE (a .tgz) when
# given and always written back as `tunecache.tgz` in OUT (the benchmark runs in a folder with no
# Cargo.toml above it, so cubecl keeps its cache in the user cache directory, which
# `XDG_CACHE_HOME` points into the work folder). The JSON files are copied to OUT, and every
# log comes back packed in OUT/results.tgz, beside `summary.txt`.
#
# Environment: BENCH, PROPERTIES, OUT (output folder, default /tmp/fmar-out), TUNE_CACHE,
# PROPS_VARIANTS (space-separated names; empty skips step 1), PROPS_CASES (cases per variant,
# default 40), PROPS_LIMIT (seconds per variant, default 360), BENCH_DTYPES (default "bf16"),
# BENCH_ARGS (extra benchmark arguments, default "--no-backward --budget-ms 150"), BENCH_LIMIT
# (seconds per dtype, default 240), ANCHOR (1 runs step 3).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
absolute() { (cd "$(dirname "$1")" && echo "$(pwd)/$(basename "$1")"); }
final=${OUT:-/tmp/fmar-out}
work=/tmp/fmar-run
out=$work/results
if [ -n "${PROPS_VARIANTS-}" ]; then
    [ -x "${PROPERTIES:-}" ] || { echo "PROPS_VARIANTS needs PROPERTIES=/path/to/properties" >&2; exit 2; }
    properties=$(absolute "$PROPERTIES")
fi
if [ -n "${BENCH_DTYPES-bf16}" ]; then
    [ -x "${BENCH:-}" ] || { echo "BENCH_DTYPES needs BENCH=/path/to/fmar-bench" >&2; exit 2; }
    bench=$(absolute "$BENCH")
fi
mkdir -p "$final" "$out" "$work/cache"
export XDG_CACHE_HOME=$work/cache RUST_BACKTRACE=1 BURN_DEVICE=cuda
[ -n "${TUNE_CACHE:-}" ] && tar xzf "$TUNE_CACHE" -C "$work/cache"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv | tee "$out/gpu.txt"

step() { # name, time limit in seconds, then the command (run in $work)
    local name=$1 limit=$2; shift 2
    local start=$(date +%s)
    (cd "$work" && timeout "$limit" "$@") > "$out/$name.log" 2>&1
    echo "=== $name: exit $? after $(( $(date +%s) - start )) s" | tee -a "$out/summary.txt"
}

for variant in ${PROPS_VARIANTS-}; do
    # A case costs 2-6 s on a fresh machine with a Hopper path pinned: most of it compiles the kernel
    # configurations its shapes and layouts need (the forward's and the backward's products).
    step "props_$variant" "${PROPS_LIMIT:-360}" env FMAR_KERNEL="$variant" CUBECL_AUTOTUNE_LEVEL=minimal \
        FMAR_PROPTEST_CASES="${PROPS_CASES:-40}" "$properties" --test-threads 1 random
    grep -hE "test result|^  [A-Z0-9]+ fusion|panicked" "$out/props_$variant.log" | tail -n 6
done

for dtype in ${BENCH_DTYPES-bf16}; do
    # shellcheck disable=SC2086
    step "bench_$dtype" "${BENCH_LIMIT:-240}" "$bench" --dtype "$dtype" --json "$out/bench_$dtype.json" \
        ${BENCH_ARGS---no-backward --budget-ms 150}
    grep -E "^\|" "$out/bench_$dtype.log" | grep -E "fmar \||burn|FAILED" | head -60
done

if [ "${ANCHOR:-0}" = 1 ]; then
    start=$(date +%s)
    (cd "$out" && OUT=$out ANCHOR_COMPILE=0 PYTHONUNBUFFERED=1 timeout 200 python3 "$here/torch_anchor.py") \
        > "$out/torch_anchor.log" 2>&1
    echo "=== torch_anchor: exit $? after $(( $(date +%s) - start )) s" | tee -a "$out/summary.txt"
fi

tar czf "$final/tunecache.tgz" -C "$work/cache" . 2>/dev/null
cp "$out/summary.txt" "$final/summary.txt"
cp "$out"/*.json "$final"/ 2>/dev/null
tar czf "$final/results.tgz" -C "$out" . 2>/dev/null
cat "$out/summary.txt"
