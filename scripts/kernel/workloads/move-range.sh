# F2FS_IOC_MOVE_RANGE cases, the same on Linux F2FS and on a uf2fs mount: busybox sh
# (or any sh), run from a directory of the volume with the static
# scripts/kernel/tools/move-range at $MOVE_RANGE (default ./move-range, as
# `kernel-check.sh mount --rw --put DIR` leaves it). Writes one line per case, then
# each file's size and md5, to mr/results; the two volumes' results must be equal.
# Before the digests the page cache is dropped (Linux 6.1 keeps serving a moved
# range's old pages until then); set MOVE_RANGE_KEEP_CACHE=1 on a shared host, where
# dropping every cache would slow everyone (uf2fs drops its files' pages itself).
#
#   gcc -static -O2 -o DIR/move-range scripts/kernel/tools/move-range.c
#   scripts/kernel-check.sh mount --rw --put DIR --workload scripts/kernel/workloads/move-range.sh IMG
#   uf2fs cat IMG /mr/results
# and on a uf2fs mount of a fresh mkfs.f2fs image, from the mount point:
#   MOVE_RANGE=/path/to/move-range MOVE_RANGE_KEEP_CACHE=1 sh scripts/kernel/workloads/move-range.sh
T=${MOVE_RANGE:-$PWD/move-range}
mkdir mr
cd mr
seq 1 20000 >src
seq 100000 102000 >dst
: >results
run() {
    echo "$* => $("$T" "$@")" >>results
}
run src rw dst rw 4096 8192 0
run dst rw dst rw 8192 0 4096
run dst rw dst rw 4096 4096 4096
run src rw dst ro 0 0 4096
run src rw dst none 0 0 4096
run src ro dst rw 0 0 4096
run src wo dst rw 0 0 4096
run dst rw dst rw 0 4096 8192
run src rw dst rw 1 0 4096
run src rw dst rw 0 1 4096
run src rw dst rw 0 0 100
run src rw dst rw 0 0 409600
run src rw /tmp/move-range-elsewhere rw 0 0 4096
run src rw far rw 0 40960 4096
run src rw holes rw 8192 0 8192
sync
[ -n "${MOVE_RANGE_KEEP_CACHE:-}" ] || echo 3 >/proc/sys/vm/drop_caches
for f in src dst far holes; do
    echo "$f $(wc -c <$f) $(md5sum <$f)" >>results
done
