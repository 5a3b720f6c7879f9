#!/usr/bin/env bash
# The reliability tests on a CUDA machine: fill the device's memory until an allocation
# fails, then call again; an output over the device's limit; 8 threads at once; bit-identical
# reruns; a soak. Logs go to $OUT.
#
# Needs: .gpu/{out_of_memory,concurrency,determinism,soak}.xz, the fmar-tests test binaries of
# those names built in release with `--features fmar/cuda-nvrtc` (`cargo test --release
# --no-run`) and packed with xz into .gpu/.
set -uo pipefail
cd "$(dirname "$0")/../.gpu" || exit 1
for f in out_of_memory concurrency determinism soak; do
    xz -dkf "$f.xz" && chmod +x "$f"
done
run() { # name, time limit in seconds, then the command
    local name=$1 limit=$2; shift 2
    local start=$(date +%s)
    timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
    echo "=== $name: exit $? after $(( $(date +%s) - start )) s" | tee -a "$OUT/summary.txt"
    grep -E "test result|panicked|refused|after|succeeded|soak:|capacity|bit-identical" "$OUT/$name.log" | tail -n 12
}
export RUST_BACKTRACE=1 BURN_DEVICE=cuda FMAR_TEST_DEVICE=cuda FMAR_REQUIRE_DTYPES=f32,f16
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv | tee "$OUT/gpu.txt"
run out_of_memory 200 env FMAR_OOM_FILL=1 ./out_of_memory --nocapture --test-threads 1
run concurrency 100 ./concurrency --nocapture
run determinism 100 ./determinism --nocapture
run soak 150 env FMAR_SOAK_ITERATIONS=20000 ./soak --nocapture
