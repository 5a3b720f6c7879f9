#!/usr/bin/env bash
set -u
out=${OUT:-/tmp/out}
mkdir -p /tmp/bin "$out"
xz -dc .gpu/properties.xz > /tmp/bin/properties && chmod +x /tmp/bin/properties
export BURN_DEVICE=cuda RUST_BACKTRACE=1
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$out/gpu.txt"
cd /tmp
step() { local name=$1 limit=$2; shift 2; local s=$(date +%s)
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  echo "=== $name: exit $? after $(( $(date +%s) - s )) s" | tee -a "$out/summary.txt"; }
FMAR_KERNEL=hopper FMAR_PROPTEST_CASES=${CASES:-200} step properties_hopper ${LIMIT:-420} /tmp/bin/properties --test-threads 1 --nocapture
grep -E "^test |test result|panicked|property harness|  [A-Za-z0-9]+ fusion=" "$out/properties_hopper.log" | tail -40 | tee -a "$out/summary.txt"
