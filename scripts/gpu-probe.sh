#!/usr/bin/env bash
# Probe: every fmar variant alone (pinned, no autotune), one process each, in bf16 on a small
# shape, reporting which ones run, which are unavailable and which fault the device. Then the
# f32 benchmark (scripts/gpu-bench.sh). Results packed into $OUT/probe-results.tgz.
#
# Needs: .gpu/bench.xz, as for scripts/gpu-bench.sh (a release build of the bench example with
# `--features fmar/cuda-nvrtc,fmar/autotune`, packed with xz into .gpu/).
set -uo pipefail
out=/tmp/probe-out
mkdir -p "$out"
gpu=$(cd "$(dirname "$0")/../.gpu" && pwd)
cd "$gpu" && xz -dkf bench.xz && chmod +x bench
export BURN_DEVICE=cuda
for dtype in bf16; do
    for v in tiled simple_cmma simple_mma double_cmma double_mma simple_multi_rows_cmma \
             simple_multi_rows_mma ordered_double_cmma ordered_double_mma specialized_double_cmma \
             specialized_double_mma simple_unit double_unit; do
        timeout 20 ./bench --dtype $dtype --only $v --no-backward --budget-ms 50 \
            --shapes "8,256,512,384" > "$out/$dtype-$v.md" 2> "$out/$dtype-$v.err"
        rc=$?
        row=$(grep "| fmar" "$out/$dtype-$v.md" | head -1)
        fault=$(grep -c "status 715\|poisoned" "$out/$dtype-$v.err")
        echo "$dtype $v exit=$rc faults=$fault $row" | tee -a "$out/probe.txt"
    done
done
PART=f32 BUDGET_MS=150 bash "$gpu/../scripts/gpu-bench.sh" > "$out/f32-bench.log" 2>&1
tail -n 40 "$out/f32-bench.log"
tar czf "$OUT/probe-results.tgz" -C "$out" . 2>/dev/null
