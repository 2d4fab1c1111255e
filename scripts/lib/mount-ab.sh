#!/usr/bin/env bash
# Paired A/B of two uf2fs mounts (binaries and/or mount options) on fio jobs and an
# untar, alternating A B A B on a fresh image each time, with the daemon's CPU seconds
# (user+sys from /proc/PID/stat) beside the wall-clock figure: on a shared machine the
# CPU figure moves far less than the wall clock.
#
# usage: A_BIN=... A_OPTS=... B_BIN=... B_OPTS=... scripts/lib/mount-ab.sh
#   A_BIN, B_BIN    uf2fs binaries (default target/release/uf2fs for both)
#   A_OPTS, B_OPTS  mount options (default rw,allow_other for both)
#   JOBS            space-separated subset of: randwrite-4k seqwrite-1m seqread-1m untar
#                   (default all four; untar needs TREE_TAR)
#   TREE_TAR        a tar to unpack for the untar job (e.g. tar cf /tmp/t.tar -C /usr share)
#   ROUNDS          pairs (default 3); RUNTIME seconds per fio job (default 5);
#   FILE_SIZE       the fio file (default 512M); WORK (default /var/tmp/uf2fs-mount-ab)
#   A_PRE, B_PRE    shell commands run before each mount of that variant (a sysctl)
#   A_MOUNTED, B_MOUNTED  shell commands run once it is mounted, with BDI set to the
#                   mount's /sys/class/bdi/MAJ:MIN (e.g. 'echo 0 > $BDI/strict_limit')
# Prints one line per job, round and variant, then per job the medians and the
# median of the per-round ratios B/A (MB/s for fio, above 1 is B faster; wall seconds
# for untar, below 1 is B faster; daemon CPU s per GB, or per untar: below 1 is B
# cheaper). Run as root.
set -u
here="$(cd "$(dirname "$0")/../.." && pwd)"
a_bin=${A_BIN:-$here/target/release/uf2fs}; b_bin=${B_BIN:-$a_bin}
a_opts=${A_OPTS:-rw,allow_other}; b_opts=${B_OPTS:-$a_opts}
jobs=${JOBS:-randwrite-4k seqwrite-1m seqread-1m untar}
rounds=${ROUNDS:-3}; runtime=${RUNTIME:-5}; file_size=${FILE_SIZE:-512M}
w=${WORK:-/var/tmp/uf2fs-mount-ab}; mkdir -p "$w/mnt"
tck=$(getconf CLK_TCK)
cpu() { awk -v t="$tck" '{print ($14+$15)/t}' "/proc/$1/stat"; }
raw="$w/raw.tsv"; : >"$raw"

mount_variant() { # BIN OPTS PRE MOUNTED
    rm -f "$w/img"
    eval "$3"
    "$1" mkfs --size 3G -f "$w/img" >/dev/null
    "$1" mount -o "$2" -f "$w/img" "$w/mnt" >"$w/log" 2>&1 &
    pid=$!
    for _ in $(seq 200); do
        if mountpoint -q "$w/mnt"; then
            # shellcheck disable=SC2034 # BDI is for the A_MOUNTED/B_MOUNTED commands
            BDI=/sys/class/bdi/$(mountpoint -d "$w/mnt"); eval "$4"; return 0
        fi
        sleep 0.1
    done
    echo "mount-ab: $1 -o $2 did not mount" >&2; cat "$w/log" >&2; exit 1
}
unmount_variant() { umount "$w/mnt"; wait "$pid"; }

fio_job() { # NAME RW BS: prints "MB/s"
    fio --name="$1" --filename="$w/mnt/fio.file" --size="$file_size" --rw="$2" --bs="$3" \
        --ioengine=psync --iodepth=1 --numjobs=1 --fallocate=none --randrepeat=1 \
        --time_based --runtime="$runtime" --end_fsync=1 --output-format=terse --terse-version=3 \
        2>/dev/null | awk -F';' '{ r=$7; wr=$48; printf "%.1f\n", (r+wr)*1024/1e6 }'
}

run_job() { # JOB VARIANT BIN OPTS ROUND PRE MOUNTED
    local job=$1 v=$2 bin=$3 opts=$4 round=$5 c0 c1 t0 t1 mbs=0 gb=0
    mount_variant "$bin" "$opts" "$6" "$7"
    if [ "$job" != untar ]; then
        fio --name=prepare --filename="$w/mnt/fio.file" --size="$file_size" --rw=write --bs=1M \
            --ioengine=psync --fallocate=none --end_fsync=1 >/dev/null 2>&1
    fi
    c0=$(cpu "$pid"); t0=$(date +%s.%N)
    case "$job" in
    randwrite-4k) mbs=$(fio_job "$job" randwrite 4k) ;;
    seqwrite-1m) mbs=$(fio_job "$job" write 1M) ;;
    seqread-1m) mbs=$(fio_job "$job" read 1M) ;;
    untar) tar xf "${TREE_TAR:?untar needs TREE_TAR}" -C "$w/mnt"; sync -f "$w/mnt" ;;
    esac
    c1=$(cpu "$pid"); t1=$(date +%s.%N)
    unmount_variant
    local wall cpus per
    wall=$(echo "$t1 - $t0" | bc); cpus=$(echo "$c1 - $c0" | bc)
    if [ "$job" = untar ]; then per=$cpus; mbs=$(echo "scale=3; 1/$wall" | bc); else
        gb=$(echo "scale=3; $mbs * $wall / 1000" | bc)
        per=$(echo "scale=3; $cpus / ($gb + 0.001)" | bc)
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$job" "$round" "$v" "$mbs" "$wall" "$cpus" "$per" >>"$raw"
    printf '%s round %s %s: %s %s, wall %.1f s, daemon CPU %s s (%s per %s), load %s\n' "$job" "$round" "$v" \
        "$mbs" "$([ "$job" = untar ] && echo '1/s' || echo MB/s)" "$wall" "$cpus" "$per" \
        "$([ "$job" = untar ] && echo untar || echo GB)" "$(cut -d' ' -f1 /proc/loadavg)"
}

echo "A: $a_bin -o $a_opts"
echo "B: $b_bin -o $b_opts"
for v in A_PRE A_MOUNTED B_PRE B_MOUNTED; do [ -n "${!v:-}" ] && echo "$v: ${!v}"; done
for job in $jobs; do
    for round in $(seq "$rounds"); do
        run_job "$job" A "$a_bin" "$a_opts" "$round" "${A_PRE:-}" "${A_MOUNTED:-}"
        run_job "$job" B "$b_bin" "$b_opts" "$round" "${B_PRE:-}" "${B_MOUNTED:-}"
    done
done
rm -f "$w/img"
python3 - "$raw" <<'EOF'
import sys, statistics as st
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
jobs = []
for r in rows:
    if r[0] not in jobs: jobs.append(r[0])
print("| job | unit | A | B | B/A (paired) | A CPU | B CPU | B/A CPU (paired) |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for j in jobs:
    a = {r[1]: r for r in rows if r[0] == j and r[2] == "A"}
    b = {r[1]: r for r in rows if r[0] == j and r[2] == "B"}
    ks = [k for k in a if k in b]
    col, unit, cpu = (4, "s", "CPU s") if j == "untar" else (3, "MB/s", "CPU s/GB")
    med = lambda d, i: st.median(float(d[k][i]) for k in ks)
    ratio = lambda i: st.median(float(b[k][i]) / max(float(a[k][i]), 1e-9) for k in ks)
    print(f"| {j} | {unit}, {cpu} | {med(a,col):.2f} | {med(b,col):.2f} | {ratio(col):.2f} | {med(a,6):.2f} | {med(b,6):.2f} | {ratio(6):.2f} |")
EOF
