#!/usr/bin/env bash
# The benchmark on a CUDA machine: one process per dtype, so that a failure in one cannot
# poison the others; f32 twice, with TF32 allowed (cubek's default) and strict (a cubek.toml
# with allow_tf32 = false in the working directory). Each process writes its JSON report
# (`NAME.json`), its table (`NAME.md`) and its stderr (`NAME.err`) to OUT, with `gpu.txt` and
# `summary.txt`; everything is also packed into OUT/bench-results.tgz.
#
# Usage: BENCH=/path/to/fmar-bench bash bench/scripts/gpu-bench.sh
#
# BENCH is the benchmark binary, built in release with CUDA (NVRTC) and autotune:
#   cargo build --release -p fmar-bench --features cuda-nvrtc,autotune
# which leaves it at target/release/fmar-bench.
#
# Environment: BENCH (required), OUT (where results go, default /tmp/fmar-bench-out), WORK
# (the working directories, default /tmp/fmar-bench-work), PART (half: bf16 and f16; bf16-f32;
# f32: TF32; f32-strict) and BUDGET_MS (time per candidate, default 200).
set -uo pipefail
bench=${BENCH:?BENCH=/path/to/fmar-bench (cargo build --release -p fmar-bench --features cuda-nvrtc,autotune)}
[ -x "$bench" ] || { echo "BENCH=$bench is not an executable file" >&2; exit 2; }
bench=$(cd "$(dirname "$bench")" && pwd)/$(basename "$bench")
out=${OUT:-/tmp/fmar-bench-out}
work=${WORK:-/tmp/fmar-bench-work}
mkdir -p "$out" "$work"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee "$out/gpu.txt"
export BURN_DEVICE=cuda RUST_BACKTRACE=1
budget=${BUDGET_MS:-200}
run() { # name, limit, directory, then arguments
    local name=$1 limit=$2 dir=$3; shift 3
    mkdir -p "$dir"
    local start=$(date +%s)
    (cd "$dir" && timeout "$limit" "$bench" --budget-ms "$budget" --json "$out/$name.json" "$@") \
        > "$out/$name.md" 2> "$out/$name.err"
    echo "=== $name: exit $? after $(( $(date +%s) - start )) s" | tee -a "$out/summary.txt"
}
case "${PART:-half}" in
half)
    run bf16 250 "$work" --dtype bf16
    run f16 250 "$work" --dtype f16
    ;;
bf16-f32)
    run bf16 170 "$work" --dtype bf16
    run f32_tf32 150 "$work" --dtype f32
    ;;
f32)
    run f32_tf32 150 "$work" --dtype f32
    ;;
f32-strict)
    mkdir -p "$work/strict" && printf '[matmul]\nallow_tf32 = false\n' > "$work/strict/cubek.toml"
    run f32_strict 90 "$work/strict" --dtype f32 --no-variants --no-backward
    ;;
*)
    echo "PART=${PART} is none of half, bf16-f32, f32, f32-strict" >&2
    exit 2
    ;;
esac
cat "$out/summary.txt"
grep -h "| forward" "$out"/*.md | grep -E "burn fused|burn matmul|fmar \||FAILED" | head -80
# Pack everything into one archive beside the files.
tar czf "$out/bench-results.tgz" --exclude bench-results.tgz -C "$out" . 2>/dev/null
