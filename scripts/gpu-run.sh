#!/usr/bin/env bash
# Runs fmar's packed test binaries on a CUDA machine: the property harness on CUDA with each
# tensor-core variant pinned (FMAR_KERNEL), and the wgpu run over the NVIDIA Vulkan driver.
# Logs are packed into $OUT/run-results.tgz.
#
# Needs: .gpu/properties.xz and .gpu/quickstart.xz, release binaries built with
# `--features fmar/cuda-nvrtc` and packed with xz, and .gpu/gl/*.deb (the Vulkan loader).
# Environment: VARIANT_CASES (cases per pinned variant, default 25).
set -uo pipefail
out=/tmp/run-out
mkdir -p "$out"
cd "$(dirname "$0")/../.gpu" || exit 1
for f in properties.xz quickstart.xz; do [ -f "$f" ] && xz -dkf "$f" && chmod +x "${f%.xz}"; done

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
        FMAR_PROPTEST_CASES="${VARIANT_CASES:-25}" ./properties --test-threads 1 --nocapture random
done

for f in gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export BURN_DEVICE=wgpu
run properties_wgpu_regressions 40 ./properties --test-threads 1 --nocapture regressions
tail -n 60 "$out/properties_wgpu_regressions.log"
cat "$out/summary.txt"
tar czf "$OUT/run-results.tgz" -C "$out" . 2>/dev/null
