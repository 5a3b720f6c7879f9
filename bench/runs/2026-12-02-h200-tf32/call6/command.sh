#!/usr/bin/env bash
# After the copies' feasibility moved before any launch: the mask test (f32 first, through both
# K-major copies' layouts and split-K) on the H200.
xz -dc .gpu/against_f64.xz > /tmp/against_f64 && chmod +x /tmp/against_f64
export FMAR_TEST_DEVICE=cuda
mkdir -p /tmp/logs
s=$(date +%s); timeout 110 /tmp/against_f64 mask_follows hopper_product --test-threads 1 > /tmp/logs/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt
cp /tmp/logs/tests.log $OUT/
