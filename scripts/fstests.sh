#!/usr/bin/env bash
# fstests (the Linux file-system test suite) on uf2fs mounts, or on fuse2fs's for
# reference: builds fstests from a source tree, configures it for FUSE (FSTYP=fuse,
# FUSE_SUBTYP=.uf2fs or .fuse2fs, `-o allow_other,default_permissions,dev,suid`, the
# mount's type plain `fuse` as fstests expects), puts TEST_DEV and SCRATCH_DEV on loop
# devices over two image files (the image files themselves when losetup cannot), makes
# the file systems (`uf2fs mkfs`, or mkfs.ext4 for fuse2fs), links mount(8)'s helper
# (/usr/sbin/mount.fuse.uf2fs or mount.fuse.fuse2fs), runs each test with its own
# `./check`, unmounts, and checks both file systems after every test (`fsck.f2fs -f
# --dry-run`, or `e2fsck -fn`). Writes one line per test (pass / fail / notrun with
# fstests' reason, and the fsck verdict) to WORK/results.txt and prints the counts.
# The loop devices are detached at exit.
#
# usage: scripts/fstests.sh --fstests DIR [OPTIONS] TEST... | -g GROUP
#
# options:
#   --fstests DIR   an fstests (xfstests) source tree, e.g. a clone of
#                   git://git.kernel.org/pub/scm/fs/xfs/xfstests-dev.git; built here
#                   when ./check's helpers are missing (needs autoconf automake libtool
#                   libtool-bin xfslibs-dev libattr1-dev libacl1-dev libaio-dev uuid-dev xfsprogs
#                   attr acl gawk)
#   --fs FS         uf2fs (default) or fuse2fs (e2fsprogs' ext2/3/4 over FUSE, on
#                   ext4 made by mkfs.ext4; installed with apt-get when missing)
#   --size SIZE     size of each image (default 2G)
#   --work DIR      images, mount points and results (default /var/tmp/uf2fs-fstests,
#                   or /var/tmp/fuse2fs-fstests with --fs fuse2fs)
#   --no-loop       use the image files as TEST_DEV and SCRATCH_DEV, not loop devices
#   -g GROUP        the tests of an fstests group (e.g. quick), generic/ ones only
#
# UF2FS=PATH runs that uf2fs binary instead of building one; FSTESTS_SH_DEBUG=1 keeps
# each test's ./check output in WORK/out-TEST.txt.
# Exit status: 0 when no test failed and every fsck was clean, 1 otherwise, 2 on
# usage errors. Run as root.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
export PATH="$PATH:/usr/sbin:/sbin"

usage() {
    sed -n '/^# usage:/,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
}
die() { echo "fstests.sh: $*" >&2; exit 2; }

fstests=""; fs=uf2fs; size=2G; work=""; group=""; loop=yes; tests=()
while [ $# -gt 0 ]; do
    case "$1" in
    --fstests) fstests="$2"; shift 2 ;;
    --fs) fs="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --no-loop) loop=no; shift ;;
    -g) group="$2"; shift 2 ;;
    -h | --help) usage ;;
    -*) die "unknown option $1" ;;
    *) tests+=("$1"); shift ;;
    esac
done
[ -n "$fstests" ] || die "give --fstests DIR"
[ -d "$fstests" ] || die "no directory $fstests"
[ "$(id -u)" = 0 ] || die "run as root"
[ -n "$group" ] || [ ${#tests[@]} -gt 0 ] || die "give tests or -g GROUP"
case "$fs" in
uf2fs | fuse2fs) ;;
*) die "--fs: uf2fs or fuse2fs, not $fs" ;;
esac
[ -n "$work" ] || work="/var/tmp/$fs-fstests"
if [ "$fs" = fuse2fs ] && ! command -v fuse2fs >/dev/null; then
    echo "fstests.sh: installing fuse2fs" >&2
    apt-get install -y fuse2fs >/dev/null || die "fuse2fs is missing (apt-get install fuse2fs)"
fi
case "$fs" in
uf2fs) needs="fusermount3 fsck.f2fs xfs_io" ;;
fuse2fs) needs="fusermount3 fuse2fs mkfs.ext4 e2fsck xfs_io cc" ;;
esac
for tool in $needs; do
    command -v "$tool" >/dev/null \
        || die "$tool is missing (apt-get install fuse3 f2fs-tools e2fsprogs fuse2fs xfsprogs gcc)"
done
fstests="$(realpath "$fstests")"
for user in fsgqa fsgqa2; do
    id "$user" >/dev/null 2>&1 \
        || echo "fstests.sh: no user $user: the tests that switch to it will not run (useradd -m -U $user)" >&2
done

mkdir -p "$work/test" "$work/scratch"
work="$(realpath "$work")"
if [ ! -x "$fstests/ltp/fsstress" ] || [ ! -x "$fstests/src/xfsctl" ]; then
    echo "building fstests in $fstests"
    (cd "$fstests" && { [ -x configure ] || make configure; } && { [ -f include/builddefs ] || ./configure; } \
        && make -j"$(nproc)") >"$work.build.log" 2>&1 || die "building fstests failed; see $work.build.log"
fi
for m in "$work/test" "$work/scratch"; do
    if mountpoint -q "$m"; then umount "$m"; fi
done

# mount(8)'s helper for `mount -t fuse.$fs`, which is how fstests mounts.
helper="/usr/sbin/mount.fuse.$fs"
if [ "$fs" = uf2fs ]; then
    uf2fs="${UF2FS:-}"
    if [ -z "$uf2fs" ]; then
        (cd "$repo" && cargo build --release --quiet --bin uf2fs)
        uf2fs="$repo/target/release/uf2fs"
    fi
    # nosubtype: the uf2fs helper then mounts with the type `fuse` FSTYP=fuse expects.
    # dev,suid: as root's mount of a block device has them (FUSE mounts default to
    # nodev,nosuid), for the tests that make device nodes or run set-ID programs.
    opts="-o allow_other,default_permissions,nosubtype,dev,suid"
    target="$(readlink -f "$uf2fs")"
else
    # fuse2fs (libfuse 2) puts its own `subtype=ext4` after the caller's options, so
    # its mounts are `fuse.ext4`, which fstests refuses as the wrong type for
    # FSTYP=fuse. A preloaded mount(2) wrapper hands the kernel plain `fuse` instead;
    # nothing else about the mount changes.
    cat >"$work/fuse-type.c" <<'CEOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
typedef int (*mount_fn)(const char *, const char *, const char *, unsigned long, const void *);
int mount(const char *src, const char *dst, const char *type, unsigned long flags, const void *data)
{
    mount_fn real = (mount_fn)dlsym(RTLD_NEXT, "mount");
    if (type && strncmp(type, "fuse.", 5) == 0)
        type = "fuse";
    return real(src, dst, type, flags, data);
}
CEOF
    cc -shared -fPIC -O2 -o "$work/fuse-type.so" "$work/fuse-type.c" -ldl \
        || die "building $work/fuse-type.so failed"
    # fuse2fs opens the device exclusively, and the fuse2fs of the previous mount may
    # still hold it just after its unmount (./check mounts and unmounts SCRATCH_DEV
    # before each test): the helper tries again for up to 10 s while the device is
    # busy (and shows only the last attempt's messages), as uf2fs waits for the
    # image's lock.
    cat >"$work/mount.fuse.fuse2fs" <<HEOF
#!/bin/sh
# mount(8)'s helper: mount.fuse.fuse2fs DEVICE MOUNTPOINT [-o OPTIONS]
dev="\$1"; mnt="\$2"; shift 2
err="\$(mktemp)"
tries=0
while ! LD_PRELOAD="$work/fuse-type.so" fuse2fs "\$dev" "\$mnt" "\$@" 2>"\$err"; do
    tries=\$((tries + 1))
    if [ "\$tries" -ge 50 ] || ! grep -q "Device or resource busy" "\$err"; then
        cat "\$err" >&2
        rm -f "\$err"
        exit 1
    fi
    sleep 0.2
done
cat "\$err" >&2
rm -f "\$err"
HEOF
    chmod +x "$work/mount.fuse.fuse2fs"
    opts="-o allow_other,default_permissions,dev,suid"
    target="$work/mount.fuse.fuse2fs"
fi
if [ "$(readlink -f "$helper" 2>/dev/null)" != "$target" ]; then
    ln -sf "$target" "$helper"
fi

# The two devices: loop devices over the image files when losetup can make them (the
# tests that need a block device then run), else the image files themselves.
loops=()
cleanup() {
    for m in "$work/test" "$work/scratch"; do
        if mountpoint -q "$m"; then umount "$m" || true; fi
    done
    for l in "${loops[@]}"; do
        # The FUSE daemon may still hold the device for a moment after the unmount.
        for _ in $(seq 100); do
            losetup -d "$l" 2>/dev/null && break
            sleep 0.1
        done
    done
}
trap cleanup EXIT
# Makes the file system on DEVICE (IMAGE, the image file, when not a loop device).
make_fs() {
    case "$fs" in
    uf2fs)
        if [ "$1" = "$2" ]; then
            "$uf2fs" mkfs -f --size "$size" "$2" >/dev/null
        else
            "$uf2fs" mkfs -f "$1" >/dev/null
        fi
        ;;
    fuse2fs) mkfs.ext4 -qF "$1" ;;
    esac
}
devs=()
for name in test scratch; do
    img="$work/$name.img"
    rm -f "$img"
    truncate -s "$size" "$img"
    dev="$img"
    if [ "$loop" = yes ]; then
        if l="$(losetup -f --show "$img" 2>/dev/null)"; then
            loops+=("$l")
            dev="$l"
        else
            echo "fstests.sh: losetup failed; $name is the image file, and the tests that need a block device will not run" >&2
        fi
    fi
    make_fs "$dev" "$img"
    devs+=("$dev")
done
echo "fstests.sh: $fs; TEST_DEV=${devs[0]} ($work/test.img), SCRATCH_DEV=${devs[1]} ($work/scratch.img)" >&2

# Checks one device after a test: fsck.f2fs, or e2fsck changing nothing.
fsck_dev() {
    if [ "$fs" = uf2fs ]; then
        fsck.f2fs -f --dry-run "$1" >"$work/fsck.log" 2>&1 \
            && ! grep -q "\[Fail\]\|\[FIX\|ASSERT\|Can't find a valid F2FS superblock" "$work/fsck.log"
    else
        e2fsck -fn "$1" >"$work/fsck.log" 2>&1
    fi
}
# Waits for the FUSE daemon to let go of a device after its unmount: uf2fs holds the
# device's lock until its last checkpoint is written; fuse2fs holds the device open.
wait_released() {
    if [ "$fs" = uf2fs ]; then
        flock -w 30 "$1" true || true
    else
        for _ in $(seq 300); do
            pgrep -f "^fuse2fs $1 " >/dev/null || break
            sleep 0.1
        done
    fi
}

cat >"$fstests/local.config" <<EOF
export FSTYP=fuse
export FUSE_SUBTYP=.$fs
export TEST_DEV=${devs[0]}
export TEST_DIR=$work/test
export SCRATCH_DEV=${devs[1]}
export SCRATCH_MNT=$work/scratch
export FUSE_MOUNT_OPTIONS="$opts"
export TEST_FS_MOUNT_OPTS="$opts"
# ./check wipes a block-device SCRATCH_DEV's signatures (wipefs -a) before each test,
# for the test's _scratch_mkfs to start afresh, but _scratch_mkfs makes nothing for
# FSTYP=fuse: the scratch file system would be left without its superblock.
export WIPEFS_PROG=
EOF

if [ -n "$group" ]; then
    mapfile -t tests < <(awk -v g="$group" '$0 !~ /^#/ { for (i = 2; i <= NF; i++) if ($i == g) print "generic/" $1 }' \
        "$fstests/tests/generic/group.list")
fi

results="$work/results.txt"
: >"$results"
pass=0; fail=0; notrun=0; dirty=0
for t in "${tests[@]}"; do
    out="$(cd "$fstests" && timeout 1800 ./check "$t" 2>&1)" || true
    [ -z "${FSTESTS_SH_DEBUG:-}" ] || printf "%s\n" "$out" >"$work/out-$(tr / - <<<"$t").txt"
    # A test not run also ends with "Passed all 0 tests": look for that first.
    if grep -q "^Not run:" <<<"$out"; then
        verdict=notrun; notrun=$((notrun + 1))
        why="$(grep -m1 "\[not run\]" <<<"$out" | sed 's/.*\[not run\] *//' || true)"
    elif grep -q "^Passed all [1-9]" <<<"$out"; then
        verdict=pass; pass=$((pass + 1)); why=""
    else
        # A failure, or ./check did not get to run the test ("Passed all 0 tests"
        # after "check: failed to mount $SCRATCH_DEV ... Interrupted!").
        verdict=fail; fail=$((fail + 1))
        why="$(grep -m1 -E "^ *(\+[^+]|output mismatch|_check|.*not run|check: )" <<<"$out" | sed 's/^ *//' | cut -c1-120 || true)"
    fi
    # Unmounted, and the FUSE daemon done with the device, before fsck reads it.
    for m in "$work/test" "$work/scratch"; do
        if mountpoint -q "$m"; then umount "$m" || true; fi
    done
    # A test that declares it leaves the scratch file system unchecked
    # (_require_scratch_nocheck: generic/740 formats the device with every mkfs.*
    # there is) gets no scratch verdict, as fstests itself would check nothing.
    nocheck=no
    if grep -q "_require_scratch_nocheck" "$fstests/tests/$t" 2>/dev/null; then nocheck=yes; fi
    fsck=clean
    for i in 0 1; do
        dev="${devs[$i]}"
        wait_released "$dev"
        if ! fsck_dev "$dev"; then
            cp "$work/fsck.log" "$work/fsck-$(tr / - <<<"$t")-$(basename "$dev").log"
            if [ "$i" = 1 ] && [ "$nocheck" = yes ]; then
                fsck="clean (test's; scratch not checked: _require_scratch_nocheck)"
            else
                fsck="NOT CLEAN ($(basename "$dev"))"
                dirty=$((dirty + 1))
            fi
            # fstests makes no file system for FSTYP=fuse: a new one here, so that
            # the damage does not follow into the next tests.
            make_fs "$dev" "$work/$([ "$i" = 0 ] && echo test || echo scratch).img"
        fi
    done
    printf '%s\t%s\t%s\t%s\n' "$t" "$verdict" "$fsck" "$why" | tee -a "$results"
done
echo "$pass passed, $fail failed, $notrun not run; fsck not clean after $dirty"
[ "$fail" = 0 ] && [ "$dirty" = 0 ]
