# Workload of `kernel-check.sh mount --rw --powercut` (busybox sh, run from the mount
# point with set -e): after one checkpoint (sync), files made durable by fsync or
# fdatasync alone, the cases F2FS recovers by roll-forward at the next mount; then files
# written without fsync; then the guest loses power (the caller's --powercut).
#
# Every file that was fsync'd (busybox `sync FILE`) or fdatasync'd (`sync -d FILE`) and
# not touched afterwards is declared durable: its manifest entry (kernel-check.sh's format)
# goes to $DURABLE, computed after the last fsync. Files written without an fsync after
# the checkpoint are listed as "maybe PATH" in the output and never in $DURABLE.
#
# The output also shows, per case, the kernel's checkpoint count (debugfs f2fs/status):
# a case whose fsync made the kernel write a checkpoint instead of a roll-forward
# record shows up as "cp +1".
#
# env: PC_MANY (default 600) small files fsync'd one by one in pc/many, so that the warm
#      node log's chain crosses a segment (512 blocks).
DURABLE=${DURABLE:-/tmp/durable}
many=${PC_MANY:-600}
: >"$DURABLE"
: >/tmp/durable.list

# No background checkpoint while the workload runs (TCG is slow: the default interval is
# 60 s), so that every checkpoint counted below is one an fsync asked for.
dev=$(basename "$(awk '$2 == "'"$MNT"'" { print $1 }' /proc/mounts)")
if [ -w "/sys/fs/f2fs/$dev/cp_interval" ]; then echo 100000 >"/sys/fs/f2fs/$dev/cp_interval"; fi
grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null || true
cps() { sed -n 's/.*CP calls: *\([0-9]*\).*/\1/p' /sys/kernel/debug/f2fs/status 2>/dev/null | head -1; }
# The kernel's reason for each fsync's checkpoint or none ("no needed"): the
# f2fs_sync_file_exit trace event.
tr=/sys/kernel/tracing
grep -q " $tr " /proc/mounts || mount -t tracefs tracefs $tr 2>/dev/null || true
if [ -w $tr/events/f2fs/f2fs_sync_file_exit/enable ]; then
    echo 1 >$tr/events/f2fs/f2fs_sync_file_exit/enable
    echo 4096 >$tr/buffer_size_kb
fi
last_cp=
step() { # NAME: prints the checkpoints and fsync reasons since the previous step
    now=$(cps)
    reasons=
    if [ -r $tr/trace ]; then
        reasons=$(sed -n 's/.*cp_reason: \([^,]*\),.*/\1/p' $tr/trace | sort | uniq -c \
            | awk '{ n = $1; sub(/^ *[0-9]+ /, ""); printf "%s%d x %s", sep, n, $0; sep = ", " }')
        : >$tr/trace
    fi
    if [ -n "$now" ] && [ -n "$last_cp" ]; then
        echo "case $1: cp +$((now - last_cp)) (CP calls $now); fsync cp_reason: ${reasons:-none}"
    else
        echo "case $1: CP calls ${now:-?}; fsync cp_reason: ${reasons:-none}"
    fi
    last_cp=$now
}
# Declares files durable (after their fsync): PATH [mtime|nomtime] ...
durable() { printf '%s\t%s\n' "$1" "${2:-mtime}" >>/tmp/durable.list; }

# A 4 KiB block that names itself: "TAG block N " repeated (compresses well, and a block
# in the wrong place or from the wrong version shows in the digest).
blocks() { # TAG FIRST COUNT
    awk -v tag="$1" -v first="$2" -v n="$3" 'BEGIN {
        for (b = first; b < first + n; b++) {
            s = sprintf("%s block %08d ", tag, b); while (length(s) < 4096) s = s s
            printf "%s", substr(s, 1, 4096) } }'
}

# --- before the checkpoint: files that exist at it -----------------------------------
mkdir -p pc/many pc/old
blocks old-append 0 2 >pc/append.bin
blocks old-over 0 64 >pc/overwrite.bin
blocks old-shrink 0 256 >pc/shrink.bin
blocks old-dsync 0 3 >pc/datasync-append.bin
blocks old-zeroed 0 16 >pc/zeroed.bin
echo "mode changed after the checkpoint" >pc/chmod.txt
echo "at the checkpoint" >pc/old/unsynced-append.txt
blocks old-unsynced 0 8 >pc/old/unsynced-over.bin
sync
step checkpoint

# --- roll-forward cases ------------------------------------------------------------------
# A new file (its dentry is recovered from the inode's name and parent: dentry mark).
blocks new 0 5 >pc/new.bin
sync pc/new.bin
durable pc/new.bin
step new-file

# Appends to a file that existed at the checkpoint.
blocks append 2 7 >>pc/append.bin
sync pc/append.bin
durable pc/append.bin
step append

# In-place overwrites of blocks that existed at the checkpoint (and one partial block).
blocks over 10 4 | dd of=pc/overwrite.bin bs=4096 seek=10 conv=notrunc 2>/dev/null
blocks over 40 1 | dd of=pc/overwrite.bin bs=4096 seek=40 conv=notrunc 2>/dev/null
printf 'partial overwrite in block 63' | dd of=pc/overwrite.bin bs=1 seek=$((63 * 4096 + 100)) conv=notrunc 2>/dev/null
sync pc/overwrite.bin
durable pc/overwrite.bin
step overwrite

# Truncated shorter (to the middle of a block), then written past the new end.
truncate -s $((37 * 4096 + 1000)) pc/shrink.bin
blocks shrink 0 3 >>pc/shrink.bin
sync pc/shrink.bin
durable pc/shrink.bin
step truncate-then-write

# Holes: data at 0, at 1 MiB, at 5 MiB and a last partial block; holes between.
blocks holes 0 1 >pc/holes.bin
blocks holes 256 2 | dd of=pc/holes.bin bs=4096 seek=256 conv=notrunc 2>/dev/null
blocks holes 1280 1 | dd of=pc/holes.bin bs=4096 seek=1280 conv=notrunc 2>/dev/null
truncate -s $((6 * 1024 * 1024 + 123)) pc/holes.bin
sync pc/holes.bin
durable pc/holes.bin
step holes

# A large file: 10 MiB, the inode's 923 addresses and then two direct nodes (under
# an indirect node, which is not an fsync record: recovery replays direct nodes).
blocks large 0 2560 >pc/large.bin
sync pc/large.bin
durable pc/large.bin
step large

# Small files whose data stays inline in the inode.
echo "inline data, fsync'd" >pc/inline.txt
sync pc/inline.txt
durable pc/inline.txt
printf 'inline too, mode 0600\n' >pc/inline-0600.txt
chmod 0600 pc/inline-0600.txt
sync pc/inline-0600.txt
durable pc/inline-0600.txt
step inline

# fdatasync: an append to an old file, and a new file (its size must be recovered; its
# mtime is not required to be).
blocks dsync 3 2 >>pc/datasync-append.bin
sync -d pc/datasync-append.bin
durable pc/datasync-append.bin nomtime
blocks dsync-new 0 3 >pc/datasync-new.bin
sync -d pc/datasync-new.bin
durable pc/datasync-new.bin nomtime
step fdatasync

# An xattr set before the fsync (inline in the inode).
echo "has an xattr" >pc/xattr.txt
setfattr -n user.powercut -v "set before fsync" pc/xattr.txt
blocks xattr 0 2 >>pc/xattr.txt
sync pc/xattr.txt
durable pc/xattr.txt
step xattr

# An xattr too big for the inode's inline area: it goes to an xattr node.
echo "has an xattr node" >pc/xattr-node.txt
setfattr -n user.big -v "$(awk 'BEGIN { for (i = 0; i < 1500; i++) printf "%c", 97 + i % 26 }')" pc/xattr-node.txt
sync pc/xattr-node.txt
durable pc/xattr-node.txt
step xattr-node

# Only the mode changes (an inode-only record).
chmod 0640 pc/chmod.txt
sync pc/chmod.txt
durable pc/chmod.txt
step chmod-only

# An old file truncated to zero.
truncate -s 0 pc/zeroed.bin
sync pc/zeroed.bin
durable pc/zeroed.bin
step truncate-to-zero

# Preallocated (fallocate: unwritten blocks read as zeros), one block written.
fallocate -l 1048576 pc/falloc.bin
blocks falloc 1 1 | dd of=pc/falloc.bin bs=4096 seek=1 conv=notrunc 2>/dev/null
sync pc/falloc.bin
durable pc/falloc.bin
step fallocate

# fsync'd twice: the second version (overwrite and append) is the one to recover.
blocks twice-v1 0 4 >pc/twice.bin
sync pc/twice.bin
blocks twice-v2 1 1 | dd of=pc/twice.bin bs=4096 seek=1 conv=notrunc 2>/dev/null
blocks twice-v2 4 2 >>pc/twice.bin
sync pc/twice.bin
durable pc/twice.bin
step fsync-twice

# Many small fsync'd files: the warm node log's chain crosses a segment.
i=0
while [ $i -lt "$many" ]; do
    f=$(printf 'pc/many/f%04d' $i)
    echo "small file $i" >"$f"
    sync "$f"
    durable "$f"
    i=$((i + 1))
done
step many-small-files

# --- not fsync'd: may or may not survive ---------------------------------------------
echo "appended without fsync" >>pc/old/unsynced-append.txt
blocks unsynced 2 2 | dd of=pc/old/unsynced-over.bin bs=4096 seek=2 conv=notrunc 2>/dev/null
blocks unsynced-new 0 4 >pc/unsynced-new.bin
echo "new, not fsync'd" >pc/unsynced-new.txt
for p in pc/old/unsynced-append.txt pc/old/unsynced-over.bin pc/unsynced-new.bin pc/unsynced-new.txt; do
    echo "maybe /$p"
done
step not-fsynced

# --- the manifest of the durable files (they are not touched again) --------------------
cut -f1 /tmp/durable.list | xargs stat -c '%f %h %u %g %s %Y %n' >/tmp/d.stat
cut -f1 /tmp/durable.list | xargs sha256sum >/tmp/d.sha
: >/tmp/d.xattrs
if command -v getfattr >/dev/null; then
    cut -f1 /tmp/durable.list | xargs getfattr -d -m - -e hex 2>/dev/null >/tmp/d.xattrs || true
fi
awk '
    function hex(h,   i, v) { v = 0; h = tolower(h)
        for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
        return v }
    FILENAME == "/tmp/durable.list" { split($0, f, "\t"); keep_mtime[f[1]] = (f[2] == "mtime"); next }
    FILENAME == "/tmp/d.sha" { sha[substr($0, 67)] = substr($0, 1, 64); next }
    FILENAME == "/tmp/d.xattrs" {
        if ($0 ~ /^# file: /) { cur = substr($0, 9); next }
        if ($0 == "") next
        if (cur in xa) v = xa[cur] "," $0; else v = $0
        xa[cur] = v; next }
    { name = $0; for (i = 1; i <= 6; i++) sub(/^[^ ]+ /, "", name)
      m = hex($1)
      printf "/%s\tf\t%04o\t%s\t%s\t%s\t%s\t%s\t%s\t-\t%s\t-\n", name, m % 4096, $2, $3, $4, $5,
          keep_mtime[name] ? $6 : "-", sha[name], (name in xa) ? xa[name] : "-" }
' /tmp/durable.list /tmp/d.sha /tmp/d.xattrs /tmp/d.stat | sort >"$DURABLE"
echo "durable: $(wc -l <"$DURABLE") files"
step manifest
