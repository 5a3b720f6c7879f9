#!/usr/bin/env bash
# Mutation check: split-K's second kernel made to drop the last slice; the hopper contract test
# must fail on its split-K problems.
set -u
out=${OUT:?}
mkdir -p /tmp/bin
xz -dc .gpu/against_f64.xz > /tmp/bin/against_f64 && chmod +x /tmp/bin/against_f64
FMAR_TEST_DEVICE=cuda FMAR_TEST_VARIANTS=hopper FMAR_KERNEL=hopper timeout 200 /tmp/bin/against_f64 hopper --test-threads 1 > $out/contract.log 2>&1
echo "exit $?"
grep -E "test result|panicked|hopper (BF16|F16)|worst|element" $out/contract.log | head -12
