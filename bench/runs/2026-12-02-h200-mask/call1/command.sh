#!/usr/bin/env bash
# Kernel contract on the H200: the mask test (Hopper epilogue, split-K pack, f32 fallback), the Hopper fused and product tests.
cd .gpu && xz -dk against_f64-c521a2fb969e5440.xz && chmod +x against_f64-c521a2fb969e5440 && cd ..
export FMAR_TEST_DEVICE=cuda RUST_BACKTRACE=1 XDG_CACHE_HOME=/tmp/cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
s=$(date +%s); (cd crates/kernel && timeout 400 ../../.gpu/against_f64-c521a2fb969e5440 --test-threads 1 mask_follows hopper_ each_variant --nocapture) > $OUT/kernel.log 2>&1; echo "kernel rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt
grep -E "^test |test result|panicked|mask word|gradient element|column" $OUT/kernel.log | head -30
