#!/usr/bin/env bash
# fstests (the Linux file-system test suite) on uf2fs mounts: builds fstests from a
# source tree, configures it for FUSE (FSTYP=fuse, FUSE_SUBTYP=.uf2fs, image files as
# TEST_DEV and SCRATCH_DEV, `-o allow_other,default_permissions,nosubtype,dev,suid`), links
# uf2fs as mount(8)'s helper (/usr/sbin/mount.fuse.uf2fs), runs each test with its own
# `./check`, unmounts, and runs `fsck.f2fs -f --dry-run` on both images after every
# test. Writes
# one line per test (pass / fail / notrun with fstests' reason, and the fsck verdict)
# to WORK/results.txt and prints the counts.
#
# usage: scripts/fstests.sh --fstests DIR [OPTIONS] TEST... | -g GROUP
#
# options:
#   --fstests DIR   an fstests (xfstests) source tree, e.g. a clone of
#                   git://git.kernel.org/pub/scm/fs/xfs/xfstests-dev.git; built here
#                   when ./check's helpers are missing (needs autoconf automake libtool
#                   libtool-bin xfslibs-dev libattr1-dev libacl1-dev uuid-dev xfsprogs
#                   attr acl gawk)
#   --size SIZE     size of each image (default 2G)
#   --work DIR      images, mount points and results (default /var/tmp/uf2fs-fstests)
#   -g GROUP        the tests of an fstests group (e.g. quick), generic/ ones only
#
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

fstests=""; size=2G; work=/var/tmp/uf2fs-fstests; group=""; tests=()
while [ $# -gt 0 ]; do
    case "$1" in
    --fstests) fstests="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
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
for tool in fusermount3 fsck.f2fs xfs_io; do
    command -v "$tool" >/dev/null || die "$tool is missing (apt-get install fuse3 f2fs-tools xfsprogs)"
done
fstests="$(realpath "$fstests")"
for user in fsgqa fsgqa2; do
    id "$user" >/dev/null 2>&1 \
        || echo "fstests.sh: no user $user: the tests that switch to it will not run (useradd -m -U $user)" >&2
done

if [ ! -x "$fstests/ltp/fsstress" ] || [ ! -x "$fstests/src/xfsctl" ]; then
    echo "building fstests in $fstests"
    (cd "$fstests" && { [ -x configure ] || make configure; } && { [ -f include/builddefs ] || ./configure; } \
        && make -j"$(nproc)") >"$work.build.log" 2>&1 || die "building fstests failed; see $work.build.log"
fi

uf2fs="${UF2FS:-}"
if [ -z "$uf2fs" ]; then
    (cd "$repo" && cargo build --release --quiet --bin uf2fs)
    uf2fs="$repo/target/release/uf2fs"
fi
helper=/usr/sbin/mount.fuse.uf2fs
if [ "$(readlink -f "$helper" 2>/dev/null)" != "$(readlink -f "$uf2fs")" ]; then
    ln -sf "$(readlink -f "$uf2fs")" "$helper"
fi

mkdir -p "$work/test" "$work/scratch"
for m in "$work/test" "$work/scratch"; do
    if mountpoint -q "$m"; then umount "$m"; fi
done
"$uf2fs" mkfs -f --size "$size" "$work/test.img" >/dev/null
"$uf2fs" mkfs -f --size "$size" "$work/scratch.img" >/dev/null
# dev,suid: as root's mount of a block device F2FS has them (FUSE mounts default to
# nodev,nosuid), for the tests that make device nodes or run set-ID programs.
opts="-o allow_other,default_permissions,nosubtype,dev,suid"
cat >"$fstests/local.config" <<EOF
export FSTYP=fuse
export FUSE_SUBTYP=.uf2fs
export TEST_DEV=$work/test.img
export TEST_DIR=$work/test
export SCRATCH_DEV=$work/scratch.img
export SCRATCH_MNT=$work/scratch
export FUSE_MOUNT_OPTIONS="$opts"
export TEST_FS_MOUNT_OPTS="$opts"
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
    # A test not run also ends with "Passed all 0 tests": look for that first.
    if grep -q "^Not run:" <<<"$out"; then
        verdict=notrun; notrun=$((notrun + 1))
        why="$(grep -m1 "\[not run\]" <<<"$out" | sed 's/.*\[not run\] *//' || true)"
    elif grep -q "^Passed all" <<<"$out"; then
        verdict=pass; pass=$((pass + 1)); why=""
    else
        verdict=fail; fail=$((fail + 1))
        why="$(grep -m1 -E "^ *(\+[^+]|output mismatch|_check|.*not run)" <<<"$out" | sed 's/^ *//' | cut -c1-120 || true)"
    fi
    # Unmounted, and the uf2fs process done with its last checkpoint (it holds the
    # image's lock until then), before fsck reads the image.
    for m in "$work/test" "$work/scratch"; do
        if mountpoint -q "$m"; then umount "$m" || true; fi
    done
    fsck=clean
    for img in "$work/test.img" "$work/scratch.img"; do
        flock -w 30 "$img" true || true
        if ! fsck.f2fs -f --dry-run "$img" >"$work/fsck.log" 2>&1 \
            || grep -q "\[Fail\]\|\[FIX\|ASSERT" "$work/fsck.log"; then
            fsck="NOT CLEAN ($(basename "$img"))"
            dirty=$((dirty + 1))
            cp "$work/fsck.log" "$work/fsck-$(tr / - <<<"$t")-$(basename "$img").log"
        fi
    done
    printf '%s\t%s\t%s\t%s\n' "$t" "$verdict" "$fsck" "$why" | tee -a "$results"
done
echo "$pass passed, $fail failed, $notrun not run; fsck not clean after $dirty"
[ "$fail" = 0 ] && [ "$dirty" = 0 ]
