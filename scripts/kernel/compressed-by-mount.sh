#!/usr/bin/env bash
# Compressed files written through the uf2fs read-write mount, read back by Linux F2FS
# (issue 28): one image made with `uf2fs mkfs -O extra_attr,compression`, mounted five
# times with `compress_extension=*` and another algorithm each time (lz4, lz4:9 (LZ4HC),
# lzo, lzo-rle, zstd:3 with cluster checksums and 16-block clusters); each mount copies a
# tree (text and binaries), writes a compressible and a random file, overwrites inside a
# compressed cluster and truncates into one. Then:
#   1. fsck.f2fs -f clean; f2fs_io get_cblocks on the mount says blocks were saved;
#   2. what uf2fs reads equals the source files, and the overwritten and truncated file
#      equals the same edit made in memory;
#   3. Linux mounts the image (scripts/kernel-check.sh mount) and reads every file with
#      the same SHA-256 as uf2fs.
#
# usage: scripts/kernel/compressed-by-mount.sh   (as root, after `scripts/kernel-check.sh
#        setup` and `cargo build --release -p uf2fs`; env UF2FS_BIN, KEEP=1)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
uf2fs=${UF2FS_BIN:-$root/target/release/uf2fs}
kc=$root/scripts/kernel-check.sh
work=$(mktemp -d /var/tmp/uf2fs-cmount.XXXXXX)
cleanup() {
    fusermount3 -u "$work/mnt" 2>/dev/null || true
    if [ -z "${KEEP:-}" ]; then rm -rf "$work"; else echo "kept $work"; fi
}
trap cleanup EXIT
fail() {
    echo "compressed-by-mount: FAIL: $*" >&2
    exit 1
}
log() { echo "== $*"; }

mkdir -p "$work/src/tree" "$work/mnt"
cp -r /usr/share/doc/bash /usr/share/doc/f2fs-tools "$work/src/tree/" 2>/dev/null || true
head -c 3000000 "$(command -v python3)" >"$work/src/bin1"
(cd "$work/src" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$work/src.sha"
# The edited file as it must read: seq 1 200000, "overwrite" at byte 5000, cut at 700001.
want_seq=$(seq 1 200000 | python3 -c '
import hashlib, sys
d = bytearray(sys.stdin.buffer.read())
d[5000:5009] = b"overwrite"
print(hashlib.sha256(bytes(d[:700001])).hexdigest())')

img=$work/c.img
"$uf2fs" mkfs -q -O extra_attr,compression --size 512M "$img"
algs=("lz4" "lz4:9" "lzo" "lzo-rle" "zstd:3,compress_chksum,compress_log_size=4")
for i in "${!algs[@]}"; do
    d=$work/mnt/a$i
    "$uf2fs" mount -o "rw,compress_extension=*,compress_algorithm=${algs[$i]}" "$img" "$work/mnt" ||
        fail "mount with ${algs[$i]}"
    mkdir "$d"
    cp -r "$work/src/tree" "$work/src/bin1" "$d/"
    seq 1 200000 >"$d/seq.txt"
    head -c 262144 /dev/urandom >"$d/rand"
    printf overwrite | dd of="$d/seq.txt" bs=1 seek=5000 conv=notrunc status=none
    truncate -s 700001 "$d/seq.txt"
    fusermount3 -u "$work/mnt"
    sleep 1
done
# Written back by now (the unmounts): the blocks compression saved, file by file.
"$uf2fs" mount -o rw "$img" "$work/mnt"
for i in "${!algs[@]}"; do
    saved=$(f2fs_io get_cblocks "$work/mnt/a$i/seq.txt" | tail -1)
    [ "$saved" -gt 0 ] 2>/dev/null || fail "${algs[$i]}: get_cblocks says no block saved ($saved)"
    log "${algs[$i]}: seq.txt saves $saved blocks"
done
fusermount3 -u "$work/mnt"
sleep 1
fsck.f2fs -f --dry-run "$img" >"$work/fsck.log" 2>&1 || fail "fsck.f2fs: $(tail -5 "$work/fsck.log")"

"$uf2fs" mount -o ro "$img" "$work/mnt"
(cd "$work/mnt" && find . -type f -print0 | sort -z | xargs -0 sha256sum) | sort -k2 >"$work/uf2fs.sha"
fusermount3 -u "$work/mnt"
for i in "${!algs[@]}"; do
    while read -r h f; do
        got=$(awk -v f="./a$i/${f#./}" '$2 == f { print $1 }' "$work/uf2fs.sha")
        [ "$got" = "$h" ] || fail "${algs[$i]}: uf2fs reads ${f#./} differently from the source"
    done <"$work/src.sha"
    got=$(awk -v f="./a$i/seq.txt" '$2 == f { print $1 }' "$work/uf2fs.sha")
    [ "$got" = "$want_seq" ] || fail "${algs[$i]}: the overwritten and truncated file reads wrong"
done
log "uf2fs reads every file as written; fsck clean"

ok=
for try in 1 2; do
    # (3600 s: under UF2FS_KC_BATCH the run also waits for the other scripts' images.)
    if timeout 3600 "$kc" mount --quiet --hash-max $((1 << 30)) --manifest-out "$work/k.manifest" "$img" \
        >"$work/kmount.log" 2>&1; then
        ok=1
        break
    fi
    grep -q 'hung guest\|timed out' "$work/kmount.log" || break
done
[ -n "$ok" ] || fail "Linux mounting the image: $(grep -E '^(RESULT|  -|dmesg)' "$work/kmount.log" | head -20)"
awk -F'\t' '$1 !~ /^#/ && $2 == "f" { print $9 "  ." $1 }' "$work/k.manifest" | sort -k2 >"$work/k.sha"
diffs=$(diff "$work/uf2fs.sha" "$work/k.sha" || true)
[ -z "$diffs" ] || fail "Linux reads other contents than uf2fs: $(head -10 <<<"$diffs")"
log "Linux read all $(wc -l <"$work/k.sha") files as uf2fs wrote them"
echo "compressed-by-mount: PASS"
