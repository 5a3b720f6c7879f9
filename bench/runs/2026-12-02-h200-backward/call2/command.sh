#!/usr/bin/env bash
# Tests: the kernel's hopper contract (fused and plain product), the product mutant, path proof, property harness.
cd .gpu && rm -f against_f64 against_f64_mutant path_proof-7232f1ec319cac27 properties-b4eda2e1cddc2b3a; for f in against_f64 against_f64_mutant path_proof-7232f1ec319cac27 properties-b4eda2e1cddc2b3a; do xz -dk $f.xz; chmod +x $f; done; cd ..
export BURN_DEVICE=cuda FMAR_TEST_DEVICE=cuda RUST_BACKTRACE=1 XDG_CACHE_HOME=/tmp/cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
s=$(date +%s); timeout 150 .gpu/against_f64 --test-threads 1 hopper --nocapture > $OUT/kernel_hopper.log 2>&1; echo "kernel_hopper rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt
s=$(date +%s); timeout 100 .gpu/against_f64_mutant --test-threads 1 hopper_product > $OUT/mutant.log 2>&1; echo "mutant rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt
s=$(date +%s); timeout 120 .gpu/path_proof-7232f1ec319cac27 --test-threads 1 > $OUT/path_proof.log 2>&1; echo "path_proof rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt
s=$(date +%s); FMAR_KERNEL=hopper FMAR_PROPTEST_ALIGN=8 FMAR_PROPTEST_CASES=64 CUBECL_AUTOTUNE_LEVEL=minimal timeout 270 .gpu/properties-b4eda2e1cddc2b3a --test-threads 1 random --nocapture > $OUT/props_hopper.log 2>&1; echo "props rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt
grep -E "test result|panicked|gradient products|fusion=" $OUT/*.log | head -40
