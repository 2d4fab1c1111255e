#!/usr/bin/env bash
# Demo: build an F2FS image with mkfs.f2fs + sload.f2fs from a small generated tree, then
# read it back with uf2fs (info, ls -lR, cat, extract) and check that the extracted tree
# is identical to the source with diff -r and a listing of modes, link counts, sizes,
# mtimes and symlink targets.
#
# usage: scripts/demo.sh [WORKDIR]      (default: a new directory under /tmp)
# needs: f2fs-tools (mkfs.f2fs, sload.f2fs), a Rust toolchain, GNU diffutils/findutils.
set -euo pipefail

cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/sbin:/sbin"
for tool in mkfs.f2fs sload.f2fs; do
    command -v "$tool" >/dev/null || { echo "demo: $tool not found: install f2fs-tools" >&2; exit 1; }
done

work="${1:-$(mktemp -d /tmp/uf2fs-demo.XXXXXX)}"
mkdir -p "$work"
rm -rf "$work/tree" "$work/out" "$work/demo.img"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "build uf2fs and the tree generator (release)"
cargo build --release --quiet -p uf2fs -p uf2fs-testkit
uf2fs=target/release/uf2fs

step "generate a small seeded tree in $work/tree"
target/release/uf2fs-gen-tree small "$work/tree" 42

step "mkfs.f2fs + sload.f2fs -> $work/demo.img"
truncate -s 256M "$work/demo.img"
mkfs.f2fs -q -f "$work/demo.img"
sload.f2fs -f "$work/tree" -t / "$work/demo.img" >"$work/sload.log" 2>&1 \
    || { echo "demo: sload.f2fs failed, see $work/sload.log" >&2; exit 1; }

step "uf2fs info"
"$uf2fs" info "$work/demo.img"

step "uf2fs ls -lR"
"$uf2fs" ls -lR "$work/demo.img"

step "uf2fs cat /hello.txt (through the symlink /link_abs)"
"$uf2fs" cat "$work/demo.img" /link_abs | od -c | head -3

step "uf2fs extract -> $work/out"
"$uf2fs" extract "$work/demo.img" "$work/out"

step "compare: diff -r, then modes/links/sizes/mtimes/targets"
diff -r --no-dereference "$work/tree" "$work/out"
listing() { (cd "$1" && find . -mindepth 1 -printf '%M %n %s %T@ %p -> %l\n' | sort); }
diff <(listing "$work/tree") <(listing "$work/out")
echo "extracted tree is identical to the source ($(find "$work/out" | wc -l) paths)"
