#!/bin/bash
# The property harness's failure of call 2 (bf16, lhs [1,1,15] transposed, rhs [1,15,1], fusion,
# grad lhs wrong): the case and its neighbours (dtypes, fusion on and off, layouts, each input
# tracked alone, other k and n), each checked apart, with the Hopper kernel pinned, then by
# fmar's own choice.
set -u
mkdir -p /tmp/logs; rm -f /tmp/logs/*
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
xz -dc .gpu/properties.xz > /tmp/properties && chmod +x /tmp/properties
mkdir -p /tmp/w && cd /tmp/w
export RUST_BACKTRACE=0 BURN_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache FMAR_TEST_SEED=1796342687375547963
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; save; }
run diag_hopper 200 env FMAR_KERNEL=hopper CUBECL_AUTOTUNE_LEVEL=minimal /tmp/properties --test-threads 1 --nocapture diag_h200
run diag_auto 150 env CUBECL_AUTOTUNE_LEVEL=minimal /tmp/properties --test-threads 1 --nocapture diag_h200
{ for f in /tmp/logs/diag*; do echo "== $f"; grep -h "^DIAG\|within\|outside" $f | cut -c1-330; done; } >> $OUT/summary.txt
save
