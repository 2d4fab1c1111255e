#!/usr/bin/env bash
# Images built by `uf2fs mkfs IMAGE SOURCE` (the packer), judged by Linux F2FS:
# a seeded tree (uf2fs-gen-tree mix:N: files up to 4 MiB, holes, a directory of many
# entries, hard links, symlinks, fifos, setuid/setgid/sticky modes, owners, user.* and
# trusted.* xattrs; and sparse files with holes every way across clusters and direct
# nodes) is packed plain and with every compression algorithm (lz4, lz4hc:9, lzo,
# lzo-rle, zstd:3; clusters of 4, 16 and 256 blocks; checksums; released blocks), and
# with the ro feature's layout (plain, with Android's inode features, as an Android
# sparse image, which is turned back into a raw one with simg2img first, and
# compressed: lz4, lzo, zstd, clusters of 4, 16 and 256 blocks, checksums, released
# blocks, Android's feature set), and with make_f2fs -g android's features plus
# casefold (utf8) and project quota (quota files written), then for each image:
#   1. fsck.f2fs -f clean;
#   2. Linux mounts it read-only and lists it (kernel-check.sh mount --manifest-out);
#      every regular file's sha256 as the kernel read it must be the source file's, and
#      every entry's type and mode the source's; the kernel must log no F2FS warning or
#      error (a cluster Linux cannot decompress is an I/O error and fails the run);
#   3. uf2fs reads back everything the kernel listed (readback.sh).
#
# usage: scripts/kernel/packed-by-uf2fs.sh [--files N] [--only NAME,...]
#        (default 300 files, every variant below; as root, after
#        `scripts/kernel-check.sh setup` and `cargo build --release -p uf2fs -p uf2fs-testkit`)
# env:   UF2FS_BIN, UF2FS_GEN_TREE (binaries; default target/release/), KEEP=1
# Exit status: 0 pass, 1 a check failed, 2 set-up error.
set -euo pipefail
export LC_ALL=C
export PATH="$PATH:/usr/sbin:/sbin"

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
uf2fs=${UF2FS_BIN:-$top/target/release/uf2fs}
gen=${UF2FS_GEN_TREE:-$top/target/release/uf2fs-gen-tree}
kc=$top/scripts/kernel-check.sh
files=300
only=
while [ $# -ge 2 ]; do
    case $1 in
        --files) files=$2; shift 2 ;;
        --only) only=",$2,"; shift 2 ;;
        *) break ;;
    esac
done
[ $# = 0 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
for tool in "$uf2fs" "$gen" fsck.f2fs sha256sum; do
    command -v "$tool" >/dev/null || { echo "packed-by-uf2fs: $tool not found" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "packed-by-uf2fs: run as root (owners, trusted.* xattrs)" >&2; exit 2; }

work=$(mktemp -d /var/tmp/uf2fs-packed.XXXXXX)
cleanup() { if [ "${KEEP:-0}" = 1 ]; then echo "work directory kept: $work" >&2; else rm -rf "$work"; fi; }
trap cleanup EXIT
fail() { echo "packed-by-uf2fs: FAIL: $*" >&2; exit 1; }
log() { echo "== $*"; }

fsck_clean() { # IMG WHAT
    cp --sparse=always "$1" "$work/fsck.img"
    local out
    out=$(fsck.f2fs -f "$work/fsck.img" 2>&1) || fail "fsck.f2fs -f exited non-zero ($2): $out"
    if grep -qE '\[Fail\]|\[FIX|ASSERT' <<<"$out"; then fail "fsck.f2fs -f ($2): $out"; fi
    rm -f "$work/fsck.img"
}

"$gen" "mix:$files" "$work/src" 20261128 >/dev/null
# Files whose holes and data fall every way across clusters and direct nodes (holes
# after a cluster's first block, at the start, over whole clusters and over whole
# 4 MiB direct nodes, at the end; incompressible data; a short last cluster): what the
# packer must lay out so that Linux's ro read path and fsck.f2fs 1.15 read them right.
put() { # FILE OFFSET LENGTH t|r (text or random bytes)
    if [ "$4" = t ]; then { yes 'vendor system odm product apex' || true; } | head -c "$3"; else head -c "$3" /dev/urandom; fi |
        dd of="$1" bs=4096 seek="$2" oflag=seek_bytes conv=notrunc status=none
}
sp=$work/src/sparse
mkdir -p "$sp"
put "$sp/hole-after-first" 0 4106 r; put "$sp/hole-after-first" $((1 << 20)) 20000 r
put "$sp/hole-after-first" $((2 << 20)) 4096 t; truncate -s $(((3 << 20) + 5)) "$sp/hole-after-first"
put "$sp/hole-first" 10000 90000 r
put "$sp/far" 0 4096 t; put "$sp/far" $((24 << 20)) 40000 t
put "$sp/far-random" $((5 << 20)) 30000 r; truncate -s $((9 << 20)) "$sp/far-random"
put "$sp/short-tail" 0 $((3 * 16384 + 4097)) t
truncate -s 200000 "$sp/all-holes"
for i in 0 1 2 3 4 5; do put "$sp/mixed" $((i * 65536)) 65536 $([ $((i % 2)) = 0 ] && echo t || echo r); done
# The source's view: path, type letter, permission bits, sha256 of regular files.
(cd "$work/src" && find . -mindepth 1 -printf '/%P\t%y\t%#m\n' | sed 's/\t0*\([0-7]\{1,4\}\)$/\t\1/') | sort >"$work/src.types"
(cd "$work/src" && find . -type f -print0 | xargs -0 -r sha256sum | sed 's/^\([0-9a-f]*\)  \.\(.*\)$/\2\t\1/') | sort >"$work/src.sha"

# NAME, then the uf2fs mkfs options after IMAGE SOURCE.
variants=(
    "plain|"
    "lz4|--compress lz4"
    "lz4hc-16|--compress lz4hc:9 --compress-log-size 4 --compress-chksum"
    "lzo|--compress lzo"
    "lzo-rle-256|--compress lzo-rle --compress-log-size 8"
    "zstd-released|--compress zstd:3 --compress-log-size 3 --compress-chksum --release-blocks"
    "ro|-O ro"
    "ro-android|-O ro,extra_attr,inode_checksum,sb_checksum,inode_crtime"
    "ro-sparse|-O ro --sparse"
    "ro-lz4|-O ro --compress lz4"
    "ro-lz4-released|-O ro --compress lz4 --release-blocks"
    "ro-android-lz4|-O ro,extra_attr,inode_checksum,sb_checksum,inode_crtime --compress lz4 --release-blocks"
    "ro-lzo-16|-O ro --compress lzo --compress-log-size 4 --compress-chksum"
    "ro-lz4hc-32|-O ro --compress lz4hc:9 --compress-log-size 5"
    "ro-lzo-rle-8|-O ro --compress lzo-rle --compress-log-size 3 --release-blocks"
    "android-casefold-quota|-O extra_attr,project_quota,quota,encrypt,verity,inode_checksum,sb_checksum,inode_crtime -C utf8 --compress lz4"
    "ro-zstd-256|-O ro,extra_attr,inode_checksum,sb_checksum,inode_crtime --compress zstd:3 --compress-log-size 8 --compress-chksum --release-blocks"
)
for v in "${variants[@]}"; do
    name=${v%%|*}
    opts=${v#*|}
    if [ -n "$only" ] && [[ $only != *",$name,"* ]]; then continue; fi
    img=$work/$name.img
    # shellcheck disable=SC2086
    "$uf2fs" mkfs -q "$img" "$work/src" --preserve-owner --xattrs $opts || fail "uf2fs mkfs ($name)"
    if [[ $opts == *--sparse* ]]; then
        simg2img "$img" "$img.raw" || fail "simg2img ($name)"
        mv "$img.raw" "$img"
    fi
    fsck_clean "$img" "$name"
    t0=$SECONDS
    ok=
    for try in 1 2; do
        if "$kc" mount --quiet --hash-max $((1 << 30)) --manifest-out "$work/kernel.manifest" "$img" >"$work/kmount.log" 2>&1; then
            ok=1
            break
        fi
        # Retry once when the guest hung, or stopped before its result (a TCG boot under
        # load can panic in its timer set-up before any F2FS code runs).
        grep -q 'hung guest\|timed out\|guest stopped without a result block' "$work/kmount.log" || break
    done
    [ -n "$ok" ] || fail "Linux mounting the packed image ($name): $(grep -E '^(RESULT|  -|dmesg)' "$work/kmount.log" | head -20)"
    # Every source file's contents and every entry's type and mode, as Linux read them.
    awk -F'\t' '$1 !~ /^#/ && $2 == "f" { print $1 "\t" $9 }' "$work/kernel.manifest" | sort >"$work/k.sha"
    awk -F'\t' '$1 !~ /^#/ && $1 != "/" { m = $3; sub(/^0+/, "", m); if (m == "") m = "0"; print $1 "\t" $2 "\t" m }' \
        "$work/kernel.manifest" | sort >"$work/k.types"
    diffs=$(diff "$work/src.sha" "$work/k.sha" || true)
    [ -z "$diffs" ] || fail "Linux reads other file contents than the source's ($name): $(head -10 <<<"$diffs")"
    diffs=$(diff "$work/src.types" "$work/k.types" || true)
    [ -z "$diffs" ] || fail "Linux reads other types or modes than the source's ($name): $(head -10 <<<"$diffs")"
    "$here/readback.sh" --uf2fs "$uf2fs" "$img" "$work/kernel.manifest" >"$work/readback.log" 2>&1 ||
        fail "uf2fs reads the packed image differently from Linux ($name): $(head -20 "$work/readback.log")"
    info=$("$uf2fs" info "$img" | grep -iE '^(features|size)' | tr '\n' ';' || true)
    log "$name: Linux read all $(wc -l <"$work/k.types") entries as packed, $(wc -l <"$work/k.sha") files byte for byte; uf2fs agrees; fsck clean (${info}$((SECONDS - t0)) s)"
done
echo "packed-by-uf2fs: PASS"
