# Workload that fills the kernel-written fixture images of crates/cli/tests/fixtures/kernel
# (busybox sh, run by kernel-check.sh from the mount point with set -e). Sized for a
# 64 MiB volume (16 MiB for files) and for a gzip'd image under 300 KiB: data is
# patterned (compressible), not random.
#
# Covers: inline dentries (small directories), a big directory (1000 entries over
# several hash levels, long names, removed and renamed entries), inline files (0 to 3400
# bytes) and the first sizes that need a data block, an 8 MiB file (direct addresses
# and both direct node blocks), a sparse file of 8 GiB + 1 MiB with data in the direct,
# indirect and double-indirect ranges (the double-indirect range starts at block
# 923 + 2*1018 + 2*1018^2 = 2075607, about 7.92 GiB, with 4 KiB blocks), holes inside
# a small file, short (inline) and 3900-byte (block) symlinks, hard links (one file
# with 701 names), xattrs inline and in an xattr node (when setfattr is in the guest),
# a fifo, owners, special mode bits and fixed mtimes.

# --- small directories: inline dentries ---
mkdir -p inline-dir/sub empty-dir deep/a/b/c/d/e
echo one >inline-dir/one
echo two >inline-dir/two
echo three >inline-dir/sub/three
echo "deep file" >deep/a/b/c/d/e/leaf
ln -s ../one inline-dir/sub/link-up

# --- small files: inline data and the first block-sized ones ---
mkdir small
: >small/empty
printf 'x' >small/1byte
printf '%s\n' "hello, kernel-written F2FS" >small/hello.txt
i=0
for n in 100 1000 3000 3400 3456 3500 4096 4097 8192 12289; do
    # n bytes of a readable pattern (a different letter per file)
    awk -v n=$n -v c=$i 'BEGIN { l = substr("abcdefghijklmnopqrstuvwxyz", c + 1, 1);
        s = ""; while (length(s) < n) s = s sprintf("%s%07d\n", l, length(s)); printf "%s", substr(s, 1, n) }' \
        >small/size-$n
    i=$((i + 1))
done

# --- a file with holes inside: data, 1 MiB hole, data, hole to the end ---
mkdir holes
printf 'start' >holes/middle-hole
dd if=/dev/zero bs=4096 count=0 seek=256 of=holes/middle-hole 2>/dev/null
printf 'after the hole' >>holes/middle-hole
truncate -s 2M holes/middle-hole
truncate -s 5M holes/all-hole

# --- an 8 MiB file: 2048 blocks, each "block NNNNNN" then a filler ---
mkdir big
awk 'BEGIN { f = ""; while (length(f) < 4083) f = f "0123456789abcdef"; f = substr(f, 1, 4082)
    for (i = 0; i < 2048; i++) printf "block %06d %s\n", i, f }' >big/8MiB.bin

# --- a sparse file past the double-indirect boundary ---
# blocks written: 0, 1 (direct), 1048576 (4 GiB, second indirect node),
# 2097152 (8 GiB, double indirect) and 2097408 (last block, 8 GiB + 1 MiB - 4 KiB)
mkdir sparse
for b in 0 1 1048576 2097152 2097408; do
    awk -v b=$b 'BEGIN { f = ""; while (length(f) < 4083) f = f "sparse data "; printf "block %07d %s", b, substr(f, 1, 4082) }' \
        | dd of=sparse/huge bs=4096 seek=$b count=1 conv=notrunc 2>/dev/null
done
ls -l sparse/huge
for r in 0 4096 8192 536870912 1073741824 4294967296 8589934592 8590983168; do
    echo "/sparse/huge $r 4096" >>/tmp/chunks
done

# --- a big directory: 299 files of its own, 700 hard links, long names ---
mkdir bigdir
seq -w 0 298 | sed 's|^|bigdir/file-|' | xargs touch
echo "linked" >bigdir/target
seq -w 0 699 | sed 's|^|bigdir/hardlink-|' | while read -r n; do ln bigdir/target "$n"; done
long=$(awk 'BEGIN { s = ""; while (length(s) < 255) s = s "long-name-"; print substr(s, 1, 255) }')
echo "255-byte name" >"bigdir/$long"
echo "spaces" >"bigdir/name with spaces"
echo "utf8" >"bigdir/$(printf 'caf\303\251-\343\201\202')"
rm bigdir/file-010 bigdir/file-020 bigdir/hardlink-005
mv bigdir/file-030 bigdir/renamed-030
mv bigdir/file-040 inline-dir/moved-in

# --- symlinks: inline, relative, absolute, dangling, 3900-byte target (a data block) ---
mkdir links
ln -s ../small/hello.txt links/rel
ln -s /small/hello.txt links/abs
ln -s nowhere links/dangling
ln -s "$(awk 'BEGIN { s = ""; while (length(s) < 3900) s = s "d123456789/"; print substr(s, 1, 3900) }')" links/long
ln -s ../bigdir links/to-dir

# --- hard links across directories ---
ln small/hello.txt links/hard-hello
ln small/hello.txt inline-dir/hard-hello

# --- fifo, owners, modes, times ---
mkfifo special-fifo
echo owned >owned
chown 1000:1000 owned
chown -h 1001:1002 links/rel
chmod 04755 small/size-100
chmod 02750 deep/a
chmod 01777 empty-dir
chmod 0600 small/hello.txt
touch -d '2001-02-03 04:05:06' small/size-1000
touch -d '1999-12-31 23:59:59' deep/a/b/c/d/e/leaf
touch -d '2030-01-01 00:00:00' big/8MiB.bin

# --- xattrs: a few inline, then enough to need an xattr node ---
if command -v setfattr >/dev/null; then
    mkdir xattrs
    echo x >xattrs/few
    setfattr -n user.color -v blue xattrs/few
    setfattr -n user.empty xattrs/few
    echo y >xattrs/many
    for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
        setfattr -n user.attr$i -v "value-$i-$(awk 'BEGIN { s = ""; while (length(s) < 120) s = s "0123456789"; print s }')" xattrs/many
    done
    setfattr -n user.on-dir -v dir-value xattrs
fi

sync
