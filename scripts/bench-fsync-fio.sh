#!/usr/bin/env bash
# fsync latency on FUSE mounts (issue 13): fio's 4 KiB random writes with an fsync after
# every write (--fsync=1), on uf2fs with roll-forward fsync (fsync_mode=posix, the
# default) against a checkpoint per fsync (fsync_mode=strict, what every fsync did
# before), beside fuse2fs on ext4, in one run on one machine.
#
#   fuse2fs       ext4 over FUSE (Debian's fuse2fs) on a sparse image of SIZE
#   uf2fs-strict  `uf2fs mount -o fsync_mode=strict`: a checkpoint per fsync
#   uf2fs-posix   `uf2fs mount` (fsync_mode=posix): data and direct nodes, no checkpoint
#
# JOBS fsync jobs (default one), each over its own FILE_SIZE file, ioengine=psync,
# --rw=randwrite --bs=4k, for RUNTIME seconds (time_based); several jobs are several
# applications fsyncing their own files at once (a checkpoint per fsync stops them all;
# a roll-forward fsync holds only its own inode). With --with-writer, a second job beside it writes its own file
# sequentially in 1 MiB buffered writes with no fsync (a bulk writer sharing the
# volume: a checkpoint per fsync must also write what it left dirty, a roll-forward
# fsync only the fsync'd file). Each (target, round) gets a fresh image and mount.
# Reported for the fsync jobs together (fio's group_reporting): writes per second (each
# with its fsync), fsync latency p50/p99 (fio's sync latency), medians over --reps rounds, and posix against strict.
#
# usage: scripts/bench-fsync-fio.sh [--size SIZE] [--file-size SIZE] [--runtime SECS]
#                                   [--reps N] [--jobs N] [--with-writer] [--work DIR]
#                                   [--out FILE]
# Defaults: 2G images, a 64M file, 20 s per run, 3 rounds: about 4 minutes. Run as root;
# needs fio, fuse2fs, fuse3.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
# shellcheck source=scripts/lib/fs-targets.sh
. "$here/lib/fs-targets.sh"
export PATH="$PATH:/usr/sbin:/sbin"

size=2G; file_size=64M; runtime=20; reps=3; writer=0; jobs=1
work=/var/tmp/uf2fs-fsyncfio; out=""
cmdline="scripts/bench-fsync-fio.sh $*"
usage() { sed -n '/^# usage:/,/^# Defaults:/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
    --size) size="$2"; shift 2 ;;
    --file-size) file_size="$2"; shift 2 ;;
    --runtime) runtime="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --with-writer) writer=1; shift ;;
    --work) work="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h | --help) usage ;;
    *) fst_log "bench-fsync-fio: unknown argument $1"; usage ;;
    esac
done
[[ "$reps" =~ ^[0-9]+$ && "$reps" -ge 1 && "$runtime" =~ ^[0-9]+$ && "$runtime" -ge 1 ]] || usage
[[ "$jobs" =~ ^[0-9]+$ && "$jobs" -ge 1 ]] || usage
for tool in fio fuse2fs python3; do
    command -v "$tool" >/dev/null || { fst_log "bench-fsync-fio: $tool not found (scripts/install-fs-test-tools.sh)"; exit 1; }
done
fst_fuse_ready || { fst_log "bench-fsync-fio: no /dev/fuse or fusermount3"; exit 1; }
if [ -n "$out" ]; then out="$(realpath -m "$out")"; fi
mkdir -p "$work"
work="$(realpath "$work")"
if mountpoint -q "$work/mnt"; then fst_log "bench-fsync-fio: $work/mnt is still mounted"; exit 1; fi
rm -f "$work"/*.img "$work"/fio-*.json "$work"/mount-*.log "$work/raw.tsv"
raw="$work/raw.tsv"
: >"$raw"
uf2fs_bin="$(fst_uf2fs_binary "$repo")"

# shellcheck disable=SC2317 # called from the trap
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    fst_stop_child
    fst_unmount || true
    fst_reap_child
    rm -f "$work"/*.img
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

targets=(fuse2fs uf2fs-strict uf2fs-posix)
mount_target() { # TARGET
    case "$1" in
    fuse2fs)
        fst_make_ext4 "$work/t.img" "$size"
        fst_mount_fuse2fs "$work/t.img" "$work/mnt" "$work/mount-fuse2fs.log" ;;
    uf2fs-*)
        fst_make_f2fs "$uf2fs_bin" "$work/t.img" "$size"
        FST_UF2FS_OPTS="allow_other,fsync_mode=${1#uf2fs-}" \
            fst_mount_uf2fs "$uf2fs_bin" "$work/t.img" "$work/mnt" "$work/mount-$1.log" ;;
    esac
}

for ((r = 1; r <= reps; r++)); do
    for t in "${targets[@]}"; do
        mount_target "$t"
        json="$work/fio-$t-$r.json"
        bulk=()
        if [ "$writer" = 1 ]; then
            bulk=(--name=bulk-writer --new_group --rw=write --bs=1M --size=1G --fsync=0)
        fi
        fst_run $((runtime * 10 + 300)) "$json" fio --directory="$work/mnt" --ioengine=psync \
            --time_based --runtime="$runtime" --fallocate=none --output-format=json \
            --name=fsync-randwrite --rw=randwrite --bs=4k --size="$file_size" --fsync=1 --randrepeat=1 \
            --numjobs="$jobs" --group_reporting \
            "${bulk[@]}" \
            || { fst_log "fio failed on $t"; cat "$json" >&2; exit 1; }
        fst_unmount
        line=$(python3 -c '
import json, sys
j = [j for j in json.load(open(sys.argv[1]))["jobs"] if j["jobname"] == "fsync-randwrite"][0]
sync = j["sync"]["lat_ns"]
pct = sync.get("percentile", {})
print("%.1f\t%.1f\t%.1f" % (j["write"]["iops"], pct.get("50.000000", 0) / 1e3, pct.get("99.000000", 0) / 1e3))
' "$json")
        printf '%s\t%s\t%s\n' "$t" "$r" "$line" >>"$raw"
        fst_log "round $r: $t: $(echo "$line" | awk -F'\t' '{print $1 " writes+fsyncs/s, fsync p50 " $2 " us, p99 " $3 " us"}')"
        rm -f "$work/t.img"
    done
done

report=$(python3 - "$raw" "$cmdline" "$(nproc)" <<'EOF'
import sys, statistics, collections
raw, cmd, cpus = sys.argv[1], sys.argv[2], sys.argv[3]
v = collections.defaultdict(lambda: ([], [], []))
for line in open(raw):
    t, r, iops, p50, p99 = line.rstrip("\n").split("\t")
    for i, x in enumerate((iops, p50, p99)):
        v[t][i].append(float(x))
med = {t: [statistics.median(x) for x in v[t]] for t in v}
print(f"`{cmd}` ({cpus} CPUs); medians over rounds:\n")
print("| target | 4 KiB writes + fsync per s | fsync p50 (µs) | fsync p99 (µs) |")
print("|---|---:|---:|---:|")
for t in ("fuse2fs", "uf2fs-strict", "uf2fs-posix"):
    if t in med:
        m = med[t]
        print(f"| {t} | {m[0]:.0f} | {m[1]:.0f} | {m[2]:.0f} |")
if "uf2fs-strict" in med and "uf2fs-posix" in med:
    s, p = med["uf2fs-strict"], med["uf2fs-posix"]
    print(f"\nposix against strict: {p[0] / s[0]:.2f}x the writes per second, "
          f"fsync p50 {s[1] / p[1]:.2f}x faster, p99 {s[2] / p[2]:.2f}x faster")
EOF
)
echo "$report"
if [ -n "$out" ]; then echo "$report" >"$out"; fi
