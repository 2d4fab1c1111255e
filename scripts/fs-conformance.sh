#!/usr/bin/env bash
# POSIX conformance and data-integrity run on a mounted file system: pjdfstest (the Rust
# rewrite, crates.io) and fsx (crates.io, fsx-rs) with verification on every read.
#
# usage: scripts/fs-conformance.sh [OPTIONS] MOUNTPOINT   a directory already mounted
#        scripts/fs-conformance.sh [OPTIONS] --host [DIR] the host file system (in a
#                                                         new directory under DIR,
#                                                         default WORK/host)
#        scripts/fs-conformance.sh [OPTIONS] --fuse2fs SIZE  mkfs.ext4 a SIZE image, mount
#                                                         it with fuse2fs, run, unmount
#        scripts/fs-conformance.sh [OPTIONS] --uf2fs SIZE    uf2fs mkfs a SIZE image,
#                                                         `uf2fs mount -o rw`, run, unmount
#
# options:
#   --known-failures FILE  test names expected to fail, one per line: NAME REASON...
#                          ('#' starts a comment; every entry needs a reason). Listed
#                          failures do not fail the run; listed tests that pass are
#                          reported so the list can shrink.
#   --work DIR             logs, images and the secondary file system (default
#                          /var/tmp/uf2fs-conformance); each run uses DIR/<target>/
#   --only pjdfstest|fsx   run one of the two
#   --reference            pjdfstest as the issue's reference figures were taken: no
#                          config file (naptime 1 s, no opt-in features), no secondary
#                          file system, no read-only remounts
#   --allow-remount        MOUNTPOINT mode: also run pjdfstest's EROFS tests, which
#                          remount MOUNTPOINT read-only and back (always on for --fuse2fs
#                          and --uf2fs, never for --host)
#   --fsx-ops N            operations of the main fsx run (default 30000)
#   --fsx-seed N           seed of the first fsx run (the second uses N+1; default 1)
#   --no-mmap              fsx without mmap reads/writes and msync(MS_INVALIDATE), for
#                          FUSE file systems that open files with direct_io, where the
#                          kernel refuses shared writable mappings (ENODEV)
#   --no-fallocate         fsx without posix_fallocate and FALLOC_FL_PUNCH_HOLE, for
#                          file systems without fallocate (fsx aborts on EOPNOTSUPP)
#   --timeout SECONDS      limit for each pjdfstest or fsx run (default 1200)
#   --keep                 keep the image (--fuse2fs, --uf2fs) after the run
#   --expect-skip NAME     a test case that may be skipped (repeatable); with strict
#                          skips every other skip fails the run
#   --strict-skips         fail the run on any skip not named by --expect-skip (always
#                          on for --uf2fs: uf2fs must explain each of its skips)
#
# Output: per-suite results (every failure with its message, every skip with its
# reason), then a closing line exactly `N passed, N failed, N skipped` counting every
# test case (pjdfstest cases, the two fsx runs and, for --fuse2fs/--uf2fs, the mount
# checks and fsck after unmount); "failed" includes failures on the known-failure list.
# Exit status: 0 when every failure is on the list (and, with strict skips, every skip
# is expected), 1 otherwise (for --uf2fs also when uf2fs refuses the read-write mount:
# a run that tests nothing must not pass), 2 for usage errors.
#
# Run as root: pjdfstest switches to the users 'tests' and 'nobody' (see
# scripts/install-fs-test-tools.sh, which installs everything this needs).
# Env: PJDFSTEST_NAPTIME (default 1.0 s; must exceed the timestamp granularity seen
# through the mount), FUSE2FS_OPTS, UF2FS_MOUNT_OPTS, UF2FS_MKFS_OPTS, UF2FS (binary).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
# shellcheck source=scripts/lib/fs-targets.sh
. "$here/lib/fs-targets.sh"
export PATH="$PATH:/usr/sbin:/sbin:${CARGO_HOME:-$HOME/.cargo}/bin"
export NO_COLOR=1 RUST_BACKTRACE=0

usage() {
    sed -n '/^# usage:/,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
}
die_usage() { fst_log "fs-conformance: $*"; exit 2; }

# ---- arguments ------------------------------------------------------------------------
mode=""; size=""; dir=""
known=""; work="/var/tmp/uf2fs-conformance"; only="all"; reference=0; allow_remount=0
fsx_ops=30000; fsx_seed=1; mmap=1; fallocate=1; tool_timeout=1200; keep=0
strict_skips=0; expected_skips=""
naptime="${PJDFSTEST_NAPTIME:-1.0}"
while [ $# -gt 0 ]; do
    case "$1" in
    --fuse2fs | --uf2fs)
        [ $# -ge 2 ] || die_usage "$1 needs a SIZE"
        mode="${1#--}"; size="$2"; shift 2 ;;
    --host)
        mode=host; shift
        if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then dir="$1"; shift; fi ;;
    --known-failures) known="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --reference) reference=1; shift ;;
    --allow-remount) allow_remount=1; shift ;;
    --fsx-ops) fsx_ops="$2"; shift 2 ;;
    --fsx-seed) fsx_seed="$2"; shift 2 ;;
    --no-mmap) mmap=0; shift ;;
    --no-fallocate) fallocate=0; shift ;;
    --timeout) tool_timeout="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --expect-skip)
        [ $# -ge 2 ] || die_usage "--expect-skip needs a test name"
        expected_skips="$expected_skips $2"; shift 2 ;;
    --strict-skips) strict_skips=1; shift ;;
    -h | --help) usage ;;
    -*) die_usage "unknown option $1" ;;
    *)
        [ -z "$mode" ] || die_usage "give one target"
        mode=mount; dir="$1"; shift ;;
    esac
done
[ -n "$mode" ] || usage
if [ "$mode" = uf2fs ]; then strict_skips=1; fi
case "$only" in all | pjdfstest | fsx) ;; *) die_usage "--only takes pjdfstest or fsx" ;; esac
for n in "$fsx_ops" "$fsx_seed" "$tool_timeout"; do
    [[ "$n" =~ ^[0-9]+$ ]] || die_usage "not a number: $n"
done
if [ -n "$known" ]; then
    [ -r "$known" ] || die_usage "cannot read the known-failure list $known"
    known="$(realpath "$known")"
    bad="$(awk '!/^[[:space:]]*(#|$)/ && NF < 2 { print FILENAME ":" FNR ": " $1 }' "$known")"
    [ -z "$bad" ] || die_usage "known-failure entries without a reason: $bad"
fi
need=()
if [ "$only" != fsx ]; then need+=(pjdfstest); fi
if [ "$only" != pjdfstest ]; then need+=(fsx); fi
for tool in "${need[@]}" timeout; do
    command -v "$tool" >/dev/null || die_usage "$tool not found (run scripts/install-fs-test-tools.sh)"
done
if [ "$(id -u)" != 0 ]; then
    fst_log "fs-conformance: not root: pjdfstest skips every test that needs root or switches users"
fi

# ---- work directory ---------------------------------------------------------------------
case "$mode" in
fuse2fs | uf2fs) label="$mode" ;;
host) label=host ;;
mount) label="mount" ;;
esac
mkdir -p "$work"
work="$(realpath "$work")"
run="$work/$label"
# Clear an earlier run's directory, but only one this script made (it leaves a marker).
if [ -e "$run" ] && [ ! -e "$run/.fs-conformance" ]; then
    die_usage "$run exists and was not made by this script; choose another --work"
fi
if fst_is_fuse_mount "$run/mnt"; then die_usage "$run/mnt is still mounted; unmount it first"; fi
rm -rf "$run"
mkdir -p "$run"
touch "$run/.fs-conformance"
# pjdfstest's users must reach everything below: the mountpoint, the secondary fs.
chmod 755 "$work" "$run"
results="$run/results.tsv"
: >"$results"
image=""
testdir=""
secondary=""
owned=0 # 1 when this script made the mount (and may remount it, fsck it, delete it)

# shellcheck disable=SC2317 # called from the trap
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    fst_stop_child
    fst_unmount || true
    fst_reap_child
    if [ "$owned" = 0 ] && [ -n "$testdir" ] && [ -d "$testdir" ]; then rm -rf "$testdir" || true; fi
    if [ -n "$secondary" ] && [ "${secondary#/dev/shm/}" != "$secondary" ]; then rm -rf "$secondary" || true; fi
    if [ -n "$image" ] && [ "$keep" = 0 ]; then rm -f "$image"; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

record() { # NAME STATUS(pass|fail|skip) DETAIL
    printf '%s\t%s\t%s\n' "$1" "$2" "$(printf '%s' "$3" | tr '\t\n' '  ')" >>"$results"
}

# ---- the target -------------------------------------------------------------------------
case "$mode" in
fuse2fs)
    fst_fuse_ready || { fst_log "fs-conformance: no /dev/fuse or fusermount3"; exit 1; }
    command -v fuse2fs >/dev/null || die_usage "fuse2fs not found (apt-get install fuse2fs)"
    image="$run/ext4.img"
    fst_make_ext4 "$image" "$size"
    fst_mount_fuse2fs "$image" "$run/mnt" "$run/mount.log"
    owned=1; allow_remount=1; testdir="$run/mnt"
    ;;
uf2fs)
    fst_fuse_ready || { fst_log "fs-conformance: no /dev/fuse or fusermount3"; exit 1; }
    uf2fs_bin="$(fst_uf2fs_binary "$repo")"
    image="$run/f2fs.img"
    fst_make_f2fs "$uf2fs_bin" "$image" "$size"
    rc=0
    fst_mount_uf2fs "$uf2fs_bin" "$image" "$run/mnt" "$run/mount.log" || rc=$?
    if [ "$rc" = "$FST_UNAVAILABLE" ]; then
        echo "uf2fs refused the read-write mount: nothing tested (FAIL)"
        exit 1
    elif [ "$rc" != 0 ]; then
        exit 1
    fi
    owned=1; allow_remount=1; testdir="$run/mnt"
    ;;
host)
    dir="${dir:-$run}"
    mkdir -p "$dir"
    testdir="$(mktemp -d "$(realpath "$dir")/fsc.XXXXXX")"
    FST_DESC="host directory $(realpath "$dir") ($(findmnt -n -o FSTYPE,SOURCE --target "$dir" | tail -1 | tr -s ' '), mount options $(findmnt -n -o OPTIONS --target "$dir" | tail -1))"
    allow_remount=0
    ;;
mount)
    [ -d "$dir" ] || die_usage "$dir is not a directory"
    testdir="$(mktemp -d "$(realpath "$dir")/fsc.XXXXXX")"
    FST_DESC="$(realpath "$dir") ($(findmnt -n -o FSTYPE,SOURCE,OPTIONS --target "$dir" | tail -1 | tr -s ' '))"
    ;;
esac
chmod 755 "$testdir"
case "$testdir" in *[[:space:]]*) die_usage "paths with spaces are not supported: $testdir" ;; esac
# pjdfstest binds sockets at TESTDIR/.tmpXXXXXX/.tmpXXXXXX/<32 chars>/test: 60 bytes more
# than TESTDIR, and a socket path holds at most 107 (sun_path). Longer fails ENAMETOOLONG.
if [ "${#testdir}" -gt 47 ]; then
    die_usage "$testdir is ${#testdir} bytes; pjdfstest's socket cases need at most 47 (use a shorter --work or DIR)"
fi

# A directory on a different file system for pjdfstest's EXDEV cases: the work dir when
# the target is a mount of its own, else /dev/shm (tmpfs).
pick_secondary() {
    local dev candidate
    dev="$(stat -c %d "$testdir")"
    for candidate in "$run/secondary" "/dev/shm/fs-conformance.$$"; do
        mkdir -p "$candidate"
        if [ "$(stat -c %d "$candidate")" != "$dev" ]; then
            chmod 755 "$candidate"
            secondary="$candidate"
            return 0
        fi
        rmdir "$candidate"
    done
}

# ---- pjdfstest --------------------------------------------------------------------------
pjdfstest_version=""
# Parses pjdfstest's output (one line per case: NAME then ok / FAILED / skipped / ...;
# tab-indented lines after it give the failure message or the skip reasons).
parse_pjdfstest() { # LOG -> NAME<TAB>pass|fail|skip<TAB>DETAIL lines
    awk -v OFS='\t' '
        function flush() { if (name != "") print name, status, detail; name = "" }
        /^[^ \t]+ +(ok|FAILED|skipped|failed as expected|PASSED UNEXPECTEDLY)$/ {
            flush()
            name = $1; rest = $0; sub(/^[^ \t]+ +/, "", rest)
            status = (rest == "ok" || rest == "PASSED UNEXPECTEDLY") ? "pass" : (rest == "skipped") ? "skip" : "fail"
            detail = ""; take = 1; next
        }
        /^Summary:/ { flush(); next }
        name != "" && take && /^\t/ {
            d = $0; sub(/^\t+/, "", d); gsub(/\t/, " ", d)
            detail = (detail == "") ? d : detail "; " d
            if (status == "fail") take = 2   # the panic message: keep only its first line ...
            next
        }
        name != "" && take == 2 && /^ +(left|right): / { d = $0; sub(/^ +/, "", d); detail = detail "; " d; next }
        name != "" && take == 2 { take = 0 }  # ... and the assert_eq! operands
        END { flush() }
    ' "$1"
}

run_pjdfstest_once() { # TAG ALLOW_REMOUNT [PATTERN...]: runs pjdfstest, appends results
    local tag="$1" remount="$2" cfg="$run/pjdfstest-$1.toml" log="$run/pjdfstest-$1.log" rc=0 shim_path="$PATH"
    shift 2
    local args=()
    if [ "$reference" = 1 ]; then
        # Exactly the built-in defaults (naptime 1 s, no features, nobody + tests).
        args=(-p "$testdir")
    else
        {
            echo "# written by scripts/fs-conformance.sh"
            echo "[features]"
            # Opt-in features every Linux file system is expected to have (F2FS, ext4).
            echo "posix_fallocate = {}"
            echo "utime_now = {}"
            echo "utimensat = {}"
            echo "rename_ctime = {}"
            echo "[settings]"
            echo "naptime = $naptime"
            echo "allow_remount = $([ "$remount" = 1 ] && echo true || echo false)"
            echo "[dummy_auth]"
            echo "entries = [[\"nobody\", \"$(id -gn nobody)\"], [\"tests\", \"$(id -gn tests)\"]]"
        } >"$cfg"
        args=(-c "$cfg" -p "$testdir")
        if [ -n "$secondary" ]; then args+=(-s "$secondary"); fi
    fi
    if [ "$remount" = 1 ]; then
        # pjdfstest remounts with `mount -o remount,ro MNT`; for a FUSE mount, mount(8)
        # hands that to /sbin/mount.fuse, which runs the subtype as a command and fails.
        # `mount -i` (no helper) makes the kernel do it, which works for FUSE.
        mkdir -p "$run/shim"
        printf '#!/bin/sh\nexec %s -i "$@"\n' "$(command -v mount)" >"$run/shim/mount"
        chmod 755 "$run/shim/mount"
        shim_path="$run/shim:$PATH"
    fi
    fst_log "pjdfstest ($tag) in $testdir: log $log"
    PATH="$shim_path" fst_run "$tool_timeout" "$log" pjdfstest "${args[@]}" "$@" || rc=$?
    parse_pjdfstest "$log" >>"$run/pjdfstest.tsv"
    local summary
    summary="$(grep -m1 '^Summary:' "$log" || true)"
    if [ -z "$summary" ]; then
        record "pjdfstest::run-$tag" fail "pjdfstest exited with status $rc without a summary$([ "$rc" = 124 ] && echo " (timed out after $tool_timeout s)"); see $log"
    fi
}

run_pjdfstest() {
    pjdfstest_version="$(pjdfstest --version | awk '{ print $2 }')"
    : >"$run/pjdfstest.tsv"
    if [ "$reference" = 0 ]; then pick_secondary; fi
    run_pjdfstest_once main 0
    if [ "$reference" = 0 ] && [ "$allow_remount" = 1 ]; then
        # The EROFS cases remount the target read-only. Run on their own, after the rest:
        # in the full run, an earlier case's file can still be open for writing when the
        # remount comes ("mount point is busy").
        sync
        run_pjdfstest_once erofs 1 erofs
        if ! findmnt -n -o OPTIONS --target "$testdir" | grep -q '^rw'; then
            record "pjdfstest::remount-rw" fail "the target stayed read-only after the EROFS cases"
            mount -i -o remount,rw "$testdir" || true
        fi
    fi
    # Last result per name wins (the EROFS run replaces the main run's skips).
    awk -F '\t' '{ order[$1] = NR; line[$1] = $0 } END { for (n in line) print order[n] "\t" line[n] }' \
        "$run/pjdfstest.tsv" | sort -n | cut -f2- >>"$results"
}

# ---- fsx --------------------------------------------------------------------------------
fsx_version=""
fsx_config() { # NAME FLEN OPSIZE_MAX -> path of a config file
    local cfg="$run/fsx-$1.toml"
    local map=5 inval=1 falloc=2 punch=2
    if [ "$mmap" = 0 ]; then map=0; inval=0; fi
    if [ "$fallocate" = 0 ]; then falloc=0; punch=0; fi
    cat >"$cfg" <<EOF
# written by scripts/fs-conformance.sh: every operation fsx-rs has on Linux
flen = $2
[opsize]
max = $3
min = 0
align = 1
[weights]
read = 10
write = 10
mapread = $map
mapwrite = $map
invalidate = $inval
truncate = 2
close_open = 1
fsync = 1
fdatasync = 1
posix_fallocate = $falloc
punch_hole = $punch
sendfile = 1
posix_fadvise = 1
copy_file_range = 1
EOF
    printf '%s\n' "$cfg"
}

run_fsx_once() { # NAME FLEN OPSIZE_MAX OPS SEED
    local name="$1" cfg log="$run/fsx-$1.log" rc=0 start end file="$testdir/fsx.$1"
    cfg="$(fsx_config "$1" "$2" "$3")"
    mkdir -p "$run/fsx-artifacts"
    fst_log "fsx $name: $4 ops, seed $5, file up to $2 bytes: log $log"
    start=$(date +%s)
    fst_run "$tool_timeout" "$log" fsx -N "$4" -S "$5" -f "$cfg" -P "$run/fsx-artifacts" "$file" || rc=$?
    end=$(date +%s)
    local what="$4 ops, seed $5, file up to $2 bytes, ops up to $3 bytes, $((end - start)) s"
    if [ "$rc" = 0 ] && grep -q 'All operations completed A-OK' "$log"; then
        record "fsx::$name" pass "$what"
    else
        local why
        why="$(grep -m3 -iE 'error|panicked|miscompare|short|fail' "$log" | tr '\n' ' ' | cut -c1-300)"
        [ "$rc" = 124 ] && why="timed out after $tool_timeout s. $why"
        record "fsx::$name" fail "$what; exit $rc: ${why:-see $log}; replay: fsx -N $4 -S $5 -f $cfg FILE"
    fi
    rm -f "$file"
}

run_fsx() {
    fsx_version="$(fsx --version | awk '{ print $2 }')"
    # small: fsx's classic 256 KiB file, ops up to 64 KiB: dense overlap, many EOF cases.
    run_fsx_once small 262144 65536 "$fsx_ops" "$fsx_seed"
    # large: a 32 MiB file with ops up to 1 MiB: for F2FS this reaches past the inode's
    # 923 direct pointers and its two direct nodes (~11.6 MiB) into the indirect nodes.
    run_fsx_once large 33554432 1048576 "$((fsx_ops / 6))" "$((fsx_seed + 1))"
}

# ---- run --------------------------------------------------------------------------------
started=$(date +%s)
fst_log "fs-conformance: $FST_DESC"
if [ "$only" != fsx ]; then run_pjdfstest; fi
if [ "$only" != pjdfstest ]; then run_fsx; fi

if [ "$owned" = 1 ]; then
    if kill -0 "$FST_PID" 2>/dev/null && fst_is_fuse_mount "$testdir"; then
        record "mount::daemon-alive" pass "the FUSE daemon served the whole run"
    else
        record "mount::daemon-alive" fail "the FUSE daemon died during the run; see $FST_MOUNT_LOG"
    fi
    daemon_pid="$FST_PID"
    fst_unmount
    # fst_unmount reaped the daemon; its status is gone with it, so check its log instead.
    if grep -qiE 'panick|error|fail' "$FST_MOUNT_LOG"; then
        record "mount::clean-unmount" fail "daemon $daemon_pid logged: $(grep -m2 -iE 'panick|error|fail' "$FST_MOUNT_LOG" | tr '\n' ' ')"
    else
        record "mount::clean-unmount" pass "unmounted; daemon exited"
    fi
    if [ "$mode" = fuse2fs ]; then
        if fst_run 300 "$run/fsck.log" e2fsck -fn "$image"; then
            record "fsck::after-unmount" pass "e2fsck -fn: clean"
        else
            record "fsck::after-unmount" fail "e2fsck -fn: $(tail -3 "$run/fsck.log" | tr '\n' ' ')"
        fi
    elif command -v fsck.f2fs >/dev/null; then
        rc=0
        fst_run 300 "$run/fsck.log" fsck.f2fs --dry-run -f "$image" || rc=$?
        if [ "$rc" = 0 ] && ! grep -qE '\[Fail\]|\[FIX|ASSERT' "$run/fsck.log"; then
            record "fsck::after-unmount" pass "fsck.f2fs --dry-run -f: clean"
        else
            record "fsck::after-unmount" fail "fsck.f2fs --dry-run -f (exit $rc): $({ grep -m3 -E '\[Fail\]|\[FIX|ASSERT' "$run/fsck.log" || tail -3 "$run/fsck.log"; } | tr '\n' ' '); see $run/fsck.log"
        fi
    else
        record "fsck::after-unmount" skip "fsck.f2fs not installed (apt-get install f2fs-tools)"
    fi
fi
elapsed=$(($(date +%s) - started))

# ---- report -----------------------------------------------------------------------------
verdict=0
{
    echo "fs-conformance: $FST_DESC"
    pjd_desc="not run"
    if [ -n "$pjdfstest_version" ] && [ "$reference" = 1 ]; then
        pjd_desc="$pjdfstest_version (--reference: built-in defaults)"
    elif [ -n "$pjdfstest_version" ]; then
        pjd_desc="$pjdfstest_version (naptime $naptime s, features posix_fallocate utime_now utimensat rename_ctime, secondary fs ${secondary:-none}, EROFS cases $([ "$allow_remount" = 1 ] && echo on || echo off))"
    fi
    echo "tools: pjdfstest $pjd_desc, fsx ${fsx_version:-not run}$([ "$mmap" = 0 ] && echo " (no mmap)")$([ "$fallocate" = 0 ] && echo " (no fallocate)"); ${elapsed} s; logs in $run"
    awk -F '\t' -v known_file="${known:-/dev/null}" -v pjd_ran="$([ -n "$pjdfstest_version" ] && echo 1)" \
        -v strict="$strict_skips" -v expected="$expected_skips" '
        BEGIN {
            ne = split(expected, e, " ")
            for (i = 1; i <= ne; i++) may_skip[e[i]] = 1
            while ((getline line < known_file) > 0) {
                if (line ~ /^[[:space:]]*(#|$)/) continue
                n = split(line, w, /[[:space:]]+/); k = (w[1] == "") ? w[2] : w[1]
                reason = line; sub(/^[[:space:]]*[^[:space:]]+[[:space:]]+/, "", reason)
                known[k] = reason; listed++
            }
        }
        {
            suite = ($1 ~ /^(fsx|mount|fsck)::/) ? $1 : "pjdfstest"; sub(/::.*/, "", suite)
            if (!(suite in seen)) { seen[suite] = 1; suites[++ns] = suite }
            count[suite, $2]++; total[$2]++; ran[$1] = 1; if ($2 == "skip") skipped[$1] = 1
            if ($2 == "fail" && ($1 in known)) { kf++; kfl[kf] = "  failed (known): " $1 ": " known[$1] " [" $3 "]" }
            else if ($2 == "fail") { uf++; ufl[uf] = "  FAILED: " $1 ": " $3 }
            else if ($2 == "skip" && strict && !($1 in may_skip)) { us++; usl[us] = "  SKIPPED (not expected): " $1 ": " $3 }
            else if ($2 == "skip") { sk++; skl[sk] = "  skipped" (($1 in may_skip) ? " (expected)" : "") ": " $1 ": " $3 }
            else if ($1 in known) { up++; upl[up] = "  passed but listed as a known failure (drop it from the list): " $1 }
            else if ($1 ~ /^fsx::|^mount::|^fsck::/) { ok++; okl[ok] = "  ok: " $1 ": " $3 }
        }
        END {
            for (i = 1; i <= ns; i++) {
                s = suites[i]
                printf "%s: %d passed, %d failed, %d skipped\n", s, count[s, "pass"], count[s, "fail"], count[s, "skip"]
            }
            for (i = 1; i <= ok; i++) print okl[i]
            for (i = 1; i <= uf; i++) print ufl[i]
            for (i = 1; i <= us; i++) print usl[i]
            for (i = 1; i <= kf; i++) print kfl[i]
            for (i = 1; i <= sk; i++) print skl[i]
            for (i = 1; i <= up; i++) print upl[i]
            for (k in known) {
                s = (k ~ /^(fsx|mount|fsck)::/) ? k : "pjdfstest"; sub(/::.*/, "", s)
                if (!(k in ran) && ((s in seen) || (s == "pjdfstest" && pjd_ran))) print "  listed as a known failure but not run: " k
            }
            for (k in may_skip) if ((k in ran) && !(k in skipped)) print "  expected to be skipped but ran: " k
            if (listed) printf "known-failure list: %d entries; %d failed as listed, %d unexpected failures\n", listed, kf, uf
            if (strict) printf "strict skips: %d expected, %d not expected%s\n", sk, us, (total["pass"] ? "" : "; nothing passed")
            printf "%d passed, %d failed, %d skipped\n", total["pass"], total["fail"], total["skip"]
            exit (uf > 0 || us > 0 || (strict && !total["pass"]))
        }
    ' "$results"
} | tee "$run/summary.txt" || verdict=$?
exit "$verdict"
