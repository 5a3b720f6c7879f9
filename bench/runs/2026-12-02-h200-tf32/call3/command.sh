#!/usr/bin/env bash
# The TF32 path through Burn's tests on the H200: path_proof's backward products (bf16 and f32 on the
# Hopper kernel), the property harness with the Hopper kernel pinned (every dtype), and two mutants of
# the f32 path that the kernel crate's mask test must catch.
set -u
for f in properties path_proof against_f64_mutA against_f64_mutB; do xz -dc .gpu/$f.xz > /tmp/$f && chmod +x /tmp/$f; done
export BURN_DEVICE=cuda FMAR_TEST_DEVICE=cuda RUST_BACKTRACE=1
mkdir -p /tmp/logs
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt; (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
# Mutant A: the f32 epilogue writes its chunk without the 128-byte swizzle. Mutant B: the K-major
# copy reads its shared-memory block untransposed. Both must fail.
run mutA 90 /tmp/against_f64_mutA mask_follows --test-threads 1
run mutB 90 /tmp/against_f64_mutB mask_follows --test-threads 1
run path_proof 120 /tmp/path_proof backward_products --test-threads 1
export FMAR_KERNEL=hopper FMAR_PROPTEST_ALIGN=8 FMAR_PROPTEST_CASES=200 FMAR_PROPTEST_VERBOSE=1
run properties 270 /tmp/properties random_cases --test-threads 1
