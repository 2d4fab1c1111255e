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
# Before and after a change (issue 28): --baseline BIN adds the target uf2fs-base, a
# default (posix) mount by another uf2fs binary (e.g. one built from main), and reports
# this build's posix mount against it; --targets LIST runs only those targets (e.g.
# uf2fs-base,uf2fs-posix); targets take turns within each round, so that a machine whose
# speed drifts (a shared one) slows both alike. --otrunc adds a second job on every
# target: the everyday way to save a file, an O_TRUNC rewrite + fsync loop over 64 small
# files (each open(O_WRONLY|O_TRUNC), write 2,000 or 12,000 bytes in turn, fsync,
# close), for RUNTIME seconds on files that exist at a checkpoint; saves per second and
# fsync p50/p99. fio 3.33 opens files with O_CREAT only (no O_TRUNC, and no truncate
# between loops), so this loop is a Python program on the same mount.
#
# usage: scripts/bench-fsync-fio.sh [--size SIZE] [--file-size SIZE] [--runtime SECS]
#                                   [--reps N] [--jobs N] [--with-writer] [--work DIR]
#                                   [--out FILE] [--baseline BIN] [--targets LIST]
#                                   [--otrunc]
# Defaults: 2G images, a 64M file, 20 s per run, 3 rounds: about 4 minutes. Run as root;
# needs fio, fuse2fs, fuse3.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
# shellcheck source=scripts/lib/fs-targets.sh
. "$here/lib/fs-targets.sh"
export PATH="$PATH:/usr/sbin:/sbin"

size=2G; file_size=64M; runtime=20; reps=3; writer=0; jobs=1
work=/var/tmp/uf2fs-fsyncfio; out=""; baseline=""; only=""; otrunc=0
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
    --baseline) baseline="$(realpath "$2")"; shift 2 ;;
    --targets) only="$2"; shift 2 ;;
    --otrunc) otrunc=1; shift ;;
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
if [ -n "$baseline" ]; then
    [ -x "$baseline" ] || { fst_log "bench-fsync-fio: --baseline $baseline is not a program"; exit 1; }
    targets=(fuse2fs uf2fs-strict uf2fs-base uf2fs-posix)
fi
if [ -n "$only" ]; then
    IFS=, read -r -a targets <<<"$only"
fi
mount_target() { # TARGET
    case "$1" in
    uf2fs-base)
        fst_make_f2fs "$baseline" "$work/t.img" "$size"
        FST_UF2FS_OPTS="allow_other" \
            fst_mount_uf2fs "$baseline" "$work/t.img" "$work/mnt" "$work/mount-$1.log" ;;
    fuse2fs)
        fst_make_ext4 "$work/t.img" "$size"
        fst_mount_fuse2fs "$work/t.img" "$work/mnt" "$work/mount-fuse2fs.log" ;;
    uf2fs-*)
        fst_make_f2fs "$uf2fs_bin" "$work/t.img" "$size"
        FST_UF2FS_OPTS="allow_other,fsync_mode=${1#uf2fs-}" \
            fst_mount_uf2fs "$uf2fs_bin" "$work/t.img" "$work/mnt" "$work/mount-$1.log" ;;
    esac
}

# The O_TRUNC rewrite + fsync loop (see the header); prints saves/s, fsync p50, p99 (µs).
otrunc_loop='
import os, statistics, sys, time
mnt, runtime = sys.argv[1], float(sys.argv[2])
d = os.path.join(mnt, "otrunc")
os.makedirs(d, exist_ok=True)
names = [os.path.join(d, "f%02d" % i) for i in range(64)]
sizes = (2000, 12000)
for i, n in enumerate(names):
    with open(n, "wb") as f:
        f.write(bytes([i]) * 12000)
os.sync()  # the files exist at a checkpoint, as saved files do
lat, i = [], 0
start = time.monotonic()
end = start + runtime
while time.monotonic() < end:
    fd = os.open(names[i % len(names)], os.O_WRONLY | os.O_TRUNC)
    os.write(fd, bytes([i & 255]) * sizes[i % 2])
    t0 = time.perf_counter()
    os.fsync(fd)
    lat.append(time.perf_counter() - t0)
    os.close(fd)
    i += 1
secs = time.monotonic() - start
q = statistics.quantiles(lat, n=100)
print("%.1f\t%.1f\t%.1f" % (i / secs, q[49] * 1e6, q[98] * 1e6))
'

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
        oline=""
        if [ "$otrunc" = 1 ]; then
            fst_run $((runtime * 10 + 300)) "$work/otrunc-$t-$r.txt" python3 -c "$otrunc_loop" "$work/mnt" "$runtime" \
                || { fst_log "the O_TRUNC loop failed on $t"; cat "$work/otrunc-$t-$r.txt" >&2; exit 1; }
            oline=$(tail -1 "$work/otrunc-$t-$r.txt")
        fi
        fst_unmount
        line=$(python3 -c '
import json, sys
j = [j for j in json.load(open(sys.argv[1]))["jobs"] if j["jobname"] == "fsync-randwrite"][0]
sync = j["sync"]["lat_ns"]
pct = sync.get("percentile", {})
print("%.1f\t%.1f\t%.1f" % (j["write"]["iops"], pct.get("50.000000", 0) / 1e3, pct.get("99.000000", 0) / 1e3))
' "$json")
        printf '%s\t%s\t%s\t%s\n' "$t" "$r" "$line" "${oline:-0	0	0}" >>"$raw"
        fst_log "round $r: $t: $(echo "$line" | awk -F'\t' '{print $1 " writes+fsyncs/s, fsync p50 " $2 " us, p99 " $3 " us"}')"
        [ -z "$oline" ] || fst_log "round $r: $t: O_TRUNC loop: $(echo "$oline" | awk -F'\t' '{print $1 " saves/s, fsync p50 " $2 " us, p99 " $3 " us"}')"
        rm -f "$work/t.img"
    done
done

report=$(python3 - "$raw" "$cmdline" "$(nproc)" <<'EOF'
import sys, statistics, collections
raw, cmd, cpus = sys.argv[1], sys.argv[2], sys.argv[3]
v = collections.defaultdict(lambda: ([], [], [], [], [], []))
for line in open(raw):
    t, r, *xs = line.rstrip("\n").split("\t")
    for i, x in enumerate(xs):
        v[t][i].append(float(x))
med = {t: [statistics.median(x) for x in v[t]] for t in v}
otrunc = any(m[3] > 0 for m in med.values())
print(f"`{cmd}` ({cpus} CPUs); medians over rounds:\n")
head = "| target | 4 KiB writes + fsync per s | fsync p50 (µs) | fsync p99 (µs) |"
rule = "|---|---:|---:|---:|"
if otrunc:
    head += " O_TRUNC saves + fsync per s | fsync p50 (µs) | fsync p99 (µs) |"
    rule += "---:|---:|---:|"
print(head)
print(rule)
for t in ("fuse2fs", "uf2fs-strict", "uf2fs-base", "uf2fs-posix"):
    if t in med:
        m = med[t]
        row = f"| {t} | {m[0]:.0f} | {m[1]:.0f} | {m[2]:.0f} |"
        if otrunc:
            row += f" {m[3]:.0f} | {m[4]:.0f} | {m[5]:.0f} |"
        print(row)


def against(a, b, what):
    s, p = med[a], med[b]
    line = (f"\n{what}: {p[0] / s[0]:.2f}x the writes per second, "
            f"fsync p50 {s[1] / p[1]:.2f}x faster, p99 {s[2] / p[2]:.2f}x faster")
    if otrunc:
        line += (f"; O_TRUNC loop {p[3] / s[3]:.2f}x the saves per second, "
                 f"fsync p50 {s[4] / p[4]:.2f}x faster, p99 {s[5] / p[5]:.2f}x faster")
    print(line)


if "uf2fs-strict" in med and "uf2fs-posix" in med:
    against("uf2fs-strict", "uf2fs-posix", "posix against strict")
if "uf2fs-base" in med and "uf2fs-posix" in med:
    against("uf2fs-base", "uf2fs-posix", "this build against the baseline")
EOF
)
echo "$report"
if [ -n "$out" ]; then echo "$report" >"$out"; fi
