#!/usr/bin/env bash
# What users do on a mount, side by side in one run on one machine:
#
#   host     ext4 on a loop device over a sparse image of SIZE in the work dir (a kernel
#            file system on the same backing store as the FUSE images: the ceiling)
#   fuse2fs  ext4 over FUSE (Debian's fuse2fs) on a sparse image of SIZE
#   uf2fs    `uf2fs mount -o rw` on an F2FS image of SIZE made by `uf2fs mkfs`
#            (UF2FS_MOUNT_OPTS adds options, e.g. "rw,allow_other,writeback_cache")
#
# Workloads, in this order in every round on every target (a fresh image each round):
#   fio       the six jobs of scripts/bench-fio.sh (4 KiB random write, 1 MiB sequential
#             write, 4 KiB random read; buffered and O_DIRECT; psync, one thread, writes
#             end with fsync), plus 1 MiB sequential buffered writes by 4 jobs at once
#             (each its own new file of FILE_SIZE/4, end_fsync). Figure: MB/s.
#   smallfiles  fs_mark style (scripts/lib/fsmeta.c): FILES files of 4 KiB in 100
#             directories: create+write+close, then stat each, then unlink each. Seconds.
#   untar     `tar xf` of a source tree with its git repository (the Linux kernel source
#             of Debian's linux-source package: about 84,000 files, 1.4 GB, committed to
#             git and packed; made once and kept in SRC). Seconds, no sync counted.
#   (then the target is unmounted and mounted again, not timed: the file system's caches
#    in the kernel are cold for the next steps; the image's pages are still in the
#    host's page cache for every target alike)
#   find      `find TREE | wc -l` (cold). du: `du -s TREE` (after find).
#   git status (first)  hashes every file: the index's stat data do not match new inodes.
#   git status          again, what a user sees in a checked-out tree.
#   build     `make allnoconfig` in the tree: compiles Kconfig's C programs (with flex
#             and bison) and writes the configuration. Seconds.
#   rm -rf    of the whole tree. Seconds.
# For each timed step the script also records the CPU seconds (user+sys) the FUSE daemon
# used meanwhile (from /proc/PID/stat), a figure the machine's load moves far less than
# the wall clock.
#
# Order: REPS rounds; each round runs every target in turn. Reported: per workload and
# target the median over the rounds and its min-max, speed ratios to the host and to
# fuse2fs (higher is better), and the daemons' median CPU seconds.
#
# usage: scripts/bench-mount.sh [--quick] [--size SIZE] [--file-size SIZE] [--runtime S]
#                               [--files N] [--reps N] [--work DIR] [--src DIR]
#                               [--out FILE] [--targets LIST] [--skip LIST]
#   --quick      1 round, 2 s fio jobs, 128M files, 10,000 small files (a smoke run;
#                explicit options after --quick still apply)
#   --size       image size of every target (default 6G)
#   --file-size  the fio test file (default 512M)
#   --runtime    seconds per fio job (default 5)
#   --files      small files of the smallfiles workload (default 100000)
#   --reps       rounds (default 3)
#   --work       images, mountpoint, logs (default /var/tmp/uf2fs-mount); cleaned after
#   --src        where the source tree's tarball is made and kept between runs
#                (default /var/tmp/uf2fs-mount-src, about 3 GB)
#   --out        also write the Markdown report to FILE
#   --targets    comma-separated subset of host,fuse2fs,uf2fs (default all three)
#   --skip       comma-separated workload groups not to run: fio,smallfiles,tree
# Defaults: 3 rounds of about 8 minutes each for the three targets on 2 cores.
# Run as root (loop mount; fuse2fs and uf2fs mount with allow_other). Needs fio,
# fuse2fs, fuse3, e2fsprogs (scripts/install-fs-test-tools.sh), git, cc, make, flex,
# bison, bc, and apt-get (downloads linux-source once); for uf2fs, cargo (or UF2FS=binary).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
# shellcheck source=scripts/lib/fs-targets.sh
. "$here/lib/fs-targets.sh"
export PATH="$PATH:/usr/sbin:/sbin"

size=6G; file_size=512M; runtime=5; files=100000; reps=3
work=/var/tmp/uf2fs-mount; src=/var/tmp/uf2fs-mount-src; out=""
targets="host,fuse2fs,uf2fs"; skip=""
cmdline="scripts/bench-mount.sh $*"
usage() { sed -n '/^# usage:/,/^# Defaults:/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) reps=1; runtime=2; file_size=128M; files=10000; shift ;;
    --size) size="$2"; shift 2 ;;
    --file-size) file_size="$2"; shift 2 ;;
    --runtime) runtime="$2"; shift 2 ;;
    --files) files="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --src) src="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --targets) targets="$2"; shift 2 ;;
    --skip) skip="$2"; shift 2 ;;
    -h | --help) usage ;;
    *) fst_log "bench-mount: unknown argument $1"; usage ;;
    esac
done
[[ "$runtime" =~ ^[0-9]+$ && "$reps" =~ ^[0-9]+$ && "$reps" -ge 1 && "$files" =~ ^[0-9]+$ && "$files" -ge 1 ]] || usage
for t in ${targets//,/ }; do
    case "$t" in host | fuse2fs | uf2fs) ;; *) fst_log "bench-mount: unknown target $t"; usage ;; esac
done
for g in ${skip//,/ }; do
    case "$g" in fio | smallfiles | tree) ;; *) fst_log "bench-mount: unknown workload group $g"; usage ;; esac
done
want() { [[ ",$targets," == *",$1,"* ]]; }
runs() { [[ ",$skip," != *",$1,"* ]]; }
[ "$(id -u)" = 0 ] || { fst_log "bench-mount: run as root (loop mount of the host target)"; exit 1; }
need=(timeout cc mkfs.ext4)
if runs fio; then need+=(fio); fi
if runs tree; then need+=(git make flex bison bc tar find du); fi
for tool in "${need[@]}"; do
    command -v "$tool" >/dev/null || { fst_log "bench-mount: $tool not found"; exit 1; }
done
if [ -n "$out" ]; then out="$(realpath -m "$out")"; fi

mkdir -p "$work" "$src"
work="$(realpath "$work")"
src="$(realpath "$src")"
if mountpoint -q "$work/mnt"; then fst_log "bench-mount: $work/mnt is still mounted; unmount it first"; exit 1; fi
rm -rf "${work:?}/mnt"
rm -f "$work"/*.img "$work"/*.log "$work/raw.tsv" "$work/mount.md" "$work/fsmeta"
raw="$work/raw.tsv"
: >"$raw"

# ---- the source tree ---------------------------------------------------------------------
# SRC/tree.tar: the kernel source of Debian's linux-source package, committed to git
# (one commit, packed without deltas) and tarred with its .git. Made once.
tree_tar="$src/tree.tar"
make_tree_tar() {
    local pkg deb
    pkg="$(apt-cache depends linux-source 2>/dev/null | awk '/Depends: linux-source-/ { print $2; exit }')"
    [ -n "$pkg" ] || { fst_log "bench-mount: no linux-source package known to apt (apt-get update?)"; return 1; }
    fst_log "bench-mount: making $tree_tar from $pkg (once)"
    rm -rf "${src:?}/build" && mkdir -p "$src/build"
    (cd "$src/build" && apt-get download "$pkg" >/dev/null 2>&1) || { fst_log "bench-mount: apt-get download $pkg failed"; return 1; }
    deb="$(ls "$src/build"/*.deb)"
    dpkg-deb --fsys-tarfile "$deb" | tar -xO --wildcards './usr/src/linux-source-*.tar.xz' | xz -dc | tar -x -C "$src/build"
    rm -f "$deb"
    local top
    top="$(find "$src/build" -mindepth 1 -maxdepth 1 -type d | head -1)"
    mv "$top" "$src/build/tree"
    # -f: Debian's .gitignore ignores everything at the top level.
    (cd "$src/build/tree" && git init -q && git add -A -f &&
        git -c user.name=bench -c user.email=bench@localhost commit -q -m tree &&
        git repack -adq --window=0 --depth=0 && git prune) || { fst_log "bench-mount: git of the tree failed"; return 1; }
    tar -cf "$tree_tar.part" -C "$src/build" tree
    mv "$tree_tar.part" "$tree_tar"
    rm -rf "${src:?}/build"
}
if runs tree && [ ! -s "$tree_tar" ]; then make_tree_tar; fi
tree_files=0
if runs tree; then tree_files="$(tar -tf "$tree_tar" | wc -l)"; fi

cc -O2 -o "$work/fsmeta" "$here/lib/fsmeta.c"

started=$(date +%s)
load_start="$(cut -d' ' -f1-3 /proc/loadavg)"

# shellcheck disable=SC2317 # called from the trap
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    fst_stop_child
    unmount_current || true
    fst_reap_child
    rm -f "$work"/*.img "$work/fsmeta"
    if ! mountpoint -q "$work/mnt"; then rm -rf "${work:?}/mnt"; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- targets --------------------------------------------------------------------------------
declare -A desc
uf2fs_bin=""
current=""   # target mounted now
host_mounted=0
mnt="$work/mnt"

make_target() { # TARGET: a fresh image
    case "$1" in
    host | fuse2fs) fst_make_ext4 "$work/$1.img" "$size" ;;
    uf2fs) fst_make_f2fs "$uf2fs_bin" "$work/uf2fs.img" "$size" ;;
    esac
}
mount_target() { # TARGET
    mkdir -p "$mnt"
    case "$1" in
    host)
        mount -o loop "$work/host.img" "$mnt"
        host_mounted=1
        desc[host]="ext4 on a loop device ($(findmnt -n -o OPTIONS --target "$mnt")) over a sparse image of $size on $(findmnt -n -o FSTYPE,SOURCE --target "$work" | tail -1 | tr -s ' ')"
        ;;
    fuse2fs) fst_mount_fuse2fs "$work/fuse2fs.img" "$mnt" "$work/mount-fuse2fs.log"; desc[fuse2fs]="$FST_DESC" ;;
    uf2fs) fst_mount_uf2fs "$uf2fs_bin" "$work/uf2fs.img" "$mnt" "$work/mount-uf2fs.log"; desc[uf2fs]="$FST_DESC" ;;
    esac
    current="$1"
}
unmount_current() {
    if [ "$current" = host ] || [ "$host_mounted" = 1 ]; then
        if mountpoint -q "$mnt"; then timeout 120 umount "$mnt"; fi
        host_mounted=0
    else
        fst_unmount
    fi
    current=""
}
remount_target() { local t="$current"; unmount_current; mount_target "$t"; }

# CPU seconds (user+sys, all threads) the FUSE daemon used so far; 0 for the host.
daemon_cpu() {
    if [ "$current" = host ] || [ -z "$FST_PID" ] || [ ! -r "/proc/$FST_PID/stat" ]; then echo 0; return; fi
    awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f\n", ($12 + $13) / hz }' "/proc/$FST_PID/stat"
}

# record ROUND TARGET WORKLOAD VALUE DAEMON_CPU
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$raw"; }

# timed ROUND TARGET WORKLOAD DIR CMD...: runs CMD in DIR, records its wall seconds.
timed() {
    local r="$1" t="$2" w="$3" dir="$4" c0 c1 s0 s1 rc=0 log
    shift 4
    log="$work/$t-${w// /_}-r$r.log"
    c0="$(daemon_cpu)"
    s0="$(date +%s.%N)"
    (cd "$dir" && fst_run 3600 "$log" "$@") || rc=$?
    s1="$(date +%s.%N)"
    c1="$(daemon_cpu)"
    if [ "$rc" != 0 ]; then
        fst_log "bench-mount: $t $w round $r failed (exit $rc; see $log)"
        record "$r" "$t" "$w" error error
        return 1
    fi
    record "$r" "$t" "$w" "$(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.3f", b - a }')" \
        "$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }')"
}

fio_common=(--ioengine=psync --iodepth=1 --fallocate=none --randrepeat=1
    --output-format=terse --terse-version=3)
fio_jobs=("randwrite-4k randwrite 4k" "seqwrite-1m write 1M" "randread-4k randread 4k")

# fio_job ROUND TARGET NAME JOBS ARGS...: records MB/s (read + write, all jobs).
fio_job() {
    local r="$1" t="$2" w="$3" n="$4" log c0 c1 rc=0 lines
    shift 4
    log="$work/$t-${w// /_}-r$r.log"
    c0="$(daemon_cpu)"
    fst_run $((runtime + 600)) "$log" fio --name=job --numjobs="$n" --group_reporting \
        --time_based --runtime="$runtime" "${fio_common[@]}" "$@" || rc=$?
    c1="$(daemon_cpu)"
    # terse v3: field 5 error, 7 read KiB/s, 48 write KiB/s (one line: group_reporting).
    lines="$(grep '^3;' "$log" || true)"
    if [ "$rc" != 0 ] || [ -z "$lines" ] || [ "$(echo "$lines" | head -1 | cut -d';' -f5)" != 0 ]; then
        fst_log "bench-mount: $t $w round $r failed (exit $rc; see $log)"
        record "$r" "$t" "$w" error error
        return 0
    fi
    record "$r" "$t" "$w" "$(echo "$lines" | head -1 | awk -F';' '{ printf "%.1f", ($7 + $48) * 1024 / 1e6 }')" \
        "$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }')"
}

run_fio() { # ROUND TARGET
    local r="$1" t="$2" j name rw bs m
    fst_run 900 "$work/$t-prepare-r$r.log" fio --name=prepare --filename="$mnt/fio.file" \
        --size="$file_size" --rw=write --bs=1M --end_fsync=1 --numjobs=1 "${fio_common[@]}" ||
        { fst_log "bench-mount: $t: writing the fio file failed"; return 0; }
    for j in "${fio_jobs[@]}"; do
        read -r name rw bs <<<"$j"
        for m in "buffered 0" "direct 1"; do
            read -r mode direct <<<"$m"
            local extra=()
            if [ "$rw" != randread ]; then extra=(--end_fsync=1); fi
            fio_job "$r" "$t" "fio $name $mode" 1 --filename="$mnt/fio.file" --size="$file_size" \
                --rw="$rw" --bs="$bs" --direct="$direct" "${extra[@]}"
        done
    done
    rm -f "$mnt/fio.file"
    mkdir -p "$mnt/fio4"
    local quarter
    quarter="$(numfmt --from=iec "$file_size")"
    quarter=$((quarter / 4))
    fio_job "$r" "$t" "fio seqwrite-1m buffered 4 jobs" 4 --directory="$mnt/fio4" --size="$quarter" \
        --rw=write --bs=1M --direct=0 --end_fsync=1
    rm -rf "$mnt/fio4"
}

run_smallfiles() { # ROUND TARGET
    local r="$1" t="$2" log c0 c1 rc=0 phase secs
    log="$work/$t-smallfiles-r$r.log"
    mkdir "$mnt/small"
    c0="$(daemon_cpu)"
    fst_run 3600 "$log" "$work/fsmeta" "$mnt/small" "$files" 4096 100 || rc=$?
    c1="$(daemon_cpu)"
    rmdir "$mnt/small" 2>/dev/null || true
    if [ "$rc" != 0 ]; then
        fst_log "bench-mount: $t smallfiles round $r failed (see $log)"
        for phase in create stat unlink; do record "$r" "$t" "smallfiles $phase" error error; done
        return 0
    fi
    # The daemon's CPU is for the three phases together: put it on the create line.
    while read -r phase secs; do
        if [ "$phase" = create ]; then
            record "$r" "$t" "smallfiles $phase" "$secs" "$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }')"
        else
            record "$r" "$t" "smallfiles $phase" "$secs" -
        fi
    done <"$log"
}

run_tree() { # ROUND TARGET
    local r="$1" t="$2"
    timed "$r" "$t" "untar" "$mnt" tar -xf "$tree_tar" || return 0
    remount_target
    timed "$r" "$t" "find" "$mnt" sh -c 'find tree | wc -l' || true
    timed "$r" "$t" "du" "$mnt" du -s tree || true
    timed "$r" "$t" "git status (first)" "$mnt/tree" git status --porcelain || true
    timed "$r" "$t" "git status" "$mnt/tree" git status --porcelain || true
    timed "$r" "$t" "build" "$mnt/tree" make -j"$(nproc)" allnoconfig || true
    timed "$r" "$t" "rm -rf" "$mnt" rm -rf tree || true
}

if want uf2fs; then uf2fs_bin="$(fst_uf2fs_binary "$repo")"; fi
if want fuse2fs && ! command -v fuse2fs >/dev/null; then fst_log "bench-mount: fuse2fs not found"; exit 1; fi
if { want fuse2fs || want uf2fs; } && ! fst_fuse_ready; then fst_log "bench-mount: no /dev/fuse or fusermount3"; exit 1; fi
active=()
for t in host fuse2fs uf2fs; do if want "$t"; then active+=("$t"); fi; done

for ((round = 1; round <= reps; round++)); do
    for t in "${active[@]}"; do
        fst_log "bench-mount: round $round/$reps: $t (load $(cut -d' ' -f1 /proc/loadavg))"
        make_target "$t"
        mount_target "$t"
        if runs fio; then run_fio "$round" "$t"; fi
        if runs smallfiles; then run_smallfiles "$round" "$t"; fi
        if runs tree; then run_tree "$round" "$t"; fi
        unmount_current
        rm -f "$work/$t.img"
    done
done
elapsed=$(($(date +%s) - started))
load_end="$(cut -d' ' -f1-3 /proc/loadavg)"

# ---- report -------------------------------------------------------------------------------
# stats TARGET WORKLOAD -> "MEDIAN MIN MAX MEDIAN_DAEMON_CPU" or "error"/"none"
stats() {
    awk -F '\t' -v t="$1" -v w="$2" '
        $2 == t && $3 == w { if ($4 == "error") bad = 1; else { n++; v[n] = $4; if ($5 != "-") { m++; c[m] = $5 } } }
        function median(a, n,   i, k, s) {
            for (i = 2; i <= n; i++) { s = a[i]; for (k = i - 1; k >= 1 && a[k] > s; k--) a[k + 1] = a[k]; a[k + 1] = s }
            return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        END {
            if (bad) { print "error"; exit }
            if (n == 0) { print "none"; exit }
            lo = v[1]; hi = v[1]; for (i = 1; i <= n; i++) { if (v[i] < lo) lo = v[i]; if (v[i] > hi) hi = v[i] }
            printf "%s %s %s %s\n", median(v, n), lo, hi, (m ? median(c, m) : "-")
        }' "$raw"
}
# speed A B: how many times faster A is than B (MB/s: A/B; seconds: B/A).
speed() { awk -v a="$1" -v b="$2" -v s="$3" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", (s == "MB/s") ? a / b : b / a; else printf "-" }'; }
num() { awk -v v="$1" 'BEGIN { if (v >= 100) printf "%.0f", v; else if (v >= 10) printf "%.1f", v; else printf "%.2f", v }'; }

workloads=()
if runs fio; then
    for j in "${fio_jobs[@]}"; do
        read -r name _ _ <<<"$j"
        workloads+=("fio $name buffered" "fio $name direct")
    done
    workloads+=("fio seqwrite-1m buffered 4 jobs")
fi
if runs smallfiles; then workloads+=("smallfiles create" "smallfiles stat" "smallfiles unlink"); fi
if runs tree; then workloads+=("untar" "find" "du" "git status (first)" "git status" "build" "rm -rf"); fi

cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
{
    echo "Generated by \`$cmdline\` on $(date -u '+%Y-%m-%d %H:%M UTC') in ${elapsed} s"
    echo "(as root; uf2fs $(git -C "$repo" rev-parse --short HEAD))."
    echo
    echo "Machine: $cpu, $(nproc) CPUs, $(free -g | awk '/Mem:/ { print $2 }') GiB RAM, Linux $(uname -r),"
    echo "$(. /etc/os-release && echo "$PRETTY_NAME"); $(fio --version 2>/dev/null || echo fio)."
    echo "Load average (1/5/15 min) at the start: $load_start; at the end: $load_end (a shared"
    echo "machine; the min-max spread shows how much other work moved the figures)."
    echo
    echo "Targets:"
    echo
    for t in "${active[@]}"; do echo "- **$t**: ${desc[$t]:-}"; done
    echo
    echo "fio: ${runtime} s per job on a $file_size file (4 jobs: $file_size in all). Small files: $files"
    echo "of 4 KiB in 100 directories. Tree: $tree_files entries (Linux source with its git repository)."
    echo "Median over $reps round(s), min-max in brackets; *speed* is how many times faster than"
    echo "the host (or fuse2fs) the target was: above 1 is faster. *CPU* is the daemon's user+sys"
    echo "seconds in the step (median; for smallfiles the three phases together)."
    echo
    header="| workload | unit | host |"
    rule="| --- | --- | ---: |"
    for t in fuse2fs uf2fs; do
        want "$t" || continue
        header+=" $t | $t CPU s | $t speed vs host |"
        rule+=" ---: | ---: | ---: |"
    done
    if want fuse2fs && want uf2fs; then header+=" uf2fs speed vs fuse2fs |"; rule+=" ---: |"; fi
    echo "$header"
    echo "$rule"
    for w in "${workloads[@]}"; do
        unit=s
        if [[ "$w" == fio* ]]; then unit=MB/s; fi
        row="| $w | $unit |"
        declare -A med=()
        for t in host fuse2fs uf2fs; do
            want "$t" || continue
            s="$(stats "$t" "$w")"
            if [ "$s" = error ] || [ "$s" = none ]; then
                row+=" $s |"; [ "$t" = host ] || row+=" - | - |"
                med[$t]=""
                continue
            fi
            read -r m lo hi c <<<"$s"
            med[$t]="$m"
            row+=" $(num "$m") ($(num "$lo")-$(num "$hi")) |"
            if [ "$t" != host ]; then
                row+=" $c | $([ -n "${med[host]:-}" ] && speed "$m" "${med[host]}" "$unit" || echo -) |"
            fi
        done
        if want fuse2fs && want uf2fs; then
            row+=" $([ -n "${med[uf2fs]:-}" ] && [ -n "${med[fuse2fs]:-}" ] && speed "${med[uf2fs]}" "${med[fuse2fs]}" "$unit" || echo -) |"
        fi
        unset med
        echo "$row"
    done
    echo
    echo "Raw figures (round, target, workload, MB/s or seconds, daemon CPU seconds):"
    echo
    echo '```'
    cat "$raw"
    echo '```'
} >"$work/mount.md"
cat "$work/mount.md"
if [ -n "$out" ]; then cp "$work/mount.md" "$out"; fst_log "bench-mount: report written to $out"; fi
fst_log "bench-mount: done in ${elapsed} s"
