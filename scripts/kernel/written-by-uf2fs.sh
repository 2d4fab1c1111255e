#!/usr/bin/env bash
# Images written through a uf2fs read-write mount, judged by Linux F2FS (the kernel check
# CI runs; scripts/kernel-check.sh boots the kernel).
#
# For each feature set (uf2fs mkfs default, and extra_attr,inode_checksum,
# flexible_inline_xattr,inode_crtime,lost_found):
#   1. uf2fs mkfs a 128 MiB image; a seeded tree (uf2fs-gen-tree mix:N: files up to
#      4 MiB, holes, a directory of many entries, hard links, symlinks, fifos, setuid/
#      setgid/sticky modes, owners, user.* and trusted.* xattrs, lists that need an
#      xattr node) is copied with cp -a through a read-write uf2fs mount and onto a
#      host reference directory; then the same changes on both (unlinks, a directory
#      moved, truncation down and up, appends, overwrites, new hard links, xattrs set
#      and removed) and the same times for what changed;
#   2. GC: fio's 4 KiB random overwrites (crc32c-verified) of a file that fills the
#      volume to ~85%, twice the volume's size in all, so that foreground GC moves the tree's
#      blocks and nodes around; unmount; fsck.f2fs -f clean;
#   3. Linux mounts it read-write, runs the smoke workload, lists everything and
#      unmounts (one boot: under TCG a boot costs more than the rest); what it listed of
#      the tree must be exactly the reference (type, mode, link count, owner, size,
#      mtime, sha256, symlink target, xattrs of every entry), and the fio file's size and
#      sha256 what `uf2fs cat` read; the kernel must log no F2FS warning or error;
#   4. fsck.f2fs -f clean again;
#   5. uf2fs reads back everything the kernel listed (scripts/kernel/readback.sh: ls -lRa,
#      cat, extract against the kernel's manifest).
#
# usage: scripts/kernel/written-by-uf2fs.sh [--files N]     (default 400; as root, after
#        `scripts/kernel-check.sh setup` and `cargo build --release -p uf2fs -p uf2fs-testkit`)
# env:   UF2FS_BIN, UF2FS_GEN_TREE (binaries; default target/release/), KEEP=1 keeps the
#        work directory
# Exit status: 0 pass, 1 a check failed, 2 set-up error.
set -euo pipefail
export LC_ALL=C
export PATH="$PATH:/usr/sbin:/sbin"

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
uf2fs=${UF2FS_BIN:-$top/target/release/uf2fs}
gen=${UF2FS_GEN_TREE:-$top/target/release/uf2fs-gen-tree}
kc=$top/scripts/kernel-check.sh
files=400
if [ "${1:-}" = --files ]; then files=$2; shift 2; fi
[ $# = 0 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
for tool in "$uf2fs" "$gen" fusermount3 mountpoint setfattr getfattr fsck.f2fs fio sha256sum; do
    command -v "$tool" >/dev/null || { echo "written-by-uf2fs: $tool not found" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "written-by-uf2fs: run as root (owners, trusted.* xattrs)" >&2; exit 2; }

work=$(mktemp -d /var/tmp/uf2fs-written.XXXXXX)
mnt=$work/mnt
mkdir "$mnt"
mount_pid=
cleanup() {
    if mountpoint -q "$mnt"; then fusermount3 -uz "$mnt" || true; fi
    [ -z "$mount_pid" ] || wait "$mount_pid" 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "work directory kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() { echo "written-by-uf2fs: FAIL: $*" >&2; exit 1; }
log() { echo "== $*"; }

mount_uf2fs() { # IMG [OPTIONS...]
    local img=$1
    shift
    "$uf2fs" mount "$@" -f "$img" "$mnt" >"$work/mount.log" 2>&1 &
    mount_pid=$!
    for _ in $(seq 400); do
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

fsck_clean() { # IMG WHEN
    cp --sparse=always "$1" "$work/fsck.img"
    local out
    out=$(fsck.f2fs -f "$work/fsck.img" 2>&1) || fail "fsck.f2fs -f exited non-zero after $2: $out"
    if grep -qE '\[Fail\]|\[FIX|ASSERT' <<<"$out"; then fail "fsck.f2fs -f after $2: $out"; fi
    rm -f "$work/fsck.img"
}

# The manifest (kernel-check.sh's format) of everything under DIR, paths prefixed with
# PREFIX; directories' sizes are left out ("-": the file system's own business).
host_manifest() { # DIR PREFIX
    local dir=$1 prefix=$2
    (cd "$dir" && find . -mindepth 1 -print0 | xargs -0 stat -c '%f %h %u %g %s %Y %n') >"$work/m.stat"
    (cd "$dir" && find . -type f -print0 | xargs -0 -r sha256sum) >"$work/m.sha"
    (cd "$dir" && find . -type l -printf '%p\t%l\n') >"$work/m.targets"
    (cd "$dir" && getfattr -R -P -h -d -m - -e hex . 2>/dev/null) >"$work/m.xattrs" || true
    awk -F'\t' -v prefix="$prefix" '
        function unescape(s,   out, i, c) { out = ""
            for (i = 1; i <= length(s); i++) { c = substr(s, i, 1)
                if (c == "\\" && substr(s, i + 1, 3) ~ /^[0-7][0-7][0-7]$/) {
                    out = out sprintf("%c", (substr(s, i + 1, 1) * 64) + (substr(s, i + 2, 1) * 8) + substr(s, i + 3, 1)); i += 3
                } else out = out c }
            return out }
        function rel(p) { sub(/^\.\//, "", p); return prefix "/" p }
        function sorted(s,   a, n, i, j, t, out) { n = split(s, a, ",")
            for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
            out = a[1]; for (i = 2; i <= n; i++) out = out "," a[i]; return out }
        function hex(h,   i, v) { v = 0; h = tolower(h)
            for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
            return v }
        FILENAME ~ /m\.sha$/ { sha[rel(substr($0, 67))] = substr($0, 1, 64); next }
        FILENAME ~ /m\.targets$/ { tg[rel($1)] = $2; next }
        FILENAME ~ /m\.xattrs$/ {
            if ($0 ~ /^# file: /) { cur = rel(unescape(substr($0, 9))); next }
            if ($0 == "") next
            if (cur in xa) v = xa[cur] "," $0; else v = $0
            xa[cur] = v; next }
        { split($0, f, " "); name = $0; for (i = 1; i <= 6; i++) sub(/^[^ ]+ /, "", name)
          m = hex(f[1]); t = int(m / 4096) % 16
          type = (t == 8) ? "f" : (t == 4) ? "d" : (t == 10) ? "l" : (t == 2) ? "c" : (t == 6) ? "b" : (t == 1) ? "p" : "s"
          p = rel(name)
          printf "%s\t%s\t%04o\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t-\n", p, type, m % 4096, f[2], f[3], f[4],
              (type == "d") ? "-" : f[5], f[6], (p in sha) ? sha[p] : "-", (p in tg) ? tg[p] : "-",
              (p in xa) ? sorted(xa[p]) : "-" }
    ' "$work/m.sha" "$work/m.targets" "$work/m.xattrs" "$work/m.stat" | sort
}

# One line per difference between the expected manifest $1 and the kernel's $2 (the
# fields $1 fills in).
compare_manifest() {
    awk -F'\t' '
        BEGIN { split("path type mode nlink uid gid size mtime sha256 target xattrs chunks", name, " ") }
        FNR == NR { want[$1] = $0; order[++n] = $1; next }
        { got[$1] = $0 }
        END {
            for (i = 1; i <= n; i++) {
                p = order[i]
                if (!(p in got)) { print p ": missing"; continue }
                split(want[p], w, "\t"); split(got[p], g, "\t")
                for (f = 2; f <= 12; f++)
                    if (w[f] != "-" && w[f] != g[f]) print p ": " name[f] " is " g[f] ", expected " w[f]
            }
        }' "$1" "$2"
}

# The same change on the reference and on the mount: "both CMD ARGS..." runs CMD in
# each tree's root (paths relative).
both() {
    (cd "$work/ref" && "$@") || fail "on the reference: $*"
    (cd "$mnt" && "$@") || fail "on the mount: $*"
}

change_both() {
    local list=$work/files i=0 f
    (cd "$work/ref" && find tree -type f | sort) >"$list"
    head -c $((3 << 20)) /dev/urandom >"$work/random"
    while IFS= read -r f; do
        i=$((i + 1))
        case $((i % 29)) in
            0) both rm -- "$f" ;;
            3) both truncate -s 0 -- "$f" ;;
            5) both truncate -s 1000 -- "$f" ;;
            7) both truncate -s +1M -- "$f" ;;
            11) both sh -c 'head -c 70000 "$1" >>"$2"' sh "$work/random" "$f" ;;
            13) both dd if="$work/random" of="$f" bs=4096 seek=2 count=5 conv=notrunc status=none ;;
            17) if [ "$(basename -- "$f" | wc -c)" -lt 250 ]; then both ln -- "$f" "$f.ln"; fi ;;
            19) both setfattr -n user.ci -v "0x$(head -c 300 "$work/random" | od -An -tx1 | tr -d ' \n')" -- "$f" ;;
            23) if getfattr -d -m '^user\.' -- "$work/ref/$f" 2>/dev/null | grep -q '^user\.'; then
                    both sh -c 'for n in $(getfattr -d -m "^user\." --absolute-names -- "$1" | sed -n "s/=.*//p"); do setfattr -x "$n" -- "$1"; done' sh "$f"
                fi ;;
        esac
    done <"$list"
    local d
    d=$(cd "$work/ref" && find tree -mindepth 2 -maxdepth 2 -type d | sort | head -1)
    [ -z "$d" ] || both mv -- "$d" tree/moved-dir
    # What changed got new times on each side: give both the same ones (and every
    # directory, whose entries may have changed), with nanoseconds.
    both sh -c 'find tree -newer "$1" -print0 | xargs -0 -r touch -h -d @1700000000.123456789' sh "$work/stamp"
    both sh -c 'find tree -type d -print0 | xargs -0 -r touch -h -d @1700000001.987654321' sh
    # A time before 1970: F2FS stores it signed; Linux must read it as uf2fs wrote it.
    both sh -c ': >tree/before-1970 && touch -h -d @-315619140 tree/before-1970'
    both touch -h -d @1700000001.987654321 tree
}

# One feature set, in a work directory of its own ($work/NAME, its own mount point), so
# that under UF2FS_KC_BATCH both run at once and Linux checks both images in one boot.
check_features() { # FEATURES
    local features=$1
    what=${features:-default}
    work=$work/$([ -n "$features" ] && echo features || echo default)
    mnt=$work/mnt
    mkdir -p "$mnt" "$work/ref"
    mount_pid=
    trap 'if mountpoint -q "$mnt"; then fusermount3 -uz "$mnt" || true; fi; [ -z "$mount_pid" ] || wait "$mount_pid" 2>/dev/null || true' EXIT
    img=$work/w.img
    "$uf2fs" mkfs --size 128M ${features:+-O "$features"} "$img" >/dev/null
    "$gen" "mix:$files" "$work/src" 20261122 >/dev/null
    t0=$SECONDS
    mount_uf2fs "$img"
    touch "$work/stamp"
    sleep 0.01
    cp -a "$work/src" "$mnt/tree" || fail "cp -a onto the uf2fs mount ($what)"
    cp -a "$work/src" "$work/ref/tree"
    change_both
    # GC: a file that fills the volume to ~85%, overwritten at random, twice the volume's size.
    read -r total avail < <(stat -f -c '%b %a' "$mnt")
    churn=$(( (total * 85 / 100 - (total - avail)) * 4096 ))
    [ "$churn" -gt $((16 << 20)) ] || fail "no room for the GC churn file ($what)"
    fio --name=churn --filename="$mnt/churn" --size="$churn" --io_size=256M --rw=randwrite --bs=4k \
        --norandommap --randseed=7 --ioengine=psync --fallocate=none --verify=crc32c --do_verify=1 \
        --verify_fatal=1 --verify_state_save=0 --output="$work/fio.log" >/dev/null || fail "fio on the uf2fs mount ($what): $(tail -5 "$work/fio.log")"
    report=$(getfattr -n uf2fs.status --only-values "$mnt" 2>/dev/null | grep -E '^(gc calls|blocks moved|waf)' | tr '\n' ';' || true)
    umount_uf2fs
    log "$what: uf2fs wrote $(find "$work/ref/tree" | wc -l) entries and a $((churn >> 20)) MiB file overwritten at random (${report:-no status report}) in $((SECONDS - t0)) s"
    fsck_clean "$img" "uf2fs wrote the tree and the churn ($what)"

    host_manifest "$work/ref/tree" /tree >"$work/expected.manifest"
    sum=$("$uf2fs" cat "$img" /churn | sha256sum | cut -d' ' -f1)
    printf '/churn\tf\t-\t1\t-\t-\t%s\t-\t%s\t-\t-\t-\n' "$churn" "$sum" >>"$work/expected.manifest"
    t0=$SECONDS
    "$kc" mount --rw --quiet --hash-max $((1 << 30)) --manifest-out "$work/kernel.manifest" "$img" >"$work/kmount.log" 2>&1 ||
        fail "Linux mounting and writing to the uf2fs-written image ($what): $(grep -E '^(RESULT|  -|dmesg)' "$work/kmount.log" | head -20)"
    diffs=$(compare_manifest "$work/expected.manifest" "$work/kernel.manifest")
    [ -z "$diffs" ] || fail "Linux does not read what uf2fs wrote ($what): $(head -20 <<<"$diffs")"
    # Control: the comparison catches a wrong hash and a wrong mode.
    awk -F'\t' -v OFS='\t' '$2 == "f" && !done { $9 = "0" substr($9, 2); $3 = "0000"; done = 1 } { print }' \
        "$work/expected.manifest" >"$work/wrong.manifest"
    [ "$(compare_manifest "$work/wrong.manifest" "$work/kernel.manifest" | wc -l)" = 2 ] ||
        fail "control: a wrong hash and mode in the manifest were not both caught"
    fsck_clean "$img" "Linux wrote to the uf2fs-written image ($what)"
    log "$what: Linux read all $(wc -l <"$work/expected.manifest") entries as uf2fs wrote them, wrote the smoke workload and unmounted; fsck clean ($((SECONDS - t0)) s)"
    t0=$SECONDS
    "$here/readback.sh" --uf2fs "$uf2fs" "$img" "$work/kernel.manifest" >"$work/readback.log" 2>&1 ||
        fail "uf2fs reads the kernel's result differently ($what): $(head -20 "$work/readback.log")"
    log "$what: $(tail -1 "$work/readback.log") ($((SECONDS - t0)) s)"
}

sets=("" "extra_attr,inode_checksum,flexible_inline_xattr,inode_crtime,lost_found")
if [ -n "${UF2FS_KC_BATCH:-}" ]; then
    pids=()
    for features in "${sets[@]}"; do
        (check_features "$features") &
        pids+=($!)
    done
    failed=0
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    [ "$failed" = 0 ] || exit 1
else
    for features in "${sets[@]}"; do (check_features "$features") || exit 1; done
fi
echo "written-by-uf2fs: PASS"
