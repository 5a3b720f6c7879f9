# Helpers for a one-call device script (an A/B of kernel builds, a profile), sourced by it:
#
#   . bench/scripts/device-lib.sh        # from the repository root, with OUT set
#   unpack hb_main hb_new               # .gpu/<name>.xz -> /tmp/<name>, executable
#   unpack_tar ab                       # .gpu/ab.tar.xz (bench/scripts/pack.sh) -> /tmp/*
#   run ragged 90 /tmp/hb_new --dtypes bf16 ...
#   run_beside t1 200 /tmp/t_a & run_beside t2 200 /tmp/t_b & wait; save
#
# Each `run NAME LIMIT COMMAND...` runs COMMAND under `timeout LIMIT`, its output in
# /tmp/logs/NAME.log, appends `NAME rc=... Ns` to $OUT/summary.txt, and packs /tmp/logs into
# $OUT/logs.tgz after every step, so that a call cut short still returns what it ran. Sourcing
# it empties /tmp/logs, so that the call returns its own logs only.
mkdir -p /tmp/logs
rm -f /tmp/logs/*
save() { (cd /tmp/logs && tar czf "$OUT/logs.tgz" .); }
unpack() {
    local name
    for name in "$@"; do
        xz -dc ".gpu/$name.xz" > "/tmp/$name" && chmod +x "/tmp/$name"
    done
}
# The files of a pack made by `bench/scripts/pack.sh`, under /tmp, executable.
unpack_tar() {
    local name
    for name in "$@"; do
        # One pass over the stream: the names it extracts are the ones made executable.
        tar xJvf ".gpu/$name.tar.xz" -C /tmp --no-same-owner | (cd /tmp && xargs chmod +x)
    done
}
run() {
    run_beside "$@"
    save
}
# `run` without packing the logs, for runs started side by side in the background (`&`), whose
# packs would overlap: `run_beside a 200 cmd_a & run_beside b 200 cmd_b & wait; save`.
run_beside() {
    local name=$1 limit=$2
    shift 2
    local start
    start=$(date +%s)
    timeout "$limit" "$@" > "/tmp/logs/$name.log" 2>&1
    echo "$name rc=$? $(( $(date +%s) - start ))s" >> "$OUT/summary.txt"
}
