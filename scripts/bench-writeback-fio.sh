#!/usr/bin/env bash
# fio on FUSE mounts with several writers: uf2fs with one writeback context against N,
# beside fuse2fs on ext4, in one run on one machine (issue 12's mount measurement).
#
#   fuse2fs   ext4 over FUSE (Debian's fuse2fs) on a sparse image of SIZE
#   uf2fs-1   `uf2fs mount -o writeback_contexts=1` on an F2FS image of SIZE
#   uf2fs-N   `uf2fs mount -o writeback_contexts=N` (N: --contexts, default 2)
#   uf2fs-N-wbc  the same with `-o writeback_cache` (FUSE's writeback cache), with
#             --writeback-cache
#
# Jobs, buffered, ioengine=psync, for NUMJOBS in --numjobs (default 1,2,4), each job its
# own file: sequential write of FILE_SIZE in 1 MiB writes (--rw=write --bs=1M), and
# 4 KiB random writes over RAND_SIZE (--rw=randwrite --bs=4k); every job ends with an
# fsync (end_fsync=1, counted in its time), so what the file system buffers is paid for.
# Each (target, job) gets a fresh image and mount. Reported: aggregate write bandwidth
# (MB/s, 10^6 bytes/s), median over --reps rounds, and the ratio of uf2fs-N to uf2fs-1.
#
# usage: scripts/bench-writeback-fio.sh [--size SIZE] [--file-size SIZE] [--rand-size SIZE]
#                                       [--numjobs LIST] [--contexts N] [--reps N]
#                                       [--writeback-cache] [--work DIR] [--out FILE]
# Defaults: 4G images, 256M per sequential job, 32M per random job, numjobs 1,2,4,
# contexts 2, 2 rounds: about 5 minutes. Run as root; needs fio, fuse2fs, fuse3.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
# shellcheck source=scripts/lib/fs-targets.sh
. "$here/lib/fs-targets.sh"
export PATH="$PATH:/usr/sbin:/sbin"

size=4G; file_size=256M; rand_size=32M; numjobs="1,2,4"; contexts=2; reps=2
work=/var/tmp/uf2fs-wbfio; out=""; wbc=0
cmdline="scripts/bench-writeback-fio.sh $*"
usage() { sed -n '/^# usage:/,/^# Defaults:/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
    --size) size="$2"; shift 2 ;;
    --file-size) file_size="$2"; shift 2 ;;
    --rand-size) rand_size="$2"; shift 2 ;;
    --numjobs) numjobs="$2"; shift 2 ;;
    --contexts) contexts="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --writeback-cache) wbc=1; shift ;;
    -h | --help) usage ;;
    *) fst_log "bench-writeback-fio: unknown argument $1"; usage ;;
    esac
done
[[ "$reps" =~ ^[0-9]+$ && "$reps" -ge 1 && "$contexts" =~ ^[0-9]+$ && "$contexts" -ge 2 ]] || usage
for tool in fio fuse2fs python3; do
    command -v "$tool" >/dev/null || { fst_log "bench-writeback-fio: $tool not found (scripts/install-fs-test-tools.sh)"; exit 1; }
done
fst_fuse_ready || { fst_log "bench-writeback-fio: no /dev/fuse or fusermount3"; exit 1; }
if [ -n "$out" ]; then out="$(realpath -m "$out")"; fi
mkdir -p "$work"
work="$(realpath "$work")"
if mountpoint -q "$work/mnt"; then fst_log "bench-writeback-fio: $work/mnt is still mounted"; exit 1; fi
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

targets=(fuse2fs uf2fs-1 "uf2fs-$contexts")
if [ "$wbc" = 1 ]; then targets+=("uf2fs-$contexts-wbc"); fi
mount_target() { # TARGET
    case "$1" in
    fuse2fs)
        fst_make_ext4 "$work/t.img" "$size"
        fst_mount_fuse2fs "$work/t.img" "$work/mnt" "$work/mount-fuse2fs.log" ;;
    uf2fs-*-wbc)
        local n=${1#uf2fs-}
        fst_make_f2fs "$uf2fs_bin" "$work/t.img" "$size"
        FST_UF2FS_OPTS="allow_other,writeback_contexts=${n%-wbc},writeback_cache" \
            fst_mount_uf2fs "$uf2fs_bin" "$work/t.img" "$work/mnt" "$work/mount-$1.log" ;;
    uf2fs-*)
        fst_make_f2fs "$uf2fs_bin" "$work/t.img" "$size"
        FST_UF2FS_OPTS="allow_other,writeback_contexts=${1#uf2fs-}" \
            fst_mount_uf2fs "$uf2fs_bin" "$work/t.img" "$work/mnt" "$work/mount-$1.log" ;;
    esac
}

jobs=()
for n in ${numjobs//,/ }; do
    jobs+=("write-1M:$n" "randwrite-4k:$n")
done

for ((r = 1; r <= reps; r++)); do
    for job in "${jobs[@]}"; do
        kind=${job%%:*} n=${job##*:}
        for t in "${targets[@]}"; do
            mount_target "$t"
            case "$kind" in
            write-1M) args=(--rw=write --bs=1M --size="$file_size") ;;
            randwrite-4k) args=(--rw=randwrite --bs=4k --size="$rand_size" --randrepeat=1) ;;
            esac
            json="$work/fio-$t-$kind-$n-$r.json"
            fst_run 900 "$json" fio --name="$kind" --directory="$work/mnt" --ioengine=psync \
                --numjobs="$n" --end_fsync=1 --fallocate=none --group_reporting \
                --output-format=json "${args[@]}" || { fst_log "fio failed on $t ($kind, $n jobs)"; cat "$json" >&2; exit 1; }
            fst_unmount
            mbs=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(j["write"]["bw_bytes"] for j in d["jobs"]) / 1e6)' "$json")
            printf '%s\t%s\t%s\t%s\t%s\n' "$t" "$kind" "$n" "$r" "$mbs" >>"$raw"
            fst_log "round $r: $t $kind numjobs=$n: $mbs MB/s"
            rm -f "$work/t.img"
        done
    done
done

report=$(python3 - "$raw" "$contexts" "$cmdline" "$(nproc)" <<'EOF'
import sys, statistics, collections
raw, contexts, cmd, cpus = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
v = collections.defaultdict(list)
for line in open(raw):
    t, kind, n, r, mbs = line.split("\t")
    v[(kind, int(n), t)].append(float(mbs))
keys = sorted({(k, n) for k, n, _ in v})
n_t = f"uf2fs-{contexts}"
w_t = f"uf2fs-{contexts}-wbc"
wbc = any(t == w_t for _, _, t in v)
nan = float("nan")
print(f"`{cmd}` ({cpus} CPUs); aggregate write MB/s, medians:\n")
head = f"| job | numjobs | fuse2fs | uf2fs, 1 context | uf2fs, {contexts} contexts | {contexts} vs 1 |"
rule = "|---|---:|---:|---:|---:|---:|"
if wbc:
    head += f" uf2fs, {contexts} contexts, writeback_cache | writeback_cache vs not |"
    rule += "---:|---:|"
print(head)
print(rule)
for kind, n in keys:
    m = {t: statistics.median(v[(kind, n, t)]) for t in ("fuse2fs", "uf2fs-1", n_t, w_t) if v[(kind, n, t)]}
    ratio = m[n_t] / m["uf2fs-1"] if m.get("uf2fs-1") else nan
    row = f"| {kind} | {n} | {m.get('fuse2fs', nan):.1f} | {m.get('uf2fs-1', nan):.1f} | {m.get(n_t, nan):.1f} | {ratio:.2f}x |"
    if wbc:
        wr = m[w_t] / m[n_t] if m.get(n_t) and m.get(w_t) else nan
        row += f" {m.get(w_t, nan):.1f} | {wr:.2f}x |"
    print(row)
EOF
)
echo "$report"
if [ -n "$out" ]; then echo "$report" >"$out"; fi
