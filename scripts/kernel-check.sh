#!/usr/bin/env bash
# Checks F2FS images with the real Linux F2FS driver: boots Debian's kernel in QEMU
# with a tiny busybox initramfs, mounts the image (attached as virtio disk /dev/vda),
# lists it, optionally writes to it, unmounts, and judges the kernel's log.
#
# usage:
#   scripts/kernel-check.sh setup
#       install what is missing, fetch the kernel, build the initramfs; print versions
#   scripts/kernel-check.sh mount [OPTIONS] IMG
#       mount read-only (the disk is attached read-only), list, check dmesg, unmount;
#       with --rw, mount read-write, copy --put DIR in, run --workload SCRIPT (default
#       scripts/kernel/workloads/smoke.sh), list, unmount cleanly: IMG is then an image
#       written by the kernel; with --rw --powercut, cut the guest's power right after
#       the workload instead (no sync, no unmount: IMG is then what a power cut leaves)
#   scripts/kernel-check.sh verify [OPTIONS] IMG MANIFEST
#       mount read-only and compare every entry of MANIFEST with what the kernel reads
#   scripts/kernel-check.sh batch [--jobs N] [--watch PID]... DIR
#       one boot for several images: serves the `mount` and `verify` runs started with
#       UF2FS_KC_BATCH=DIR (each queues its job in DIR and waits; its report and exit
#       status are what it would have had alone). It boots once N jobs wait (N counted
#       over the whole run; default 1), attaching each image as a virtio disk of its
#       own, the guest checking them one after the other; sooner when a watched PID
#       (a script that queues jobs) has exited; it stops when every watched PID has
#       exited and no job waits. --powercut jobs are not queued (they boot alone).
#
# OPTIONS:
#   --rw                 (mount) mount read-write and run the workload
#   --workload SCRIPT    (mount --rw) busybox sh script run in the guest from the mount
#                        point (set -e; $MNT is the mount point). It may name ranges of
#                        big files to digest by appending "PATH OFFSET LENGTH" lines
#                        (4 KiB-aligned) to /tmp/chunks.
#   --no-workload        (mount --rw) run no workload (only --put, if given)
#   --powercut           (mount --rw) right after the workload, send the results and reset
#                        the guest at once (sysrq 'b'; no sync, no unmount, no device
#                        shutdown). The manifest is then what the workload declared
#                        durable (the entries it appended to the file $DURABLE, in the
#                        manifest format), not the whole tree; IMG must afterwards have
#                        no unmount checkpoint (checked with fsck.f2fs --dry-run)
#   --expect MANIFEST    (mount) compare the kernel's manifest with MANIFEST as verify does
#                        (e.g. after the kernel's roll-forward recovery of a power-cut image)
#   --put DIR            (mount --rw) copy DIR's contents into the root first
#   --opts OPTS          extra mount options (comma-separated)
#   --manifest-out FILE  save the kernel's manifest of the whole tree (format below)
#   --listing-out FILE   save `ls -lRan` of the mount
#   --result-out FILE    save the raw result block
#   --exact              (verify) also fail on entries the manifest does not list
#   --hash-max BYTES     hash regular files up to this size (default 64 MiB)
#   --timeout SECONDS    kill the guest after this long (default 180 with KVM, 600 TCG;
#                        a batch's boot: the sum of its jobs')
#   --quiet              do not print the listing
#   --keep               keep the run directory (console log, result block, initrd)
#
# Manifest: one entry per line, TAB-separated, "#" starts a comment line:
#   path type mode nlink uid gid size mtime sha256 target xattrs chunks
# path is absolute inside the image; type f d l c b p s; mode the permission bits in
# octal; mtime in seconds; target the symlink target; xattrs "name=0xHEX" joined by
# ","; chunks "offset:length:sha256" joined by ","; "-" is "not applicable / do not
# check" (verify compares only the fields the manifest fills in).
#
# Exit status: 0 pass; 1 the kernel rejected the image (mount failed, an F2FS error or
# warning, a kernel warning or oops, a failed workload or unmount, a manifest mismatch,
# a hung guest); 2 usage or set-up error.
#
# Environment:
#   UF2FS_KC_WORK     work directory (default /var/tmp/uf2fs-kernel)
#   UF2FS_KC_ACCEL    kvm | tcg | auto (default: kvm when /dev/kvm is usable and the
#                     CPU shows vmx or svm, else tcg)
#   UF2FS_KERNEL_PKG  Debian kernel package (default: what linux-image-amd64 depends on)
#   UF2FS_KC_ALLOW    extended regex of F2FS warning lines not to fail on
#   UF2FS_KC_BATCH    (mount, verify) queue the job for `kernel-check.sh batch` in this
#                     directory instead of booting
#
# The guest's results come back on its second serial port (ttyS1) as a block
# BEGIN-RESULT ... END-RESULT (see scripts/kernel/init); its console (ttyS0) is kept
# as console.log in the run directory.
set -euo pipefail

prog="kernel-check"
here=$(cd "$(dirname "$0")" && pwd)
kdir=$here/kernel
WORK=${UF2FS_KC_WORK:-/var/tmp/uf2fs-kernel}
export PATH="$PATH:/usr/sbin:/sbin"

die() { echo "$prog: $*" >&2; exit 2; }
log() { echo "[$prog] $*" >&2; }

SUDO=
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
APT_OPTS=(-o Dpkg::Use-Pty=0)
# apt-get download as root warns that _apt cannot write the target directory.
if [ "$(id -u)" = 0 ]; then APT_OPTS+=(-o APT::Sandbox::User=root); fi

# --- installation -------------------------------------------------------------------

apt_updated=0
apt_update() {
    if [ $apt_updated = 0 ]; then
        log "apt-get update"
        timeout 600 $SUDO apt-get "${APT_OPTS[@]}" -qq update >&2 || die "apt-get update failed"
        apt_updated=1
    fi
}

apt_install() {
    log "installing: $*"
    if ! DEBIAN_FRONTEND=noninteractive timeout 900 $SUDO apt-get "${APT_OPTS[@]}" -qq \
        install -y --no-install-recommends "$@" >&2; then
        apt_update
        DEBIAN_FRONTEND=noninteractive timeout 900 $SUDO apt-get "${APT_OPTS[@]}" -qq \
            install -y --no-install-recommends "$@" >&2 || die "cannot install $*"
    fi
}

# Host tools: QEMU, cpio, kmod (depmod/modprobe to resolve module dependencies), attr
# (getfattr/setfattr, copied into the guest), zstd/gzip.
install_tools() {
    local need=()
    command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
    command -v cpio >/dev/null || need+=(cpio)
    command -v depmod >/dev/null && command -v modprobe >/dev/null || need+=(kmod)
    command -v getfattr >/dev/null && command -v setfattr >/dev/null || need+=(attr)
    command -v dpkg-deb >/dev/null || die "dpkg-deb not found: a Debian host is needed"
    command -v apt-get >/dev/null || die "apt-get not found: a Debian host is needed"
    if [ ${#need[@]} -gt 0 ]; then apt_install "${need[@]}"; fi
}

# Candidate version of a package ("" when apt does not know it).
candidate() {
    apt-cache policy "$1" 2>/dev/null | awk '$1 == "Candidate:" && $2 != "(none)" { print $2 }'
}

# Downloads package $1 (version $2) into $WORK/debs and extracts it into $3 (once).
fetch_deb() {
    local pkg=$1 ver=$2 dest=$3 deb
    [ -f "$dest/.ok" ] && return 0
    mkdir -p "$WORK/debs"
    # apt-get download names the file PKG_VERSION_ARCH.deb, ":" in VERSION as "%3a".
    deb=$(find "$WORK/debs" -maxdepth 1 -name "${pkg}_${ver//:/%3a}_*.deb" | head -1)
    if [ -z "$deb" ]; then
        log "downloading $pkg $ver"
        (cd "$WORK/debs" && timeout 900 apt-get "${APT_OPTS[@]}" -qq download "$pkg=$ver" >&2) \
            || die "apt-get download $pkg=$ver failed"
        deb=$(find "$WORK/debs" -maxdepth 1 -name "${pkg}_${ver//:/%3a}_*.deb" | head -1)
        [ -n "$deb" ] || die "apt-get download $pkg=$ver left no .deb in $WORK/debs"
    fi
    rm -rf "$dest"
    mkdir -p "$dest"
    dpkg-deb -x "$deb" "$dest/root"
    touch "$dest/.ok"
}

KPKG='' KVERSION='' KVER='' KROOT='' VMLINUZ='' MODDIR=''
fetch_kernel() {
    KPKG=${UF2FS_KERNEL_PKG:-}
    if [ -z "$KPKG" ]; then
        KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null \
            | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
        if [ -z "$KPKG" ]; then
            apt_update
            KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null \
                | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
        fi
        [ -n "$KPKG" ] || die "cannot resolve linux-image-amd64 with apt-cache"
    fi
    KVERSION=$(candidate "$KPKG")
    if [ -z "$KVERSION" ]; then apt_update; KVERSION=$(candidate "$KPKG"); fi
    [ -n "$KVERSION" ] || die "apt knows no package $KPKG"
    local dest="$WORK/kernel/${KPKG}_${KVERSION}"
    fetch_deb "$KPKG" "$KVERSION" "$dest"
    KROOT=$dest/root
    MODDIR=$(dirname "$(find "$KROOT" -path '*/modules/*/modules.order' | head -1)")
    [ -d "$MODDIR" ] || die "$KPKG has no modules"
    KVER=$(basename "$MODDIR")
    VMLINUZ=$(find "$KROOT/boot" -name 'vmlinuz-*' | head -1)
    [ -f "$VMLINUZ" ] || die "$KPKG has no vmlinuz"
    # The package ships no modules.dep (its postinst runs depmod): make one in place.
    if [ ! -f "$MODDIR/modules.dep" ]; then
        depmod -b "$(dirname "$(dirname "$(dirname "$MODDIR")")")" "$KVER" 2>/dev/null \
            || depmod -b "$KROOT" "$KVER"
    fi
    [ -f "$MODDIR/modules.dep" ] || die "depmod made no modules.dep for $KVER"
}

BUSYBOX=
fetch_busybox() {
    local ver
    ver=$(candidate busybox-static)
    if [ -z "$ver" ]; then apt_update; ver=$(candidate busybox-static); fi
    [ -n "$ver" ] || die "apt knows no package busybox-static"
    fetch_deb busybox-static "$ver" "$WORK/busybox/$ver"
    BUSYBOX=$WORK/busybox/$ver/root/bin/busybox
    [ -x "$BUSYBOX" ] || die "busybox-static has no bin/busybox"
}

# --- initramfs ----------------------------------------------------------------------

# The modules the guest loads, in load order (dependencies and soft dependencies first,
# as modprobe resolves them from modules.dep and modules.softdep), one path per line.
module_paths() {
    local base
    base=$(dirname "$(dirname "$(dirname "$MODDIR")")")
    modprobe -d "$base" -S "$KVER" --show-depends -a f2fs virtio_pci virtio_blk 2>/dev/null \
        | awk '$1 == "insmod" && !seen[$2]++ { print $2 }'
}

BASE_INITRD=
build_initrd() {
    local mods key stage out
    mods=$(module_paths)
    echo "$mods" | grep -q '/f2fs\.ko' || die "$KPKG has no f2fs module"
    key=$( { echo "$KPKG $KVERSION $KVER"; sha256sum "$BUSYBOX" "$kdir/init";
             echo "$mods"; command -v getfattr setfattr f2fs_io || true; } | sha256sum | cut -c1-16)
    out=$WORK/initrd/base-$KVER-$key.cpio.gz
    BASE_INITRD=$out
    [ -f "$out" ] && return 0
    log "building initramfs $out"
    mkdir -p "$WORK/initrd" "$WORK/tmp"
    stage=$(mktemp -d "$WORK/tmp/stage.XXXXXX")
    mkdir -p "$stage"/{bin,sbin,dev,proc,sys,tmp,mnt,job,lib/modules,usr/bin,usr/sbin}
    cp "$BUSYBOX" "$stage/bin/busybox"
    cp "$kdir/init" "$stage/init"
    chmod 755 "$stage/init" "$stage/bin/busybox"
    local m name
    while read -r m; do
        [ -n "$m" ] || continue
        name=$(basename "$m")
        case $name in
            *.ko.xz) xz -dc "$m" >"$stage/lib/modules/${name%.xz}"; name=${name%.xz} ;;
            *.ko.zst) zstd -qdc "$m" >"$stage/lib/modules/${name%.zst}"; name=${name%.zst} ;;
            *.ko.gz) gzip -dc "$m" >"$stage/lib/modules/${name%.gz}"; name=${name%.gz} ;;
            *) cp "$m" "$stage/lib/modules/$name" ;;
        esac
        echo "$name" >>"$stage/lib/modules/load.list"
    done <<<"$mods"
    # getfattr/setfattr (busybox has neither) and f2fs-tools' f2fs_io (F2FS ioctls:
    # compression flags and options, released blocks) with the libraries they link.
    local tool lib
    for tool in getfattr setfattr f2fs_io; do
        tool=$(command -v "$tool" || true)
        [ -n "$tool" ] || continue
        cp "$tool" "$stage/usr/bin/"
        for lib in $(ldd "$tool" | awk '/=>/ { print $3 } /^[[:space:]]*\// { print $1 }'); do
            [ -f "$lib" ] && cp --parents -L -n "$lib" "$stage/"
        done
    done
    if [ "$(id -u)" = 0 ]; then
        mknod -m 600 "$stage/dev/console" c 5 1
        mknod -m 666 "$stage/dev/null" c 1 3
    fi
    (cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -9 >"$out.tmp"
    mv "$out.tmp" "$out"
    rm -rf "$stage"
}

setup() {
    mkdir -p "$WORK"
    exec 9>"$WORK/.lock"
    flock -w 1800 9 || die "another kernel-check holds $WORK/.lock"
    install_tools
    fetch_kernel
    fetch_busybox
    build_initrd
    flock -u 9
}

# --- running the guest --------------------------------------------------------------

accel_args() {
    local a=${UF2FS_KC_ACCEL:-auto}
    if [ "$a" = auto ]; then
        # /dev/kvm can exist in a VM without nested virtualisation (the CPU then shows
        # neither vmx nor svm, and a KVM guest hangs): use KVM only with both.
        a=tcg
        if [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
            a=kvm
        fi
    fi
    ACCEL=$a
    case $a in
        kvm) QACCEL=(-accel kvm -cpu host) ;;
        tcg) QACCEL=(-accel tcg -cpu max) ;;
        *) die "UF2FS_KC_ACCEL must be kvm, tcg or auto" ;;
    esac
}

run_dir='' qpid='' keep=0
cleanup() {
    if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
        kill -TERM "$qpid" 2>/dev/null || true
        sleep 1
        kill -KILL "$qpid" 2>/dev/null || true
        wait "$qpid" 2>/dev/null || true
    fi
    if [ -n "$run_dir" ] && [ -d "$run_dir" ] && [ "$keep" = 0 ]; then rm -rf "$run_dir"; fi
}

# Parses the arguments of one `mount` or `verify` job (CMD OPTIONS... IMG [MANIFEST])
# into the job variables below; usage errors exit 2.
parse_job() {
    local cmd=$1
    shift
    rw=0 workload='' no_workload=0 put='' opts='' manifest_out='' listing_out='' result_out='' exact=0
    powercut=0 hash_max=$((64 << 20)) timeout='' quiet=0 manifest=''
    local args=()
    while [ $# -gt 0 ]; do
        case $1 in
            --rw) rw=1 ;;
            --workload) workload=$2; shift ;;
            --no-workload) no_workload=1 ;;
            --powercut) powercut=1 ;;
            --expect) manifest=$2; shift ;;
            --put) put=$2; shift ;;
            --opts) opts=$2; shift ;;
            --manifest-out) manifest_out=$2; shift ;;
            --listing-out) listing_out=$2; shift ;;
            --result-out) result_out=$2; shift ;;
            --exact) exact=1 ;;
            --hash-max) hash_max=$2; shift ;;
            --timeout) timeout=$2; shift ;;
            --quiet) quiet=1 ;;
            --keep) keep=1 ;;
            -h | --help) usage ;;
            -*) die "unknown option $1" ;;
            *) args+=("$1") ;;
        esac
        shift
    done
    case $cmd in
        mount) [ ${#args[@]} = 1 ] || usage; mode=mount
            [ -z "$manifest" ] || [ -f "$manifest" ] || die "no manifest $manifest"
            if [ "$powercut" = 1 ]; then
                if [ "$rw" != 1 ] || [ "$no_workload" = 1 ]; then die "--powercut needs --rw and a workload"; fi
                [ -z "$manifest" ] || die "--powercut and --expect do not go together"
            fi ;;
        verify) [ ${#args[@]} = 2 ] || usage; mode=verify; manifest=${args[1]}; rw=0; powercut=0
            [ -f "$manifest" ] || die "no manifest $manifest" ;;
        *) usage ;;
    esac
    img=${args[0]}
    [ -f "$img" ] || [ -b "$img" ] || die "no image $img"
    if [ "$rw" = 1 ] && [ -z "$workload" ] && [ "$no_workload" = 0 ]; then
        workload=$kdir/workloads/smoke.sh
    fi
    [ "$rw" = 1 ] || { workload=; put=; }
    [ -z "$workload" ] || [ -f "$workload" ] || die "no workload $workload"
    [ -z "$put" ] || [ -d "$put" ] || die "no directory $put"
}

# Writes the guest's part of the parsed job into directory $1 (/job/N in the guest):
# conf, the workload, --put's copy, the chunks to digest.
stage_job() {
    local job=$1 dev=$2
    mkdir -p "$job"
    {
        echo "MODE=$mode"
        echo "DEV=$dev"
        echo "RW=$rw"
        echo "OPTS='$opts'"
        echo "LISTING=1"
        echo "MANIFEST=1"
        echo "HASH_MAX=$hash_max"
        echo "WORKLOAD=$([ -n "$workload" ] && echo 1 || echo 0)"
        echo "PUT=$([ -n "$put" ] && echo 1 || echo 0)"
        echo "POWERCUT=$powercut"
    } >"$job/conf"
    [ -n "$workload" ] && cp "$workload" "$job/workload.sh"
    if [ -n "$put" ]; then mkdir -p "$job/put" && cp -a "$put/." "$job/put/"; fi
    : >"$job/chunks"
    if [ "$mode" = verify ]; then
        # The ranges to digest: every "offset:length:sha" of the manifest's chunks.
        awk -F'\t' '!/^#/ && NF >= 12 && $12 != "-" {
            n = split($12, c, ","); for (i = 1; i <= n; i++) { split(c[i], p, ":"); print $1, p[1], p[2] } }' \
            "$manifest" >"$job/chunks"
    fi
}

# Boots the guest once for jobs 1..N, each staged in $run_dir/job/N with its image in
# $run_dir/images (lines "IMG RW"): job N's image is the Nth virtio disk (serial
# "uf2fs-jobN"); the guest runs the jobs in order and sends one result block each.
# Splits them into $run_dir/N.result; returns 0 when every job's block came back.
# Sets timed_out, qrc, elapsed.
boot() {
    local limit=$1 n=0 img jrw drives=() letters=abcdefghijklmnopqrstuvwxyz
    while read -r jrw img; do
        n=$((n + 1))
        # (QEMU's option syntax: a comma in the path is written twice.)
        drives+=(-drive "file=${img//,/,,},format=raw,if=none,id=disk$n,cache=writeback$([ "$jrw" = 1 ] || echo ,readonly=on)"
            -device "virtio-blk-pci,drive=disk$n,serial=uf2fs-job$n")
    done <"$run_dir/images"
    [ "$n" -ge 1 ] && [ "$n" -le ${#letters} ] || die "1 to ${#letters} jobs in one boot, not $n"
    seq 1 "$n" >"$run_dir/job/job/list"
    (cd "$run_dir/job" && find . | cpio -o -H newc --quiet) | gzip -1 >"$run_dir/job.cpio.gz"
    cat "$BASE_INITRD" "$run_dir/job.cpio.gz" >"$run_dir/initrd"

    accel_args
    local start=$SECONDS
    : >"$run_dir/result.log"
    qemu-system-x86_64 "${QACCEL[@]}" -m 1G -smp 1 -nodefaults -no-user-config \
        -display none -no-reboot \
        -kernel "$VMLINUZ" -initrd "$run_dir/initrd" \
        -append "console=ttyS0 rdinit=/init panic=-1 loglevel=7 tsc=reliable" \
        -serial "file:$run_dir/console.log" -serial "file:$run_dir/result.log" \
        "${drives[@]}" \
        </dev/null >"$run_dir/qemu.out" 2>&1 &
    qpid=$!
    timed_out=0
    while kill -0 "$qpid" 2>/dev/null; do
        if [ $((SECONDS - start)) -ge "$limit" ]; then
            timed_out=1
            kill -TERM "$qpid" 2>/dev/null || true
            sleep 2
            kill -KILL "$qpid" 2>/dev/null || true
            break
        fi
        sleep 0.2
    done
    qrc=0
    wait "$qpid" 2>/dev/null || qrc=$?
    qpid=
    elapsed=$((SECONDS - start))
    # One block per job, in order: the Nth BEGIN-RESULT ... END-RESULT is job N's.
    tr -d '\r' <"$run_dir/result.log" 2>/dev/null | awk -v dir="$run_dir" '
        $0 == "BEGIN-RESULT" { k++; on = 1 }
        on { print > (dir "/" k ".result") }
        $0 == "END-RESULT" { on = 0; close(dir "/" k ".result") }' || true
    local i
    for i in $(seq 1 "$n"); do
        [ -f "$run_dir/$i.result" ] || : >"$run_dir/$i.result"
        grep -qx END-RESULT "$run_dir/$i.result" || return 1
    done
}

# Values of one result key of the job being judged, one per line.
field() { sed -n "s/^$1 //p" "$res"; }

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

# Judges the parsed job from its result block $res (boot's status in timed_out, qrc): prints
# the report and returns 0 on PASS, 1 on FAIL.
judge() {
    local ok=1 reasons=()
    fail() { ok=0; reasons+=("$*"); }
    if ! grep -qx END-RESULT "$res"; then
        if [ "$timed_out" = 1 ]; then
            fail "guest timed out after ${elapsed}s (killed)"
        else
            fail "guest stopped without a result block (qemu exit $qrc)"
        fi
        echo "--- qemu:" >&2; tail -5 "$run_dir/qemu.out" >&2 || true
        echo "--- end of the guest console:" >&2
        tr -d '\r' <"$run_dir/console.log" | tail -40 >&2 || true
        cp "$run_dir/console.log" "$WORK/last-failure-console.log" 2>/dev/null || true
    fi

    local kernel mount_rc
    kernel=$(field kernel)
    mount_rc=$(field mount_rc)
    echo "kernel:   $KPKG $KVERSION ($kernel), $ACCEL, guest ran ${elapsed}s"
    echo "image:    $img ($([ "$rw" = 1 ] && echo read-write || echo read-only)${opts:+, -o $opts})"
    field insmod_failed | sed 's/^/insmod failed: /'
    if [ -z "$mount_rc" ]; then
        [ "$ok" = 0 ] || fail "no mount result"
    elif [ "$mount_rc" != 0 ]; then
        fail "mount failed (exit $mount_rc): $(field mount_out | tr '\n' ' ')"
    else
        echo "mount:    ok ($(field mounted | awk '{ print $4 }'))"
        local rc
        rc=$(field put_rc)
        if [ -n "$rc" ] && [ "$rc" != 0 ]; then
            fail "copying --put into the image failed (exit $rc)"
            field put | sed 's/^/  /'
        fi
        rc=$(field workload_rc)
        if [ -n "$rc" ]; then
            if [ "$rc" != 0 ]; then fail "workload failed (exit $rc)"; fi
            field workload | sed 's/^/workload: /'
        fi
        rc=$(field umount_rc)
        if [ "$powercut" = 1 ]; then
            if [ -n "$rc" ]; then
                fail "the guest unmounted (exit $rc) instead of cutting its power"
            elif grep -qx END-RESULT "$res" && ! grep -qx powercut "$res"; then
                fail "the guest did not report the power cut"
            fi
        elif [ -n "$rc" ] && [ "$rc" != 0 ]; then
            fail "umount failed (exit $rc): $(field umount_out | tr '\n' ' ')"
        elif [ -z "$rc" ] && grep -qx END-RESULT "$res"; then
            fail "the guest did not unmount"
        fi
        field df | tail -1 | awk '{ printf "df:       %s KiB used of %s\n", $3, $2 }'
    fi

    # Kernel log: every F2FS line is shown; errors and warnings fail the check.
    local d level allow=${UF2FS_KC_ALLOW:-}
    while IFS= read -r d; do
        [ -n "$d" ] || continue
        level=$(sed -n 's/^<\([0-9]*\)>.*/\1/p' <<<"$d")
        level=$(( ${level:-6} & 7 ))
        echo "dmesg:    $d"
        if grep -qE 'WARNING:|BUG:|Oops|Call Trace|Kernel panic|I/O error' <<<"$d"; then
            fail "kernel: $d"
        elif grep -q 'F2FS' <<<"$d" && [ "$level" -le 4 ]; then
            if [ -n "$allow" ] && grep -qE "$allow" <<<"$d"; then continue; fi
            fail "F2FS error/warning: $d"
        fi
    done < <(field dmesg)

    if [ -n "$(field time)" ]; then
        echo "timing:   $(field time | awk '{ printf "%s%s at %ss", sep, $1, $2; sep = ", " }') after boot"
    fi
    field manifest >"$res.manifest"
    field ls >"$res.listing"
    [ -z "$manifest_out" ] || cp "$res.manifest" "$manifest_out"
    [ -z "$listing_out" ] || cp "$res.listing" "$listing_out"
    [ -z "$result_out" ] || cp "$res" "$result_out"
    if [ "$quiet" = 0 ] && [ -s "$res.listing" ]; then
        echo "--- ls -lRan:"
        cat "$res.listing"
        echo "---"
    fi

    if [ "$powercut" = 1 ] && [ "$ok" = 1 ]; then
        # What the cut left: the last checkpoint must not be an unmount checkpoint.
        local state
        if ! command -v fsck.f2fs >/dev/null; then
            echo "powercut: fsck.f2fs not found, the checkpoint flags are not checked"
        else
            state=$(fsck.f2fs --dry-run "$img" 2>&1 | grep -m1 'checkpoint state' || true)
            echo "powercut: ${state:-fsck.f2fs --dry-run printed no checkpoint state}"
            if [ -z "$state" ]; then
                fail "cannot read the checkpoint state of $img after the power cut"
            elif grep -qw unmount <<<"$state"; then
                fail "the image has an unmount checkpoint after the power cut"
            fi
        fi
        echo "powercut: $(grep -cv '^#' "$res.manifest") entries declared durable by the workload"
        if command -v python3 >/dev/null; then
            python3 "$kdir/fsync-chain.py" --quiet "$img" | sed 's/^/powercut: /'
        fi
    fi

    if [ -n "$manifest" ] && [ "$mount_rc" = 0 ]; then
        local diffs
        diffs=$(compare_manifest "$manifest" "$res.manifest" "$exact")
        if [ -n "$diffs" ]; then
            echo "$diffs" | sed 's/^/verify:   /'
            fail "$(wc -l <<<"$diffs") manifest mismatch(es)"
        else
            echo "verify:   $(grep -cv '^#' "$manifest") manifest entries match"
        fi
    fi

    if [ "$ok" = 1 ]; then
        echo "RESULT: PASS"
        return 0
    fi
    echo "RESULT: FAIL"
    printf '  - %s\n' "${reasons[@]}"
    if [ "$keep" = 1 ]; then echo "run directory kept: $run_dir"; fi
    return 1
}

# Runs jobs in one boot. Each argument is a job directory holding `args` (the job's
# CMD OPTIONS... IMG [MANIFEST], NUL-separated) and `cwd`; each job's report goes to
# its `out`, its exit status (0 PASS, 1 FAIL, 2 usage) to its `rc`. Nothing is written
# to an image before the guest mounts it, so a guest that stopped before mounting
# anything (a TCG boot under load can panic in its timer set-up) is booted once more.
run_jobs() {
    local jobs=("$@") i n=0 limit=0 j args
    setup
    mkdir -p "$WORK/runs"
    run_dir=$(mktemp -d "$WORK/runs/run.XXXXXX")
    trap cleanup EXIT
    trap 'cleanup; exit 130' INT TERM
    mkdir -p "$run_dir/job/job"
    : >"$run_dir/images"
    local staged=()
    for j in "${jobs[@]}"; do
        mapfile -d '' args <"$j/args"
        # A usage error is the job's own (its rc 2), not the others'.
        if ! (
            cd "$(cat "$j/cwd")"
            parse_job "${args[@]}"
            if [ "$powercut" = 1 ] && [ ${#jobs[@]} != 1 ]; then die "--powercut runs alone, not in a batch"; fi
            stage_job "$run_dir/job/job/$((n + 1))" "uf2fs-job$((n + 1))"
            accel_args
            echo "${timeout:-$([ "$ACCEL" = kvm ] && echo 180 || echo 600)}" >"$run_dir/$((n + 1)).limit"
            [ "$keep" = 0 ] || touch "$run_dir/keep"
            echo "$rw $(realpath "$img")" >>"$run_dir/images"
        ) >"$j/out" 2>&1; then
            echo 2 >"$j/rc"
            rm -rf "$run_dir/job/job/$((n + 1))"
            continue
        fi
        n=$((n + 1))
        limit=$((limit + $(cat "$run_dir/$n.limit")))
        staged+=("$j")
    done
    [ ! -f "$run_dir/keep" ] || keep=1
    [ "$n" -gt 0 ] || return 0
    if ! boot "$limit" && ! grep -q '^mount_rc ' "$run_dir"/*.result; then
        log "the guest stopped before mounting anything: booting once more"
        cp "$run_dir/console.log" "$WORK/last-failure-console.log" 2>/dev/null || true
        rm -f "$run_dir"/*.result
        boot "$limit" || true
    fi
    i=0
    for j in "${staged[@]}"; do
        i=$((i + 1))
        mapfile -d '' args <"$j/args"
        local rc=0
        (
            cd "$(cat "$j/cwd")"
            parse_job "${args[@]}"
            res=$run_dir/$i.result
            judge
        ) >"$j/out" 2>&1 || rc=$?
        echo "$rc" >"$j/rc"
    done
}

# `mount` and `verify` under UF2FS_KC_BATCH=DIR: the job is queued in DIR for
# `kernel-check.sh batch DIR`, which boots once for several; this waits for its
# result and reports it as if it had booted alone.
enqueue() {
    local q=$1 job
    shift
    [ -d "$q" ] || die "UF2FS_KC_BATCH: no directory $q"
    job=$(mktemp -d "$q/job.XXXXXX")
    printf '%s\0' "$@" >"$job/args"
    pwd >"$job/cwd"
    touch "$job/ready"
    while [ ! -f "$job/rc" ]; do
        if [ -f "$q/server.pid" ] && ! kill -0 "$(cat "$q/server.pid")" 2>/dev/null && [ ! -f "$job/rc" ]; then
            die "the batch server of $q has gone (its log: $q/server.log)"
        fi
        sleep 0.5
    done
    cat "$job/out"
    return "$(cat "$job/rc")"
}

# `batch DIR`: serves the jobs queued in DIR by `mount` and `verify` runs under
# UF2FS_KC_BATCH=DIR, in as few boots as it can: it boots when --jobs N jobs are
# waiting (N counted over the whole run), or as soon as any is waiting once a --watch
# PID has exited (the script that would have queued more failed), and stops when every
# watched PID has exited and nothing waits.
serve() {
    local q=$1 want=$2 served=0 boots=0
    shift 2
    local watch=("$@") pid alive degraded=0 pending j
    echo $$ >"$q/server.pid"
    while :; do
        pending=()
        for j in "$q"/job.*; do
            [ -f "$j/ready" ] && [ ! -f "$j/taken" ] && pending+=("$j")
        done
        alive=0
        for pid in "${watch[@]}"; do kill -0 "$pid" 2>/dev/null && alive=$((alive + 1)); done
        [ "$alive" = ${#watch[@]} ] || degraded=1
        if [ ${#pending[@]} -gt 0 ] && { [ $((served + ${#pending[@]})) -ge "$want" ] || [ "$degraded" = 1 ]; }; then
            for j in "${pending[@]}"; do touch "$j/taken"; done
            boots=$((boots + 1))
            log "boot $boots: ${#pending[@]} job(s)"
            (run_jobs "${pending[@]}") || true
            for j in "${pending[@]}"; do [ -f "$j/rc" ] || { echo "$prog: the batch failed" >"$j/out"; echo 2 >"$j/rc"; }; done
            served=$((served + ${#pending[@]}))
            continue
        fi
        if [ "$alive" = 0 ] && [ ${#pending[@]} = 0 ]; then break; fi
        sleep 0.5
    done
    log "served $served job(s) in $boots boot(s)"
}

main() {
    [ $# -ge 1 ] || usage
    local cmd=$1
    case $cmd in
        setup)
            [ $# = 1 ] || usage
            setup
            accel_args
            echo "kernel package: $KPKG $KVERSION (kernel $KVER)"
            echo "vmlinuz:        $VMLINUZ"
            echo "initramfs:      $BASE_INITRD"
            echo "accelerator:    $ACCEL"
            return 0 ;;
        mount | verify)
            parse_job "$@"
            if [ -n "${UF2FS_KC_BATCH:-}" ] && [ "$powercut" = 0 ]; then
                enqueue "$UF2FS_KC_BATCH" "$@"
                return
            fi
            local one
            one=$(mktemp -d "${TMPDIR:-/tmp}/uf2fs-kc.XXXXXX")
            printf '%s\0' "$@" >"$one/args"
            pwd >"$one/cwd"
            local rc=0
            (run_jobs "$one") || rc=$?
            [ -f "$one/out" ] && cat "$one/out"
            [ -f "$one/rc" ] && rc=$(cat "$one/rc")
            rm -rf "$one"
            return "$rc" ;;
        batch)
            shift
            local want=1 watch=()
            while [ $# -gt 1 ]; do
                case $1 in
                    --jobs) want=$2; shift 2 ;;
                    --watch) watch+=("$2"); shift 2 ;;
                    *) usage ;;
                esac
            done
            [ $# = 1 ] && [ -d "$1" ] || usage
            serve "$1" "$want" "${watch[@]}" ;;
        *) usage ;;
    esac
}

# Prints one line per difference between the expected manifest $1 and the kernel's $2
# (only fields the expected manifest fills in; with $3 = 1 also unexpected entries).
compare_manifest() {
    awk -F'\t' -v exact="$3" '
        BEGIN { split("path type mode nlink uid gid size mtime sha256 target xattrs chunks", name, " ") }
        FNR == NR { if ($0 !~ /^#/ && NF) { want[$1] = $0; order[++n] = $1 }; next }
        { got[$1] = $0 }
        END {
            for (i = 1; i <= n; i++) {
                p = order[i]
                if (!(p in got)) { print p ": missing"; continue }
                split(want[p], w, "\t"); split(got[p], g, "\t")
                for (f = 2; f <= 12; f++)
                    if (w[f] != "" && w[f] != "-" && w[f] != g[f])
                        print p ": " name[f] " is " g[f] ", expected " w[f]
            }
            if (exact == 1) for (p in got) if (!(p in want)) print p ": not in the manifest"
        }' "$1" "$2"
}

main "$@"
