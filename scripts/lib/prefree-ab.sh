#!/usr/bin/env bash
# A/B: untar of /usr/share (55,333 entries) then rm -rf on a fresh uf2fs mount; daemon CPU (user+sys s) and wall.
# usage: TREE_TAR=/tmp/share.tar BIN_DIR=DIR scripts/lib/prefree-ab.sh   (DIR/A, DIR/B: uf2fs binaries; root)
# TREE_TAR made by: tar cf /tmp/share.tar -C /usr share
set -u
w=${WORK:-/var/tmp/uf2fs-prefree-ab}; mkdir -p $w/mnt
tck=$(getconf CLK_TCK)
cpu() { awk -v t=$tck '{print ($14+$15)/t}' /proc/$1/stat; }
for round in 1 2 3; do for v in A B; do
  bin=${BIN_DIR:?directory holding binaries A and B}/$v; img=$w/img; rm -f $img
  $bin mkfs --size 3G -f $img >/dev/null
  $bin mount -o rw,allow_other -f $img $w/mnt >$w/log 2>&1 & pid=$!
  for i in $(seq 100); do mountpoint -q $w/mnt && break; sleep 0.1; done
  c0=$(cpu $pid); t0=$(date +%s.%N)
  tar xf ${TREE_TAR:?tar of /usr/share} -C $w/mnt
  c1=$(cpu $pid); t1=$(date +%s.%N)
  rm -rf $w/mnt/share
  c2=$(cpu $pid); t2=$(date +%s.%N)
  echo "$round $v untar_wall=$(echo "$t1-$t0"|bc) untar_cpu=$(echo "$c1-$c0"|bc) rm_wall=$(echo "$t2-$t1"|bc) rm_cpu=$(echo "$c2-$c1"|bc) load=$(cut -d' ' -f1 /proc/loadavg)"
  umount $w/mnt; wait $pid
done; done
rm -f $w/img
