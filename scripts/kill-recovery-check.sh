#!/usr/bin/env bash
# Crash under load, recovered both ways: 8 threads create files on a uf2fs mount, each
# written and fsync'd, logging every file whose fsync returned (with its sha256); after
# SECONDS the uf2fs process is killed (kill -9: no unmount, no checkpoint) and the mount
# dropped. Then, on two copies of the crashed image:
#   uf2fs  `uf2fs mount` (roll-forward recovery at the read-write open), every logged
#          file read back through the mount, unmount, fsck.f2fs -f clean;
#   Linux  Linux F2FS in QEMU mounts it read-write (its recovery) and unmounts
#          (scripts/kernel-check.sh; skipped with --no-kernel), fsck.f2fs -f clean, and
#          every logged file read back with `uf2fs cat`.
# Also prints the chain after the checkpoint (scripts/kernel/fsync-chain.py) and what a
# read-only `uf2fs info` says. Exit 0 pass, 1 fail, 2 set-up error. Run as root.
#
# usage: scripts/kill-recovery-check.sh [--seconds N] [--size SIZE] [--no-kernel] [--work DIR]
# Defaults: 10 s of load, a 2G image, /var/tmp/uf2fs-killcheck.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
export PATH="$PATH:/usr/sbin:/sbin"
seconds=10; size=2G; kernel=1; work=/var/tmp/uf2fs-killcheck
while [ $# -gt 0 ]; do
    case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --no-kernel) kernel=0; shift ;;
    --work) work="$2"; shift 2 ;;
    *) echo "usage: $0 [--seconds N] [--size SIZE] [--no-kernel] [--work DIR]" >&2; exit 2 ;;
    esac
done
uf2fs="$repo/target/release/uf2fs"
[ -x "$uf2fs" ] || { echo "kill-recovery-check: build uf2fs first (cargo build --release -p uf2fs)" >&2; exit 2; }
command -v fsck.f2fs >/dev/null || { echo "kill-recovery-check: fsck.f2fs not found (f2fs-tools)" >&2; exit 2; }
mkdir -p "$work/mnt"
work="$(realpath "$work")"
mnt="$work/mnt"
if mountpoint -q "$mnt"; then echo "kill-recovery-check: $mnt is mounted" >&2; exit 2; fi
rm -f "$work"/*.img "$work/done.log"

fail=0
fsck_clean() { # IMG WHAT
    local out
    out=$(fsck.f2fs -f --dry-run "$1" 2>&1) || { echo "$out" >&2; echo "FAIL: fsck.f2fs after $2"; fail=1; return; }
    if grep -qE '\[Fail\]|\[FIX|ASSERT' <<<"$out"; then echo "$out" >&2; echo "FAIL: fsck.f2fs after $2"; fail=1; return; fi
    echo "   fsck.f2fs -f --dry-run after $2: clean"
}
check_files() { # READER WHAT: READER is "mount DIR" or "cat IMG"
    python3 - "$work/done.log" "$1" "$2" "$uf2fs" <<'EOF'
import hashlib, subprocess, sys
log, how, where, uf2fs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
n = bad = 0
for line in open(log):
    parts = line.split()
    if len(parts) != 2:
        continue  # the line being written when the writer died
    path, want = parts
    n += 1
    if how == "mount":
        try:
            data = open(where + path, "rb").read()
        except OSError as e:
            print("   missing:", path, e); bad += 1; continue
    else:
        r = subprocess.run([uf2fs, "cat", where, path], capture_output=True)
        if r.returncode != 0:
            print("   missing:", path, r.stderr.decode().strip()); bad += 1; continue
        data = r.stdout
    if hashlib.sha256(data).hexdigest() != want:
        print("   wrong contents:", path); bad += 1
print(f"   {n} fsync'd files checked, {bad} lost or wrong")
sys.exit(1 if bad else 0)
EOF
}

"$uf2fs" mkfs -q --size "$size" "$work/t.img"
"$uf2fs" mount -o allow_other "$work/t.img" "$mnt"
mkdir "$mnt/d"
sync "$mnt" # a checkpoint with d in it
python3 - "$mnt" "$work/done.log" <<'EOF' &
import hashlib, os, sys, threading
mnt, log = sys.argv[1], open(sys.argv[2], "a", buffering=1)
def worker(t):
    i = 0
    while True:
        rel = f"/d/t{t}-{i}"
        data = hashlib.sha256(f"{t}-{i}".encode()).digest() * (1 + (i * 37) % 3000)
        try:
            fd = os.open(mnt + rel, os.O_WRONLY | os.O_CREAT, 0o644)
            os.write(fd, data)
            os.fsync(fd)
            os.close(fd)
        except OSError:
            return
        log.write(f"{rel} {hashlib.sha256(data).hexdigest()}\n")
        i += 1
ts = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
for t in ts: t.start()
for t in ts: t.join()
EOF
writers=$!
sleep "$seconds"
pkill -9 -f "uf2fs mount.*$work/t.img" || true
sleep 0.5
fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
wait "$writers" 2>/dev/null || true
echo "== crashed after ${seconds}s of load: $(wc -l <"$work/done.log") fsyncs returned"
python3 "$here/kernel/fsync-chain.py" --quiet "$work/t.img" | sed 's/^/   /'
"$uf2fs" info "$work/t.img" | grep roll-forward | sed 's/^/   /' || true
cp --sparse=always "$work/t.img" "$work/linux.img"

echo "== uf2fs recovers (read-write mount)"
"$uf2fs" mount -o allow_other "$work/t.img" "$mnt"
check_files mount "$mnt" || fail=1
fusermount3 -u "$mnt"
sleep 1
fsck_clean "$work/t.img" "uf2fs's recovery and unmount"

if [ "$kernel" = 1 ]; then
    echo "== Linux recovers (kernel-check.sh mount --rw --no-workload)"
    if timeout 1200 "$repo/scripts/kernel-check.sh" mount --rw --no-workload --quiet "$work/linux.img" >"$work/kernel.log" 2>&1; then
        echo "   Linux mounted it read-write and unmounted: $(grep -c 'recover_inode' "$work/kernel.log" || true) recover_inode lines"
        fsck_clean "$work/linux.img" "Linux's recovery and unmount"
        check_files cat "$work/linux.img" || fail=1
    else
        cat "$work/kernel.log" >&2
        echo "FAIL: Linux's mount of the crashed image"; fail=1
    fi
fi
rm -f "$work"/*.img
if [ "$fail" = 0 ]; then echo "RESULT: PASS"; else echo "RESULT: FAIL"; exit 1; fi
