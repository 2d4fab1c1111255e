#!/bin/bash
# Packing speed: uf2fs mkfs IMAGE TREE against mkfs.f2fs + sload.f2fs, same tree, same size.
# usage: scripts/bench-pack.sh TREE UF2FS [RUNS]   (as root: drops the page cache between runs)
# The tree of README/docs: scripts/android-tree.py gen TREE --files 5500 --bytes 603979776
set -e
TREE=$1; U=$2; RUNS=${3:-3}; W=$(mktemp -d /var/tmp/uf2fs-bench-pack.XXXX)
t() { local s=$(date +%s.%N); "$@" >/dev/null 2>&1 || { echo failed; return; }; echo "$(date +%s.%N) - $s" | bc; }
for r in $(seq 1 $RUNS); do
  sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
  a=$(t bash -c "rm -f $W/s.img; truncate -s 1G $W/s.img; mkfs.f2fs -q -f -O extra_attr,compression $W/s.img && sload.f2fs -f $TREE -T 0 $W/s.img")
  b=$(t bash -c "rm -f $W/u.img; $U mkfs -q -f --size 1G $W/u.img $TREE -O extra_attr,compression -T 0")
  # "failed" where sload is built without LZ4 (Debian's 1.15 is): no baseline then.
  c=$(t bash -c "rm -f $W/sc.img; truncate -s 1G $W/sc.img; mkfs.f2fs -q -f -O extra_attr,compression $W/sc.img && sload.f2fs -f $TREE -T 0 -c -a LZ4 $W/sc.img")
  d=$(t bash -c "rm -f $W/uc.img; $U mkfs -q -f --size 1G $W/uc.img $TREE -T 0 --compress lz4")
  echo "run $r: sload $a uf2fs $b sload-lz4 $c uf2fs-lz4 $d"
done
fsck.f2fs -f $W/u.img | grep -c -E "Fail|FIX|ASSERT" || true
fsck.f2fs -f $W/uc.img | grep -c -E "Fail|FIX|ASSERT" || true
rm -rf $W
