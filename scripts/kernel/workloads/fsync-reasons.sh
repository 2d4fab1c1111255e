# A probe, not a fixture (busybox sh, run by `kernel-check.sh mount --rw --workload`
# from the mount point with set -e): which fsyncs Linux F2FS answers with a roll-forward
# record and which with a checkpoint. Each case starts after a fresh checkpoint (sync),
# fsyncs once (busybox `sync FILE`; `sync -d` is fdatasync) and prints the kernel's
# reason from the f2fs_sync_file_exit trace event ("no needed" = roll-forward record, no
# checkpoint) and the number of checkpoints it cost (debugfs f2fs/status "CP calls"):
#   reason CASE: CP_REASON (cp +N)
# Kernel-side names of the reasons: fs/f2fs/f2fs.h enum cp_reason_type.
dev=$(basename "$(awk '$2 == "'"$MNT"'" { print $1 }' /proc/mounts)")
if [ -w "/sys/fs/f2fs/$dev/cp_interval" ]; then echo 100000 >"/sys/fs/f2fs/$dev/cp_interval"; fi
grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null || true
tr=/sys/kernel/tracing
grep -q " $tr " /proc/mounts || mount -t tracefs tracefs $tr
echo 1 >$tr/events/f2fs/f2fs_sync_file_exit/enable
cps() { sed -n 's/.*CP calls: *\([0-9]*\).*/\1/p' /sys/kernel/debug/f2fs/status | head -1; }
start() { sync; : >$tr/trace; before=$(cps); }
report() { # CASE
    reasons=$(sed -n 's/.*cp_reason: \([^,]*\),.*/\1/p' $tr/trace | sort | uniq -c \
        | awk '{ n = $1; sub(/^ *[0-9]+ /, ""); printf "%s%s%s", sep, (n > 1 ? n " x " : ""), $0; sep = ", " }')
    echo "reason $1: ${reasons:-no fsync traced} (cp +$(($(cps) - before)))"
}

mkdir -p r/dir r/other
echo old >r/old.txt
echo linked >r/linked.txt
echo tomove >r/tomove.txt
echo torename >r/torename.txt
echo dsync >r/dsync.txt

start; echo new >r/new.txt; sync r/new.txt; report new-file-in-old-dir
start; mkdir r/newdir; echo x >r/newdir/f; sync r/newdir/f; report new-file-in-new-dir
start; echo more >>r/old.txt; sync r/old.txt; report append-to-old-file
start; echo same >>r/old.txt; sync -d r/old.txt; report fdatasync-append
start; chmod 0600 r/old.txt; sync r/old.txt; report chmod-only
start; sync r/old.txt; report fsync-of-unchanged-file
start; ln r/linked.txt r/dir/hardlink; echo more >>r/linked.txt; sync r/linked.txt; report file-with-2-links
start; rm r/dir/hardlink; echo more >>r/linked.txt; sync r/linked.txt; report file-whose-2nd-link-was-removed
start; mv r/torename.txt r/renamed.txt; echo more >>r/renamed.txt; sync r/renamed.txt; report renamed-in-same-dir
start; mv r/tomove.txt r/other/moved.txt; echo more >>r/other/moved.txt; sync r/other/moved.txt; report moved-to-other-dir
start; echo y >r/dir/y; sync r/dir; report fsync-of-a-directory
start; echo z >r/dir/z; rm r/dir/z; echo w >r/dir/w; sync r/dir/w; report new-file-after-unlink-in-dir
start; echo big >r/bigxattr.txt; setfattr -n user.big -v "$(printf 'v%.0s' $(seq 1 1500))" r/bigxattr.txt
sync r/bigxattr.txt; report new-file-with-xattr-node
start; setfattr -n user.small -v small r/old.txt; sync r/old.txt; report xattr-on-old-file
start; truncate -s 0 r/dsync.txt; sync r/dsync.txt; report truncate-to-zero
start; fallocate -l 1048576 r/falloc.bin; sync r/falloc.bin; report new-fallocated-file
start; echo a >r/t1; echo b >r/t2; sync r/t1 r/t2; report two-new-files
