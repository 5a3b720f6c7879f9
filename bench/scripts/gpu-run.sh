#!/usr/bin/env bash
# The property harness on a CUDA machine: on CUDA with each tensor-core variant pinned
# (FMAR_KERNEL), then its regression cases on wgpu over the NVIDIA Vulkan driver. Logs and
# summary.txt go to OUT, packed into OUT/run-results.tgz.
#
# Usage: PROPERTIES=/path/to/properties bash bench/scripts/gpu-run.sh
#
# PROPERTIES is the fmar-tests property-harness binary, built in release with CUDA (NVRTC):
#   cargo test --release -p fmar-tests --features fmar/cuda-nvrtc --test properties --no-run
# which prints its path (target/release/deps/properties-<hash>).
#
# Environment: PROPERTIES (required), OUT (default /tmp/fmar-run-out), VARIANT_CASES (cases per
# pinned variant, default 25), VULKAN_DEBS (a folder of .deb packages holding the Vulkan loader,
# unpacked into / before the wgpu run, for machines that lack it; needs root).
set -uo pipefail
properties=${PROPERTIES:?PROPERTIES=/path/to/the properties test binary (see this script\'s header)}
[ -x "$properties" ] || { echo "PROPERTIES=$properties is not an executable file" >&2; exit 2; }
out=${OUT:-/tmp/fmar-run-out}
mkdir -p "$out"

run() { # name, time limit in seconds, then the command
    local name=$1 limit=$2; shift 2
    local start=$(date +%s)
    timeout "$limit" "$@" > "$out/$name.log" 2>&1
    local rc=$?
    echo "=== $name: exit $rc after $(( $(date +%s) - start )) s" | tee -a "$out/summary.txt"
    grep -E "test result|^  [A-Z0-9]+ fusion|panicked" "$out/$name.log" | tail -n 12
}

export RUST_BACKTRACE=1
export BURN_DEVICE=cuda
for variant in double_mma simple_cmma ordered_double_cmma specialized_double_mma; do
    run "properties_cuda_$variant" 45 env FMAR_KERNEL=$variant \
        FMAR_PROPTEST_CASES="${VARIANT_CASES:-25}" "$properties" --test-threads 1 --nocapture random
done

if [ -n "${VULKAN_DEBS:-}" ]; then
    for f in "$VULKAN_DEBS"/*.deb; do dpkg -x "$f" /; done
    ldconfig
fi
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export BURN_DEVICE=wgpu
run properties_wgpu_regressions 40 "$properties" --test-threads 1 --nocapture regressions
tail -n 60 "$out/properties_wgpu_regressions.log"
cat "$out/summary.txt"
tar czf "$out/run-results.tgz" --exclude run-results.tgz -C "$out" . 2>/dev/null
