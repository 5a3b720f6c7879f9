#!/bin/bash
# Epilogue and tile start: v1 stages the bias in f32 (two columns per shared load, no
# conversions); v2 also computes each next work item's tile origin and issues its bias loads
# during the item before's MMAs. Kernel time A/B/C (short bursts, then sustained), then v2's
# correctness: ragged shapes in every layout and dtype, the contract's Hopper tests.
set -u
mkdir -p /tmp/logs
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
for v in base v1 v2; do xz -dc .gpu/hb_$v.xz > /tmp/hb_$v && chmod +x /tmp/hb_$v; done
xz -dc .gpu/against_f64_v2.xz > /tmp/against_f64 && chmod +x /tmp/against_f64
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; save; }
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
A="--variants hopper --outputs 1 --rhs n"
L="1,4096,4096,4096 1,16384,1024,4096"
for r in 1 2; do
  for v in base v1 v2; do run short_${v}_$r 40 /tmp/hb_$v $A --dtypes bf16,f16 --reps 200 $L; done
done
for v in base v1 v2; do run sus_${v} 30 /tmp/hb_$v $A --dtypes bf16 --reps 3000 $L; done
run ragged_v2 60 /tmp/hb_v2 --variants hopper --outputs 1 --dtypes bf16,f16,f32 --lhs k,m --rhs n,k --reps 1 1,2700,520,776 2,4100,264,520 3,300,4104,1000
run tests_v2 100 /tmp/against_f64 hopper mask_follows --test-threads 1
for f in /tmp/logs/short* /tmp/logs/sus* /tmp/logs/ragged*; do echo "== $f"; grep -h "RESULT\|error\|panic\|mismatch" $f | grep -v UNAVAILABLE | head -40; done >> $OUT/summary.txt
grep -h "test \|test result" /tmp/logs/tests_v2.log >> $OUT/summary.txt
save
