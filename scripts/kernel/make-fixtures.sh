#!/usr/bin/env bash
# Makes the kernel-written fixture images of crates/cli/tests/fixtures/kernel: for each
# variant, `uf2fs mkfs` a 64 MiB image, let Linux F2FS (kernel-check.sh mount --rw) run
# scripts/kernel/workloads/fixture.sh on it and unmount, check the result with
# fsck.f2fs -f and scripts/kernel/readback.sh, then store it gzip'd with the kernel's
# manifest (NAME.img.gz, NAME.manifest).
#
# The compress variant is different: mkfs.f2fs -O extra_attr,compression makes a
# 256 MiB image, and Linux mounts it once per compression setting of COMPRESS_RUNS,
# each time running scripts/kernel/workloads/compress.sh (a directory of compressed
# files per setting: every algorithm, cluster sizes 4 to 256 blocks, with and without
# cluster checksums).
#
# The casefold variant is made by mkfs.f2fs (-O casefold -C utf8; uf2fs mkfs does not
# make casefold volumes), filled by scripts/kernel/workloads/casefold.sh with the
# statically built scripts/kernel/tools/casefold-flag put in the guest, and also keeps
# the workload's lookup probes (NAME.probes).
#
# usage: scripts/kernel/make-fixtures.sh [--uf2fs BIN] [VARIANT...]
#        variants: default extra-attr casefold compress (default: default extra-attr)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
uf2fs=$root/target/release/uf2fs
if [ "${1:-}" = --uf2fs ]; then uf2fs=$2; shift 2; fi
export PATH="$PATH:/usr/sbin:/sbin"
out=$root/crates/cli/tests/fixtures/kernel
work=/var/tmp/uf2fs-kernel/fixtures
mkdir -p "$out" "$work"
[ -x "$uf2fs" ] || { echo "make-fixtures: build uf2fs first (cargo build --release -p uf2fs)" >&2; exit 2; }

variant_opts() {
    case $1 in
        default) echo "" ;;
        extra-attr) echo "-O extra_attr,inode_checksum,flexible_inline_xattr,inode_crtime,sb_checksum,lost_found" ;;
        casefold) echo "-O casefold -C utf8" ;;
        *) echo "make-fixtures: unknown variant $1" >&2; exit 2 ;;
    esac
}

# Mount options of each compress run: algorithm[:level], log2 cluster size, checksums.
COMPRESS_RUNS=(
    "compress_algorithm=lzo,compress_log_size=2"
    "compress_algorithm=lzo-rle,compress_log_size=3,compress_chksum"
    "compress_algorithm=lz4,compress_log_size=4,compress_chksum"
    "compress_algorithm=lz4:9,compress_log_size=2"
    "compress_algorithm=zstd,compress_log_size=6,compress_chksum"
    "compress_algorithm=zstd:15,compress_log_size=8"
)

make_compress() {
    local img=$1 manifest=$2 result=$3 log=$4 o
    truncate -s 256M "$img"
    mkfs.f2fs -q -f -O extra_attr,compression "$img" >/dev/null
    : >"$log"
    for o in "${COMPRESS_RUNS[@]}"; do
        echo "== compress: mount -o $o" >&2
        # A TCG guest can stall when the host is busy: one retry on a fresh copy.
        cp --sparse=always "$img" "$img.before"
        if ! "$here/../kernel-check.sh" mount --rw --quiet --opts "$o" --workload "$here/workloads/compress.sh" \
            --manifest-out "$manifest" --result-out "$result" "$img" >>"$log"; then
            echo "== compress: retrying -o $o once" >&2
            cp --sparse=always "$img.before" "$img"
            "$here/../kernel-check.sh" mount --rw --quiet --opts "$o" --workload "$here/workloads/compress.sh" \
                --manifest-out "$manifest" --result-out "$result" "$img" >>"$log"
        fi
        rm -f "$img.before"
    done
}

variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(default extra-attr)
for v in "${variants[@]}"; do
    img=$work/$v.img
    rm -f "$img"
    if [ "$v" = compress ]; then
        made="mkfs.f2fs -O extra_attr,compression, 256 MiB; Linux \$kernel mounted it with each of: ${COMPRESS_RUNS[*]}; each time it ran scripts/kernel/workloads/compress.sh and unmounted"
        make_compress "$img" "$work/$v.manifest" "$work/$v.result" "$work/$v.log"
    else
        opts=$(variant_opts "$v")
        workload=$here/workloads/fixture.sh
        put=()
        if [ "$v" = casefold ]; then
            mkfs="mkfs.f2fs -q $opts (64 MiB)"
            truncate -s 64M "$img"
            # shellcheck disable=SC2086 # opts is a list of words
            mkfs.f2fs -q $opts "$img" >&2
            workload=$here/workloads/casefold.sh
            mkdir -p "$work/put"
            gcc -static -O2 -Wall -o "$work/put/casefold-flag" "$here/tools/casefold-flag.c"
            put=(--put "$work/put")
        else
            mkfs="uf2fs mkfs --size 64M $opts"
            # shellcheck disable=SC2086 # opts is a list of words
            "$uf2fs" mkfs -q --size 64M $opts "$img"
        fi
        made="$mkfs; Linux \$kernel ran scripts/kernel/workloads/$(basename "$workload") on it, read-write, and unmounted it"
        echo "== $v: $mkfs" >&2
        "$here/../kernel-check.sh" mount --rw --quiet --workload "$workload" "${put[@]}" \
            --manifest-out "$work/$v.manifest" --result-out "$work/$v.result" "$img" | tee "$work/$v.log"
    fi
    fsck=$(fsck.f2fs -f --dry-run "$img" 2>&1) || { echo "$fsck" >&2; exit 1; }
    if grep -qE '\[Fail\]|\[FIX|ASSERT' <<<"$fsck"; then echo "$fsck" >&2; exit 1; fi
    "$here/readback.sh" --uf2fs "$uf2fs" "$img" "$work/$v.manifest"
    kernel=$(sed -n 's/^kernel //p' "$work/$v.result")
    {
        echo "# Kernel-written F2FS image $v.img.gz: made by scripts/kernel/make-fixtures.sh"
        echo "# (${made//\$kernel/$kernel})." | fold -s -w 86 | sed '2,$s/^/# /'
        echo "# What the kernel saw before unmounting; columns (TAB-separated, - = n/a):"
        echo "# path type mode nlink uid gid size mtime sha256 target xattrs chunks"
        cat "$work/$v.manifest"
    } >"$out/$v.manifest"
    if [ "$v" = casefold ]; then
        {
            echo "# Lookups Linux $kernel made in $v.img.gz (scripts/kernel/workloads/casefold.sh):"
            echo "# probe found|missing PATH (PATH in printf octal escapes)"
            grep -o 'probe .*' "$work/$v.log"
        } >"$out/$v.probes"
    fi
    gzip -9 -n -c "$img" >"$out/$v.img.gz"
    echo "$v: $(stat -c %s "$out/$v.img.gz") bytes gzip'd, $(grep -vc '^#' "$out/$v.manifest") entries" >&2
done
