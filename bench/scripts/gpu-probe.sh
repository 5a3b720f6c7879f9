#!/usr/bin/env bash
# Probe: every fmar variant alone (pinned, no autotune), one process each, in bf16 on a small
# shape, reporting which ones run, which are unavailable and which fault the device
# (`probe.txt`). Then the f32 benchmark (gpu-bench.sh beside this script, PART=f32). Results go
# to OUT and are packed into OUT/probe-results.tgz.
#
# Usage: BENCH=/path/to/fmar-bench bash bench/scripts/gpu-probe.sh
#
# BENCH is the benchmark binary, built as for gpu-bench.sh:
#   cargo build --release -p fmar-bench --features cuda-nvrtc,autotune
#
# Environment: BENCH (required), OUT (default /tmp/fmar-probe-out).
set -uo pipefail
bench=${BENCH:?BENCH=/path/to/fmar-bench (cargo build --release -p fmar-bench --features cuda-nvrtc,autotune)}
[ -x "$bench" ] || { echo "BENCH=$bench is not an executable file" >&2; exit 2; }
bench=$(cd "$(dirname "$bench")" && pwd)/$(basename "$bench")
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/fmar-probe-out}
mkdir -p "$out"
export BURN_DEVICE=cuda
for dtype in bf16; do
    for v in tiled simple_cmma simple_mma double_cmma double_mma simple_multi_rows_cmma \
             simple_multi_rows_mma ordered_double_cmma ordered_double_mma specialized_double_cmma \
             specialized_double_mma simple_unit double_unit; do
        timeout 20 "$bench" --dtype $dtype --only $v --no-backward --budget-ms 50 \
            --shapes "8,256,512,384" > "$out/$dtype-$v.md" 2> "$out/$dtype-$v.err"
        rc=$?
        row=$(grep "| fmar" "$out/$dtype-$v.md" | head -1)
        fault=$(grep -c "status 715\|poisoned" "$out/$dtype-$v.err")
        echo "$dtype $v exit=$rc faults=$fault $row" | tee -a "$out/probe.txt"
    done
done
PART=f32 BUDGET_MS=150 BENCH="$bench" OUT="$out/f32-bench" bash "$here/gpu-bench.sh" > "$out/f32-bench.log" 2>&1
tail -n 40 "$out/f32-bench.log"
tar czf "$out/probe-results.tgz" --exclude probe-results.tgz -C "$out" . 2>/dev/null
