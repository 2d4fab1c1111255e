#!/usr/bin/env bash
# fio on the uf2fs FUSE mount under each GC pacer (`-o gc_pacing=off|seed|adaptive`),
# side by side in one run on one machine: the write latency (fio's clat) of 4 KiB random
# overwrites on a volume about FILL% full, where foreground GC must reclaim sections over
# and over (issue 11's acceptance measurement; docs/gc-pacing.md).
#
# Per pacer and round: a fresh `uf2fs mkfs --size SIZE` image, mounted
# `-o rw,gc_pacing=P,gc_latency_target_us=T`; fio lays out FILES files that fill the volume
# to FILL% of what statfs offers (sequential 1 MiB writes, not measured); then the measured
# job: random 4 KiB writes over those files (norandommap, file_service_type=random,
# psync, iodepth 1, one thread, direct=1 (--direct) so each write reaches uf2fs, fixed randseed:
# the same offsets for every pacer), IO times the volume's size in all, with crc32c in
# every block and the last version of every block read back and checked at the end
# (--verify=crc32c --do_verify=1 --verify_fatal=1). Reported from fio's JSON: write
# IOPS, clat p50/p99/p99.9/p99.99/max; from `uf2fs status` after the job: WAF,
# foreground GC calls, paced steps, writer finishes. After the unmount, `fsck.f2fs -f`
# must find the image clean, as the mount tests judge it: exit 0, no `[Fail]`, `[FIX` or
# `ASSERT` line (the run fails otherwise).
#
# Order: REPS rounds; each round runs every pacer in turn (so load changes on a shared
# machine hit all of them alike).
#
# usage: scripts/bench-pacing-fio.sh [--size SIZE] [--fill PERCENT] [--io N] [--files N]
#                                    [--pacers LIST] [--target-us N] [--direct 0|1] [--reps N]
#                                    [--work DIR] [--out FILE]
#   --size       image size (default 256M)
#   --fill       share of the space statfs offers filled before the overwrites (default 90)
#   --io         overwrites, in multiples of the volume's size (default 3)
#   --files      files fio spreads the writes over (default 4)
#   --pacers     comma-separated gc_pacing values (default off,seed,adaptive)
#   --target-us  gc_latency_target_us (default 1000)
#   --direct     1 (default): O_DIRECT overwrites; 0: buffered (the kernel's page cache
#                sends them to uf2fs in its own time)
#   --reps       rounds (default 1)
#   --work       image, mountpoint, logs (default /var/tmp/uf2fs-pacing-fio); cleaned after
#   --out        also write the Markdown report to FILE
# Defaults: 3 pacers x 1 round, about 3 minutes on 2 cores. Run as root (allow_other).
# Needs fio, fuse3, f2fs-tools, python3; cargo (or UF2FS=binary).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
# shellcheck source=scripts/lib/fs-targets.sh
. "$here/lib/fs-targets.sh"
export PATH="$PATH:/usr/sbin:/sbin"

size=256M; fill=90; io=3; files=4; pacers="off,seed,adaptive"; target_us=1000; direct=1; reps=1
work=/var/tmp/uf2fs-pacing-fio; out=""
cmdline="scripts/bench-pacing-fio.sh $*"
usage() { sed -n '/^# usage:/,/^# Defaults:/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
    --size) size="$2"; shift 2 ;;
    --fill) fill="$2"; shift 2 ;;
    --io) io="$2"; shift 2 ;;
    --files) files="$2"; shift 2 ;;
    --pacers) pacers="$2"; shift 2 ;;
    --target-us) target_us="$2"; shift 2 ;;
    --direct) direct="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h | --help) usage ;;
    *) fst_log "bench-pacing-fio: unknown argument $1"; usage ;;
    esac
done
for n in "$fill" "$io" "$files" "$target_us" "$reps"; do [[ "$n" =~ ^[0-9]+$ && "$n" -ge 1 ]] || usage; done
[ "$fill" -lt 100 ] || usage
[[ "$direct" =~ ^[01]$ ]] || usage
for p in ${pacers//,/ }; do
    case "$p" in off | seed | adaptive) ;; *) fst_log "bench-pacing-fio: unknown pacer $p"; usage ;; esac
done
for tool in fio timeout python3 fsck.f2fs; do
    command -v "$tool" >/dev/null || { fst_log "bench-pacing-fio: $tool not found (scripts/install-fs-test-tools.sh)"; exit 1; }
done
fst_fuse_ready || { fst_log "bench-pacing-fio: no /dev/fuse or fusermount3"; exit 1; }
if [ -n "$out" ]; then out="$(realpath -m "$out")"; fi

mkdir -p "$work"
work="$(realpath "$work")"
if mountpoint -q "$work/mnt"; then fst_log "bench-pacing-fio: $work/mnt is still mounted; unmount it first"; exit 1; fi
rm -rf "${work:?}/mnt" "${work:?}/verify"
rm -f "$work/f2fs.img" "$work"/fio-*.json "$work"/fio-*.log "$work"/mount-*.log "$work"/status-*.txt "$work"/fsck-*.log "$work/raw.tsv"
raw="$work/raw.tsv"
: >"$raw"
started=$(date +%s)
load_start="$(cut -d' ' -f1-3 /proc/loadavg)"

# shellcheck disable=SC2317 # called from the trap
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    fst_stop_child
    fst_unmount || true
    fst_reap_child
    rm -f "$work/f2fs.img"
    rm -rf "${work:?}/verify"
    if ! mountpoint -q "$work/mnt"; then rm -rf "${work:?}/mnt"; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

uf2fs_bin="$(fst_uf2fs_binary "$repo")"
bytes="$(numfmt --from=iec "$size")"

run_one() { # ROUND PACER
    local r="$1" p="$2" tag="$2-r$1" mnt="$work/mnt"
    fst_make_f2fs "$uf2fs_bin" "$work/f2fs.img" "$size"
    FST_UF2FS_OPTS="rw,allow_other,gc_pacing=$p,gc_latency_target_us=$target_us"
    fst_mount_uf2fs "$uf2fs_bin" "$work/f2fs.img" "$mnt" "$work/mount-$tag.log"
    # What statfs offers, and the files' size that brings it to FILL%.
    local total free file_size
    total=$(($(stat -f -c '%b * %S' "$mnt")))
    free=$(($(stat -f -c '%a * %S' "$mnt")))
    file_size=$(((total * fill / 100 - (total - free)) / files / 4096 * 4096))
    mkdir -p "$mnt/fio" "$work/verify"
    local job=(--name=pacing --directory="$mnt/fio" --nrfiles="$files" --filesize="$file_size"
        --size=$((file_size * files)) --bs=4k --ioengine=psync --iodepth=1 --fallocate=none
        --file_service_type=random)
    fst_log "bench-pacing-fio: round $r: $p: laying out $files x $((file_size >> 20)) MiB"
    fst_run 900 "$work/fio-layout-$tag.log" fio "${job[@]}" --rw=write --bs=1M --end_fsync=1 ||
        { fst_log "bench-pacing-fio: laying out failed (see $work/fio-layout-$tag.log)"; exit 1; }
    fst_log "bench-pacing-fio: round $r: $p: $((io * bytes >> 20)) MiB of random 4 KiB overwrites"
    # fio keeps its verify state in the current directory.
    cd "$work/verify"
    fst_run 3600 "$work/fio-$tag.log" fio "${job[@]}" --rw=randwrite \
        --direct="$direct" --norandommap --randseed=20261122 --io_size=$((io * bytes)) \
        --verify=crc32c --do_verify=1 --verify_fatal=1 \
        --percentile_list=50:99:99.9:99.99 --output-format=json --output="$work/fio-$tag.json" ||
        { fst_log "bench-pacing-fio: the overwrites failed (see $work/fio-$tag.log, $work/fio-$tag.json)"; exit 1; }
    cd "$repo"
    "$uf2fs_bin" status "$mnt" >"$work/status-$tag.txt" 2>&1 || true
    fst_unmount
    if ! fsck.f2fs -f "$work/f2fs.img" >"$work/fsck-$tag.log" 2>&1 || grep -qE '\[Fail\]|\[FIX|ASSERT' "$work/fsck-$tag.log"; then
        fst_log "bench-pacing-fio: fsck.f2fs -f found problems after $tag (see $work/fsck-$tag.log)"
        exit 1
    fi
    python3 - "$work/fio-$tag.json" "$work/status-$tag.txt" "$r" "$p" "$total" "$free" "$file_size" "$files" >>"$raw" <<'EOF'
import json, re, sys
fio, status, r, p = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
total, free, file_size, files = (int(x) for x in sys.argv[5:9])
j = json.load(open(fio))
job = j["jobs"][0]
assert job["error"] == 0, f"fio error {job['error']}"
w = job["write"]
pct = w["clat_ns"]["percentile"]
us = lambda ns: ns / 1000.0
st = open(status).read()
def num(pattern, default="-"):
    m = re.search(pattern, st, re.M)
    return m.group(1) if m else default
fill = ((total - free) + file_size * files) * 100.0 / total
print("\t".join(str(x) for x in [
    r, p, f"{fill:.0f}", f"{w['iops']:.0f}", f"{w['bw_bytes'] / 1e6:.2f}",
    f"{us(pct['50.000000']):.0f}", f"{us(pct['99.000000']):.0f}", f"{us(pct['99.900000']):.0f}",
    f"{us(pct['99.990000']):.0f}", f"{us(w['clat_ns']['max']):.0f}",
    num(r"^waf:\s+([0-9.]+)"), num(r"^gc calls:\s+(\d+) foreground"),
    num(r"^paced steps:\s+(\d+)", "0"), num(r"^writer finishes:\s+(\d+)", "0"),
    f"{job['read']['io_bytes'] >> 20}",
]))
EOF
}

for ((round = 1; round <= reps; round++)); do
    for p in ${pacers//,/ }; do run_one "$round" "$p"; done
done
elapsed=$(($(date +%s) - started))
load_end="$(cut -d' ' -f1-3 /proc/loadavg)"

cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
report="$work/report.md"
{
    echo "Generated by \`$cmdline\` on $(date -u '+%Y-%m-%d %H:%M UTC') in ${elapsed} s"
    echo "(uf2fs $(git -C "$repo" rev-parse --short HEAD), $(fio --version))."
    echo "Machine: $cpu, $(nproc) CPUs, Linux $(uname -r); a shared machine (other builds may"
    echo "have run at the same time). Load average (1/5/15 min) at the start: $load_start; at the end: $load_end."
    echo
    echo "Volume: $size image, filled to $fill% of what statfs offers, $io x its size of random 4 KiB"
    echo "overwrites (direct=$direct) with crc32c verification, gc_latency_target_us=$target_us. clat in µs."
    echo
    echo "| round | pacer | fill % | IOPS | MB/s | p50 | p99 | p99.9 | p99.99 | max | WAF | fg gc calls | paced steps | writer finishes | MiB verified |"
    echo "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    awk -F '\t' -v OFS=' | ' '{ $1 = $1; print "| " $0 " |" }' "$raw"
} >"$report"
cat "$report"
if [ -n "$out" ]; then cp "$report" "$out"; fi
