#!/usr/bin/env bash
# What FUSE over io_uring (Linux 6.14+) buys the request transport, measured on this
# machine's kernel with the one maintained server that has it: libfuse's
# example/passthrough_hp (libfuse built with -Denable-io-uring=true), mounted over a
# tmpfs directory so the backing store costs next to nothing and the FUSE round trip is
# what is timed. A is the classic transport (read(2) of /dev/fuse, writev(2) of the
# reply), B the same binary and options with `-o io_uring`. uf2fs is not in this A/B:
# fuser 0.18 has no io_uring transport; the question is what one would pay, and the
# answer is read beside uf2fs's own profile (docs/mount-performance.md).
#
# usage: PASSTHROUGH_HP=.../build/example/passthrough_hp scripts/lib/fuse-uring-ab.sh
#   ROUNDS       pairs A B (default 3); RUNTIME seconds per fio job (default 5)
#   FILES        small files for the metadata job (default 10000; passthrough_hp holds a
#                descriptor per inode, so keep it under `ulimit -Hn`)
#   THREADS      passthrough_hp --num-threads (default 4: uf2fs's 2x cores); the io_uring
#                side has one queue per CPU whatever this says
#   WORK         scratch (default /dev/shm/fuse-uring-ab: tmpfs backing store)
# Jobs: fio psync, one thread, a 256M file written first: randwrite-4k buffered (one
# WRITE per write(2): no writeback cache), randread-4k O_DIRECT (one READ each),
# seqwrite-1m buffered; then scripts/lib/fsmeta.c with FILES files of 4 KiB (create,
# stat, unlink). Splice and FUSE passthrough are off on both sides (uf2fs has neither
# on its data path). Prints per job and round A and B, then medians and the median of
# the per-round ratios B/A (throughput: above 1 is io_uring faster; seconds: below 1),
# and the daemon's CPU seconds (user+sys) per job.
# Run as root: it sets /sys/module/fuse/parameters/enable_uring to Y for B (and puts
# back what it found).
set -u
here="$(cd "$(dirname "$0")/../.." && pwd)"
hp=${PASSTHROUGH_HP:?set PASSTHROUGH_HP to libfuse\'s build/example/passthrough_hp}
rounds=${ROUNDS:-3}; runtime=${RUNTIME:-5}; files=${FILES:-10000}
threads=${THREADS:-4}
w=${WORK:-/dev/shm/fuse-uring-ab}
param=/sys/module/fuse/parameters/enable_uring
[ -w "$param" ] || { echo "fuse-uring-ab: $param is not writable (root, Linux 6.14+ with FUSE io_uring)" >&2; exit 1; }
orig=$(cat "$param")
trap 'echo "$orig" > "$param"; fusermount3 -u "$w/mnt" 2>/dev/null || umount "$w/mnt" 2>/dev/null' EXIT
rm -rf "$w"; mkdir -p "$w/src" "$w/mnt"
# passthrough_hp keeps an O_PATH descriptor open for every inode the kernel knows.
ulimit -n "$(ulimit -Hn)"
cc -O2 -o "$w/fsmeta" "$here/scripts/lib/fsmeta.c"
tck=$(getconf CLK_TCK)
cpu() { awk -v t="$tck" '{print ($14+$15)/t}' "/proc/$1/stat"; }
raw="$w/raw.tsv"; : >"$raw"

mount_variant() { # A|B
    rm -rf "$w/src"; mkdir -p "$w/src"
    local opts=(--foreground --nopassthrough --nosplice --num-threads "$threads" -o allow_other)
    if [ "$1" = B ]; then echo Y > "$param"; opts+=(-o io_uring); else echo N > "$param"; fi
    "$hp" "${opts[@]}" "$w/src" "$w/mnt" >"$w/log.$1" 2>&1 &
    pid=$!
    for _ in $(seq 100); do mountpoint -q "$w/mnt" && return 0; sleep 0.1; done
    echo "fuse-uring-ab: passthrough_hp ($1) did not mount:" >&2; cat "$w/log.$1" >&2; exit 1
}
unmount_variant() {
    fusermount3 -u "$w/mnt" 2>/dev/null || umount "$w/mnt"
    wait "$pid" 2>/dev/null
}
fio_job() { # NAME RW BS DIRECT -> MB/s
    fio --name="$1" --filename="$w/mnt/f" --rw="$2" --bs="$3" --direct="$4" --size=256M \
        --ioengine=psync --time_based --runtime="$runtime" --end_fsync=1 \
        --output-format=json 2>/dev/null |
        python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print("%.1f" % ((j["write"]["bw_bytes"]+j["read"]["bw_bytes"])/1e6))'
}
# Which transport served the requests: syscalls of the daemon during a short dd.
transport_check() { # A|B
    command -v strace >/dev/null || return 0
    strace -f -c -p "$pid" -o "$w/strace.$1" 2>/dev/null &
    local sp=$!; sleep 0.5
    dd if=/dev/zero of="$w/mnt/probe" bs=4k count=2000 status=none; rm -f "$w/mnt/probe"
    sleep 0.3; kill -INT "$sp"; wait "$sp" 2>/dev/null
    echo "$1: daemon syscalls over 2000 x 4 KiB write(2):" \
        "$(awk '$NF ~ /^(read|writev|io_uring_enter)$/ {printf "%s %s  ", $NF, $4}' "$w/strace.$1")"
}

for r in $(seq "$rounds"); do
    for v in A B; do
        mount_variant "$v"
        [ "$r" = 1 ] && transport_check "$v"
        dd if=/dev/zero of="$w/mnt/f" bs=1M count=256 status=none conv=fsync
        for job in randwrite-4k:randwrite:4k:0 randread-4k-direct:randread:4k:1 seqwrite-1m:write:1m:0; do
            IFS=: read -r name rw bs direct <<<"$job"
            sync; echo 3 > /proc/sys/vm/drop_caches
            c0=$(cpu "$pid"); mbs=$(fio_job "$name" "$rw" "$bs" "$direct"); c1=$(cpu "$pid")
            printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$r" "$v" "$mbs" "$(echo "$c1 - $c0" | bc)" >>"$raw"
        done
        rm -f "$w/mnt/f"; mkdir "$w/mnt/small"
        c0=$(cpu "$pid")
        out=$("$w/fsmeta" "$w/mnt/small" "$files" 4096 100) || { echo "fsmeta failed" >&2; exit 1; }
        c1=$(cpu "$pid")
        total=$(echo "$out" | awk '{s += $2} END {printf "%.2f", s}')
        printf 'smallfiles\t%s\t%s\t%s\t%s\n' "$r" "$v" "$total" "$(echo "$c1 - $c0" | bc)" >>"$raw"
        for phase in create stat unlink; do
            printf 'smallfiles-%s\t%s\t%s\t%s\t-\n' "$phase" "$r" "$v" "$(echo "$out" | awk -v p="$phase" '$1 == p {print $2}')" >>"$raw"
        done
        rmdir "$w/mnt/small"
        unmount_variant
        grep -P "\t$r\t$v\t" "$raw" | sed 's/^/  /'
    done
done

python3 - "$raw" <<'EOF'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
jobs = []
for j, *_ in rows:
    if j not in jobs:
        jobs.append(j)
print()
print("| job | unit | A (read/writev) | B (io_uring) | B/A (paired) | A CPU s | B CPU s |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
for j in jobs:
    a = {r: (float(x), c) for (jj, r, v, x, c) in rows if jj == j and v == "A"}
    b = {r: (float(x), c) for (jj, r, v, x, c) in rows if jj == j and v == "B"}
    ratios = [b[r][0] / a[r][0] for r in a if r in b and a[r][0] > 0]
    med = lambda d, i: statistics.median(float(v[i]) for v in d.values()) if all(v[i] != "-" for v in d.values()) else None
    unit = "s" if j.startswith("smallfiles") else "MB/s"
    ca, cb = med(a, 1), med(b, 1)
    fmt = lambda x: "-" if x is None else "%.2f" % x
    print(f"| {j} | {unit} | {med(a, 0):.2f} | {med(b, 0):.2f} | {statistics.median(ratios):.2f} | {fmt(ca)} | {fmt(cb)} |")
EOF
