#!/usr/bin/env bash
# The benchmark on a CUDA machine: one process per dtype, so that a failure in one cannot
# poison the others; f32 twice, with TF32 allowed (cubek's default) and strict (a cubek.toml
# with allow_tf32 = false in the working directory). Results land in $OUT.
#
# Needs: .gpu/bench.xz, the bench example as a release binary built with
# `cargo build --release --features fmar/cuda-nvrtc,fmar/autotune -p fmar --example bench`
# and packed with xz into .gpu/. Environment: OUT (where results go), PART (half: bf16 and
# f16; bf16-f32; f32: TF32; f32-strict) and BUDGET_MS (time per candidate, default 200).
set -uo pipefail
out=/tmp/bench-out
mkdir -p "$out"
gpu=$(cd "$(dirname "$0")/../.gpu" && pwd)
cd "$gpu" || exit 1
xz -dkf bench.xz && chmod +x bench
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee "$out/gpu.txt"
export BURN_DEVICE=cuda RUST_BACKTRACE=1
budget=${BUDGET_MS:-200}
run() { # name, limit, directory, then arguments
    local name=$1 limit=$2 dir=$3; shift 3
    mkdir -p "$dir"
    local start=$(date +%s)
    (cd "$dir" && timeout "$limit" "$gpu/bench" --budget-ms "$budget" --json "$out/$name.json" "$@") \
        > "$out/$name.md" 2> "$out/$name.err"
    echo "=== $name: exit $? after $(( $(date +%s) - start )) s" | tee -a "$out/summary.txt"
}
case "${PART:-half}" in
half)
    run bf16 250 "$gpu" --dtype bf16
    run f16 250 "$gpu" --dtype f16
    ;;
bf16-f32)
    run bf16 170 "$gpu" --dtype bf16
    run f32_tf32 150 "$gpu" --dtype f32
    ;;
f32)
    run f32_tf32 150 "$gpu" --dtype f32
    ;;
f32-strict)
    mkdir -p "$gpu/strict" && printf '[matmul]\nallow_tf32 = false\n' > "$gpu/strict/cubek.toml"
    run f32_strict 90 "$gpu/strict" --dtype f32 --no-variants --no-backward
    ;;
esac
cat "$out/summary.txt"
grep -h "| forward" "$out"/*.md | grep -E "burn reference|fmar \||fmar naive" | head -80
# Pack everything into one archive.
tar czf "$OUT/bench-results.tgz" -C "$out" . 2>/dev/null
