#!/usr/bin/env python3
"""Shows what roll-forward recovery would find in an F2FS image.

Reads the newest valid checkpoint pack, then follows the warm node log's chain from the
checkpoint's next free warm-node block, block by block through each node footer's
next-block address, as long as the blocks lie in the main area and carry the footer
version a node written after that checkpoint carries (the checkpoint version, with the
checkpoint's CRC in the high 32 bits when the checkpoint has the crc_recovery flag, or
only the low 32 bits compared under nocrc_recovery). Prints one line per node found
(its fsync and dentry marks, and for inodes the name they hold) and a summary.

usage: fsync-chain.py [--quiet] IMG
       --quiet   print only the summary lines

The summary's first line is machine-readable:
    chain: BLOCKS blocks, FSYNC fsync-marked, DENT dentry-marked, INODES inodes, SEGMENTS segments
The checkpoint line says "umount" when the last checkpoint was written by an unmount
(the kernel then does not look at the chain at all).

Exit status: 0 (whatever the chain holds), 2 usage or an unreadable image.
"""
import struct
import sys

BLOCK = 4096
CP_UMOUNT = 0x1
CP_CRC_RECOVERY = 0x40
CP_NOCRC_RECOVERY = 0x200
FLAG_NAMES = [
    (0x1, "umount"), (0x2, "orphan"), (0x4, "compacted_summary"), (0x8, "error"),
    (0x10, "fsck"), (0x20, "fastboot"), (0x40, "crc_recovery"), (0x80, "nat_bits"),
    (0x100, "trimmed"), (0x200, "nocrc_recovery"), (0x400, "large_nat_bitmap"),
    (0x800, "quota_need_fsck"), (0x1000, "disabled"), (0x2000, "disabled_quick"),
    (0x4000, "resizefs"),
]
WARM_NODE = 1


def die(msg):
    print(f"fsync-chain: {msg}", file=sys.stderr)
    sys.exit(2)


def u16(b, o):
    return struct.unpack_from("<H", b, o)[0]


def u32(b, o):
    return struct.unpack_from("<I", b, o)[0]


def u64(b, o):
    return struct.unpack_from("<Q", b, o)[0]


class Image:
    def __init__(self, path):
        try:
            self.f = open(path, "rb")
        except OSError as e:
            die(str(e))

    def block(self, addr):
        self.f.seek(addr * BLOCK)
        b = self.f.read(BLOCK)
        if len(b) != BLOCK:
            die(f"block {addr:#x} is past the end of the image")
        return b


def newest_checkpoint(img, sb):
    """(version, flags, header block, pack start) of the newest consistent pack."""
    cp_blkaddr = u32(sb, 76)
    bps = 1 << u32(sb, 20)
    best = None
    for start in (cp_blkaddr, cp_blkaddr + bps):
        head = img.block(start)
        ver = u64(head, 0)
        total = u32(head, 136)
        if total == 0 or total > bps:
            continue
        tail = img.block(start + total - 1)
        if u64(tail, 0) != ver:
            continue
        if best is None or ver > best[0]:
            best = (ver, u32(head, 132), head, start)
    if best is None:
        die("no consistent checkpoint pack")
    return best


def main():
    args = sys.argv[1:]
    quiet = False
    if args and args[0] == "--quiet":
        quiet = True
        args = args[1:]
    if len(args) != 1:
        die("usage: fsync-chain.py [--quiet] IMG")
    img = Image(args[0])
    sb = img.block(0)[1024:]
    if u32(sb, 0) != 0xF2F52010:
        die("not an F2FS image (superblock magic)")
    bps = 1 << u32(sb, 20)
    main_start = u32(sb, 92)
    main_end = main_start + u32(sb, 68) * bps
    ver, flags, head, _ = newest_checkpoint(img, sb)
    names = [n for bit, n in FLAG_NAMES if flags & bit]
    segno = u32(head, 36 + 4 * WARM_NODE)
    blkoff = u16(head, 68 + 2 * WARM_NODE)
    if flags & CP_CRC_RECOVERY:
        crc = u32(head, u32(head, 164))
        want = ver | (crc << 32)
    else:
        want = ver

    def matches(v):
        if flags & CP_NOCRC_RECOVERY:
            return (v & 0xFFFFFFFF) == (want & 0xFFFFFFFF)
        return v == want

    print(f"checkpoint: version {ver:#x}, flags {flags:#x} ({' '.join(names)}), "
          f"warm node log at segment {segno} block {blkoff}")
    free = u32(sb, 68) * bps - u64(head, 16)
    addr = main_start + segno * bps + blkoff
    seen = set()
    blocks = fsync = dent = 0
    inodes = set()
    segments = set()
    stop = "a block outside the main area"
    while main_start <= addr < main_end:
        b = img.block(addr)
        nid, ino, flag = u32(b, 4072), u32(b, 4076), u32(b, 4080)
        cp_ver, nxt = u64(b, 4084), u32(b, 4092)
        if not matches(cp_ver):
            stop = f"block {addr:#x}: footer version {cp_ver:#x} is not the checkpoint's"
            break
        if addr in seen or blocks >= free:
            stop = f"block {addr:#x}: the chain loops"
            break
        seen.add(addr)
        blocks += 1
        segments.add((addr - main_start) // bps)
        marks = []
        if flag & 2:
            fsync += 1
            marks.append("fsync")
        if flag & 4:
            dent += 1
            marks.append("dent")
        ofs = flag >> 3
        what = f"ofs {ofs}"
        if nid == ino:
            inodes.add(ino)
            namelen = min(u32(b, 88), 255)
            name = b[92:92 + namelen].decode("utf-8", "replace")
            what = f"inode size {u64(b, 16)} pino {u32(b, 84)} name {name!r}"
        if not quiet:
            print(f"  {addr:#x}: nid {nid} ino {ino} {','.join(marks) or '-'} {what}")
        addr = nxt
    print(f"chain: {blocks} blocks, {fsync} fsync-marked, {dent} dentry-marked, "
          f"{len(inodes)} inodes, {len(segments)} segments")
    print(f"end of chain: {stop}")
    if flags & CP_UMOUNT:
        print("note: the checkpoint is an unmount checkpoint; the kernel does not roll forward")


if __name__ == "__main__":
    main()
