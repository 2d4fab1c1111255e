#!/usr/bin/env bash
# Seeds the fuzz corpora from real F2FS images.
#
# Makes a few images with mkfs.f2fs (default features; extra_attr + inode_checksum +
# flexible_inline_xattr; 4 segments per section; a feature-rich one with sb_checksum and
# inode_crtime), fills each with sload.f2fs from a small generated tree, and cuts the
# blocks every parser reads into fuzz/corpus/<target>/ (see seed_cut.py). It also
# refreshes the base images of the whole-image target (fuzz/base/*.sparse.gz) and the
# fixture superblock (fuzz/fixtures/superblock.bin).
#
# Needs f2fs-tools (mkfs.f2fs, sload.f2fs) and python3. Deterministic apart from the
# timestamps and UUIDs mkfs/sload write. Usage: fuzz/seed.sh [--keep WORKDIR]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d)"
keep=0
if [[ "${1:-}" == "--keep" ]]; then
    keep=1
    work="${2:?--keep needs a directory}"
    mkdir -p "$work"
fi
trap '[[ $keep == 1 ]] || rm -rf "$work"' EXIT

for tool in mkfs.f2fs sload.f2fs python3; do
    command -v "$tool" >/dev/null || { echo "seed.sh: $tool not found" >&2; exit 1; }
done

# A pattern that compresses well, so the base images stay small once gzip'd.
pattern() { # pattern BYTES TAG
    python3 - "$1" "$2" <<'PY'
import sys
n, tag = int(sys.argv[1]), sys.argv[2].encode()
line = b"uf2fs fuzz seed " + tag + b" 0123456789abcdef\n"
sys.stdout.buffer.write((line * (n // len(line) + 1))[:n])
PY
}

# make_tree DIR SMALL: the source tree sload copies. SMALL=1 (the whole-image base
# images) leaves out the 12 MiB file and has fewer inodes.
make_tree() {
    local t="$1" small="$2"
    rm -rf "$t"
    mkdir -p "$t/inline" "$t/files" "$t/bigdir" "$t/links" "$t/xattrs" "$t/special"
    printf 'hello, f2fs\n' >"$t/inline/small.txt"
    : >"$t/inline/empty"
    pattern 3000 inline3000 >"$t/inline/3000.txt"   # still inline (max is 3488 bytes)
    pattern 5000 two-blocks >"$t/files/5000.bin"    # two data blocks
    pattern 102400 multi >"$t/files/100k.bin"        # addresses in the inode only
    pattern $((1100 * 4096)) direct >"$t/files/direct.bin"  # needs a direct node
    if [[ "$small" == 0 ]]; then
        pattern $((3100 * 4096)) indirect >"$t/files/indirect.bin"  # needs an indirect node
    fi
    # A file with holes (sload may or may not keep them sparse).
    truncate -s $((2 * 1024 * 1024)) "$t/files/sparse.bin"
    printf 'middle' | dd of="$t/files/sparse.bin" bs=1 seek=$((1024 * 1024)) conv=notrunc status=none
    # A directory with several hash levels' worth of entries and varied name lengths
    # (fewer, longer names in the small tree: the whole-image target walks every inode).
    local count=400 long=7
    if [[ "$small" == 1 ]]; then count=70 long=1; fi
    for i in $(seq 1 "$count"); do
        local name="entry-$i"
        if ((i % long == 0)); then name="$name-$(printf 'x%.0s' $(seq 1 $((i * 7 % 120 + 40))))"; fi
        printf '%s\n' "$i" >"$t/bigdir/$name"
    done
    mkdir -p "$t/deep/a/b/c/d/e/f/g/h"
    printf 'bottom\n' >"$t/deep/a/b/c/d/e/f/g/h/file"
    ln -s ../inline/small.txt "$t/links/relative"
    ln -s /inline/small.txt "$t/links/absolute"
    ln -s "$(printf 'long/%.0s' $(seq 1 60))target" "$t/links/long"
    ln -s missing "$t/links/dangling"
    ln "$t/inline/small.txt" "$t/links/hardlink"
    printf 'x\n' >"$t/xattrs/file"
    if command -v setfattr >/dev/null; then
        setfattr -n user.small -v value "$t/xattrs/file" || true
        setfattr -n user.big -v "$(pattern 1500 xattr | tr '\n' ' ')" "$t/xattrs/file" || true
        setfattr -n user.dir -v d "$t/xattrs" || true
    fi
    if command -v setfacl >/dev/null; then
        setfacl -m u:1234:rw- "$t/xattrs/file" 2>/dev/null || true
        setfacl -d -m g:99:r-x "$t/xattrs" 2>/dev/null || true
    fi
    mkfifo "$t/special/fifo" 2>/dev/null || true
    if [[ "$(id -u)" == 0 ]]; then
        mknod "$t/special/chr" c 1 3 2>/dev/null || true
        mknod "$t/special/blk" b 7 0 2>/dev/null || true
    fi
}

# make_image NAME SIZE_MIB TREE MKFS_OPTIONS...
make_image() {
    local name="$1" size="$2" tree="$3"
    shift 3
    local img="$work/$name.img"
    rm -f "$img"
    truncate -s "${size}M" "$img"
    mkfs.f2fs -f -q "$@" "$img" >/dev/null
    # sload 1.15 leaves i_inline_xattr_size 0 on flexible_inline_xattr images and its
    # own fsck pass repairs that, exiting 1: the image is still good seed material.
    local log="$work/$name.sload.log"
    sload.f2fs -f "$tree" "$img" >"$log" 2>&1 || true
    if tr '\r' '\n' <"$log" | grep -q "Can't find free block"; then
        echo "seed.sh: $name: sload.f2fs ran out of space (see $log)" >&2
        exit 1
    fi
    echo "$img"
}

make_tree "$work/tree" 0
make_tree "$work/tree-small" 1

imgs=(
    "$(make_image default 100 "$work/tree")"
    "$(make_image extra 100 "$work/tree" -O extra_attr,inode_checksum,flexible_inline_xattr)"
    "$(make_image seg4 200 "$work/tree" -s 4)"
    "$(make_image rich 100 "$work/tree" -O extra_attr,inode_checksum,flexible_inline_xattr,inode_crtime,sb_checksum,lost_found)"
)

python3 "$here/seed_cut.py" "$here/corpus" "${imgs[@]}"

# Base images of the whole-image target: the smallest images that hold every kind of
# file, without the 12 MiB file, stored sparse (non-zero blocks only) and gzip'd.
mkdir -p "$here/base" "$here/fixtures" "$here/corpus/image"
base_default="$(make_image base-default 80 "$work/tree-small")"
base_extra="$(make_image base-extra 80 "$work/tree-small" -O extra_attr,inode_checksum,flexible_inline_xattr,inode_crtime)"
python3 "$here/seed_cut.py" --sparse "$base_default" "$here/base/default.sparse.gz"
python3 "$here/seed_cut.py" --sparse "$base_extra" "$here/base/extra.sparse.gz"

# The valid superblock the checkpoint and node targets decode against.
dd if="${imgs[0]}" of="$here/fixtures/superblock.bin" bs=1024 skip=1 count=3 status=none

# Whole-image seeds (format in fuzz/src/image.rs): each base image untouched, then a
# few classic damages: zeroed superblock block, truncation, a flipped checkpoint bit.
python3 - "$here/corpus/image" <<'PY'
import os, struct, sys
d = sys.argv[1]
seeds = {
    "default": b"\x00",
    "extra": b"\x01",
    "zero-block0": b"\x00" + b"\x02" + struct.pack("<HHHB", 0, 0, 4096, 0),
    "truncated": b"\x00" + b"\x03" + struct.pack("<I", 5000),
    "flip-cp": b"\x01" + b"\x01" + struct.pack("<HH", 2, 8 * 140 + 3),
}
for name, data in seeds.items():
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)
PY
du -sh "$here/corpus" "$here/base"
