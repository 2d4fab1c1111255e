#!/usr/bin/env bash
# fio on the FUSE mounts, side by side in one run on one machine:
#
#   host     a directory on the host file system (the ceiling; kernel file system, no FUSE)
#   fuse2fs  ext4 over FUSE (Debian's fuse2fs) on a sparse image of SIZE
#   uf2fs    `uf2fs mount -o rw` on an F2FS image of the same SIZE (made by `uf2fs mkfs`);
#            reported as pending while uf2fs refuses read-write mounts
#
# Jobs, each buffered and with O_DIRECT (--direct=1): 4 KiB random write, 1 MiB
# sequential write, 4 KiB random read. Every job: one FILE_SIZE file written out in full
# beforehand (so reads never see holes), ioengine=psync, iodepth 1, one thread,
# time_based for RUNTIME seconds, fio's default invalidate=1 (the file's page cache is
# dropped before each job), randrepeat=1 (the same offsets every run), fallocate=none;
# write jobs end with fsync (end_fsync=1, counted in the job's time), so data the file
# system buffers is paid for inside the measurement.
#
# Order: REPS rounds; each round mounts every target in turn, runs the six jobs and
# unmounts. Reported: per job and target the median over the rounds of MB/s (10^6
# bytes/s) and IOPS, the min-max of MB/s, and ratios to the host and to fuse2fs.
#
# usage: scripts/bench-fio.sh [--size SIZE] [--file-size SIZE] [--runtime SECONDS]
#                             [--reps N] [--work DIR] [--out FILE] [--targets LIST]
#   --size       image size for fuse2fs and uf2fs (default 2G)
#   --file-size  the file each job works on (default 512M)
#   --runtime    seconds per job (default 5)
#   --reps       rounds (default 3)
#   --work       images, mountpoint, logs (default /var/tmp/uf2fs-fio); cleaned after
#   --out        also write the Markdown report to FILE (docs/fio.md for the docs)
#   --targets    comma-separated subset of host,fuse2fs,uf2fs (default all three)
# Defaults: 2 targets x 6 jobs x 3 rounds x 5 s = about 4 minutes; with uf2fs about 6.
# Run as root (fuse2fs and uf2fs mount with allow_other). Needs fio, fuse2fs, fuse3,
# e2fsprogs (scripts/install-fs-test-tools.sh); for uf2fs, cargo (or UF2FS=binary).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
# shellcheck source=scripts/lib/fs-targets.sh
. "$here/lib/fs-targets.sh"
export PATH="$PATH:/usr/sbin:/sbin"

size=2G; file_size=512M; runtime=5; reps=3; work=/var/tmp/uf2fs-fio; out=""
targets="host,fuse2fs,uf2fs"
cmdline="scripts/bench-fio.sh $*"
usage() { sed -n '/^# usage:/,/^# Defaults:/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
    --size) size="$2"; shift 2 ;;
    --file-size) file_size="$2"; shift 2 ;;
    --runtime) runtime="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --targets) targets="$2"; shift 2 ;;
    -h | --help) usage ;;
    *) fst_log "bench-fio: unknown argument $1"; usage ;;
    esac
done
[[ "$runtime" =~ ^[0-9]+$ && "$reps" =~ ^[0-9]+$ && "$reps" -ge 1 ]] || usage
for t in ${targets//,/ }; do
    case "$t" in host | fuse2fs | uf2fs) ;; *) fst_log "bench-fio: unknown target $t"; usage ;; esac
done
want() { [[ ",$targets," == *",$1,"* ]]; }
for tool in fio timeout; do
    command -v "$tool" >/dev/null || { fst_log "bench-fio: $tool not found (scripts/install-fs-test-tools.sh)"; exit 1; }
done
if [ -n "$out" ]; then out="$(realpath -m "$out")"; fi

mkdir -p "$work"
work="$(realpath "$work")"
# Only what an earlier run left (never `rm -rf WORK/*`: WORK may be a shared directory).
if mountpoint -q "$work/mnt"; then fst_log "bench-fio: $work/mnt is still mounted; unmount it first"; exit 1; fi
rm -rf "${work:?}/host" "${work:?}/mnt" "$work/ext4.img" "$work/f2fs.img"
rm -f "$work"/fio-*.log "$work"/prepare-*.log "$work"/mount-*.log "$work/raw.tsv" "$work/fio.md"
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
    rm -f "$work/ext4.img" "$work/f2fs.img"
    rm -rf "${work:?}/host"
    if ! mountpoint -q "$work/mnt"; then rm -rf "${work:?}/mnt"; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- targets ------------------------------------------------------------------------------
declare -A desc status # per target: description; "ok", or why it is not measured
active=()
uf2fs_bin=""

mount_target() { # TARGET -> sets target_dir
    case "$1" in
    host) target_dir="$work/host" ;;
    fuse2fs)
        fst_mount_fuse2fs "$work/ext4.img" "$work/mnt" "$work/mount-fuse2fs.log" || return $?
        target_dir="$work/mnt" ;;
    uf2fs)
        fst_mount_uf2fs "$uf2fs_bin" "$work/f2fs.img" "$work/mnt" "$work/mount-uf2fs.log" || return $?
        target_dir="$work/mnt" ;;
    esac
}
unmount_target() { if [ "$1" != host ]; then fst_unmount; fi; }

fio_common=(--ioengine=psync --iodepth=1 --numjobs=1 --fallocate=none --randrepeat=1
    --output-format=terse --terse-version=3)

prepare_target() { # TARGET: make, mount, write the file out in full, unmount
    local t="$1" rc=0
    case "$t" in
    host)
        mkdir -p "$work/host"
        desc[host]="$(findmnt -n -o FSTYPE,SOURCE --target "$work" | tail -1 | tr -s ' ') (mount options $(findmnt -n -o OPTIONS --target "$work" | tail -1))"
        ;;
    fuse2fs)
        if ! fst_fuse_ready || ! command -v fuse2fs >/dev/null; then
            status[$t]="not measured: no /dev/fuse, fusermount3 or fuse2fs"
            return 0
        fi
        fst_make_ext4 "$work/ext4.img" "$size"
        ;;
    uf2fs)
        if ! fst_fuse_ready; then
            status[$t]="not measured: no /dev/fuse or fusermount3"
            return 0
        fi
        uf2fs_bin="$(fst_uf2fs_binary "$repo")"
        fst_make_f2fs "$uf2fs_bin" "$work/f2fs.img" "$size"
        ;;
    esac
    mount_target "$t" || rc=$?
    if [ "$rc" = "$FST_UNAVAILABLE" ]; then
        status[$t]="pending (read-write mount not yet available)"
        rm -f "$work/f2fs.img"
        return 0
    elif [ "$rc" != 0 ]; then
        status[$t]="not measured: mount failed (see $work/mount-$t.log)"
        return 0
    fi
    if [ "$t" != host ]; then desc[$t]="$FST_DESC"; fi
    fst_log "bench-fio: $t: writing the $file_size test file"
    if ! fst_run 600 "$work/prepare-$t.log" fio --name=prepare --filename="$target_dir/fio.file" \
        --size="$file_size" --rw=write --bs=1M --end_fsync=1 "${fio_common[@]}"; then
        status[$t]="not measured: writing the test file failed (see $work/prepare-$t.log)"
        unmount_target "$t"
        return 0
    fi
    unmount_target "$t"
    status[$t]=ok
    active+=("$t")
}

# ---- jobs -------------------------------------------------------------------------------------
jobs=("randwrite-4k randwrite 4k" "seqwrite-1m write 1M" "randread-4k randread 4k")
modes=("buffered 0" "direct 1")

run_job() { # ROUND TARGET JOB RW BS MODE DIRECT
    local log="$work/fio-$2-$3-$6-r$1.log" extra=() rc=0
    if [ "$4" != randread ]; then extra=(--end_fsync=1); fi
    fst_run $((runtime + 300)) "$log" fio --name="$3" --filename="$target_dir/fio.file" \
        --size="$file_size" --rw="$4" --bs="$5" --direct="$7" --time_based --runtime="$runtime" \
        "${fio_common[@]}" "${extra[@]}" || rc=$?
    # terse v3: field 5 error, 7/8 read KiB/s and IOPS, 48/49 write KiB/s and IOPS.
    local line
    line="$(grep -m1 '^3;' "$log" || true)"
    if [ "$rc" != 0 ] || [ -z "$line" ] || [ "$(echo "$line" | cut -d';' -f5)" != 0 ]; then
        fst_log "bench-fio: $2 $3 $6 round $1 failed (exit $rc; see $log)"
        printf '%s\t%s\t%s\t%s\terror\terror\n' "$1" "$2" "$3" "$6" >>"$raw"
        return 0
    fi
    echo "$line" | awk -F';' -v r="$1" -v t="$2" -v j="$3" -v m="$6" -v OFS='\t' '{
        kib = $7 + $48; iops = $8 + $49
        printf "%s\t%s\t%s\t%s\t%.1f\t%.0f\n", r, t, j, m, kib * 1024 / 1e6, iops
    }' >>"$raw"
}

for t in host fuse2fs uf2fs; do
    if want "$t"; then prepare_target "$t"; fi
done
[ "${#active[@]}" -gt 0 ] || { fst_log "bench-fio: no target to measure"; exit 1; }

for ((round = 1; round <= reps; round++)); do
    for t in "${active[@]}"; do
        fst_log "bench-fio: round $round/$reps: $t"
        mount_target "$t"
        for j in "${jobs[@]}"; do
            read -r name rw bs <<<"$j"
            for m in "${modes[@]}"; do
                read -r mode direct <<<"$m"
                run_job "$round" "$t" "$name" "$rw" "$bs" "$mode" "$direct"
            done
        done
        unmount_target "$t"
    done
done
elapsed=$(($(date +%s) - started))
load_end="$(cut -d' ' -f1-3 /proc/loadavg)"

# ---- report -------------------------------------------------------------------------------
# stats TARGET JOB MODE -> "MEDIAN_MBPS MIN MAX MEDIAN_IOPS" or "error"
stats() {
    awk -F '\t' -v t="$1" -v j="$2" -v m="$3" '
        $2 == t && $3 == j && $4 == m { if ($5 == "error") bad = 1; else { n++; bw[n] = $5; io[n] = $6 } }
        function median(a, n,   i, k, s) {
            for (i = 2; i <= n; i++) { s = a[i]; for (k = i - 1; k >= 1 && a[k] > s; k--) a[k + 1] = a[k]; a[k + 1] = s }
            return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        END {
            if (bad || n == 0) { print "error"; exit }
            lo = bw[1]; hi = bw[1]; for (i = 1; i <= n; i++) { if (bw[i] < lo) lo = bw[i]; if (bw[i] > hi) hi = bw[i] }
            printf "%.1f %.1f %.1f %.0f\n", median(bw, n), lo, hi, median(io, n)
        }' "$raw"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'; }
fmt_mbps() { awk -v v="$1" 'BEGIN { if (v >= 100) printf "%.0f", v; else printf "%.1f", v }'; }

cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
{
    echo "# fio: uf2fs against fuse2fs, with the host file system as the ceiling"
    echo
    echo "Generated by \`$cmdline\` on $(date -u '+%Y-%m-%d %H:%M UTC') in ${elapsed} s"
    echo "(as root, after \`scripts/install-fs-test-tools.sh\`; uf2fs $(git -C "$repo" rev-parse --short HEAD))."
    echo
    echo "Machine: $cpu, $(nproc) CPUs, $(free -g | awk '/Mem:/ { print $2 }') GiB RAM, Linux $(uname -r),"
    echo "$(. /etc/os-release && echo "$PRETTY_NAME"); $(fio --version), work dir $work on ${desc[host]:-$(findmnt -n -o FSTYPE,SOURCE --target "$work" | tail -1 | tr -s ' ')}."
    echo "Load average (1/5/15 min) at the start: $load_start; at the end: $load_end (a shared machine: other"
    echo "builds may have run at the same time; the min-max spread shows how much that moved the figures)."
    echo
    echo "Targets:"
    echo
    for t in host fuse2fs uf2fs; do
        want "$t" || continue
        case "$t" in
        host) echo "- **host**: a directory in the work dir: ${desc[host]:-}" ;;
        fuse2fs) echo "- **fuse2fs**: ${desc[fuse2fs]:-ext4 image of $size} $([ "${status[fuse2fs]:-}" != ok ] && echo "(${status[fuse2fs]:-})")" ;;
        uf2fs) echo "- **uf2fs**: $([ "${status[uf2fs]:-}" = ok ] && echo "${desc[uf2fs]}" || echo "F2FS image of $size made by \`uf2fs mkfs\`, mounted \`-o $FST_UF2FS_OPTS\`: ${status[uf2fs]:-}")" ;;
        esac
    done
    echo
    echo "Each job: a $file_size file (written out in full first), psync, iodepth 1, one thread,"
    echo "${runtime} s time-based, page cache of the file dropped before the job (fio's invalidate=1),"
    echo "write jobs end with fsync (counted). Median over $reps rounds; MB/s = 10^6 bytes/s, with the"
    echo "min-max over the rounds in brackets."
    echo
    header="| job | host MB/s | host IOPS |"
    rule="| --- | ---: | ---: |"
    for t in fuse2fs uf2fs; do
        want "$t" || continue
        header+=" $t MB/s | $t IOPS | $t / host |"
        rule+=" ---: | ---: | ---: |"
    done
    if want fuse2fs && want uf2fs; then header+=" uf2fs / fuse2fs |"; rule+=" ---: |"; fi
    echo "$header"
    echo "$rule"
    for j in "${jobs[@]}"; do
        read -r name _ _ <<<"$j"
        for m in "${modes[@]}"; do
            read -r mode _ <<<"$m"
            row="| $name $mode |"
            declare -A med=()
            for t in host fuse2fs uf2fs; do
                want "$t" || continue
                if [ "${status[$t]:-}" != ok ]; then
                    if [ "$t" = host ]; then row+=" - | - |"; else row+=" ${status[$t]:-} | - | - |"; fi
                    med[$t]=""
                    continue
                fi
                s="$(stats "$t" "$name" "$mode")"
                if [ "$s" = error ]; then
                    row+=" error | - |"; [ "$t" = host ] || row+=" - |"
                    med[$t]=""
                    continue
                fi
                read -r mbps lo hi iops <<<"$s"
                med[$t]="$mbps"
                row+=" $(fmt_mbps "$mbps") ($(fmt_mbps "$lo")-$(fmt_mbps "$hi")) | $iops |"
                if [ "$t" != host ]; then
                    row+=" $([ -n "${med[host]:-}" ] && ratio "$mbps" "${med[host]}" || echo -) |"
                fi
            done
            if want fuse2fs && want uf2fs; then
                if [ -n "${med[uf2fs]:-}" ] && [ -n "${med[fuse2fs]:-}" ]; then
                    row+=" $(ratio "${med[uf2fs]}" "${med[fuse2fs]}") |"
                else
                    row+=" - |"
                fi
            fi
            unset med
            echo "$row"
        done
    done
    echo
    echo "Reading the table:"
    echo
    echo "- Buffered writes on the host land in the page cache and are flushed by the closing fsync;"
    echo "  through FUSE (without the writeback cache) every write(2) is a round trip to the daemon,"
    echo "  so the host is far ahead there: it is the ceiling, not a target."
    echo "- Reads are not capped by the host: fio drops the test file's cache before each job, so"
    echo "  the host reads from its disk, while a FUSE daemon reads its image file through the host's"
    echo "  page cache, where the image (just written) still is. O_DIRECT on a FUSE mount bypasses"
    echo "  only the FUSE page cache, not the daemon's buffered reads of its image. A FUSE file"
    echo "  system can therefore match or pass the host on reads; compare FUSE against FUSE there."
    echo "- The aim for uf2fs is the last column: above 1.00 on every job."
    echo
    echo "Raw figures (round, target, job, mode, MB/s, IOPS):"
    echo
    echo '```'
    cat "$raw"
    echo '```'
} >"$work/fio.md"
cat "$work/fio.md"
if [ -n "$out" ]; then cp "$work/fio.md" "$out"; fst_log "bench-fio: report written to $out"; fi
fst_log "bench-fio: done in ${elapsed} s"
