#!/bin/bash
# Packs executables built here for a run on a remote GPU machine, as `.gpu/NAME.tar.xz`:
# stripped, in one xz stream whose dictionary spans them all, so that near-identical builds (an
# A/B of kernel variants, a mutant beside its original) cost little more than one. Ten test
# and bench executables of about 35 MB each took 23 MB so, against 85 MB packed one by one.
# About 6 minutes on two cores for 400 MB; xz takes about 6 GB of memory with this dictionary,
# and `unpack_tar` (device-lib.sh) on the GPU machine about 512 MB.
#
#   bench/scripts/pack.sh NAME DIR FILE...   # from the repository root
#
# FILE names are paths under DIR, and the names the files get under /tmp on the device.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 NAME DIR FILE..." >&2; exit 2; }
name=$1 dir=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for file in "$@"; do
    cp "$dir/$file" "$work/$file"
    strip "$work/$file" 2>/dev/null || true
done
mkdir -p .gpu
(cd "$work" && tar cf - "$@") | xz -T1 --lzma2=preset=6,dict=512MiB > ".gpu/$name.tar.xz"
ls -l ".gpu/$name.tar.xz"
