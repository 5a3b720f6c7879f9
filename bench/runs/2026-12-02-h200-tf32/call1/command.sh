#!/bin/bash
# TF32 Hopper kernel: tests on the device, f32 timing, half regression, PyTorch TF32 anchor, memcheck.
mkdir -p /tmp/logs
save() { tar czf $OUT/logs.tgz -C /tmp logs; }
for f in against_f64 hopper_bench; do xz -dc .gpu/$f.xz > /tmp/$f && chmod +x /tmp/$f; done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > /tmp/logs/smi.txt
export FMAR_TEST_DEVICE=cuda
( time timeout 230 /tmp/against_f64 hopper mask_follows --test-threads 1 ) > /tmp/logs/tests-hopper.log 2>&1; echo "rc=$?" >> /tmp/logs/tests-hopper.log; save
( time timeout 110 /tmp/hopper_bench --dtypes f32 --variants hopper,simple_multi_rows_mma --lhs k --rhs n,k 1,4096,4096,4096 1,16384,1024,4096 1,8192,8192,8192 1,128,4096,4096 1,1,4096,4096 ) > /tmp/logs/bench-f32.log 2>&1; save
( time timeout 40 /tmp/hopper_bench --dtypes bf16,f16 --rhs n 1,4096,4096,4096 1,16384,1024,4096 ) > /tmp/logs/bench-half.log 2>&1; save
( cd /tmp/logs && time OUT=/tmp/logs ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=tf32 ANCHOR_SHAPES="1,4096,4096,4096;1,16384,1024,4096;1,128,4096,4096;1,1,4096,4096" timeout 80 python3 $OLDPWD/bench/scripts/torch_anchor.py ) > /tmp/logs/anchor.log 2>&1; save
( time timeout 60 compute-sanitizer --tool memcheck /tmp/hopper_bench --dtypes f32 --reps 1 --lhs k,m --rhs n,k 2,130,77,264 1,9,4104,1000 ) > /tmp/logs/memcheck.log 2>&1; save
( time timeout 60 /tmp/against_f64 f32_matches broadcast_batch transposed_rhs --test-threads 1 ) > /tmp/logs/tests-contract-f32.log 2>&1; echo "rc=$?" >> /tmp/logs/tests-contract-f32.log; save
