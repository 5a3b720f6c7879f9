#!/usr/bin/env bash
# The Hopper kernel on an NVIDIA H100/H200, from the kernel crate alone (no Burn):
#
#   1. the kernel contract tests on CUDA with every Hopper path, and each path pinned on the
#      problems it takes (`hopper_paths`);
#   2. `hopper_bench`: every shape, dtype and rhs layout, the crate's choice beside a
#      comparison variant, each run checked at sampled outputs before it is timed;
#   3. the PyTorch anchor (`ANCHOR=bench/scripts/torch_anchor.py`, or another anchor script), in
#      the same call.
#
# Usage: bench/scripts/gpu-hopper.sh BENCH_BINARY CONTRACT_TEST_BINARY PATHS_TEST_BINARY [OUT]
# The binaries come from
#   cargo build --release -p fmar-kernel --features cuda --example hopper_bench
#   cargo test --release -p fmar-kernel --features cuda --test against_f64 --test hopper_paths \
#       --no-run
# Environment: BENCH_ARGS (extra hopper_bench arguments), CONTRACT_LIMIT / BENCH_LIMIT (seconds).
set -uo pipefail
bench=$1
contract=$2
paths=$3
out=${4:-${OUT:-/tmp/fmar-hopper}}
mkdir -p "$out"
export RUST_BACKTRACE=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu.txt"

step() { # name, time limit in seconds, then the command
    local name=$1 limit=$2; shift 2
    local start=$(date +%s)
    timeout "$limit" "$@" > "$out/$name.log" 2>&1
    echo "=== $name: exit $? after $(( $(date +%s) - start )) s" | tee -a "$out/summary.txt"
}

hopper=hopper-tiles,hopper-split-k,hopper-few-rows,hopper-few-rows-tma,hopper-few-rows-cluster
hopper=$hopper,hopper-swapped,hopper-swapped-tma,hopper-swapped-tiles
FMAR_TEST_DEVICE=cuda FMAR_TEST_VARIANTS=$hopper \
    step contract "${CONTRACT_LIMIT:-480}" "$contract" --test-threads 1
grep -E "^test |test result|panicked|declined" "$out/contract.log" | tail -30 | tee -a "$out/summary.txt"
FMAR_TEST_DEVICE=cuda step paths "${CONTRACT_LIMIT:-480}" "$paths" --test-threads 1
grep -E "^test |test result|panicked" "$out/paths.log" | tail -10 | tee -a "$out/summary.txt"

# shellcheck disable=SC2086
step bench "${BENCH_LIMIT:-240}" "$bench" --variants launch,simple_multi_rows_mma ${BENCH_ARGS:-}
grep -E "^device|^RESULT|panicked" "$out/bench.log" | tee -a "$out/summary.txt"

if [ -n "${ANCHOR:-}" ]; then
    step anchor 150 env OUT="$out" python3 "$ANCHOR"
fi
