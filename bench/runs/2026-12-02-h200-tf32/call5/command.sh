#!/usr/bin/env bash
# The property harness with the Hopper kernel pinned, every dtype, cases printed as they run.
set -u
xz -dc .gpu/properties.xz > /tmp/properties && chmod +x /tmp/properties
export BURN_DEVICE=cuda FMAR_TEST_DEVICE=cuda RUST_BACKTRACE=1
export FMAR_KERNEL=hopper FMAR_PROPTEST_ALIGN=8 FMAR_PROPTEST_CASES=64 FMAR_PROPTEST_VERBOSE=1
mkdir -p /tmp/logs
s=$(date +%s); timeout 290 /tmp/properties random_cases --test-threads 1 --nocapture > /tmp/logs/properties.log 2>&1
echo "properties rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt
(cd /tmp/logs && tar czf $OUT/logs.tgz .)
