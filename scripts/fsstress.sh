#!/usr/bin/env bash
# fstests' fsstress on a uf2fs mount: for each seed, `uf2fs mkfs` a fresh image, mount it
# read-write, run fsstress (several processes at once, every operation it knows, long
# padded names), `rm -rf` what it made, unmount, and judge the image with `fsck.f2fs -f`.
# A seed fails when fsstress or the rm fails, when an operation got EIO, ESTALE, EUCLEAN
# or EROFS (damage, or a file system gone read-only), when the unmount fails, or when
# fsck.f2fs finds anything. This is the load of fstests' generic/013 (`fsstress -p 20
# -r`), scaled up.
#
# usage: scripts/fsstress.sh [OPTIONS] [-- FSSTRESS_ARGS...]
#
# options:
#   --fsstress PATH   the fsstress binary (default: build ltp/fsstress in --fstests)
#   --fstests DIR     an fstests (xfstests) source tree to build fsstress in, e.g. a
#                     clone of git://git.kernel.org/pub/scm/fs/xfs/xfstests-dev.git;
#                     its build needs autoconf automake libtool libtool-bin xfslibs-dev
#                     libattr1-dev libacl1-dev uuid-dev (apt-get install ...)
#   --procs N         fsstress processes (default 8)
#   --ops N           operations per process (default 100000)
#   --seeds LIST      comma-separated seeds (default 1,2,3,4,5)
#   --size SIZE       image size for uf2fs mkfs (default 2G)
#   --mount-opts OPTS extra `uf2fs mount -o` options (default allow_other,default_permissions)
#   --work DIR        images and logs (default /var/tmp/uf2fs-fsstress)
#   --keep            keep each image (and its copy before fsck) after its run
#
# Output: one line per seed (seconds, operations, bad results, fsck verdict), then
# `N seeds passed, N failed`. Exit status 0 when every seed passed, 1 otherwise, 2 on
# usage errors. Run as root (fsstress chowns; the mount uses allow_other).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
export PATH="$PATH:/usr/sbin:/sbin"

usage() {
    sed -n '/^# usage:/,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
}
die() { echo "fsstress.sh: $*" >&2; exit 2; }

fsstress=""; fstests=""; procs=8; ops=100000; seeds="1,2,3,4,5"; size=2G
mount_opts="allow_other,default_permissions"; work=/var/tmp/uf2fs-fsstress; keep=0
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
    --fsstress) fsstress="$2"; shift 2 ;;
    --fstests) fstests="$2"; shift 2 ;;
    --procs) procs="$2"; shift 2 ;;
    --ops) ops="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --mount-opts) mount_opts="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) usage ;;
    *) die "unknown argument $1 (see --help)" ;;
    esac
done
for n in "$procs" "$ops"; do [[ "$n" =~ ^[0-9]+$ ]] || die "not a number: $n"; done
[ "$(id -u)" = 0 ] || die "run as root"
[ -e /dev/fuse ] || die "/dev/fuse is missing"
for tool in fusermount3 fsck.f2fs mountpoint; do
    command -v "$tool" >/dev/null || die "$tool is not installed (apt-get install fuse3 f2fs-tools util-linux)"
done

if [ -z "$fsstress" ]; then
    [ -n "$fstests" ] || die "give --fsstress PATH or --fstests DIR"
    fsstress="$fstests/ltp/fsstress"
    if [ ! -x "$fsstress" ]; then
        echo "building fsstress in $fstests"
        (cd "$fstests" && { [ -x configure ] || make configure; } && { [ -f include/builddefs ] || ./configure; } \
            && make -j"$(nproc)" -C lib && make -j"$(nproc)" -C ltp) >"$work.build.log" 2>&1 \
            || die "building fsstress failed; see $work.build.log"
    fi
fi
[ -x "$fsstress" ] || die "no fsstress at $fsstress"

uf2fs="${UF2FS:-}"
if [ -z "$uf2fs" ]; then
    (cd "$repo" && cargo build --release --quiet --bin uf2fs)
    uf2fs="$repo/target/release/uf2fs"
fi

mkdir -p "$work"
passed=0; failed=0
IFS=, read -ra seed_list <<<"$seeds"
for seed in "${seed_list[@]}"; do
    img="$work/seed$seed.img"; mnt="$work/mnt$seed"; log="$work/seed$seed"
    rm -f "$img"; mkdir -p "$mnt"
    "$uf2fs" mkfs --size "$size" -O extra_attr,inode_checksum,flexible_inline_xattr "$img" >/dev/null
    "$uf2fs" mount -f -o "$mount_opts" "$img" "$mnt" 2>"$log.mount.log" &
    pid=$!
    for _ in $(seq 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
    mountpoint -q "$mnt" || { echo "seed $seed: the mount did not appear: $(cat "$log.mount.log")"; failed=$((failed + 1)); continue; }
    mkdir "$mnt/fsstress"
    start=$SECONDS
    rc=0
    "$fsstress" -d "$mnt/fsstress" -p "$procs" -n "$ops" -s "$seed" -m 8 -r -v "${extra[@]}" >"$log.fsstress.log" 2>&1 || rc=$?
    secs=$((SECONDS - start))
    rmrc=0
    rm -rf "$mnt/fsstress" 2>"$log.rm.log" || rmrc=$?
    fusermount3 -u "$mnt" || true
    urc=0
    wait "$pid" || urc=$?
    # The last field of each verbose line is the operation's result (errno or 0).
    bad=$(awk '$NF == 5 || $NF == 116 || $NF == 117 || $NF == 30' "$log.fsstress.log" | wc -l)
    done_ops=$(grep -o '^[0-9]*/[0-9]*:' "$log.fsstress.log" | sort -u | wc -l)
    if [ "$keep" = 1 ]; then cp --sparse=always "$img" "$img.before-fsck"; fi
    frc=0
    fsck.f2fs -f "$img" >"$log.fsck.log" 2>&1 || frc=$?
    complaints=$(grep -c '\[Fail\]\|\[FIX\|ASSERT' "$log.fsck.log" || true)
    verdict="fsck clean"
    if [ "$frc" != 0 ] || [ "$complaints" != 0 ]; then verdict="fsck FAILED (exit $frc, $complaints complaints; $log.fsck.log)"; fi
    echo "seed $seed: ${secs} s, $done_ops operations, $bad EIO/ESTALE/EUCLEAN/EROFS results, fsstress exit $rc, rm exit $rmrc, unmount exit $urc, $verdict"
    if [ "$rc" = 0 ] && [ "$rmrc" = 0 ] && [ "$urc" = 0 ] && [ "$bad" = 0 ] && [ "$verdict" = "fsck clean" ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        grep -h "uf2fs:" "$log.mount.log" | head -5 || true
    fi
    if [ "$keep" = 0 ]; then rm -f "$img"; fi
done
echo "$passed seeds passed, $failed failed"
[ "$failed" = 0 ]
