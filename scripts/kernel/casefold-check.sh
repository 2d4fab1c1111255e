#!/usr/bin/env bash
# Names uf2fs adds to a casefolded directory, judged by fsck.f2fs and Linux F2FS:
#   1. the kernel-written casefold fixture (crates/cli/tests/fixtures/kernel) is mounted
#      read-write with uf2fs (FUSE); in its casefolded /cf: a file, a directory (which
#      inherits the flag) with a file, a hard link, a symlink, 200 files, a rename to
#      "Umbenannt-İ", an unlink by another case; mkdir of a folded duplicate must fail;
#   2. fsck.f2fs -f clean (it checks casefolded hashes);
#   3. Linux (kernel-check.sh --rw, scripts/kernel/workloads/casefold-uf2fs.sh) finds
#      each name by another case, refuses a duplicate, adds a name of its own;
#   4. fsck.f2fs -f clean again, and uf2fs finds Linux's name by another case.
#
# usage: scripts/kernel/casefold-check.sh   (as root, after `scripts/kernel-check.sh
#        setup` and `cargo build --release -p uf2fs`; UF2FS_BIN overrides the binary)
# Exit status: 0 pass, 1 a check failed, 2 set-up error.
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
uf2fs=${UF2FS_BIN:-$top/target/release/uf2fs}
for tool in "$uf2fs" fusermount3 mountpoint fsck.f2fs; do
    command -v "$tool" >/dev/null || { echo "casefold-check: $tool not found" >&2; exit 2; }
done
work=$(mktemp -d /var/tmp/uf2fs-casefold.XXXXXX)
mnt=$work/mnt
mkdir "$mnt"
cleanup() {
    if mountpoint -q "$mnt"; then fusermount3 -uz "$mnt" || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "casefold-check: FAIL: $*" >&2; exit 1; }
fsck_clean() {
    local out
    out=$(fsck.f2fs -f --dry-run "$work/img" 2>&1) || fail "fsck.f2fs: $out"
    if grep -qE '\[Fail\]|\[FIX|ASSERT' <<<"$out"; then fail "fsck.f2fs $1: $out"; fi
    echo "== fsck.f2fs -f clean $1"
}

gunzip -c "$top/crates/cli/tests/fixtures/kernel/casefold.img.gz" >"$work/img"
"$uf2fs" mount -f "$work/img" "$mnt" >"$work/mount.log" 2>&1 &
pid=$!
for _ in $(seq 200); do mountpoint -q "$mnt" && break; sleep 0.05; done
mountpoint -q "$mnt" || fail "uf2fs mount: $(cat "$work/mount.log")"
(
    cd "$mnt/cf"
    echo new >"Neu-Straße"
    mkdir "Ǆ-Dir"
    echo in >"Ǆ-Dir/Innen.TXT"
    ln "Neu-Straße" "Hart-Link"
    ln -s "Neu-Straße" "Sym-Link"
    for i in $(seq 0 199); do : >"UF-File-$i"; done
    mv "UF-File-5" "Umbenannt-İ"
    rm "uf-file-6"
    if mkdir "NEU-STRASSE" 2>/dev/null; then fail "mkdir NEU-STRASSE succeeded"; fi
    [ "$(cat NEU-STRASSE)" = new ] || fail "NEU-STRASSE"
) || exit 1
fusermount3 -u "$mnt"
wait "$pid" || fail "uf2fs mount exited non-zero: $(cat "$work/mount.log")"
echo "== uf2fs added names to /cf"
fsck_clean "after uf2fs"
"$top/scripts/kernel-check.sh" mount --rw --quiet --workload "$here/workloads/casefold-uf2fs.sh" "$work/img" \
    | grep -v '^ls' || fail "Linux"
fsck_clean "after Linux"
[ "$("$uf2fs" cat "$work/img" /cf/VON-LINUX)" = linux ] || fail "uf2fs does not find Linux's cf/Von-Linux as VON-LINUX"
echo "casefold-check: PASS"
