#!/usr/bin/env bash
# Runs fmar's packed release binaries on the lent H200 (see ../shared/gpu/README.md): the
# quickstart and the integration/property test binaries, on CUDA and then on wgpu over the
# H200's Vulkan driver. Everything it prints also lands in $OUT.
#
# Carried: .gpu/*.xz (packed binaries) and .gpu/gl/*.deb (the Vulkan loader).
# Environment: CASES (property-harness cases per runtime, default 300).
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
    tail -n 25 "$out/$name.log"
}

export RUST_BACKTRACE=1
export BURN_DEVICE=cuda
run quickstart_cuda 90 ./quickstart
run properties_cuda 200 env FMAR_PROPTEST_CASES="${CASES:-300}" ./properties --test-threads 1
run inputs_cuda 60 ./inputs --test-threads 1
run foundation_cuda 40 ./foundation --test-threads 1

for f in gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export BURN_DEVICE=wgpu
run quickstart_wgpu 60 ./quickstart
run properties_wgpu 100 env FMAR_PROPTEST_CASES=100 ./properties --test-threads 1
cat "$out/summary.txt"
