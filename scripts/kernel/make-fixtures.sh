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
# The powercut variants are images Linux left after a power cut: `uf2fs mkfs` a 128 MiB
# image (powercut-extra-attr: with -O extra_attr,inode_checksum,flexible_inline_xattr,
# inode_crtime), `kernel-check.sh mount --rw --powercut` runs
# scripts/kernel/workloads/powercut.sh (one checkpoint, then files made durable by fsync
# or fdatasync alone, then files written without fsync) and resets the guest without
# sync or unmount. NAME.manifest lists only the files the workload fsync'd (what a
# recovery must give back); its header records the kernel's fsync reasons, what
# fsck.f2fs --dry-run says of the raw image and the fsync chain after its checkpoint
# (scripts/kernel/fsync-chain.py). Each image is checked before it is stored: Linux
# mounts a copy read-write (its roll-forward recovery runs), the manifest must hold,
# and fsck.f2fs -f must find the recovered copy clean.
#
# usage: scripts/kernel/make-fixtures.sh [--uf2fs BIN] [VARIANT...]
#        variants: default extra-attr casefold compress powercut powercut-extra-attr
#        (default: default extra-attr)
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
        powercut) echo "" ;;
        powercut-extra-attr) echo "-O extra_attr,inode_checksum,flexible_inline_xattr,inode_crtime" ;;
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

# kernel-check.sh ARGS... with one retry (a TCG guest can stall when the host is busy);
# IMG, the last argument, is restored from IMG.before for the retry.
kc_retry() {
    local img=${*: -1}
    cp --sparse=always "$img" "$img.before"
    if ! "$here/../kernel-check.sh" "$@"; then
        echo "== retrying once: kernel-check.sh $*" >&2
        cp --sparse=always "$img.before" "$img"
        "$here/../kernel-check.sh" "$@" || { rm -f "$img.before"; return 1; }
    fi
    rm -f "$img.before"
}

# fsck.f2fs -f on IMG (it may repair: give it a copy); fails on any complaint.
fsck_clean() {
    local out
    out=$(fsck.f2fs -f "$1" 2>&1) || { echo "$out" >&2; return 1; }
    if grep -qE '\[Fail\]|\[FIX|ASSERT' <<<"$out"; then echo "$out" >&2; return 1; fi
}

make_powercut() {
    local v=$1 img=$work/$1.img opts mkfs kernel raw chain
    opts=$(variant_opts "$v")
    mkfs="uf2fs mkfs --size 128M${opts:+ $opts}"
    echo "== $v: $mkfs; Linux runs workloads/powercut.sh and loses power" >&2
    rm -f "$img"
    # shellcheck disable=SC2086 # opts is a list of words
    "$uf2fs" mkfs -q --size 128M $opts "$img"
    kc_retry mount --rw --powercut --quiet --workload "$here/workloads/powercut.sh" \
        --manifest-out "$work/$v.manifest" --result-out "$work/$v.result" "$img" | tee "$work/$v.log"
    raw=$(fsck.f2fs --dry-run "$img" 2>&1) || { echo "$raw" >&2; exit 1; }
    chain=$(python3 "$here/fsync-chain.py" --quiet "$img")
    grep -q '^chain: [1-9][0-9]* blocks, [1-9]' <<<"$chain" || {
        echo "make-fixtures: $v: no fsync'd node after the checkpoint: $chain" >&2; exit 1; }
    # Linux recovers a copy: the manifest must hold and fsck.f2fs must find it clean.
    cp --sparse=always "$img" "$work/$v.recovered.img"
    kc_retry mount --rw --no-workload --quiet --expect "$work/$v.manifest" \
        --result-out "$work/$v.recovered.result" "$work/$v.recovered.img" | tee "$work/$v.recovered.log"
    grep -q '^verify: .* manifest entries match' "$work/$v.recovered.log" || {
        echo "make-fixtures: $v: Linux's recovery did not give back the manifest" >&2; exit 1; }
    fsck_clean "$work/$v.recovered.img" || { echo "make-fixtures: $v: fsck.f2fs -f after Linux's recovery" >&2; exit 1; }
    kernel=$(sed -n 's/^kernel //p' "$work/$v.result")
    {
        echo "# Power-cut F2FS image $v.img.gz, made by scripts/kernel/make-fixtures.sh:"
        echo "# $mkfs; Linux $kernel mounted it read-write, ran"
        echo "# scripts/kernel/workloads/powercut.sh and was reset at once: no sync, no unmount"
        echo "# (kernel-check.sh mount --rw --powercut)."
        echo "# The entries are the files the workload fsync'd or fdatasync'd after its checkpoint"
        echo "# (mtime \"-\" where only fdatasync'd): a recovery must give back each of them."
        echo "# What the workload saw (fsync cp_reason \"no needed\" = no checkpoint, a roll-forward record):"
        sed -n 's/^workload case /#   case /p; s/^workload maybe /#   not fsync'"'"'d, may be lost: /p' "$work/$v.result"
        echo "# fsck.f2fs $(fsck.f2fs -V 2>&1 | awk '{ print $2; exit }') --dry-run on the image as stored (it does not look past the checkpoint):"
        grep -E 'checkpoint state|valid_(node|inode)_count|\[Fail\]|\[FIX|ASSERT' <<<"$raw" | sed 's/^/#   /'
        echo "# scripts/kernel/fsync-chain.py on it:"
        awk '{ print "#   " $0 }' <<<"$chain"
        echo "# Linux recovered a copy (mount -o rw: roll-forward), the entries matched, and"
        echo "# fsck.f2fs -f found the recovered copy clean."
        echo "# path type mode nlink uid gid size mtime sha256 target xattrs chunks"
        cat "$work/$v.manifest"
    } >"$out/$v.manifest"
    gzip -9 -n -c "$img" >"$out/$v.img.gz"
    echo "$v: $(stat -c %s "$out/$v.img.gz") bytes gzip'd, $(grep -vc '^#' "$out/$v.manifest") entries" >&2
}

variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(default extra-attr)
for v in "${variants[@]}"; do
    case $v in powercut | powercut-extra-attr) make_powercut "$v"; continue ;; esac
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
