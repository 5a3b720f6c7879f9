#!/usr/bin/env bash
# Runs fmar's packed release binaries on the lent H200 (see ../shared/gpu/README.md): the
# quickstart and the integration/property test binaries, on CUDA (with fmar's own variant
# choice, then with each tensor-core variant pinned) and on wgpu over the H200's Vulkan driver.
# Everything lands in $OUT.
#
# Carried: .gpu/*.xz (packed binaries) and .gpu/gl/*.deb (the Vulkan loader).
# Environment: CASES (property-harness cases with fmar's own choice, default 200) and
# VARIANT_CASES (cases per pinned variant, default 40).
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
cd "$(dirname "$0")/../.gpu" || exit 1
for f in *.xz; do xz -dkf "$f"; chmod +x "${f%.xz}"; done
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$out/gpu.txt"

run() { # name, time limit in seconds, then the command
    local name=$1 limit=$2; shift 2
    echo "=== $name: $*" | tee -a "$out/summary.txt"
    local start=$(date +%s)
    timeout "$limit" "$@" > "$out/$name.log" 2>&1
    local rc=$?
    echo "=== $name: exit $rc after $(( $(date +%s) - start )) s" | tee -a "$out/summary.txt"
    grep -E "test result|^  [A-Z0-9]+ fusion|^\| " "$out/$name.log" | tail -n 20
}

export RUST_BACKTRACE=1
export BURN_DEVICE=cuda
run quickstart_cuda 60 ./quickstart
run properties_cuda 120 env FMAR_PROPTEST_CASES="${CASES:-200}" ./properties --test-threads 1 --nocapture
for variant in simple_cmma simple_mma double_cmma double_mma; do
    run "properties_cuda_$variant" 50 env FMAR_KERNEL=$variant FMAR_PROPTEST_CASES="${VARIANT_CASES:-40}" \
        ./properties --test-threads 1 --nocapture random
done
run inputs_cuda 40 ./inputs --test-threads 1
run foundation_cuda 40 ./foundation --test-threads 1

for f in gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export BURN_DEVICE=wgpu
run quickstart_wgpu 40 ./quickstart
run properties_wgpu 60 env FMAR_PROPTEST_CASES=60 ./properties --test-threads 1 --nocapture
cat "$out/summary.txt"
