#!/usr/bin/env bash
# One run of fmar's speed measurements, from the repository root on a machine with an NVIDIA
# GPU, CUDA's driver and NVRTC, and (for the anchor) PyTorch:
#
#   1. the property harness on CUDA with each listed variant pinned (`FMAR_KERNEL`), all dtypes;
#   2. the forward benchmark, one process per dtype, every variant, Burn's fused path and Burn's
#      matmul alone;
#   3. a PyTorch anchor script, `.gpu/torch_anchor.py` when present (it writes
#      `torch_anchor.json`), on the same machine, so that its figures are from the same hour.
#
# Needs, in `.gpu/`: `properties.xz` and `bench.xz`, release binaries built with
# `--features fmar/cuda-nvrtc,fmar/autotune` (the test binary of `tests/tests/properties.rs` and
# the `bench` example), packed with `xz`. cubecl's tune cache is kept between runs: it is read
# from `.gpu/tunecache.tgz` when present and written back as `tunecache.tgz` in the output
# folder (the benchmark runs in a folder with no Cargo.toml above it, so cubecl keeps its cache in
# the user cache directory, which `XDG_CACHE_HOME` points here). The logs come back packed in
# `results.tgz`, beside `summary.txt`.
#
# Environment: OUT (output folder), PROPS_VARIANTS (space-separated names; empty skips step 1),
# PROPS_CASES (cases per variant, default 40), BENCH_DTYPES (default "bf16"), BENCH_ARGS (extra
# benchmark arguments, default "--no-backward --budget-ms 150"), BENCH_LIMIT (seconds per dtype,
# default 240), ANCHOR (1 runs step 3).
set -uo pipefail
root=$(pwd)
final=${OUT:-/tmp/fmar-out}
work=/tmp/fmar-run
out=$work/results
mkdir -p "$final" "$out" "$work/cache"
export XDG_CACHE_HOME=$work/cache RUST_BACKTRACE=1 BURN_DEVICE=cuda
[ -f .gpu/tunecache.tgz ] && tar xzf .gpu/tunecache.tgz -C "$work/cache"
for f in .gpu/properties.xz .gpu/bench.xz; do
    [ -f "$f" ] && xz -dc "$f" > "$work/$(basename "$f" .xz)" && chmod +x "$work/$(basename "$f" .xz)"
done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv | tee "$out/gpu.txt"

step() { # name, time limit in seconds, then the command (run in $work)
    local name=$1 limit=$2; shift 2
    local start=$(date +%s)
    (cd "$work" && timeout "$limit" "$@") > "$out/$name.log" 2>&1
    echo "=== $name: exit $? after $(( $(date +%s) - start )) s" | tee -a "$out/summary.txt"
}

for variant in ${PROPS_VARIANTS-}; do
    step "props_$variant" 120 env FMAR_KERNEL="$variant" CUBECL_AUTOTUNE_LEVEL=minimal \
        FMAR_PROPTEST_CASES="${PROPS_CASES:-40}" ./properties --test-threads 1 random
    grep -hE "test result|^  [A-Z0-9]+ fusion|panicked" "$out/props_$variant.log" | tail -n 6
done

for dtype in ${BENCH_DTYPES-bf16}; do
    # shellcheck disable=SC2086
    step "bench_$dtype" "${BENCH_LIMIT:-240}" ./bench --dtype "$dtype" --json "$out/bench_$dtype.json" \
        ${BENCH_ARGS---no-backward --budget-ms 150}
    grep -E "^\|" "$out/bench_$dtype.log" | grep -E "fmar \||burn|FAILED" | head -60
done

if [ "${ANCHOR:-0}" = 1 ] && [ -f "$root/.gpu/torch_anchor.py" ]; then
    start=$(date +%s)
    (cd "$out" && OUT=$out ANCHOR_COMPILE=0 PYTHONUNBUFFERED=1 timeout 200 python3 "$root/.gpu/torch_anchor.py") \
        > "$out/torch_anchor.log" 2>&1
    echo "=== torch_anchor: exit $? after $(( $(date +%s) - start )) s" | tee -a "$out/summary.txt"
fi

tar czf "$final/tunecache.tgz" -C "$work/cache" . 2>/dev/null
cp "$out/summary.txt" "$final/summary.txt"
tar czf "$final/results.tgz" -C "$out" . 2>/dev/null
cat "$out/summary.txt"
