# Workload of the compressed-file fixture (crates/cli/tests/fixtures/kernel/compress):
# busybox sh, run by kernel-check.sh from the mount point with set -e, once per
# compression setting (make-fixtures.sh mounts with compress_algorithm=...,
# compress_log_size=..., maybe compress_chksum). Each run fills a directory named after
# its setting, marked compressed with `f2fs_io setflags compression` so that every file
# created in it is a compressed file (the kernel's inheritance of F2FS_COMPR_FL).
#
# Files: text (compressible, a partial last cluster), a 9 MiB file reaching the second
# direct node (whose slots the kernel rounds down to whole clusters), incompressible
# data (clusters written raw), compressible and incompressible clusters alternating,
# zeros (LZO-RLE's zero runs), holes, a cluster rewritten in place, a small file, and a
# file whose reserved blocks were released (F2FS_IOC_RELEASE_COMPRESS_BLOCKS).
opt() { awk -v m="$MNT" '$2 == m { print $4 }' /proc/mounts | tr , '\n' | sed -n "s/^$1=//p"; }
alg=$(opt compress_algorithm)
log=$(opt compress_log_size)
sum=$(awk -v m="$MNT" '$2 == m { print $4 }' /proc/mounts | tr , '\n' | grep -qx compress_chksum && echo -sum || true)
[ -n "$alg" ] || { echo "compress.sh: mount without compress_algorithm" >&2; exit 1; }
d=$(echo "$alg" | tr : -)-c$log$sum
mkdir "$d"
f2fs_io setflags compression "$d"
cd "$d"

# N bytes of text lines numbered from START: compressible (long matches, changing
# digits), and never the same cluster twice. Sizes are kept small for a small fixture.
text() { seq "$2" $(($2 + $1 / 20)) | sed 's/.*/line & of a compressed F2FS file/' | head -c "$1"; }

text $((128 * 1024 + 1234)) 1 >text.txt
# 8 MiB of zeros with text windows at the start, across the end of the inode's slots
# (3.4 MiB) and across the end of the first direct node (7.3 MiB).
head -c $((8 * 1024 * 1024)) /dev/zero >big.bin
for at in 0 3520 7488; do
    text 32768 $((at * 10)) | dd of=big.bin bs=1024 seek=$at conv=notrunc 2>/dev/null
done
head -c 8192 /dev/urandom >random.bin
i=0
while [ $i -lt 4 ]; do
    text 12288 $((i * 5000))
    head -c 4096 /dev/urandom
    i=$((i + 1))
done >mixed.bin
head -c $((256 * 1024)) /dev/zero >zeros.bin
text 32768 1 >holes.bin
text 32768 90000 | dd of=holes.bin bs=4096 seek=1024 conv=notrunc 2>/dev/null
truncate -s $((6 * 1024 * 1024)) holes.bin
text 65536 300 >rewritten.bin
sync
text 10000 700000 | dd of=rewritten.bin bs=1 seek=30000 conv=notrunc 2>/dev/null
text 5000 5 >small.txt
text 65536 3 >released.bin
sync
f2fs_io release_cblocks released.bin
f2fs_io get_coption text.txt
sync
