#!/bin/bash
# 46b56ec (the masked gradient's own partials buffer): the property harness pinned to the Hopper
# kernel on CUDA, its regression cases included.
set -u
mkdir -p /tmp/logs
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
xz -dc .gpu/properties.xz > /tmp/properties && chmod +x /tmp/properties
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; save; }
export FMAR_TEST_DEVICE=cuda BURN_DEVICE=cuda RUST_BACKTRACE=1
run properties 150 env FMAR_KERNEL=hopper FMAR_PROPTEST_ALIGN=8 FMAR_PROPTEST_CASES=300 FMAR_PROPTEST_VERBOSE=1 /tmp/properties --test-threads 1 --nocapture
echo "cases run: $(grep -c '^case ' /tmp/logs/properties.log)" >> $OUT/summary.txt
grep -h "^test \|test result" /tmp/logs/properties.log >> $OUT/summary.txt
sed -n '/property harness on/,$p' /tmp/logs/properties.log | tail -30 >> $OUT/summary.txt
save
