#!/usr/bin/env bash
# The reliability tests on a CUDA machine: fill the device's memory until an allocation
# fails, then call again; an output over the device's limit; 8 threads at once; bit-identical
# reruns; a soak. Logs and summary.txt go to OUT.
#
# Usage: OUT_OF_MEMORY=... CONCURRENCY=... DETERMINISM=... SOAK=... \
#            bash bench/scripts/gpu-reliability.sh
#
# Each variable is the path of the fmar-tests test binary of that name, built in release with
# CUDA (NVRTC):
#   cargo test --release -p fmar-tests --features fmar/cuda-nvrtc \
#       --test out_of_memory --test concurrency --test determinism --test soak --no-run
# which prints each binary's path (target/release/deps/<name>-<hash>).
#
# Environment: the four binaries (required), OUT (default /tmp/fmar-reliability-out).
set -uo pipefail
need() { # variable name: its value must be an executable file
    local path=${!1:-}
    if [ -z "$path" ] || [ ! -x "$path" ]; then
        echo "$1 must be the path of the $2 test binary (see this script's header)" >&2
        exit 2
    fi
}
need OUT_OF_MEMORY out_of_memory
need CONCURRENCY concurrency
need DETERMINISM determinism
need SOAK soak
out=${OUT:-/tmp/fmar-reliability-out}
mkdir -p "$out"
run() { # name, time limit in seconds, then the command
    local name=$1 limit=$2; shift 2
    local start=$(date +%s)
    timeout "$limit" "$@" > "$out/$name.log" 2>&1
    echo "=== $name: exit $? after $(( $(date +%s) - start )) s" | tee -a "$out/summary.txt"
    grep -E "test result|panicked|refused|after|succeeded|soak:|capacity|bit-identical" "$out/$name.log" | tail -n 12
}
export RUST_BACKTRACE=1 BURN_DEVICE=cuda FMAR_TEST_DEVICE=cuda FMAR_REQUIRE_DTYPES=f32,f16
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv | tee "$out/gpu.txt"
run out_of_memory 200 "$OUT_OF_MEMORY" --include-ignored --nocapture --test-threads 1
run concurrency 100 "$CONCURRENCY" --nocapture
run determinism 100 "$DETERMINISM" --nocapture
run soak 150 env FMAR_SOAK_ITERATIONS=20000 "$SOAK" --nocapture
