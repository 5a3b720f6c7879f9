#!/bin/bash
# Main at 434544f (f32 at up to 16 rows with an N-major weight read by the few-row split-K
# kernel): the property harness pinned to the Hopper kernel, 300 cases, 16-byte-aligned dims.
set -u
. bench/scripts/device-lib.sh
unpack properties
export RUST_BACKTRACE=1 BURN_DEVICE=cuda FMAR_TEST_DEVICE=cuda
run properties 240 env FMAR_KERNEL=hopper FMAR_PROPTEST_ALIGN=8 FMAR_PROPTEST_CASES=300 FMAR_PROPTEST_VERBOSE=1 /tmp/properties --test-threads 1 --nocapture
{
echo "cases run: $(grep -c '^case ' /tmp/logs/properties.log)"
grep -h "^test \|test result" /tmp/logs/properties.log
sed -n '/property harness on/,$p' /tmp/logs/properties.log | tail -30
grep -h "panicked\|outside tolerance" /tmp/logs/properties.log | head -10
} >> $OUT/summary.txt
save
