#!/bin/bash
# Packing and extraction speed: uf2fs against f2fs-tools (docs/packer-performance.md).
# usage: scripts/bench-pack.sh TREE UF2FS F2FS_TOOLS_SBIN [RUNS] [CASES]
#   TREE: the source tree (scripts/android-tree.py gen TREE: 22,000 files, 2.25 GiB)
#   UF2FS: the uf2fs binary; F2FS_TOOLS_SBIN: mkfs.f2fs + sload.f2fs 1.16 (docs/packer.md)
#   RUNS: rounds (default 3); CASES: any of plain lz4 ro-lz4 ro zstd (default all)
#   DUMP=/path/to/dump.f2fs (a build that has -r -o, f2fs-tools' development tree) adds
#   the extraction rounds.
# Each round runs uf2fs and then the baseline (A B A B ...), with /usr/bin/time; images
# and extractions go to WORK (default /dev/shm, so that the host disk does not decide).
# Prints every run's wall, user and system seconds and the medians.
set -e
TREE=$1; U=$2; S=$3; RUNS=${4:-3}; CASES=${5:-plain lz4 ro-lz4 ro zstd}
W=${WORK:-/dev/shm}/uf2fs-bench-pack.$$; mkdir -p $W; trap 'rm -rf $W' EXIT
timed() { # label 'command': one timed run (bash -c), appended to $W/label.times
  /usr/bin/time -f "%e %U %S" -a -o "$W/$1.times" bash -c "$2" >/dev/null 2>$W/err || { cat $W/err; exit 1; }
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
report() { # label
  printf "%-28s wall %s  user %s  sys %s   (runs: %s)\n" "$1" \
    "$(cut -d' ' -f1 $W/$1.times | median)" "$(cut -d' ' -f2 $W/$1.times | median)" \
    "$(cut -d' ' -f3 $W/$1.times | median)" "$(cut -d' ' -f1 $W/$1.times | tr '\n' ' ')"
}
# mkfs.f2fs + sload.f2fs: features size sload-args
sload() { echo "rm -f $W/s.img; truncate -s $2 $W/s.img; $S/mkfs.f2fs -q -f -O $1 $W/s.img && $S/sload.f2fs -f $TREE -T 0 ${*:3} $W/s.img"; }
# uf2fs mkfs: options
pack() { echo "rm -f $W/u.img; $U mkfs -q -f -T 0 $* $W/u.img $TREE"; }
find $TREE -type f -exec cat {} + > /dev/null   # the tree into the page cache
for c in $CASES; do
  for r in $(seq 1 $RUNS); do
    case $c in
      plain) timed uf2fs-$c "$(pack --size 3G -O extra_attr,compression)"
             timed sload-$c "$(sload extra_attr,compression 3G)" ;;
      lz4)   timed uf2fs-$c "$(pack --size 4G -O extra_attr,compression --compress lz4)"
             timed sload-$c "$(sload extra_attr,compression 4G -c -a lz4)" ;;
      ro-lz4) timed uf2fs-$c "$(pack --size 4G -O ro,extra_attr,compression --compress lz4 --release-blocks)"
             timed sload-$c "$(sload ro,extra_attr,compression 4G -c -a lz4 -r)" ;;
      ro)    timed uf2fs-$c "$(pack --size 3G -O ro)"
             timed sload-$c "$(sload ro 3G)" ;;
      zstd)  timed uf2fs-$c "$(pack --size 4G -O extra_attr,compression --compress zstd)"
             timed uf2fs-lz4-$c "$(pack --size 4G -O extra_attr,compression --compress lz4)" ;;
    esac
  done
  for l in uf2fs-$c sload-$c uf2fs-lz4-$c; do [ ! -f $W/$l.times ] || report $l; done
done
if [ -n "$DUMP" ]; then
  for v in lz4 plain; do
    if [ $v = lz4 ]; then bash -c "$(sload ro,extra_attr,compression 3G -t / -c -a lz4 -L 2 -r)"; else bash -c "$(sload ro 3G -t /)"; fi >/dev/null
    mv $W/s.img $W/x-$v.img; cat $W/x-$v.img > /dev/null
    for r in $(seq 1 $RUNS); do
      rm -rf $W/xu; timed extract-uf2fs-$v "$U extract $W/x-$v.img $W/xu"
      rm -rf $W/xd; mkdir $W/xd; timed extract-dump-$v "$DUMP -r -f -L -o $W/xd $W/x-$v.img"
    done
    report extract-uf2fs-$v; report extract-dump-$v
    rm -rf $W/xu $W/xd $W/x-$v.img
  done
fi
