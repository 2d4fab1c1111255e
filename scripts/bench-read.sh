#!/usr/bin/env bash
# Read-speed benchmark, all in one run on one machine, page cache warm:
#
#  big file:  one 1 GiB file of random bytes in a 1.5 GiB image.
#             ceiling = `cat IMAGE > /dev/null` (whole image file, scaled to MB/s),
#             against `uf2fs cat IMAGE /big > /dev/null` and `cat MNT/big > /dev/null`
#             through `uf2fs mount -o ro` (remounted before each run so the kernel's
#             FUSE page cache never serves a run).
#  many files: 10,000 files of 0..64 KiB in 100 directories.
#             `uf2fs extract IMAGE OUT` against `cp -a TREE OUT` of the same tree from
#             the host file system, and against `cat IMAGE > /dev/null`.
#
# Each figure is the median of RUNS runs (default 5). Prints a Markdown report and saves
# it as WORKDIR/results.md.
#
# usage: scripts/bench-read.sh [WORKDIR]   (default /var/tmp/uf2fs-bench; needs ~4 GB)
# needs: f2fs-tools, fuse3 (for the mount figures; skipped without /dev/fuse), GNU tools.
set -euo pipefail

cd "$(dirname "$0")/.."
repo=$PWD
export PATH="$PATH:/usr/sbin:/sbin"
work="${1:-/var/tmp/uf2fs-bench}"
runs="${RUNS:-5}"
mkdir -p "$work"

log() { printf '%s\n' "$*" >&2; }

cargo build --release --quiet -p uf2fs -p uf2fs-testkit
# Cargo's own rule for where the build went (CARGO_TARGET_DIR, else the repository's target/).
target="${CARGO_TARGET_DIR:-$repo/target}"
uf2fs="$target/release/uf2fs"
gen="$target/release/uf2fs-gen-tree"

# Seconds (with nanoseconds) that the command given as arguments takes.
time_it() {
    local start end
    start=$(date +%s%N)
    "$@"
    end=$(date +%s%N)
    awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f\n", (b - a) / 1e9 }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

mbps() { awk -v n="$1" -v t="$2" 'BEGIN { printf "%.0f", n / 1e6 / t }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# Runs "$@" RUNS times (after PREPARE, if set, which is not timed); prints the median.
bench() {
    local i times=""
    for ((i = 0; i < runs; i++)); do
        if [ -n "${PREPARE:-}" ]; then eval "$PREPARE"; fi
        times+="$(time_it "$@")"$'\n'
    done
    printf '%s' "$times" | median
}

cat_to_null() { cat "$1" >/dev/null; }
uf2fs_cat() { "$uf2fs" cat "$1" "$2" >/dev/null; }

make_image() { # IMAGE SIZE TREE
    rm -f "$1"
    truncate -s "$2" "$1"
    mkfs.f2fs -q -f "$1"
    sload.f2fs -f "$3" -t / "$1" >"$1.sload.log" 2>&1
}

# ---- big file --------------------------------------------------------------------
big_bytes=$((1 << 30))
if [ ! -f "$work/big.img.done" ]; then
    log "building the 1 GiB file and its image"
    rm -rf "$work/bigtree"
    "$gen" big:$big_bytes "$work/bigtree" 7 >&2
    make_image "$work/big.img" 1536M "$work/bigtree"
    touch "$work/big.img.done"
fi
img_bytes=$(stat -c %s "$work/big.img")
log "warming the page cache"
cat "$work/big.img" >/dev/null
cat "$work/big.img" >/dev/null
"$uf2fs" cat "$work/big.img" /big | cmp - "$work/bigtree/big"

t_ceiling=$(bench cat_to_null "$work/big.img")
t_cat=$(bench uf2fs_cat "$work/big.img" /big)

mnt="$work/mnt"
mkdir -p "$mnt"
t_fuse=""
mount_pid=""
mount_now() {
    # Output to a log: a background job holding stdout would keep $(...) waiting.
    "$uf2fs" mount -o ro -f "$work/big.img" "$mnt" >>"$work/mount.log" 2>&1 &
    mount_pid=$!
    for _ in $(seq 200); do mountpoint -q "$mnt" && return 0; sleep 0.05; done
    echo "bench: mount did not appear" >&2
    return 1
}
unmount_now() {
    if mountpoint -q "$mnt"; then fusermount3 -u "$mnt"; fi
    if [ -n "$mount_pid" ]; then wait "$mount_pid" || true; mount_pid=""; fi
}
trap unmount_now EXIT
if [ -e /dev/fuse ] && command -v fusermount3 >/dev/null; then
    mount_now
    cmp "$mnt/big" "$work/bigtree/big"
    unmount_now
    fuse_bench() {
        PREPARE="unmount_now; mount_now" bench cat_to_null "$mnt/big"
        unmount_now
    }
    t_fuse=$(fuse_bench)
else
    log "no /dev/fuse or fusermount3: skipping the FUSE figure"
fi

# ---- 10,000 files ------------------------------------------------------------------
if [ ! -f "$work/many.img.done" ]; then
    log "building the 10,000-file tree and its image"
    rm -rf "$work/manytree"
    "$gen" many:10000:65536 "$work/manytree" 11 >&2
    make_image "$work/many.img" 1G "$work/manytree"
    touch "$work/many.img.done"
fi
many_img_bytes=$(stat -c %s "$work/many.img")
many_data=$(du -sb --apparent-size "$work/manytree" | cut -f1)
cat "$work/many.img" >/dev/null
cat "$work/many.img" >/dev/null
find "$work/manytree" >/dev/null
extract_run() { "$uf2fs" extract "$work/many.img" "$work/out"; }
cp_run() { cp -a "$work/manytree" "$work/out"; }
"$uf2fs" extract "$work/many.img" "$work/out" && diff -r "$work/manytree" "$work/out" && rm -rf "$work/out"
t_extract=$(PREPARE='rm -rf "$work/out"; sync' bench extract_run)
t_cp=$(PREPARE='rm -rf "$work/out"; sync' bench cp_run)
t_many_cat=$(bench cat_to_null "$work/many.img")
rm -rf "$work/out"

# ---- report --------------------------------------------------------------------------
ceiling_mbps=$(mbps "$img_bytes" "$t_ceiling")
cat_mbps=$(mbps "$big_bytes" "$t_cat")
fs_type=$(stat -f -c %T "$work")
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
{
    echo "### Read speed ($(date -u +%Y-%m-%d), median of $runs runs, page cache warm)"
    echo
    echo "Machine: $cpu, $(nproc) CPUs, $(free -g | awk '/Mem:/ {print $2}') GiB RAM, Linux $(uname -r), work dir on $fs_type;"
    echo "uf2fs $(git -C "$repo" rev-parse --short HEAD), $(mkfs.f2fs -V 2>&1 | head -1)."
    echo
    echo "| what | bytes | median time | throughput | vs ceiling |"
    echo "| --- | ---: | ---: | ---: | ---: |"
    echo "| \`cat big.img > /dev/null\` (ceiling) | $img_bytes | ${t_ceiling} s | $ceiling_mbps MB/s | 1.00 |"
    echo "| \`uf2fs cat big.img /big > /dev/null\` | $big_bytes | ${t_cat} s | $cat_mbps MB/s | $(ratio "$cat_mbps" "$ceiling_mbps") |"
    if [ -n "$t_fuse" ]; then
        fuse_mbps=$(mbps "$big_bytes" "$t_fuse")
        echo "| \`cat MNT/big > /dev/null\` (uf2fs mount -o ro) | $big_bytes | ${t_fuse} s | $fuse_mbps MB/s | $(ratio "$fuse_mbps" "$ceiling_mbps") |"
    fi
    echo
    echo "| what | data | median time | throughput | cp -a time / this time |"
    echo "| --- | ---: | ---: | ---: | ---: |"
    echo "| \`cp -a manytree out\` (host fs, ceiling-ish) | $many_data | ${t_cp} s | $(mbps "$many_data" "$t_cp") MB/s | 1.00 |"
    echo "| \`uf2fs extract many.img out\` | $many_data | ${t_extract} s | $(mbps "$many_data" "$t_extract") MB/s | $(ratio "$t_cp" "$t_extract") |"
    echo "| \`cat many.img > /dev/null\` (whole image) | $many_img_bytes | ${t_many_cat} s | $(mbps "$many_img_bytes" "$t_many_cat") MB/s | |"
} | tee "$work/results.md"
