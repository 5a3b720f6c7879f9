#!/usr/bin/env bash
# Why the property run is slow: sample GPU utilisation and the process's CPU while 16 cases run.
cd .gpu && rm -f properties-b4eda2e1cddc2b3a && xz -dk properties-b4eda2e1cddc2b3a.xz && chmod +x properties-b4eda2e1cddc2b3a && cd ..
export BURN_DEVICE=cuda RUST_BACKTRACE=1 XDG_CACHE_HOME=/tmp/cache
FMAR_KERNEL=hopper FMAR_PROPTEST_ALIGN=8 FMAR_PROPTEST_CASES=16 CUBECL_AUTOTUNE_LEVEL=minimal timeout 140 .gpu/properties-b4eda2e1cddc2b3a --test-threads 1 random --nocapture > $OUT/props_hopper.log 2>&1 &
pid=$!
for i in $(seq 1 27); do sleep 5; echo "t=$((i*5)) gpu=$(nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader) cpu=$(ps -o %cpu=,time= -p $pid 2>/dev/null | tr -s ' ') threads=$(ls /proc/$pid/task 2>/dev/null | wc -l)" >> $OUT/samples.txt; kill -0 $pid 2>/dev/null || break; done
wait $pid; echo "props rc=$?" >> $OUT/samples.txt
cat $OUT/samples.txt; grep -E "result|gradient products|fusion=" $OUT/props_hopper.log
