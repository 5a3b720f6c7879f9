#!/bin/bash
# Call 3 showed the stream-K kernel's main loop, as this machine's compilers build it, spilling
# (`LDL` in the loop) and waiting after every HGMMA. hb_sk2 keeps fewer values live across the
# main loop. The device's own NVRTC PTX of each build through the device toolkit's ptxas -v;
# then ncu durations and short bursts, main against hb_sk2.
set -u
mkdir -p /tmp/logs; rm -f /tmp/logs/*
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
for f in hb_main hb_sk hb_sk2; do xz -dc .gpu/$f.xz > /tmp/$f && chmod +x /tmp/$f; done
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; save; }
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
for b in hb_main hb_sk hb_sk2; do
  rm -rf /tmp/ptx_$b
  CUBECL_CUDA_DUMP_PTX=/tmp/ptx_$b timeout 30 /tmp/$b --variants hopper --outputs 1 --rhs n --dtypes bf16 --reps 1 1,4096,4096,4096 > /tmp/logs/dump_$b.log 2>&1
  for p in $(grep -l wgmma /tmp/ptx_$b/*.ptx); do
    echo "== $b $(basename $p | tail -c 60)" >> /tmp/logs/ptxas.txt
    timeout 60 $PTXAS -arch=sm_90a -v $p -o /tmp/x.cubin >> /tmp/logs/ptxas.txt 2>&1
    cuobjdump -sass /tmp/x.cubin > /tmp/logs/sass_$b.txt 2>&1
  done
done
save
NCU="ncu --clock-control none --metrics gpu__time_duration.sum -k regex:fused_matmul --launch-skip 3 --launch-count 2"
for s in 1,4096,4096,4096 1,16384,1024,4096; do
  run ncu_base_$s 40 $NCU /tmp/hb_main --variants hopper --outputs 1 --rhs n --dtypes bf16 --reps 8 $s
  run ncu_sk2_$s 40 $NCU /tmp/hb_sk2 --variants hopper --outputs 1 --rhs n --dtypes bf16 --reps 8 $s
done
L="1,4096,4096,4096 1,16384,1024,4096"
run short_base 40 /tmp/hb_main --variants hopper --outputs 1 --rhs n --dtypes bf16 --reps 200 $L
run short_sk2 40 /tmp/hb_sk2 --variants hopper --outputs 1 --rhs n --dtypes bf16 --reps 200 $L
grep -h "RESULT" /tmp/logs/short_*.log >> $OUT/summary.txt
for f in /tmp/logs/ncu*; do echo "== $f"; grep -h "gpu__time_duration" $f; done >> $OUT/summary.txt
grep -E "==|registers|spill|serializ|C75" /tmp/logs/ptxas.txt >> $OUT/summary.txt
for b in hb_main hb_sk hb_sk2; do echo "$b HGMMA $(grep -c HGMMA /tmp/logs/sass_$b.txt) DEPBAR $(grep -c 'WARPGROUP.DEPBAR' /tmp/logs/sass_$b.txt) LDL $(grep -c LDL /tmp/logs/sass_$b.txt)"; done >> $OUT/summary.txt
save
