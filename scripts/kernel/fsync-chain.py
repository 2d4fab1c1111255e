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
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import f2fs  # noqa: E402  (scripts/lib/f2fs.py)
from f2fs import CHECKPOINT, INODE, NODE_FOOTER, SUPER_BLOCK  # noqa: E402

# The chain fsync leaves is the warm node log's.
WARM_NODE = f2fs.CURSEG_WARM_NODE - f2fs.CURSEG_HOT_NODE


def die(msg):
    print(f"fsync-chain: {msg}", file=sys.stderr)
    sys.exit(2)


class Image:
    """The image, read in blocks of the size its superblock gives (4 KiB or 16 KiB)."""

    def __init__(self, path):
        try:
            self.f = open(path, "rb")
        except OSError as e:
            die(str(e))
        head = self.f.read(f2fs.F2FS_SUPER_OFFSET + f2fs.F2FS_SUPER_SIZE)
        if len(head) < f2fs.F2FS_SUPER_OFFSET + f2fs.F2FS_SUPER_SIZE:
            die("not an F2FS image (shorter than a superblock)")
        self.sb = head[f2fs.F2FS_SUPER_OFFSET:]
        if SUPER_BLOCK.get(self.sb, "magic") != f2fs.F2FS_SUPER_MAGIC:
            die("not an F2FS image (superblock magic)")
        log = SUPER_BLOCK.get(self.sb, "log_blocksize")
        if log not in (12, 14):
            die(f"unsupported block size 2^{log} (F2FS uses 4 KiB or 16 KiB)")
        self.bs = 1 << log

    def block(self, addr):
        self.f.seek(addr * self.bs)
        b = self.f.read(self.bs)
        if len(b) != self.bs:
            die(f"block {addr:#x} is past the end of the image")
        return b


def newest_checkpoint(img, sb):
    """(version, flags, header block, pack start) of the newest consistent pack."""
    bps = 1 << SUPER_BLOCK.get(sb, "log_blocks_per_seg")
    best = f2fs.newest_checkpoint(img.block, SUPER_BLOCK.get(sb, "cp_blkaddr"), bps)
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
    sb = img.sb
    bps = 1 << SUPER_BLOCK.get(sb, "log_blocks_per_seg")
    main_start = SUPER_BLOCK.get(sb, "main_blkaddr")
    main_segs = SUPER_BLOCK.get(sb, "segment_count_main")
    main_end = main_start + main_segs * bps
    ver, flags, head, _ = newest_checkpoint(img, sb)
    names = [n for bit, n in f2fs.CP_FLAG_NAMES if flags & bit]
    segno = CHECKPOINT.get(head, "cur_node_segno", WARM_NODE)
    blkoff = CHECKPOINT.get(head, "cur_node_blkoff", WARM_NODE)
    if flags & f2fs.CP_CRC_RECOVERY_FLAG:
        crc = f2fs.u32_at(head, CHECKPOINT.get(head, "checksum_offset"))
        want = ver | (crc << 32)
    else:
        want = ver

    def matches(v):
        if flags & f2fs.CP_NOCRC_RECOVERY_FLAG:
            return (v & 0xFFFFFFFF) == (want & 0xFFFFFFFF)
        return v == want

    print(f"checkpoint: version {ver:#x}, {img.bs // 1024} KiB blocks, flags {flags:#x} ({' '.join(names)}), "
          f"warm node log at segment {segno} block {blkoff}")
    free = main_segs * bps - CHECKPOINT.get(head, "valid_block_count")
    addr = main_start + segno * bps + blkoff
    seen = set()
    blocks = fsync = dent = 0
    inodes = set()
    segments = set()
    stop = "a block outside the main area"
    while main_start <= addr < main_end:
        b = img.block(addr)
        foot = f2fs.node_footer_offset(img.bs)
        nid, ino, flag = (NODE_FOOTER.get(b, m, base=foot) for m in ("nid", "ino", "flag"))
        cp_ver, nxt = NODE_FOOTER.get(b, "cp_ver", base=foot), NODE_FOOTER.get(b, "next_blkaddr", base=foot)
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
        if flag & (1 << f2fs.FSYNC_BIT_SHIFT):
            fsync += 1
            marks.append("fsync")
        if flag & (1 << f2fs.DENT_BIT_SHIFT):
            dent += 1
            marks.append("dent")
        ofs = flag >> f2fs.OFFSET_BIT_SHIFT
        what = f"ofs {ofs}"
        if nid == ino:
            inodes.add(ino)
            namelen = min(INODE.get(b, "i_namelen"), 255)
            name = INODE.bytes_of(b, "i_name")[:namelen].decode("utf-8", "replace")
            what = f"inode size {INODE.get(b, 'i_size')} pino {INODE.get(b, 'i_pino')} name {name!r}"
        if not quiet:
            print(f"  {addr:#x}: nid {nid} ino {ino} {','.join(marks) or '-'} {what}")
        addr = nxt
    print(f"chain: {blocks} blocks, {fsync} fsync-marked, {dent} dentry-marked, "
          f"{len(inodes)} inodes, {len(segments)} segments")
    print(f"end of chain: {stop}")
    if flags & f2fs.CP_UMOUNT_FLAG:
        print("note: the checkpoint is an unmount checkpoint; the kernel does not roll forward")


if __name__ == "__main__":
    main()
