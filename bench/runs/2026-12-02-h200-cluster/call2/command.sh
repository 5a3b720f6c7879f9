#!/bin/bash
# Cluster split-K: tests (and a mutant), small-m timing against the old figures and PyTorch, big-shape regression, memcheck, ncu.
mkdir -p /tmp/logs
save() { tar czf $OUT/logs.tgz -C /tmp logs; }
for f in against_f64 hopper_bench mutant_unsummed; do xz -dc .gpu/$f.xz > /tmp/$f && chmod +x /tmp/$f; done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > /tmp/logs/smi.txt
export FMAR_TEST_DEVICE=cuda
( time timeout 120 /tmp/hopper_bench --dtypes bf16,f16,f32 --rhs n,k 1,1,4096,4096 1,16,4096,4096 1,128,4096,4096 1,1,1024,4096 3,1,4104,1000 ) > /tmp/logs/bench-small.log 2>&1; save
( time timeout 40 /tmp/hopper_bench --dtypes bf16 --rhs n --outputs 8 1,1,4096,4096 1,128,4096,4096 1,4096,4096,4096 ) > /tmp/logs/bench-outputs8.log 2>&1; save
( time timeout 200 /tmp/against_f64 hopper mask_follows --test-threads 1 ) > /tmp/logs/tests-hopper.log 2>&1; echo "rc=$?" >> /tmp/logs/tests-hopper.log; save
( time timeout 60 /tmp/mutant_unsummed hopper_runs --test-threads 1 ) > /tmp/logs/mutant-unsummed.log 2>&1; echo "rc=$?" >> /tmp/logs/mutant-unsummed.log; save
( cd /tmp/logs && time OUT=/tmp/logs ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=bf16,f16,tf32 ANCHOR_SHAPES="1,128,4096,4096;1,16,4096,4096;1,1,4096,4096" timeout 70 python3 $OLDPWD/bench/scripts/torch_anchor.py ) > /tmp/logs/anchor.log 2>&1; save
( time timeout 50 compute-sanitizer --tool memcheck /tmp/hopper_bench --dtypes bf16,f32 --reps 1 --lhs k,m --rhs n,k 1,9,4104,1000 3,1,4104,1000 1,128,1000,200 ) > /tmp/logs/memcheck.log 2>&1; save
( time timeout 45 ncu --clock-control none --kernel-name regex:hopper --launch-skip 2 --launch-count 3 /tmp/hopper_bench --dtypes bf16 --rhs n --reps 3 1,1,4096,4096 ) > /tmp/logs/ncu-m1.log 2>&1; save
grep -h RESULT /tmp/logs/*.log > $OUT/summary.txt; grep -h "test \|test result\|ERROR SUMMARY\|rc=" /tmp/logs/*.log >> $OUT/summary.txt; grep -h "Duration\|hopper" /tmp/logs/ncu-*.log >> $OUT/summary.txt
