#!/usr/bin/env bash
# Greedy against Linux: runs the seed's GC experiment (docs/waf-lab.md) with Linux F2FS
# in QEMU and with the uf2fs WAF lab on the same volume, and prints both WAFs.
#
# Kernel side: Debian's Linux 6.1 (scripts/kernel-check.sh's kernel and initramfs, with
# an overlay: null_blk, mkfs.f2fs with -Z, fio and scripts/kernel/waf-init) on two
# memory-backed null_blk devices, a conventional one of --conv-size and a host-managed
# zoned one of --zones x --zone-size (no conventional zone);
#   mkfs.f2fs <conv> -c <seq> -m -Z RSVD -o PCT; mount (default options unless --opts);
#   fill: fio --rw=write --bs=1M --filesize=FILE; sync;
#   fio --rw=randwrite --bs=4k --ba=4k --filesize=FILE --norandommap --overwrite=1
#       --name=job1 --filename=MNT/sustain --io_size=IO; sync;
#   WAF = sectors written to both devices over the random job (/sys/block/nullbN/stat,
#         field 7, between the two syncs) / 8 / (IO / 4096).
# Lab side: uf2fs bench waf with the same values (--policy, default greedy,cost-benefit).
#
# usage:
#   scripts/kernel/waf-compare.sh setup
#       kernel-check.sh setup, find or build mkfs.f2fs with -Z, check fio, build the overlay
#   scripts/kernel/waf-compare.sh [run] [OPTIONS]
#   scripts/kernel/waf-compare.sh probe [OPTIONS]
#       Linux's limit on the volume instead of the experiment: statfs (f_blocks, f_bfree,
#       f_bavail) of the fresh mount and the largest file written until ENOSPC, beside
#       whether the lab accepts that file and one block more (--file-size, --io-size
#       and the job's options are unused)
#
# OPTIONS (sizes take K, M, G suffixes, powers of 1024; defaults in brackets):
#   --conv-size S          conventional null_blk, whole MiB [32M]
#   --zone-size S          zone size, whole MiB, a multiple of 2 MiB [8M]; 2 MiB zones
#                          (one-segment sections) need a kernel with "f2fs: Fix discard
#                          bug on zoned block devices with 2MiB zone size": 6.1 fails
#                          with I/O errors (UF2FS_KERNEL_PKG=linux-image-6.12... works)
#   --zones N              sequential zones [128]
#   --overprovision PCT    mkfs.f2fs -o [3.89]
#   --reserved-sections N  mkfs.f2fs -Z [8]
#   --file-size S          the file [870M]
#   --io-size S            bytes of 4 KiB random writes [2G]
#   --opts OPTS            kernel mount options (comma-separated) [none: the defaults]
#   --dirty-bytes S        the guest's vm.dirty_bytes (vm.dirty_background_bytes: half),
#                          or "kernel" for the kernel's ratios [4M: as the lab, whose
#                          writer writes dirty pages back past 512 (2 MiB, the
#                          background limit this sets), as Linux's flusher does]
#   --policy LIST          lab policies [greedy,cost-benefit]
#   --seed N               lab seed [1]
#   --gc-loop REL          the lab's kernel GC loop, uf2fs bench waf --kernel (6.1 or
#                          6.12) [the guest kernel's: 6.1 on a 6.1 kernel, else 6.12]
#   --no-kernel            lab only          --no-lab       kernel only
#   --kernel-result FILE   use a result block saved by --result-out instead of booting
#   --result-out FILE      save the guest's raw result block
#   --json FILE            write everything as JSON
#   --sample S             guest progress sample period in seconds [30]
#   --dirty-sample S       seconds between samples of F2FS's dirty data pages (debugfs
#                          "datas") over the job, as "datas" lines of the result
#                          block; prints their p10, median, p90 and max [1; 0: none]
#   --timeout S            kill the guest after S seconds [7200]
#   --keep                 keep the run directory (console.log, result, initrd)
#   --trace                record F2FS's GC trace events over the job (f2fs_gc_begin,
#                          f2fs_gc_end, f2fs_get_victim, f2fs_write_checkpoint,
#                          f2fs_background_gc) with the dirty page counts and the data
#                          logs' lines of debugfs sampled every --sample seconds, as
#                          "trace", "dirty" and "logs" lines of the result block (keep
#                          it with --result-out); prints the dirty data pages' p10,
#                          median, p90 and max over the job
#   --kprobe DEFS          kprobe events recorded over the job, as "trace" lines (DEFS:
#                          kprobe_events definitions separated by ';', e.g. at each
#                          f2fs_gc F2FS_DIRTY_DATA and the data logs' current segment
#                          and offset, read at offsets of the guest kernel's build:
#                          pahole --btf_base vmlinux -C f2fs_sb_info f2fs.ko;
#                          docs/waf-lab.md has them for Debian's 6.1 and 6.12); with
#                          --trace beside its events, else alone: at a function GC
#                          calls once a victim (do_garbage_collect) they leave the
#                          guest's pace alone. A field dirty_data= of such an event
#                          prints the dirty data pages when each victim was taken
#
# Environment:
#   UF2FS_KC_WORK          work directory (default /var/tmp/uf2fs-kernel)
#   UF2FS_KC_ACCEL         kvm | tcg | auto, as kernel-check.sh
#   UF2FS_KERNEL_PKG       another Debian kernel package, as kernel-check.sh
#   UF2FS_BIN              uf2fs binary (default target/release/uf2fs)
#   UF2FS_MKFS_F2FS        a mkfs.f2fs that has -Z (f2fs-tools >= 1.16 + 03aa49e)
#   UF2FS_F2FS_TOOLS_SRC   else: a git repository of f2fs-tools to build one from
#                          (default: clone git.kernel.org's jaegeuk/f2fs-tools)
#   UF2FS_F2FS_TOOLS_REV   its commit [eea39f1..., 2023-10-19: the tree of the seed's date]
#
# Exit status: 0 done (the figures are printed whatever they are); 1 a run failed (the
# guest hung or a step in it failed, the lab failed); 2 usage or set-up error.
set -euo pipefail
export LC_ALL=C
export PATH="$PATH:/usr/sbin:/sbin"

prog=waf-compare
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
kc=$top/scripts/kernel-check.sh
WORK=${UF2FS_KC_WORK:-/var/tmp/uf2fs-kernel}
UF2FS=${UF2FS_BIN:-$top/target/release/uf2fs}
F2FS_TOOLS_REV=${UF2FS_F2FS_TOOLS_REV:-eea39f12074f9b8358e4bb48c4d70fea3fb1cb6c}

die() { echo "$prog: $*" >&2; exit 2; }
log() { echo "[$prog] $*" >&2; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

# --- values -------------------------------------------------------------------------

# Bytes of a size with an optional K/M/G/T suffix (powers of 1024).
to_bytes() {
    local v=$1 n u
    [[ $v =~ ^([0-9]+)([KkMmGgTt]?)(i?[Bb])?$ ]] || die "bad size '$v'"
    n=${BASH_REMATCH[1]} u=${BASH_REMATCH[2]}
    case $u in
        '') echo "$n" ;;
        [Kk]) echo $((n << 10)) ;;
        [Mm]) echo $((n << 20)) ;;
        [Gg]) echo $((n << 30)) ;;
        [Tt]) echo $((n << 40)) ;;
    esac
}
mib() { awk -v b="$1" 'BEGIN { printf "%.0f", b / 1048576 }'; }
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

# --- set-up -------------------------------------------------------------------------

KPKG='' KVERSION='' KVER='' VMLINUZ='' BASE_INITRD='' ACCEL='' KROOT=''
kernel_setup() {
    local out
    out=$("$kc" setup) || die "scripts/kernel-check.sh setup failed"
    KPKG=$(sed -n 's/^kernel package: *\([^ ]*\) .*/\1/p' <<<"$out")
    KVERSION=$(sed -n 's/^kernel package: *[^ ]* \([^ ]*\) .*/\1/p' <<<"$out")
    KVER=$(sed -n 's/^kernel package: .*(kernel \(.*\))$/\1/p' <<<"$out")
    VMLINUZ=$(sed -n 's/^vmlinuz: *//p' <<<"$out")
    BASE_INITRD=$(sed -n 's/^initramfs: *//p' <<<"$out")
    ACCEL=$(sed -n 's/^accelerator: *//p' <<<"$out")
    [ -f "$VMLINUZ" ] && [ -f "$BASE_INITRD" ] && [ -n "$KVER" ] \
        || die "cannot read kernel-check.sh setup's output:"$'\n'"$out"
    KROOT=$(dirname "$(dirname "$VMLINUZ")")
}

# A mkfs.f2fs with -Z: $UF2FS_MKFS_F2FS, the host's if it has -Z, or one built from
# f2fs-tools at $F2FS_TOOLS_REV (libf2fs linked in; libuuid from the host).
MKFS=''
# Whether mkfs.f2fs $1 knows -Z (its usage exits non-zero).
has_Z() { local u; u=$("$1" -h 2>&1 || true); grep -q -- '-Z' <<<"$u"; }
mkfs_setup() {
    if [ -n "${UF2FS_MKFS_F2FS:-}" ]; then
        MKFS=$UF2FS_MKFS_F2FS
        [ -x "$MKFS" ] || die "UF2FS_MKFS_F2FS=$MKFS is not executable"
    elif command -v mkfs.f2fs >/dev/null && has_Z "$(command -v mkfs.f2fs)"; then
        MKFS=$(command -v mkfs.f2fs)
    else
        local dest=$WORK/f2fs-tools/$F2FS_TOOLS_REV src
        MKFS=$dest/mkfs/mkfs.f2fs
        if [ ! -x "$MKFS" ] || [ ! -f "$dest/.ok" ]; then
            log "building mkfs.f2fs (f2fs-tools $F2FS_TOOLS_REV; the host's has no -Z)"
            for t in git autoreconf libtoolize make gcc; do
                command -v $t >/dev/null || die "$t is needed to build mkfs.f2fs" \
                    "(apt-get install git autoconf automake libtool make gcc uuid-dev)"
            done
            [ -f /usr/include/uuid/uuid.h ] || die "uuid-dev is needed to build mkfs.f2fs"
            src=${UF2FS_F2FS_TOOLS_SRC:-}
            if [ -z "$src" ]; then
                src=$WORK/f2fs-tools/src.git
                if [ ! -d "$src" ]; then
                    git clone -q --bare \
                        https://git.kernel.org/pub/scm/linux/kernel/git/jaegeuk/f2fs-tools.git "$src" \
                        || die "cannot clone f2fs-tools: set UF2FS_F2FS_TOOLS_SRC to a git repository" \
                        "of f2fs-tools or UF2FS_MKFS_F2FS to a mkfs.f2fs that has -Z"
                fi
            fi
            git -C "$src" cat-file -e "$F2FS_TOOLS_REV^{commit}" 2>/dev/null \
                || die "$src has no commit $F2FS_TOOLS_REV (UF2FS_F2FS_TOOLS_REV)"
            rm -rf "$dest"
            mkdir -p "$dest"
            git -C "$src" archive "$F2FS_TOOLS_REV" | tar -x -C "$dest"
            (cd "$dest" && autoreconf -fi && ./configure -q --disable-shared --without-selinux \
                --without-blkid && make -s -C lib && make -s -C mkfs) >"$dest/build.log" 2>&1 \
                || die "building mkfs.f2fs failed, see $dest/build.log"
            touch "$dest/.ok"
        fi
    fi
    has_Z "$MKFS" || die "$MKFS has no -Z"
}

FIO=''
fio_setup() {
    if ! command -v fio >/dev/null; then
        log "installing fio"
        DEBIAN_FRONTEND=noninteractive timeout 900 apt-get -qq install -y --no-install-recommends fio >&2 \
            || die "cannot install fio (apt-get install fio)"
    fi
    FIO=$(command -v fio)
    command -v jq >/dev/null || die "jq is needed (apt-get install jq)"
}

# Copies binary $1 to $2 (a path inside the stage) with the shared libraries ldd names.
copy_with_libs() {
    local bin=$1 dest=$2 stage=$3 lib
    mkdir -p "$stage$(dirname "$dest")"
    cp -L "$bin" "$stage$dest"
    for lib in $(ldd "$bin" | awk '/=>/ && $3 ~ /^\// { print $3 } /^[[:space:]]*\// { print $1 }'); do
        [ -f "$lib" ] && cp --parents -L -n "$lib" "$stage/"
    done
}

# The overlay appended to kernel-check.sh's initramfs (cached under a hash of its
# inputs): waf-init, configfs + null_blk, mkfs.f2fs, fio. Uncompressed: gunzip of
# fio's ~80 MB of libraries under TCG costs more than reading them.
OVERLAY=''
build_overlay() {
    local mods key stage m name
    mods=$(modprobe -d "$KROOT" -S "$KVER" --show-depends -a configfs null_blk 2>/dev/null \
        | awk '$1 == "insmod" && !seen[$2]++ { print $2 }')
    grep -q '/null_blk\.ko' <<<"$mods" || die "$KPKG has no null_blk module"
    key=$( { echo "$KVER"; echo "$mods"; sha256sum "$here/waf-init" "$MKFS" "$FIO";
             "$FIO" --version; } | sha256sum | cut -c1-16)
    OVERLAY=$WORK/initrd/waf-$KVER-$key.cpio
    [ -f "$OVERLAY" ] && return 0
    log "building the overlay $OVERLAY"
    mkdir -p "$WORK/initrd" "$WORK/tmp"
    stage=$(mktemp -d "$WORK/tmp/waf-stage.XXXXXX")
    mkdir -p "$stage/lib/modules" "$stage/job"
    cp "$here/waf-init" "$stage/waf-init"
    chmod 755 "$stage/waf-init"
    : >"$stage/lib/modules/waf.list"
    while read -r m; do
        [ -n "$m" ] || continue
        name=$(basename "$m")
        case $name in
            *.ko.xz) xz -dc "$m" >"$stage/lib/modules/${name%.xz}"; name=${name%.xz} ;;
            *.ko.zst) zstd -qdc "$m" >"$stage/lib/modules/${name%.zst}"; name=${name%.zst} ;;
            *.ko.gz) gzip -dc "$m" >"$stage/lib/modules/${name%.gz}"; name=${name%.gz} ;;
            *) cp "$m" "$stage/lib/modules/$name" ;;
        esac
        # null_blk makes no device of its own: both come from configfs
        if [ "$name" = null_blk.ko ]; then echo "$name nr_devices=0"; else echo "$name"; fi \
            >>"$stage/lib/modules/waf.list"
    done <<<"$mods"
    copy_with_libs "$MKFS" /usr/sbin/mkfs.f2fs "$stage"
    copy_with_libs "$FIO" /usr/bin/fio "$stage"
    (cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$OVERLAY.tmp"
    mv "$OVERLAY.tmp" "$OVERLAY"
    rm -rf "$stage"
}

setup_all() {
    kernel_setup
    mkfs_setup
    fio_setup
    build_overlay
}

# --- the guest ----------------------------------------------------------------------

run_dir='' qpid=''
cleanup() {
    if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
        kill -TERM "$qpid" 2>/dev/null || true
        sleep 1
        kill -KILL "$qpid" 2>/dev/null || true
        wait "$qpid" 2>/dev/null || true
    fi
    if [ -n "$run_dir" ] && [ -d "$run_dir" ] && [ "$keep" = 0 ]; then rm -rf "$run_dir"; fi
}

# Boots the guest; leaves its result block in $RESULT; 0 when the guest finished it.
RESULT='' elapsed=0 timed_out=0
boot() {
    mkdir -p "$WORK/runs"
    run_dir=$(mktemp -d "$WORK/runs/waf.XXXXXX")
    mkdir -p "$run_dir/job/job"
    {
        echo "CONV_MB=$(mib "$conv")"
        echo "ZONE_MB=$(mib "$zone")"
        echo "ZONES=$zones"
        echo "OP=$ovp"
        echo "RSVD=$rsvd"
        echo "FILE_BYTES=$file"
        echo "IO_BYTES=$io"
        echo "OPTS='$opts'"
        echo "SAMPLE_S=$sample"
        echo "DIRTY_SAMPLE_S=$dirty_sample"
        echo "DIRTY_BYTES=$dirty"
        echo "PROBE=$probe"
        echo "TRACE=$trace"
        echo "KPROBE='$kprobe'"
    } >"$run_dir/job/job/conf"
    (cd "$run_dir/job" && find . | cpio -o -H newc -R 0:0 --quiet) >"$run_dir/job.cpio"
    # The kernel takes an uncompressed archive after a compressed one only at a 4-byte
    # aligned offset (zeros between archives are skipped): pad the gzip'd base.
    local pad
    pad=$(( (512 - $(stat -c %s "$BASE_INITRD") % 512) % 512 ))
    { cat "$BASE_INITRD"; head -c "$pad" /dev/zero; cat "$OVERLAY" "$run_dir/job.cpio"; } >"$run_dir/initrd"

    local qaccel=(-accel tcg -cpu max) mem start=$SECONDS seen=0 n
    [ "$ACCEL" = kvm ] && qaccel=(-accel kvm -cpu host)
    # memory-backed null_blk keeps every block written: the devices, plus room for the
    # kernel, the page cache and the initramfs
    mem=$(( (conv + zones * zone) / 1048576 + 768 ))
    log "booting Linux $KVER ($ACCEL, ${mem} MiB); the guest's progress follows"
    qemu-system-x86_64 "${qaccel[@]}" -m "${mem}M" -smp 1 -nodefaults -no-user-config \
        -display none -no-reboot \
        -kernel "$VMLINUZ" -initrd "$run_dir/initrd" \
        -append "console=ttyS0 rdinit=/waf-init panic=-1 loglevel=6 tsc=reliable" \
        -serial "file:$run_dir/console.log" -serial "file:$run_dir/result.log" \
        </dev/null >"$run_dir/qemu.out" 2>&1 &
    qpid=$!
    timed_out=0
    while kill -0 "$qpid" 2>/dev/null; do
        if [ $((SECONDS - start)) -ge "$timeout" ]; then
            timed_out=1
            kill -TERM "$qpid" 2>/dev/null || true
            sleep 2
            kill -KILL "$qpid" 2>/dev/null || true
            break
        fi
        sleep 2
        n=$(wc -l <"$run_dir/result.log" 2>/dev/null || echo 0)
        if [ "$n" -gt "$seen" ]; then
            progress < <(tr -d '\r' <"$run_dir/result.log" | sed -n "$((seen + 1)),${n}p")
            seen=$n
        fi
    done
    qrc=0
    wait "$qpid" 2>/dev/null || qrc=$?
    qpid=
    elapsed=$((SECONDS - start))
    RESULT=$run_dir/result
    tr -d '\r' <"$run_dir/result.log" 2>/dev/null \
        | sed -n '/^BEGIN-RESULT$/,/^END-RESULT$/p' >"$RESULT" || true
    grep -qx END-RESULT "$RESULT"
}

# Progress lines from the guest's result lines on stdin (time and sample records);
# run in this shell, as it keeps the sectors written before the job in base_sectors.
base_sectors=''
progress() {
    local k a b c d
    while read -r k a b c d; do
        case $k in
            time) log "guest ${b%.*}s: $a" ;;
            stat_before) base_sectors=$(( ${base_sectors:-0} + $(awk '{ print $7 }' <<<"$b $c $d") )) ;;
            sample)
                [ -n "$base_sectors" ] || continue
                awk -v t="$a" -v w="$b" -v s="$((c + d - base_sectors))" -v io="$io" 'BEGIN {
                    u = w / 4096; printf "[waf-compare] guest %ds: %.0f of %.0f MiB written (%.0f%%), WAF so far %.2f\n",
                    t, w / 1048576, io / 1048576, 100 * w / io, (u > 0 ? s / 8 / u : 0) }' >&2 ;;
        esac
    done
}

# --- the kernel's figures -----------------------------------------------------------

field() { [ -n "$RESULT" ] && [ -f "$RESULT" ] || return 0; sed -n "s/^$1 //p" "$RESULT"; }

# "status" counter: the first number after LABEL in the debugfs status of $1
# (before|after), or the number in parentheses with $3 = bg.
status_num() {
    local which=$1 label=$2 part=${3:-}
    field "status_$which" | awk -v label="$label" -v part="$part" '
        index($0, label) && !done {
            s = substr($0, index($0, label) + length(label))
            if (part == "bg") { if (match(s, /\([^0-9]*[0-9]+/)) { t = substr(s, RSTART, RLENGTH); gsub(/[^0-9]/, "", t); print t; done = 1 } }
            else if (match(s, /[0-9]+/)) { print substr(s, RSTART, RLENGTH); done = 1 }
        }'
}
status_delta() {
    local a b
    a=$(status_num before "$1" "${2:-}") b=$(status_num after "$1" "${2:-}")
    if [ -n "$a" ] && [ -n "$b" ]; then echo $((b - a)); else echo null; fi
}
sysfs_val() { field "sysfs_$1" | awk -v n="$2" '$1 == n { print $2; exit }'; }
sysfs_delta() {
    local a b
    a=$(sysfs_val before "$1") b=$(sysfs_val after "$1")
    if is_uint "${a:-x}" && is_uint "${b:-x}"; then echo $((b - a)); else echo null; fi
}
# iostat_info "name: value" lines ([WRITE] section, bytes), after - before, in blocks.
iostat_blocks() {
    awk -v n="$1" '
        { line = $0; sub(/^iostat_(before|after) /, "", line) }
        /^iostat_before/ && index(line, n ":") == 1 && a == "" { a = line; sub(/^[^:]*:[ \t]*/, "", a) }
        /^iostat_after/ && index(line, n ":") == 1 && b == "" { b = line; sub(/^[^:]*:[ \t]*/, "", b) }
        END { if (a != "" && b != "") printf "%d\n", (b - a) / 4096; else print "null" }' "$RESULT"
}

K=()   # name=value pairs of the kernel's figures, for the table and JSON
kernel_figures() {
    local rc sb cp s0a s0b s1a s1b
    for k in nullb_rc mkfs_rc mount_rc fill_rc job_rc; do
        rc=$(field "$k" | head -1)
        [ "$rc" = 0 ] || { kernel_failed "$k ${rc:-missing}"; return 1; }
    done
    # An error in the kernel log (e.g. a refused zone reset and the writes that then
    # fail, which the final sync may hit after fio is done) voids the figures.
    if field dmesg | grep -qE '^<[0-3]>'; then
        kernel_failed "errors in the kernel log"
        return 1
    fi
    read -r -a sb <<<"$(field sb)"
    read -r -a cp <<<"$(field cp)"
    [ ${#sb[@]} -ge 24 ] && [ ${#cp[@]} -ge 9 ] || { kernel_failed "no superblock/checkpoint words"; return 1; }
    s0b=$(field stat_before | awk '$1 == "nullb0" { print $8 }')
    s1b=$(field stat_before | awk '$1 == "nullb1" { print $8 }')
    s0a=$(field stat_after | awk '$1 == "nullb0" { print $8 }')
    s1a=$(field stat_after | awk '$1 == "nullb1" { print $8 }')
    local conv_blocks=$(( (s0a - s0b) / 8 )) seq_blocks=$(( (s1a - s1b) / 8 ))
    local user_blocks=$((io / 4096)) issued
    issued=$(field job | sed -n 's/.*issued rwts: total=[0-9]*,\([0-9]*\),.*/\1/p' | head -1)
    local segs_per_sec=${sb[6]}
    K=(
        "segs_per_sec=$segs_per_sec"
        "main_segments=${sb[17]}"
        "main_sections=$(( sb[17] / segs_per_sec ))"
        "main_blkaddr=${sb[23]}"
        "reserved_segments=${cp[6]}"
        "overprov_segments=${cp[7]}"
        "user_blocks_volume=$(( cp[2] + cp[3] * 4294967296 ))"
        "user_blocks=$user_blocks"
        "fio_issued=${issued:-null}"
        "conv_blocks=$conv_blocks"
        "seq_blocks=$seq_blocks"
        "device_blocks=$((conv_blocks + seq_blocks))"
        "waf=$(awk -v d=$((conv_blocks + seq_blocks)) -v u=$user_blocks 'BEGIN { printf "%.4f", d / u }')"
        "gc_calls=$(status_delta 'GC calls:')"
        "gc_calls_bg=$(status_delta 'GC calls:' bg)"
        "data_segs=$(status_delta '- data segments :')"
        "data_segs_bg=$(status_delta '- data segments :' bg)"
        "node_segs=$(status_delta '- node segments :')"
        "node_segs_bg=$(status_delta '- node segments :' bg)"
        "data_moved=$(status_delta '- data blocks :')"
        "data_moved_bg=$(status_delta '- data blocks :' bg)"
        "node_moved=$(status_delta '- node blocks :')"
        "node_moved_bg=$(status_delta '- node blocks :' bg)"
        "sysfs_gc_fg_calls=$(sysfs_delta gc_foreground_calls)"
        "sysfs_gc_bg_calls=$(sysfs_delta gc_background_calls)"
        "sysfs_moved_fg=$(sysfs_delta moved_blocks_foreground)"
        "sysfs_moved_bg=$(sysfs_delta moved_blocks_background)"
        "sysfs_gc_reclaimed_segments=$(sysfs_delta gc_reclaimed_segments)"
        "sysfs_cp_fg_calls=$(sysfs_delta cp_foreground_calls)"
        "sysfs_cp_bg_calls=$(sysfs_delta cp_background_calls)"
        "sysfs_lifetime_write_kbytes=$(sysfs_delta lifetime_write_kbytes)"
        "io_app_buffered_data=$(iostat_blocks 'app buffered data')"
        "io_fs_data=$(iostat_blocks 'fs data')"
        "io_fs_node=$(iostat_blocks 'fs node')"
        "io_fs_meta=$(iostat_blocks 'fs meta')"
        "io_fs_gc_data=$(iostat_blocks 'fs gc data')"
        "io_fs_gc_node=$(iostat_blocks 'fs gc node')"
        "io_fs_cp_data=$(iostat_blocks 'fs cp data')"
        "io_fs_cp_node=$(iostat_blocks 'fs cp node')"
        "io_fs_cp_meta=$(iostat_blocks 'fs cp meta')"
        "job_s=$(awk -v a="$(field 'time job_start')" -v b="$(field 'time sync')" 'BEGIN { printf "%.0f", b - a }')"
        "guest_s=$(field 'time umount' | cut -d. -f1)"
        "wall_s=$([ -n "$kernel_result" ] && echo null || echo "$elapsed")"
    )
}
kv() { local p; for p in "${K[@]}"; do [ "${p%%=*}" = "$1" ] && { echo "${p#*=}"; return; }; done; echo null; }
kernel_failed() {
    echo "kernel run failed: $*" >&2
    field mkfs | tail -5 | sed 's/^/  mkfs: /' >&2
    field mount_out | sed 's/^/  mount: /' >&2
    field fill | tail -5 | sed 's/^/  fill: /' >&2
    field job | tail -8 | sed 's/^/  job: /' >&2
    { field dmesg | grep -E '^<[0-3]>' | head -10; field dmesg | tail -5; } | sed 's/^/  dmesg: /' >&2
    failed=1
}

# --- main ---------------------------------------------------------------------------

conv=$((32 << 20)) zone=$((8 << 20)) zones=128 ovp=3.89 rsvd=8 file=$((870 << 20)) io=$((2 << 30))
opts='' policy=greedy,cost-benefit seed=1 gc_loop='' do_kernel=1 do_lab=1 kernel_result='' result_out=''
json='' sample=30 dirty_sample=1 timeout=7200 keep=0 failed=0 dirty=$((4 << 20)) probe=0 trace=0 kprobe=''
cmd=run
case ${1:-} in
    setup | run | probe) cmd=$1; shift ;;
    -h | --help) usage ;;
esac
need() { [ $# -ge 2 ] || die "$1 needs a value"; }
while [ $# -gt 0 ]; do
    case $1 in
        --conv-size) need "$@"; conv=$(to_bytes "$2"); shift ;;
        --zone-size) need "$@"; zone=$(to_bytes "$2"); shift ;;
        --zones) need "$@"; zones=$2; shift ;;
        --overprovision) need "$@"; ovp=$2; shift ;;
        --reserved-sections) need "$@"; rsvd=$2; shift ;;
        --file-size) need "$@"; file=$(to_bytes "$2"); shift ;;
        --io-size) need "$@"; io=$(to_bytes "$2"); shift ;;
        --opts) need "$@"; opts=$2; shift ;;
        --dirty-bytes) need "$@"; if [ "$2" = kernel ]; then dirty=0; else dirty=$(to_bytes "$2"); fi; shift ;;
        --policy) need "$@"; policy=$2; shift ;;
        --seed) need "$@"; seed=$2; shift ;;
        --gc-loop) need "$@"; gc_loop=$2; shift ;;
        --no-kernel) do_kernel=0 ;;
        --no-lab) do_lab=0 ;;
        --kernel-result) need "$@"; kernel_result=$2; shift ;;
        --result-out) need "$@"; result_out=$2; shift ;;
        --json) need "$@"; json=$2; shift ;;
        --sample) need "$@"; sample=$2; shift ;;
        --dirty-sample) need "$@"; dirty_sample=$2; shift ;;
        --timeout) need "$@"; timeout=$2; shift ;;
        --keep) keep=1 ;;
        --trace) trace=1 ;;
        --kprobe) need "$@"; kprobe=$2; shift ;;
        -h | --help) usage ;;
        *) echo "$prog: unknown argument $1" >&2; usage ;;
    esac
    shift
done
is_uint "$zones" && [ "$zones" -gt 0 ] || die "--zones must be a positive integer"
is_uint "$rsvd" || die "--reserved-sections must be an integer"
is_uint "$seed" || die "--seed must be an integer"
is_uint "$sample" && [ "$sample" -gt 0 ] || die "--sample must be a positive integer"
is_uint "$dirty_sample" || die "--dirty-sample must be a whole number of seconds (0: none)"
is_uint "$timeout" || die "--timeout must be an integer"
[[ $ovp =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--overprovision must be a number"
[ $((conv % (1 << 20))) = 0 ] && [ "$conv" -gt 0 ] || die "--conv-size must be whole MiB"
[ $((zone % (2 << 20))) = 0 ] && [ "$zone" -gt 0 ] || die "--zone-size must be a multiple of 2 MiB"
[ $((file % 4096)) = 0 ] && [ "$file" -gt 0 ] || die "--file-size must be a multiple of 4 KiB"
[ $((io % 4096)) = 0 ] && [ "$io" -gt 0 ] || die "--io-size must be a multiple of 4 KiB"
[ "$do_kernel" = 1 ] || [ "$do_lab" = 1 ] || die "--no-kernel and --no-lab leave nothing to run"
case $kprobe in *\'*) die "--kprobe: no single quotes" ;; esac
[ -z "$kernel_result" ] || [ -f "$kernel_result" ] || die "no result file $kernel_result"
[ "$(id -u)" = 0 ] || [ "$cmd" != setup ] || log "not root: apt-get may fail"

if [ "$cmd" = setup ]; then
    setup_all
    echo "kernel:     $KPKG $KVERSION ($KVER), $ACCEL"
    echo "mkfs.f2fs:  $MKFS ($("$MKFS" -V 2>&1 | head -1))"
    echo "fio:        $FIO ($("$FIO" --version))"
    echo "initramfs:  $BASE_INITRD + $OVERLAY"
    exit 0
fi

trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM
command -v jq >/dev/null || die "jq is needed (apt-get install jq)"

# probe: Linux's limit on this volume (statfs of the fresh mount; the largest file written
# in 1 MiB then 4 KiB writes until ENOSPC) beside what the lab accepts.
if [ "$cmd" = probe ]; then
    probe=1
    if [ -n "$kernel_result" ]; then
        RESULT=$kernel_result
    else
        setup_all
        boot || { echo "guest stopped without a result block" >&2; exit 1; }
        [ -z "$result_out" ] || cp "$RESULT" "$result_out"
    fi
    [ "$(field mkfs_rc)" = 0 ] || { field mkfs | tail -3 >&2; die "mkfs.f2fs failed in the guest"; }
    [ "$(field mount_rc)" = 0 ] || { field mount_out >&2; die "the guest's mount failed"; }
    read -r -a cp <<<"$(field cp)"
    read -r -a st <<<"$(field statfs_mount)"
    size=$(field probe_4k_size)
    is_uint "${size:-x}" || die "no probe result (kernel: $(field kernel))"
    echo "kernel:            Linux $(field kernel | head -1)"
    echo "volume:            $(mib "$conv") MiB conventional + $zones zones of $(mib "$zone") MiB, -o $ovp -Z $rsvd"
    echo "user_block_count:  $(( cp[2] + cp[3] * 4294967296 )) (checkpoint)"
    echo "statfs, fresh:     bsize ${st[0]} blocks ${st[1]} bfree ${st[2]} bavail ${st[3]}"
    echo "statfs, full:      $(field statfs_4k)"
    echo "largest file:      $size bytes ($((size / 4096)) blocks; 1 MiB writes stopped at $(field probe_1m_size))"
    if [ "$do_lab" = 1 ]; then
        [ -x "$UF2FS" ] || die "no $UF2FS: cargo build --release -p uf2fs (or set UF2FS_BIN)"
        for f in $size $((size + 4096)); do
            if out=$("$UF2FS" bench waf --conv-size "$conv" --zone-size "$zone" --zones "$zones" \
                --overprovision "$ovp" --reserved-sections "$rsvd" --file-size "$f" --io-size 4K \
                --policy greedy --jobs 1 2>&1); then
                echo "lab, file $f:  accepted"
            else
                echo "lab, file $f:  refused: $(tail -1 <<<"$out")"
            fi
        done
    fi
    exit 0
fi

setup_line="$(mib "$conv") MiB conventional + $zones zones of $(mib "$zone") MiB, -o $ovp -Z $rsvd;"
setup_line+=" file $(mib "$file") MiB; $(mib "$io") MiB of 4 KiB random writes"

# Kernel
kernel_ok=0 kernel_desc=''
if [ "$do_kernel" = 1 ]; then
    if [ -n "$kernel_result" ]; then
        RESULT=$kernel_result
        grep -qx END-RESULT "$RESULT" || die "$kernel_result has no complete result block"
    else
        command -v qemu-system-x86_64 >/dev/null || die "run scripts/kernel/waf-compare.sh setup first"
        setup_all
        if ! boot; then
            failed=1
            if [ "$timed_out" = 1 ]; then echo "guest timed out after ${elapsed}s (killed)" >&2
            else echo "guest stopped without a result block (qemu exit $qrc)" >&2; fi
            tr -d '\r' <"$run_dir/console.log" | tail -30 >&2 || true
        fi
        [ -z "$result_out" ] || cp "$RESULT" "$result_out"
    fi
    if [ -s "$RESULT" ] && kernel_figures; then kernel_ok=1; fi
    kernel_desc="Linux $(field kernel | head -1)"
fi

# Lab
lab_json=''
if [ "$do_lab" = 1 ]; then
    [ -x "$UF2FS" ] || die "no $UF2FS: cargo build --release -p uf2fs (or set UF2FS_BIN)"
    lab_json=$(mktemp /tmp/waf-compare-lab.XXXXXX.json)
    if [ -z "$gc_loop" ]; then
        # The GC loop of the kernel the guest ran (or would run): Linux 6.1's, or the
        # later form every newer release has.
        case "$( { [ "$kernel_ok" = 1 ] && field kernel | head -1; } || echo "$KVER")" in
            6.1.*) gc_loop=6.1 ;;
            *) gc_loop=6.12 ;;
        esac
    fi
    log "lab: $UF2FS bench waf ($policy, Linux $gc_loop's GC loop)"
    lab_start=$SECONDS
    if ! nice -n 10 "$UF2FS" bench waf --conv-size "$conv" --zone-size "$zone" --zones "$zones" \
        --overprovision "$ovp" --reserved-sections "$rsvd" --file-size "$file" --io-size "$io" \
        --seed "$seed" --policy "$policy" --kernel "$gc_loop" --jobs 1 --json "$lab_json" >"$lab_json.out" 2>&1; then
        cat "$lab_json.out" >&2
        failed=1
    else
        sed -n '1,2p' "$lab_json.out"
    fi
    log "lab took $((SECONDS - lab_start)) s"
    [ -s "$lab_json" ] || lab_json=''
fi

# Table
echo
echo "setup: $setup_line"
[ "$do_kernel" = 0 ] || echo "kernel: mount options ${opts:-(defaults)}; $(field vm | tr '\n' ' ')"
lab0() { [ -n "$lab_json" ] && jq -r ".[0].geometry.$1" "$lab_json" || echo -; }
if [ "$kernel_ok" = 1 ] || [ -n "$lab_json" ]; then
    printf '\n%-22s %14s %14s\n' geometry kernel lab
    for g in main_sections reserved_segments overprov_segments user_blocks; do
        kg=$g; [ $g = user_blocks ] && kg=user_blocks_volume
        printf '%-22s %14s %14s\n' "$g" "$([ "$kernel_ok" = 1 ] && kv $kg || echo -)" "$(lab0 $g)"
    done
    if [ "$kernel_ok" = 1 ] && [ -n "$lab_json" ]; then
        for g in main_sections reserved_segments overprov_segments; do
            [ "$(kv $g)" = "$(lab0 $g)" ] || echo "WARNING: $g differs between the kernel's volume and the lab's" >&2
        done
        [ "$(kv user_blocks_volume)" = "$(lab0 user_blocks)" ] \
            || echo "WARNING: user_blocks differs between the kernel's volume and the lab's" >&2
    fi
fi

kwaf=''
[ "$kernel_ok" = 1 ] && kwaf=$(kv waf)
printf '\n%-24s %7s %9s %11s %11s %11s %13s %12s %12s\n' run WAF "/kernel" "data moved" "node moved" \
    "GC fg/bg" "victims d/n" "data writes" "node writes"
if [ "$kernel_ok" = 1 ]; then
    sps=$(kv segs_per_sec)
    kd=$(kv data_segs) kn=$(kv node_segs)
    vic='-'
    [ "$kd" != null ] && [ "$kn" != null ] && vic="$(awk -v d="$kd" -v n="$kn" -v s="$sps" 'BEGIN { printf "%.0f/%.0f", d / s, n / s }')"
    # GC passes by type (sysfs gc_{fore,back}ground_calls; debugfs's "GC calls: N (BG: M)"
    # before they existed; 6.12's debugfs counts gc_thread calls there, whatever their type)
    fgbg='-'
    if [ "$(kv sysfs_gc_fg_calls)" != null ]; then
        fgbg="$(kv sysfs_gc_fg_calls)/$(kv sysfs_gc_bg_calls)"
    elif [ "$(kv gc_calls)" != null ]; then
        fgbg="$(( $(kv gc_calls) - $(kv gc_calls_bg) ))/$(kv gc_calls_bg)"
    fi
    kdw='-' knw='-'
    [ "$(kv io_fs_data)" != null ] && kdw=$(kv io_fs_data)
    [ "$(kv io_fs_node)" != null ] && knw=$(( $(kv io_fs_node) + $(kv io_fs_cp_node) ))
    printf '%-24s %7.2f %9s %11s %11s %11s %13s %12s %12s\n' "$kernel_desc" "$kwaf" 1.00 \
        "$(kv data_moved)" "$(kv node_moved)" "$fgbg" "$vic" "$kdw" "$knw"
fi
if [ -n "$lab_json" ]; then
    jq -r --arg kwaf "$kwaf" '.[] | [ "lab " + .policy, (.waf * 100 | round / 100),
        (if $kwaf == "" then "-" else ((.waf / ($kwaf | tonumber)) * 100 | round / 100 | tostring) end),
        .data_blocks_moved, .node_blocks_moved, "\(.fg_gc_calls)/\(.bg_gc_calls)",
        "\(.data_victims)/\(.node_victims)", .device.user_data, .device.user_node ] | @tsv' \
        "$lab_json" | while IFS=$'\t' read -r n w r d nm g v dw nw; do
        printf '%-24s %7.2f %9s %11s %11s %11s %13s %12s %12s\n' "$n" "$w" "$r" "$d" "$nm" "$g" "$v" "$dw" "$nw"
    done
fi

# Cumulative WAF at 1/8, 1/4, 1/2, 3/4 and all of the writes ("user device" points on
# stdin, interpolated linearly).
waf_at() {
    awk -v io="$((io / 4096))" 'BEGIN { n = 0; pu = 0; pd = 0; split("0.125 0.25 0.5 0.75 1", f, " ") }
        { u[++n] = $1; d[n] = $2 }
        END { for (i = 1; i <= 5; i++) { t = f[i] * io; w = "-"
                for (j = 1; j <= n; j++) if (u[j] >= t) {
                    if (j == 1) { a = 0; b = 0 } else { a = u[j - 1]; b = d[j - 1] }
                    x = (u[j] > a) ? b + (d[j] - b) * (t - a) / (u[j] - a) : d[j]
                    w = sprintf("%.2f", x / t); break }
                printf " %9s", w }
            printf "\n" }'
}
printf '\n%-24s' "cumulative WAF at"
for f in 0.125 0.25 0.5 0.75 1; do
    printf ' %9s' "$(awk -v f=$f -v io="$io" 'BEGIN { printf "%.0fM", f * io / 1048576 }')"
done
echo
if [ "$kernel_ok" = 1 ]; then
    printf '%-24s' "$kernel_desc"
    base=$(( $(field stat_before | awk '{ s += $8 } END { print s }') ))
    { field sample | awk -v b="$base" '{ printf "%d %d\n", $2 / 4096, ($3 + $4 - b) / 8 }'
      echo "$(kv user_blocks) $(kv device_blocks)"; } | waf_at
fi
if [ -n "$lab_json" ]; then
    for i in $(seq 0 $(( $(jq length "$lab_json") - 1 ))); do
        printf '%-24s' "lab $(jq -r ".[$i].policy" "$lab_json")"
        jq -r ".[$i].curve[] | \"\(.user_blocks) \(.device_blocks)\"" "$lab_json" | waf_at
    done
fi

echo
echo "data/node writes: blocks written by the write path and checkpoints, GC moves apart (kernel:"
echo "iostat 'fs data' and 'fs node' + 'fs cp node'; lab: device.user_data and device.user_node);"
echo "victims in sections. WAF = blocks written to both devices / $((io / 4096)) random 4 KiB writes."
if [ "$kernel_ok" = 1 ]; then
    echo "kernel: fio issued $(kv fio_issued) writes; devices wrote $(kv conv_blocks) conventional + $(kv seq_blocks)" \
        "sequential blocks; GC moved $(kv data_moved_bg) data + $(kv node_moved_bg) node blocks in the background;" \
        "the random job took $(kv job_s) s of guest time (uptime), the guest $(kv guest_s) s;" \
        "QEMU ran $(kv wall_s) s (wall clock)."
    echo "kernel: $(kv sysfs_cp_fg_calls) checkpoints (+$(kv sysfs_cp_bg_calls) background)," \
        "$(kv sysfs_gc_reclaimed_segments) segments reclaimed by GC; iostat: $(kv io_fs_gc_data) GC data," \
        "$(kv io_fs_gc_node) GC node, $(kv io_fs_node) node + $(kv io_fs_cp_node) checkpoint node," \
        "$(kv io_fs_meta) + $(kv io_fs_cp_meta) meta blocks"
    echo "kernel mount: $(field mounted | head -1)"
    # The dirty data pages F2FS counted (debugfs "datas", pages under writeback not
    # included) at each sample over the job: --dirty-sample's, else --trace's.
    { field datas | awk '{ print $2 }'
      [ -n "$(field datas | head -1)" ] || field dirty | sed -n 's/.*- datas: \([0-9]*\).*/\1/p'
    } | sort -n | awk '
        { v[NR] = $1 }
        END { if (NR) printf "kernel: dirty data pages over the job (%d samples): p10 %d, median %d, p90 %d, max %d\n",
              NR, v[int(NR * 0.1) + 1], v[int(NR * 0.5) + 1], v[int(NR * 0.9) + 1], v[NR] }'
    # With a --kprobe at do_garbage_collect with a dirty_data field: the dirty data
    # pages when each victim was taken, the level near full WAF follows (docs/waf-lab.md,
    # "Near full: the plateau follows the dirty level").
    field trace | sed -n '/do_garbage_collect+/s/.* dirty_data=\(-\{0,1\}[0-9]*\).*/\1/p' | sort -n | awk '
        { v[NR] = $1; s += $1 }
        END { if (NR) printf "kernel: dirty data pages when a victim was taken (%d victims): mean %d, p10 %d, median %d, p90 %d\n",
              NR, s / NR, v[int(NR * 0.1) + 1], v[int(NR * 0.5) + 1], v[int(NR * 0.9) + 1] }'
fi

if [ -n "$json" ]; then
    {
        kobj='null'
        if [ "$kernel_ok" = 1 ]; then
            kobj=$(for p in "${K[@]}"; do printf '%s\t%s\n' "${p%%=*}" "${p#*=}"; done | jq -R -s '
                split("\n") | map(select(length > 0) | split("\t") | { (.[0]): (.[1] | (tonumber? // .)) }) | add')
            kobj=$(jq -n --argjson k "$kobj" --arg kernel "$(field kernel | head -1)" \
                --arg mounted "$(field mounted | head -1)" --arg mkfs "$(field mkfs)" \
                --arg curve "$(field sample)" --arg base0 "$(field stat_before | awk '$1 == "nullb0" { print $8 }')" \
                --arg base1 "$(field stat_before | awk '$1 == "nullb1" { print $8 }')" \
                --arg sysb "$(field sysfs_before)" --arg sysa "$(field sysfs_after)" \
                --arg sta "$(field status_after)" --arg ioa "$(field iostat_after)" '
                $k + { kernel: $kernel, mounted: $mounted, mkfs: ($mkfs | split("\n")),
                  curve: ($curve | split("\n") | map(select(length > 0) | split(" ") | map(tonumber)
                    | { guest_s: .[0], user_blocks: (.[1] / 4096 | floor),
                        device_blocks: (((.[2] + .[3]) - (($base0 | tonumber) + ($base1 | tonumber))) / 8 | floor) })),
                  status_after: ($sta | split("\n")), iostat_after: ($ioa | split("\n")),
                  sysfs_before: ($sysb | split("\n")), sysfs_after: ($sysa | split("\n")) }')
        fi
        lobj='null'
        [ -n "$lab_json" ] && lobj=$(cat "$lab_json")
        jq -n --arg setup "$setup_line" --arg opts "$opts" --argjson conv "$conv" --argjson zone "$zone" \
            --argjson zones "$zones" --arg ovp "$ovp" --argjson rsvd "$rsvd" --argjson file "$file" \
            --argjson io "$io" --argjson dirty "$dirty" --argjson kernel "$kobj" --argjson lab "$lobj" '
            { setup: { line: $setup, conv_bytes: $conv, zone_bytes: $zone, zones: $zones,
                       overprovision_pct: ($ovp | tonumber), reserved_sections: $rsvd,
                       file_bytes: $file, io_bytes: $io, mount_options: $opts, dirty_bytes: $dirty },
              kernel: $kernel, lab: $lab }'
    } >"$json"
    echo "JSON: $json"
fi
[ -z "$lab_json" ] || rm -f "$lab_json" "$lab_json.out"
exit "$failed"
