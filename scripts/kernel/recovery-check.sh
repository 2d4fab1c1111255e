#!/usr/bin/env bash
# Images uf2fs leaves after fsync and a crash, recovered by Linux F2FS (issue 13, the
# direction uf2fs -> Linux of the power-cut interop; scripts/kernel-check.sh boots the
# kernel).
#
# For each feature set (uf2fs mkfs default, and extra_attr,inode_checksum,
# flexible_inline_xattr,inode_crtime):
#   1. uf2fs mkfs a 128 MiB image and mount it read-write with FUSE (-o cp_interval=0:
#      no periodic checkpoint, only what fsync and unmount write); files that exist at a
#      first checkpoint (`sync MOUNTPOINT`);
#   2. the cases of scripts/kernel/workloads/powercut.sh, each made durable by fsync or
#      fdatasync alone: a new file, appends, in-place overwrites, a truncate then write,
#      holes, a 10 MiB file, inline files, fdatasync of an append and of a new file, an
#      xattr set before the fsync (inline and in an xattr node), a chmod alone, a
#      truncate to zero, a fallocated file, a file fsync'd twice, 600 small files; and
#      (issue 28) a file cut to 100 blocks and regrown past the freed direct nodes, O_TRUNC
#      rewrites of a file with direct nodes and of an inline file grown out of its
#      inode, a punched and a zeroed range across direct nodes, each of which the kernel
#      must recover by roll-forward (its recover_inode line names the file); then
#      files written without fsync;
#      the manifest (kernel-check.sh's format) of the fsync'd files is taken right
#      after their fsyncs;
#   3. the crash: kill -9 the uf2fs process, fusermount -u -z the mount point; the image
#      is what a power cut after the fsyncs leaves (uf2fs writes with pwrite, so the
#      host's page cache holds all it wrote);
#   4. which path this tests: scripts/kernel/fsync-chain.py shows the last checkpoint's
#      flags and the fsync-marked nodes after it ("roll-forward": the fsyncs left
#      records for the kernel's recovery; "checkpoint": each fsync wrote a checkpoint,
#      nothing to roll forward);
#   5. Linux mounts the image read-write (its roll-forward recovery runs at mount),
#      every manifest entry must match what it reads (kernel-check.sh mount --expect),
#      it unmounts, and its log must hold no F2FS warning or error;
#   6. fsck.f2fs -f --dry-run must find the image clean.
#
# usage: scripts/kernel/recovery-check.sh [--opts OPTS] [--many N]
#        --opts  extra uf2fs mount options (e.g. fsync_mode=strict once uf2fs has it)
#        --many  small fsync'd files (default 600)
#        (as root, after `scripts/kernel-check.sh setup` and
#        `cargo build --release -p uf2fs`)
# env:   UF2FS_BIN (default target/release/uf2fs), KEEP=1 keeps the work directory
# Exit status: 0 pass, 1 a check failed, 2 set-up error.
set -euo pipefail
export LC_ALL=C
export PATH="$PATH:/usr/sbin:/sbin"

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
uf2fs=${UF2FS_BIN:-$top/target/release/uf2fs}
kc=$top/scripts/kernel-check.sh
opts='' many=600
while [ $# -gt 0 ]; do
    case $1 in
        --opts) opts=$2; shift 2 ;;
        --many) many=$2; shift 2 ;;
        *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
fusermount=$(command -v fusermount3 || command -v fusermount || true)
[ -n "$fusermount" ] || { echo "recovery-check: fusermount3 not found" >&2; exit 2; }
for tool in "$uf2fs" mountpoint fsck.f2fs python3 setfattr getfattr; do
    command -v "$tool" >/dev/null || { echo "recovery-check: $tool not found" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "recovery-check: run as root" >&2; exit 2; }

work=$(mktemp -d /var/tmp/uf2fs-recovery.XXXXXX)
mnt=$work/mnt
mkdir "$mnt"
mount_pid=
# shellcheck disable=SC2317 # run by the trap
cleanup() {
    if [ -n "$mount_pid" ] && kill -0 "$mount_pid" 2>/dev/null; then kill -9 "$mount_pid" 2>/dev/null || true; fi
    if mountpoint -q "$mnt"; then "$fusermount" -uz "$mnt" || true; fi
    [ -z "$mount_pid" ] || wait "$mount_pid" 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "work directory kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
setup_error() { echo "recovery-check: $*" >&2; exit 2; }
failures=0
fail() { echo "recovery-check: FAIL: $*" >&2; failures=$((failures + 1)); }
log() { echo "== $*"; }

mount_uf2fs() { # IMG
    "$uf2fs" mount -o "cp_interval=0${opts:+,$opts}" -f "$1" "$mnt" >"$work/mount.log" 2>&1 &
    mount_pid=$!
    for _ in $(seq 400); do
        mountpoint -q "$mnt" && return 0
        kill -0 "$mount_pid" 2>/dev/null || break
        sleep 0.05
    done
    cat "$work/mount.log" >&2
    setup_error "uf2fs mount $1 failed"
}

crash_uf2fs() {
    kill -9 "$mount_pid"
    wait "$mount_pid" 2>/dev/null || true
    mount_pid=
    "$fusermount" -uz "$mnt"
}

# The writes of step 2 through the mount at $1, in Python (os.fsync, os.fdatasync);
# prints the manifest of the fsync'd files and "maybe PATH" lines on stderr.
workload() {
    python3 - "$1" "$many" <<'EOF'
import ctypes, hashlib, os, stat, sys

mnt, many = sys.argv[1], int(sys.argv[2])
durable = {}  # path -> whether its mtime must be kept (fsync, not fdatasync)


def blocks(tag, first, count):
    out = bytearray()
    for b in range(first, first + count):
        s = f"{tag} block {b:08d} ".encode()
        out += (s * (4096 // len(s) + 1))[:4096]
    return bytes(out)


def p(rel):
    return os.path.join(mnt, rel)


def write(rel, data, offset=None, append=False, truncate_to=None, sync=None, mode=None):
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else 0)
    if offset is None and not append and truncate_to is None:
        flags |= os.O_TRUNC
    fd = os.open(p(rel), flags, 0o644)
    try:
        if truncate_to is not None:
            os.ftruncate(fd, truncate_to)
            os.lseek(fd, 0, os.SEEK_END)
        if offset is not None:
            os.lseek(fd, offset, os.SEEK_SET)
        os.write(fd, data)
        if mode is not None:
            os.fchmod(fd, mode)
        if sync == "fsync":
            os.fsync(fd)
        elif sync == "fdatasync":
            os.fdatasync(fd)
    finally:
        os.close(fd)
    if sync:
        durable[rel] = sync == "fsync"


def fsync(rel, datasync=False):
    fd = os.open(p(rel), os.O_RDONLY)
    (os.fdatasync if datasync else os.fsync)(fd)
    os.close(fd)
    durable[rel] = not datasync


# before the checkpoint
os.makedirs(p("pc/many"), exist_ok=True)
os.makedirs(p("pc/old"), exist_ok=True)
os.makedirs(p("pc/rf"), exist_ok=True)
write("pc/append.bin", blocks("old-append", 0, 2))
write("pc/overwrite.bin", blocks("old-over", 0, 64))
write("pc/shrink.bin", blocks("old-shrink", 0, 256))
write("pc/datasync-append.bin", blocks("old-dsync", 0, 3))
write("pc/zeroed.bin", blocks("old-zeroed", 0, 16))
write("pc/chmod.txt", b"mode changed after the checkpoint\n")
write("pc/old/unsynced-append.txt", b"at the checkpoint\n")
write("pc/old/unsynced-over.bin", blocks("old-unsynced", 0, 8))
# for the truncate, punch and zero-range cases (issue 28): past the inode's own
# addresses, so that whole direct nodes are freed or emptied after the checkpoint
write("pc/rf/shrink-regrow.bin", blocks("old-regrow", 0, 3000))
write("pc/rf/otrunc-large.bin", blocks("old-otrunc", 0, 1500))
write("pc/rf/otrunc-inline.txt", b"inline at the checkpoint\n")
write("pc/rf/punch.bin", blocks("old-punch", 0, 2200))
write("pc/rf/zero.bin", blocks("old-zero", 0, 1600))
fd = os.open(mnt, os.O_RDONLY)
os.fsync(fd)  # a checkpoint
os.close(fd)

# fsync'd after it
write("pc/new.bin", blocks("new", 0, 5), sync="fsync")
write("pc/append.bin", blocks("append", 2, 7), append=True, sync="fsync")
write("pc/overwrite.bin", blocks("over", 10, 4), offset=10 * 4096)
write("pc/overwrite.bin", blocks("over", 40, 1), offset=40 * 4096)
write("pc/overwrite.bin", b"partial overwrite in block 63", offset=63 * 4096 + 100, sync="fsync")
write("pc/shrink.bin", blocks("shrink", 0, 3), truncate_to=37 * 4096 + 1000, sync="fsync")
write("pc/holes.bin", blocks("holes", 0, 1))
write("pc/holes.bin", blocks("holes", 256, 2), offset=256 * 4096)
write("pc/holes.bin", blocks("holes", 1280, 1), offset=1280 * 4096)
os.truncate(p("pc/holes.bin"), 6 * 1024 * 1024 + 123)
fsync("pc/holes.bin")
write("pc/large.bin", blocks("large", 0, 2560), sync="fsync")
write("pc/inline.txt", b"inline data, fsync'd\n", sync="fsync")
write("pc/inline-0600.txt", b"inline too, mode 0600\n", mode=0o600, sync="fsync")
write("pc/datasync-append.bin", blocks("dsync", 3, 2), append=True, sync="fdatasync")
write("pc/datasync-new.bin", blocks("dsync-new", 0, 3), sync="fdatasync")
write("pc/xattr.txt", b"has an xattr\n")
os.setxattr(p("pc/xattr.txt"), "user.powercut", b"set before fsync")
write("pc/xattr.txt", blocks("xattr", 0, 2), append=True, sync="fsync")
write("pc/xattr-node.txt", b"has an xattr node\n")
os.setxattr(p("pc/xattr-node.txt"), "user.big", bytes(97 + i % 26 for i in range(1500)))
fsync("pc/xattr-node.txt")
os.chmod(p("pc/chmod.txt"), 0o640)
fsync("pc/chmod.txt")
os.truncate(p("pc/zeroed.bin"), 0)
fsync("pc/zeroed.bin")
fd = os.open(p("pc/falloc.bin"), os.O_WRONLY | os.O_CREAT, 0o644)
os.posix_fallocate(fd, 0, 1 << 20)
os.close(fd)
write("pc/falloc.bin", blocks("falloc", 1, 1), offset=4096, sync="fsync")
write("pc/twice.bin", blocks("twice-v1", 0, 4), sync="fsync")
write("pc/twice.bin", blocks("twice-v2", 1, 1), offset=4096)
write("pc/twice.bin", blocks("twice-v2", 4, 2), append=True, sync="fsync")
for i in range(many):
    write(f"pc/many/f{i:04d}", f"small file {i}\n".encode(), sync="fsync")
# Last, after every checkpoint the cases above may have asked for: a new file past the
# inode's own addresses and an overwrite inside an old file's direct node, so that the
# chain holds direct nodes (written by uf2fs without the fsync mark, before the marked
# inode block) for Linux's recovery to replay.
# Truncate, punch and zero range, each made durable by fsync alone (issue 28: by
# roll-forward records, as Linux does, never a checkpoint): the blocks freed must not
# come back. A file cut to 100 blocks then written at block 2800 (the direct nodes
# freed in between lie under the hole); an O_TRUNC rewrite of a file with direct nodes
# and of an inline file grown out of its inode; a punched range over the inode's
# addresses, a whole direct node and part of the next; a zeroed range.
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]


def fallocate(rel, mode, first, count):
    fd = os.open(p(rel), os.O_WRONLY)
    try:
        if libc.fallocate(fd, mode, first * 4096, count * 4096) != 0:
            raise OSError(ctypes.get_errno(), f"fallocate {rel}")
        os.fsync(fd)
    finally:
        os.close(fd)
    durable[rel] = True


os.truncate(p("pc/rf/shrink-regrow.bin"), 100 * 4096 + 123)
write("pc/rf/shrink-regrow.bin", blocks("regrow", 2800, 1), offset=2800 * 4096, sync="fsync")
write("pc/rf/otrunc-large.bin", blocks("otrunc", 0, 2), sync="fsync")
write("pc/rf/otrunc-inline.txt", blocks("otrunc-inline", 0, 3), sync="fsync")
fallocate("pc/rf/punch.bin", 0x01 | 0x02, 5, 2095)  # PUNCH_HOLE | KEEP_SIZE
fallocate("pc/rf/zero.bin", 0x10, 3, 1500)  # ZERO_RANGE
write("pc/late-large.bin", blocks("late-large", 0, 1600), sync="fsync")
write("pc/large.bin", blocks("large-over", 2000, 3), offset=2000 * 4096, sync="fsync")

# the manifest, taken before anything else is written
lines = []
for rel, keep_mtime in durable.items():
    st = os.lstat(p(rel))
    with open(p(rel), "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    xs = []
    for name in sorted(os.listxattr(p(rel))):
        xs.append(f"{name}=0x{os.getxattr(p(rel), name).hex()}")
    mtime = str(int(st.st_mtime)) if keep_mtime else "-"
    lines.append("\t".join(["/" + rel, "f", f"{stat.S_IMODE(st.st_mode):04o}", str(st.st_nlink),
                            str(st.st_uid), str(st.st_gid), str(st.st_size), mtime, sha, "-",
                            ",".join(xs) or "-", "-"]))
print("\n".join(sorted(lines)))

# not fsync'd: may or may not survive
write("pc/old/unsynced-append.txt", b"appended without fsync\n", append=True)
write("pc/old/unsynced-over.bin", blocks("unsynced", 2, 2), offset=2 * 4096)
write("pc/unsynced-new.bin", blocks("unsynced-new", 0, 4))
write("pc/unsynced-new.txt", b"new, not fsync'd\n")
for rel in ["pc/old/unsynced-append.txt", "pc/old/unsynced-over.bin", "pc/unsynced-new.bin", "pc/unsynced-new.txt"]:
    print(f"maybe /{rel}", file=sys.stderr)
EOF
}

# kernel-check.sh ARGS... IMG, retried once on a fresh copy of IMG (a TCG guest can
# stall when the host is busy).
kc_retry() {
    local img=${*: -1}
    cp --sparse=always "$img" "$img.before"
    if ! "$kc" "$@"; then
        echo "== retrying once: kernel-check.sh $*" >&2
        cp --sparse=always "$img.before" "$img"
        "$kc" "$@" || { rm -f "$img.before"; return 1; }
    fi
    rm -f "$img.before"
}

check_variant() { # NAME MKFS-OPTIONS...
    local name=$1 img=$work/$1.img chain path out
    shift
    log "$name: uf2fs mkfs --size 128M $*"
    rm -f "$img"
    "$uf2fs" mkfs -q --size 128M "$@" "$img" || setup_error "uf2fs mkfs $* failed"
    mount_uf2fs "$img"
    log "$name: fsync'd writes through the uf2fs mount (-o cp_interval=0${opts:+,$opts})"
    if ! workload "$mnt" >"$work/$name.manifest" 2>"$work/$name.workload.err"; then
        cat "$work/$name.workload.err" >&2
        crash_uf2fs
        fail "$name: the workload failed on the uf2fs mount"
        return
    fi
    sed 's/^/   /' "$work/$name.workload.err"
    log "$name: crash (kill -9 uf2fs, fusermount -u -z)"
    crash_uf2fs
    echo "   $(grep -c . "$work/$name.manifest") files fsync'd"

    chain=$(python3 "$here/fsync-chain.py" --quiet "$img")
    awk '{ print "   " $0 }' <<<"$chain"
    if grep -q '^chain: [0-9]* blocks, [1-9]' <<<"$chain"; then
        path="roll-forward (fsync'd nodes after the last checkpoint)"
    else
        path="checkpoint (no fsync'd node after the last checkpoint: nothing to roll forward)"
    fi
    log "$name: path tested: $path"

    log "$name: Linux mounts it read-write (recovery), compares, unmounts"
    if ! kc_retry mount --rw --no-workload --quiet --expect "$work/$name.manifest" "$img" \
        >"$work/$name.kernel.log" 2>&1; then
        sed 's/^/   /' "$work/$name.kernel.log"
        fail "$name: Linux did not recover the fsync'd files (see above)"
        return
    fi
    grep -E '^(verify|RESULT|timing)' "$work/$name.kernel.log" | sed 's/^/   /'
    grep -E '^dmesg: .*(recover|checkpoint)' "$work/$name.kernel.log" | grep -vE 'recover_(inode|dentry|data):' \
        | sed 's/^/   /' || true
    echo "   $(grep -c 'recover_inode:' "$work/$name.kernel.log" || true) inodes recovered by the kernel (its recover_inode lines)"
    # The truncate, punch and zero-range fsyncs must have left roll-forward records
    # (no checkpoint), replayed by the kernel's recovery.
    local rf
    for rf in shrink-regrow.bin otrunc-large.bin otrunc-inline.txt punch.bin zero.bin; do
        grep -q "recover_inode: .*name = $rf," "$work/$name.kernel.log" \
            || fail "$name: pc/rf/$rf was not recovered by the kernel's roll-forward (fsync'd by a checkpoint?)"
    done
    echo "   truncate, O_TRUNC, punch and zero-range fsyncs: recovered by the kernel's roll-forward"

    out=$(fsck.f2fs -f --dry-run "$img" 2>&1) || { echo "$out" >&2; fail "$name: fsck.f2fs -f --dry-run exited non-zero"; return; }
    if grep -qE '\[Fail\]|\[FIX|ASSERT' <<<"$out"; then
        echo "$out" >&2
        fail "$name: fsck.f2fs -f --dry-run after Linux's recovery"
        return
    fi
    log "$name: fsck.f2fs -f --dry-run clean ($(grep -m1 'checkpoint state' <<<"$out" | sed 's/^Info: //'))"
}

"$kc" setup >/dev/null || setup_error "kernel-check.sh setup failed"
check_variant default
check_variant extra-attr -O extra_attr,inode_checksum,flexible_inline_xattr,inode_crtime

if [ "$failures" = 0 ]; then
    echo "RESULT: PASS"
    exit 0
fi
echo "RESULT: FAIL ($failures)"
exit 1
