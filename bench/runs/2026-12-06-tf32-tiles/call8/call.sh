#!/bin/bash
# The property harness pinned to the Hopper kernel (`properties` of 8803dd7, whose kernels are
# main's since 6f00a94), and f32 at 8192³ and 4096³: `swapped_tiles` (an N-major weight,
# selected) against the main kernel reading a K-major weight (the copy path's kernel without
# its copy), three rounds in turn, each launch writing a fresh output (`hb_main`: hopper_bench
# of 6f00a94). Pack: `.gpu/c8.tar.xz`.
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
unpack_tar c8
mkdir -p /tmp/w && cd /tmp/w
run properties 240 env BURN_DEVICE=cuda FMAR_TEST_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache FMAR_KERNEL=hopper FMAR_PROPTEST_ALIGN=8 FMAR_PROPTEST_CASES=300 FMAR_PROPTEST_VERBOSE=1 /tmp/properties --test-threads 1 --nocapture
{
echo "cases run: $(grep -c '^case ' /tmp/logs/properties.log)"
grep -h "^test \|test result" /tmp/logs/properties.log
sed -n '/property harness on/,$p' /tmp/logs/properties.log | tail -30
grep -h "panicked\|outside tolerance" /tmp/logs/properties.log | head -10
echo "elapsed $(( $(date +%s) - T0 )) s"
} >> $OUT/summary.txt
save
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,nounits -lms 100 > /tmp/logs/smi.csv &
SMI=$!
A="--variants launch --dtypes f32 --lhs k --outputs 0 --reps 40"
for i in 1 2 3; do
    for r in n k; do run f32_${r}_$i 60 /tmp/hb_main $A --rhs $r 1,8192,8192,8192 1,4096,4096,4096; done
done
kill $SMI
{ for f in /tmp/logs/f32_*.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-110; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
