# shellcheck shell=bash
# shellcheck disable=SC2034 # the FST_* globals are read by the scripts that source this
# Shared by scripts/fs-conformance.sh and scripts/bench-fio.sh: make an image, mount it
# with fuse2fs or uf2fs (the daemon in the foreground, as our own child, so we always
# hold its PID), wait for the mount, and take it down again without leaving a mount or
# a process behind. Source it; it defines functions and FST_* globals only.
#
# One mount at a time: FST_MNT and FST_PID describe the current one.

FST_MNT=""         # mountpoint of the current mount ("" when none)
FST_PID=""         # PID of its FUSE daemon
FST_MOUNT_LOG=""   # daemon's stdout and stderr
FST_DESC=""        # one line saying what is mounted and how
FST_UNAVAILABLE=77 # exit status for "this target cannot be tested here yet"

# Options that pjdfstest needs: allow_other lets the users it switches to ('tests',
# 'nobody') into the mount at all; default_permissions makes the kernel check modes
# (uf2fs always mounts with default_permissions).
FST_FUSE2FS_OPTS="${FUSE2FS_OPTS:-rw,allow_other,default_permissions}"
FST_UF2FS_OPTS="${UF2FS_MOUNT_OPTS:-rw,allow_other}"

fst_log() { printf '%s\n' "$*" >&2; }

# Seconds to wait for a mount to appear / a daemon to exit.
FST_MOUNT_WAIT_S="${FST_MOUNT_WAIT_S:-20}"

# fst_make_ext4 IMAGE SIZE: a fresh sparse ext4 image (mkfs.ext4 defaults, 4 KiB blocks).
fst_make_ext4() {
    rm -f "$1"
    truncate -s "$2" "$1"
    mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 "$1"
}

# fst_make_f2fs UF2FS IMAGE SIZE: a fresh sparse F2FS image made by `uf2fs mkfs`
# (UF2FS_MKFS_OPTS adds options, e.g. "-O extra_attr,inode_checksum").
fst_make_f2fs() {
    rm -f "$2"
    # shellcheck disable=SC2086 # UF2FS_MKFS_OPTS is a list of words on purpose
    "$1" mkfs --size "$3" ${UF2FS_MKFS_OPTS:-} -f "$2" >/dev/null
}

# fst_is_fuse_mount MNT: 0 when MNT (absolute, canonical, no spaces) is a FUSE mount.
fst_is_fuse_mount() {
    awk -v m="$1" '$2 == m && $3 ~ /^fuse/ { found = 1 } END { exit !found }' /proc/self/mounts
}

# fst_wait_mount MNT: 0 once MNT is a FUSE mountpoint served by FST_PID; 1 if the
# daemon exited first or the wait timed out.
fst_wait_mount() {
    local i
    for ((i = 0; i < FST_MOUNT_WAIT_S * 20; i++)); do
        if fst_is_fuse_mount "$1"; then return 0; fi
        if ! kill -0 "$FST_PID" 2>/dev/null; then return 1; fi
        sleep 0.05
    done
    return 1
}

# Forget a daemon that has exited (reaping it) or give up after the wait.
fst_reap() {
    local i
    for ((i = 0; i < FST_MOUNT_WAIT_S * 10; i++)); do
        if ! kill -0 "$FST_PID" 2>/dev/null; then
            wait "$FST_PID" 2>/dev/null || true
            return 0
        fi
        sleep 0.1
    done
    return 1
}

# fst_mount_fuse2fs IMAGE MNT LOG
fst_mount_fuse2fs() {
    mkdir -p "$2"
    FST_MOUNT_LOG="$3"
    fuse2fs "$1" "$2" -f -o "$FST_FUSE2FS_OPTS" >"$3" 2>&1 &
    FST_PID=$!
    FST_MNT="$2"
    if ! fst_wait_mount "$2"; then
        fst_log "fuse2fs did not mount $1 on $2 within ${FST_MOUNT_WAIT_S} s; its log:"
        cat "$3" >&2
        fst_unmount
        return 1
    fi
    FST_DESC="fuse2fs $(fuse2fs -V 2>&1 | awk 'NR == 1 { print $2 }') (libfuse $(fuse2fs -V 2>&1 | awk '/FUSE library/ { print $NF }')) -o $FST_FUSE2FS_OPTS, ext4 image of $(du -h --apparent-size "$1" | cut -f1)"
}

# fst_mount_uf2fs UF2FS IMAGE MNT LOG: returns FST_UNAVAILABLE (77) with a clear message
# when `uf2fs mount` refuses read-write mounts (as it does until the write path lands).
fst_mount_uf2fs() {
    mkdir -p "$3"
    FST_MOUNT_LOG="$4"
    "$1" mount -o "$FST_UF2FS_OPTS" -f "$2" "$3" >"$4" 2>&1 &
    FST_PID=$!
    FST_MNT="$3"
    if ! fst_wait_mount "$3"; then
        fst_unmount
        if grep -qiE 'read-write .*not (supported|available)|not supported yet|use -o ro' "$4"; then
            fst_log "uf2fs read-write mount not available yet ($(head -1 "$4"))"
            return "$FST_UNAVAILABLE"
        fi
        fst_log "uf2fs did not mount $2 on $3 within ${FST_MOUNT_WAIT_S} s; its log:"
        cat "$4" >&2
        return 1
    fi
    FST_DESC="uf2fs $("$1" --version 2>/dev/null | awk '{ print $NF }') ($(git -C "$(dirname "$1")" rev-parse --short HEAD 2>/dev/null || echo unknown)) mount -o $FST_UF2FS_OPTS, F2FS image of $(du -h --apparent-size "$2" | cut -f1)"
}

# fst_unmount: unmounts FST_MNT (if mounted) and makes sure its daemon is gone. Safe to
# call more than once, and from a trap.
fst_unmount() {
    local mnt="$FST_MNT" i
    if [ -n "$mnt" ]; then
        for ((i = 0; i < 10; i++)); do
            if ! fst_is_fuse_mount "$mnt"; then break; fi
            if [ "$(id -u)" = 0 ]; then
                timeout 20 umount "$mnt" 2>/dev/null && break
            else
                timeout 20 fusermount3 -u "$mnt" 2>/dev/null && break
            fi
            sleep 0.5
        done
        if fst_is_fuse_mount "$mnt"; then
            fst_log "$mnt still busy: detaching it (lazy unmount)"
            if [ "$(id -u)" = 0 ]; then timeout 20 umount -l "$mnt" || true; else timeout 20 fusermount3 -uz "$mnt" || true; fi
        fi
    fi
    if [ -n "$FST_PID" ]; then
        if ! fst_reap; then
            fst_log "FUSE daemon $FST_PID still running after unmount: SIGTERM"
            kill -TERM "$FST_PID" 2>/dev/null || true
            if ! fst_reap; then
                fst_log "FUSE daemon $FST_PID ignored SIGTERM: SIGKILL"
                kill -KILL "$FST_PID" 2>/dev/null || true
                wait "$FST_PID" 2>/dev/null || true
            fi
        fi
    fi
    FST_MNT=""
    FST_PID=""
}

# fst_run SECONDS LOG CMD...: runs CMD under `timeout` (TERM at SECONDS, KILL 30 s
# later) with its output in LOG, and returns its status (124: timed out). It runs in the
# background and is waited for, so a TERM or INT sent to the script is acted on at once
# (bash runs traps only between foreground commands); fst_stop_child ends it.
FST_CHILD=""
fst_run() {
    local seconds="$1" log="$2" rc=0
    shift 2
    timeout -k 30 "$seconds" "$@" >"$log" 2>&1 </dev/null &
    FST_CHILD=$!
    wait "$FST_CHILD" || rc=$?
    FST_CHILD=""
    return "$rc"
}

# fst_stop_child: from a trap, end the command fst_run is waiting for. `timeout` passes
# the TERM on to the command. A command stuck in a FUSE request only dies once the mount
# is gone, so the caller unmounts next and then calls fst_reap_child.
fst_stop_child() {
    if [ -n "$FST_CHILD" ] && kill -0 "$FST_CHILD" 2>/dev/null; then
        kill -TERM "$FST_CHILD" 2>/dev/null || true
        local i
        for ((i = 0; i < 50; i++)); do
            kill -0 "$FST_CHILD" 2>/dev/null || break
            sleep 0.1
        done
    fi
}
fst_reap_child() {
    if [ -n "$FST_CHILD" ]; then
        local i
        for ((i = 0; i < 400; i++)); do
            kill -0 "$FST_CHILD" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$FST_CHILD" 2>/dev/null || true
        wait "$FST_CHILD" 2>/dev/null || true
        FST_CHILD=""
    fi
}

# fst_uf2fs_binary REPO: prints the uf2fs binary to use: $UF2FS if set, otherwise builds
# (or finds up to date) REPO/target/release/uf2fs.
fst_uf2fs_binary() {
    if [ -n "${UF2FS:-}" ]; then
        printf '%s\n' "$UF2FS"
        return 0
    fi
    (cd "$1" && cargo build --release --quiet -p uf2fs) >&2
    printf '%s\n' "$1/target/release/uf2fs"
}

# fst_fuse_ready: 0 when /dev/fuse and the FUSE tools are there.
fst_fuse_ready() {
    [ -e /dev/fuse ] && command -v fusermount3 >/dev/null
}
