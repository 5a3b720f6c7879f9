#!/bin/bash
# The persistent `swapped_tiles` through Burn, where fresh outputs each call (Burn's) may
# weigh differently from the kernel bench's one buffer: fmar's forward and forward + backward
# alone, of main (`fb_new`, a cube a tile), the persistent form (`fb_p`) and `fb_h`, which
# keeps a cube a tile and single stores for the plain forward and takes the persistent form
# and the paired stores under the mask's epilogue (a tracked forward); two rounds, the second
# in the reverse order. Then `h`'s kernel tests (`t_h`). Pack: `.gpu/c6s.tar.xz`.
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
tar xJf .gpu/c6s.tar.xz -C /tmp && chmod +x /tmp/t_* /tmp/fb_*
mkdir -p /tmp/w && cd /tmp/w
export BURN_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache
AB="1,4096,4096,4096;1,16384,1024,4096;8,1024,1024,1024;1,2048,4096,4096"
for b in fb_new fb_p fb_h; do run ab_${b}_1 60 /tmp/$b --dtype f32 --only fmar --budget-ms 200 --shapes "$AB"; done
for b in fb_h fb_p fb_new; do run ab_${b}_2 60 /tmp/$b --dtype f32 --only fmar --budget-ms 200 --shapes "$AB"; done
{ for f in /tmp/logs/ab_*.log; do echo "== $f"; grep -E "\| fmar \|" $f | cut -d'|' -f2,4,7,8; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
cd - > /dev/null
run tests_h 150 /tmp/t_h hopper_runs_exactly mask --test-threads 1
{ grep -h "^test \|test result\|panicked" /tmp/logs/tests_h.log | grep -v " ok$" | head -10; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
