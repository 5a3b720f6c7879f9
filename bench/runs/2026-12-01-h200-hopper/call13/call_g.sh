#!/usr/bin/env bash
# Split-K test fixed: contract tests (hopper pinned), sanitizer on the hopper test; ncu detail of
# the split-K kernels at 1 x 1 x 4096 x 4096 and of the unsplit 64 x 64 kernel at m = 128.
set -u
out=${OUT:?}
mkdir -p /tmp/bin
for f in against_f64 hopper_bench; do xz -dc .gpu/$f.xz > /tmp/bin/$f && chmod +x /tmp/bin/$f; done
export RUST_BACKTRACE=1
step() { local name=$1 limit=$2; shift 2; local s=$(date +%s)
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  echo "=== $name: exit $? after $(( $(date +%s) - s )) s"; }
FMAR_TEST_DEVICE=cuda FMAR_TEST_VARIANTS=hopper FMAR_KERNEL=hopper step contract 150 /tmp/bin/against_f64 --test-threads 1
grep -E "test result|panicked|FAILED" "$out/contract.log" | tail -5
FMAR_TEST_DEVICE=cuda step sanitizer 150 compute-sanitizer --tool memcheck /tmp/bin/against_f64 hopper --test-threads 1
grep -E "ERROR SUMMARY|test result" "$out/sanitizer.log" | tail -3
step ncu 200 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --section Occupancy --launch-count 12 /tmp/bin/hopper_bench --variants hopper --dtypes bf16 --rhs n --reps 3 1,1,4096,4096 1,128,4096,4096
grep -E "fused_matmul|finish_split|Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|Compute \(SM\)|Warp Cycles Per Issued|Stall|Registers Per|Block Limit|Achieved Occupancy" "$out/ncu.log" | head -150
