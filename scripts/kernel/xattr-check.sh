#!/usr/bin/env bash
# Extended attributes written by uf2fs, judged by Linux F2FS (scripts/kernel-check.sh).
#
# For each feature set (uf2fs mkfs default, and extra_attr,inode_checksum,
# flexible_inline_xattr): uf2fs mkfs; a read-write uf2fs mount where setfattr writes
# xattrs inline, spilling into the xattr node, a list filled to the last byte, POSIX
# ACLs (access and default) and trusted.* on a symlink; unmount; fsck.f2fs -f clean;
# the kernel mounts read-only and must list exactly what uf2fs lists (a manifest with
# a deliberately wrong value must fail, once, as a control); the kernel then changes
# them (scripts/kernel/workloads/xattr.sh) and unmounts; fsck.f2fs -f clean again; uf2fs
# must list exactly what the kernel listed.
#
# usage: scripts/kernel/xattr-check.sh          (after `scripts/kernel-check.sh setup`
#                                                 and `cargo build --release`; root)
# Exit status: 0 pass, 1 a check failed, 2 set-up error.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
uf2fs=${UF2FS_BIN:-$top/target/release/uf2fs}
kc=$top/scripts/kernel-check.sh
for tool in "$uf2fs" fusermount3 setfattr getfattr fsck.f2fs xxd; do
    command -v "$tool" >/dev/null || { echo "xattr-check: $tool not found" >&2; exit 2; }
done
work=$(mktemp -d /var/tmp/uf2fs-xattr-check.XXXXXX)
mnt=$work/mnt
mkdir "$mnt"
mount_pid=
cleanup() {
    if mountpoint -q "$mnt"; then fusermount3 -uz "$mnt" || true; fi
    [ -z "$mount_pid" ] || wait "$mount_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "xattr-check: FAIL: $*" >&2; exit 1; }

# uf2fs mount OPTIONS... IMG: in the background until umount_uf2fs.
mount_uf2fs() {
    "$uf2fs" mount "$@" -f "$mnt" >"$work/mount.log" 2>&1 &
    mount_pid=$!
    for _ in $(seq 200); do
        mountpoint -q "$mnt" && return 0
        kill -0 "$mount_pid" 2>/dev/null || break
        sleep 0.05
    done
    cat "$work/mount.log" >&2
    fail "uf2fs mount $*"
}

umount_uf2fs() {
    fusermount3 -u "$mnt"
    wait "$mount_pid" || fail "uf2fs mount exited non-zero: $(cat "$work/mount.log")"
    mount_pid=
}

fsck_clean() {
    cp --sparse=always "$1" "$work/fsck.img"
    local out
    out=$(fsck.f2fs -f "$work/fsck.img" 2>&1) || fail "fsck.f2fs -f exited non-zero after $2: $out"
    if grep -qE '\[Fail\]|\[FIX|ASSERT' <<<"$out"; then fail "fsck.f2fs -f after $2: $out"; fi
    rm -f "$work/fsck.img"
}

hex() { head -c "$1" /dev/urandom | xxd -p | tr -d '\n'; }

# The ACL user::rw- user:1000:r-- group::r-- mask::r-- other::--- (Linux xattr format).
acl=0x0200000001000600ffffffff02000400e803000004000400ffffffff10000400ffffffff20000000ffffffff

populate() {
    cd "$mnt"
    echo hi >f
    mkdir d
    ln -s f l
    echo z >full
    setfattr -n user.small -v hello f
    setfattr -n user.big -v "0x$(hex 3000)" f
    setfattr -n trusted.t -v tval f
    setfattr -n user.small -v replaced f
    setfattr -n system.posix_acl_access -v "$acl" f
    setfattr -n user.d -v "0x$(hex 150)" d
    setfattr -n system.posix_acl_default -v "$acl" d
    setfattr -h -n trusted.l -v on-the-link l
    # 24 (header) + 44 + 4204 bytes: the inline area (200) and the node (4072) exactly.
    setfattr -n user.c -v "0x$(hex 36)" full
    setfattr -n user.b -v "0x$(hex 4196)" full
    cd - >/dev/null
}

# Manifest lines (path, type, xattrs; other fields "-") of every entry of IMG that has
# xattrs, as a read-only uf2fs mount lists them.
uf2fs_manifest() {
    mount_uf2fs -o ro "$1"
    (cd "$mnt" && getfattr -R -P -h -d -m - -e hex .) >"$work/getfattr.txt"
    (cd "$mnt" && find . -printf '%p\t%y\n') >"$work/types.txt"
    umount_uf2fs
    awk -F'\t' '
        function rel(p) { sub(/^\.\//, "/", p); if (p == ".") p = "/"; if (p !~ /^\//) p = "/" p; return p }
        FILENAME ~ /types/ { ty[rel($1)] = $2; next }
        /^# file: / { cur = rel(substr($0, 9)); order[++n] = cur; next }
        # (mawk makes xa[cur] on the left of an assignment before the right reads it)
        $0 != "" { if (cur in xa) v = xa[cur] "\n" $0; else v = $0; xa[cur] = v }
        END { for (i = 1; i <= n; i++) { p = order[i]
                m = split(xa[p], a, "\n")
                for (j = 2; j <= m; j++) { t = a[j]; for (k = j - 1; k >= 1 && a[k] > t; k--) a[k + 1] = a[k]; a[k + 1] = t }
                s = a[1]; for (j = 2; j <= m; j++) s = s "," a[j]
                printf "%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t%s\t-\n", p, ty[p], s } }
    ' "$work/types.txt" "$work/getfattr.txt" | LC_ALL=C sort
}

control_done=
for features in "" "extra_attr,inode_checksum,flexible_inline_xattr"; do
    what=${features:-default}
    img=$work/x.img
    rm -f "$img"
    "$uf2fs" mkfs --size 64M ${features:+-O "$features"} "$img" >/dev/null
    mount_uf2fs "$img"
    populate
    umount_uf2fs
    fsck_clean "$img" "uf2fs wrote xattrs ($what)"
    uf2fs_manifest "$img" >"$work/uf2fs.manifest"
    [ "$(wc -l <"$work/uf2fs.manifest")" -eq 4 ] || fail "uf2fs lists xattrs of: $(cut -f1 "$work/uf2fs.manifest")"
    echo "== $what: the kernel reads what uf2fs wrote"
    "$kc" verify --quiet "$img" "$work/uf2fs.manifest" || fail "the kernel disagrees ($what)"
    if [ -z "$control_done" ]; then
        sed 's/user.small=0x72/user.small=0x73/' "$work/uf2fs.manifest" >"$work/wrong.manifest"
        if "$kc" verify --quiet "$img" "$work/wrong.manifest" >/dev/null 2>&1; then
            fail "control: a wrong value was not caught"
        fi
        echo "== control: a wrong value in the manifest fails, as it should"
        control_done=1
    fi
    echo "== $what: the kernel changes them"
    "$kc" mount --rw --quiet --workload "$here/workloads/xattr.sh" --manifest-out "$work/kernel.manifest" "$img" ||
        fail "the kernel's workload ($what)"
    fsck_clean "$img" "the kernel changed xattrs ($what)"
    awk -F'\t' '$11 != "-" { printf "%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t%s\t-\n", $1, $2, $11 }' "$work/kernel.manifest" |
        LC_ALL=C sort >"$work/kernel-xattrs.manifest"
    uf2fs_manifest "$img" >"$work/uf2fs-after.manifest"
    diff "$work/kernel-xattrs.manifest" "$work/uf2fs-after.manifest" >&2 ||
        fail "uf2fs reads the kernel's xattrs differently ($what)"
    echo "== $what: uf2fs reads the kernel's changes: $(wc -l <"$work/uf2fs-after.manifest") entries with xattrs agree"
done
echo "xattr-check: PASS"
