#!/usr/bin/env bash
# Runs the image matrix of docs/kernel-check.md: for every image kind (maker x size x
# options) make an image, then
#   1. fsck.f2fs -f (the maker's own output must be clean),
#   2. kernel-check.sh mount (read-only mount in Linux),
#   3. kernel-check.sh mount --rw (the kernel writes the smoke workload and unmounts),
#   4. fsck.f2fs -f on what the kernel left,
#   5. scripts/kernel/readback.sh: uf2fs ls -lRa / cat / extract against the kernel's
#      manifest,
#   6. kernel-check.sh verify (the kernel mounts its own result again, same manifest),
# and prints a Markdown table (one row per kind) at the end.
#
# usage: scripts/kernel/matrix.sh [--uf2fs BIN] [WORKDIR]   (WORKDIR default
#        /var/tmp/uf2fs-kernel/matrix; images are deleted unless KEEP=1)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
uf2fs=$root/target/release/uf2fs
if [ "${1:-}" = --uf2fs ]; then uf2fs=$2; shift 2; fi
work=${1:-/var/tmp/uf2fs-kernel/matrix}
export PATH="$PATH:/usr/sbin:/sbin"
[ -x "$uf2fs" ] || { echo "matrix: build uf2fs first (cargo build --release -p uf2fs)" >&2; exit 2; }
mkdir -p "$work"
"$here/../kernel-check.sh" setup >/dev/null || exit 2

XA=extra_attr,inode_checksum,flexible_inline_xattr,inode_crtime,sb_checksum,lost_found
# maker size label options
KINDS=(
    "mkfs.f2fs 256M default -"
    "mkfs.f2fs 256M s4 -s4"
    "mkfs.f2fs 256M xattr-set -O$XA"
    "mkfs.f2fs 1G default -"
    "uf2fs 256M default -"
    "uf2fs 256M s4 -s4"
    "uf2fs 256M xattr-set -O$XA"
    "uf2fs 1G default -"
    "uf2fs 1G s4 -s4"
    "uf2fs 1G xattr-set -O$XA"
)
if [ -n "${KINDS_FILTER:-}" ]; then
    mapfile -t KINDS < <(printf '%s\n' "${KINDS[@]}" | grep -E "$KINDS_FILTER")
fi

fsck_ok() { # fsck.f2fs -f, judged as the project's tests judge it
    local out rc
    out=$(fsck.f2fs -f --dry-run "$1" 2>&1); rc=$?
    if [ $rc = 0 ] && ! grep -qE '\[Fail\]|\[FIX|ASSERT' <<<"$out"; then return 0; fi
    echo "$out" | grep -E 'Fail|FIX|ASSERT|Error' | head -20 | sed 's/^/    fsck: /' >&2
    return 1
}

yn() { if [ "$1" = 0 ]; then echo ok; else echo "**FAIL**"; fi; }

rows=()
for kind in "${KINDS[@]}"; do
    read -r maker size label opt <<<"$kind"
    name="$maker-$size-$label"
    img=$work/$name.img
    log=$work/$name.log
    rm -f "$img"
    echo "== $name" >&2
    {
        opts=()
        [ "$opt" = - ] || opts=("$opt")
        if [ "$maker" = mkfs.f2fs ]; then
            truncate -s "$size" "$img" && mkfs.f2fs -q -f "${opts[@]}" "$img"
        else
            "$uf2fs" mkfs -q --size "$size" "${opts[@]}" "$img"
        fi
    } >"$log" 2>&1 || { echo "   making the image failed, see $log" >&2; rows+=("| $maker | $size | $label | make failed | | | | | |"); continue; }

    fsck_ok "$img" 2>>"$log"; f0=$?
    t=$SECONDS
    "$here/../kernel-check.sh" mount --quiet "$img" >>"$log" 2>&1; m_ro=$?
    t_ro=$((SECONDS - t)); t=$SECONDS
    "$here/../kernel-check.sh" mount --rw --quiet --manifest-out "$work/$name.manifest" "$img" >>"$log" 2>&1; m_rw=$?
    t_rw=$((SECONDS - t))
    fsck_ok "$img" 2>>"$log"; f1=$?
    "$here/readback.sh" --uf2fs "$uf2fs" "$img" "$work/$name.manifest" >>"$log" 2>&1; rb=$?
    "$here/../kernel-check.sh" verify --quiet "$img" "$work/$name.manifest" >>"$log" 2>&1; vf=$?
    grep -E '^dmesg:.*F2FS' "$log" | grep -vE 'Mounted with checkpoint|Found nat_bits|skipping recovery' | sort -u | sed 's/^/   /' >&2
    echo "   fsck(made)=$(yn $f0) mount-ro=$(yn $m_ro) ${t_ro}s mount-rw=$(yn $m_rw) ${t_rw}s fsck(after kernel)=$(yn $f1) uf2fs-readback=$(yn $rb) kernel-verify=$(yn $vf)" >&2
    rows+=("| $maker | $size | $label | $(yn $f0) | $(yn $m_ro) | $(yn $m_rw) | $(yn $f1) | $(yn $rb) | $(yn $vf) | ${t_ro} s / ${t_rw} s |")
    [ "${KEEP:-0}" = 1 ] || rm -f "$img"
done

echo "| maker | size | options | fsck (as made) | kernel mount ro | kernel rw workload + umount | fsck after kernel writes | uf2fs reads back | kernel re-verify | time ro / rw |"
echo "|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
