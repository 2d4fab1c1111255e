#!/usr/bin/env bash
# FUSE requests a uf2fs mount receives while dd writes COUNT blocks of BS to a file
# already there (conv=notrunc), by opcode: strace on the daemon records the first 8
# bytes of every read(2) of /dev/fuse (fuse_in_header: length, then opcode).
#
# usage: [BS=4k] [COUNT=1000] [WORK=/var/tmp/uf2fs-fuse-requests] \
#            scripts/lib/fuse-requests.sh UF2FS_BINARY [MOUNT_OPTIONS]
# Needs root and strace (Debian package strace). Prints "OPCODE count" lines.
set -eu
bin=$1; opts=${2:-rw,allow_other}
bs=${BS:-4k}; count=${COUNT:-1000}; w=${WORK:-/var/tmp/uf2fs-fuse-requests}
rm -rf "$w"; mkdir -p "$w/mnt"
"$bin" mkfs --size 256M -f "$w/img" >/dev/null
"$bin" mount -o "$opts" -f "$w/img" "$w/mnt" >"$w/log" 2>&1 &
pid=$!
for _ in $(seq 100); do mountpoint -q "$w/mnt" && break; sleep 0.1; done
dd if=/dev/zero of="$w/mnt/f" bs=4k count=10 status=none
strace -f -p "$pid" -e trace=read -s 8 -xx -o "$w/trace" 2>/dev/null &
st=$!
sleep 1
dd if=/dev/zero of="$w/mnt/f" bs="$bs" count="$count" conv=notrunc status=none
sleep 0.5
kill "$st"; wait "$st" 2>/dev/null || true
umount "$w/mnt"; wait "$pid"
python3 - "$w/trace" <<'PY'
import collections, re, sys
names = {1: "LOOKUP", 3: "GETATTR", 4: "SETATTR", 14: "OPEN", 16: "WRITE", 18: "RELEASE",
         20: "FSYNC", 21: "SETXATTR", 22: "GETXATTR", 24: "REMOVEXATTR", 25: "FLUSH"}
seen = collections.Counter()
for line in open(sys.argv[1]):
    m = re.search(r'"((?:\\x[0-9a-f]{2}){8})"', line)
    if m and "read" in line:
        b = bytes(int(h, 16) for h in m.group(1).split("\\x")[1:])
        op = b[4] | b[5] << 8
        seen[names.get(op, str(op))] += 1
for op, n in seen.most_common():
    print(op, n)
PY
rm -rf "$w"
