#!/bin/bash
# Call 4's failure (proptest seed 1001, case 707: bf16, lhs [1,1,58] transposed, fusion, grad
# rhs wrong) replayed: the same case sequence with the failing case's data seed, six processes:
# Hopper pinned twice, fmar's own choice, the tiled variant pinned, Hopper with blocking launches,
# and the case alone.
set -u
mkdir -p /tmp/logs; rm -f /tmp/logs/*
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
xz -dc .gpu/properties.xz > /tmp/properties && chmod +x /tmp/properties
export RUST_BACKTRACE=0 BURN_DEVICE=cuda CUBECL_AUTOTUNE_LEVEL=minimal FMAR_PROPTEST_CASES=3000 FMAR_TEST_SEED=1796343075057047822 PROPTEST_RNG_SEED=1001
go() { local i=$1; shift; mkdir -p /tmp/w$i; (cd /tmp/w$i && XDG_CACHE_HOME=/tmp/w$i/cache timeout 185 env "$@" /tmp/properties --test-threads 1 --nocapture random > /tmp/logs/p$i.log 2>&1; echo "p$i $* rc=$?" >> $OUT/summary.txt) & }
go 1 FMAR_KERNEL=hopper
go 2 FMAR_KERNEL=hopper
go 3 FMAR_NONE=1
go 4 FMAR_KERNEL=tiled
go 5 FMAR_KERNEL=hopper CUDA_LAUNCH_BLOCKING=1
wait
for i in 1 2 3 4 5; do echo "p$i cases $(grep -c '^CASE' /tmp/logs/p$i.log) $(grep -m1 'outside tolerance' /tmp/logs/p$i.log | cut -c1-300)"; done >> $OUT/summary.txt
save
