#!/usr/bin/env python3
"""What fsck.f2fs -f says of the images a power cut can leave in the middle of a resize.

Makes a volume with mkfs.f2fs, then writes by hand each state a resize passes through
(old or new superblock, the checkpoint before or after), and prints fsck.f2fs's verdict
on each. The states are what a shrink by SEGS segments at the end of the main area
leaves on disk; those segments are free in the image mkfs.f2fs writes (-a 0 keeps the
active logs at the start of the main area). See docs/ioctls.md, "Resizing".

usage: scripts/resize-window.py [WORKDIR] [SIZE_MIB] [SEGS]
"""

import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import f2fs  # noqa: E402  (scripts/lib/f2fs.py)
from f2fs import CHECKPOINT, SUPER_BLOCK  # noqa: E402

BLOCK = 4096
# Blocks of a segment (mkfs.f2fs's 2 MiB segments of 4 KiB blocks).
BLOCKS_PER_SEG = 512
CP_RESIZEFS_FLAG = f2fs.CP_RESIZEFS_FLAG


class Image:
    """The superblocks and the current checkpoint of one image file."""

    def __init__(self, path):
        self.f = open(path, "r+b")
        self.f.seek(f2fs.F2FS_SUPER_OFFSET)
        self.sb = bytearray(self.f.read(f2fs.F2FS_SUPER_SIZE))

    def shrink_superblocks(self, segs, copies=(0, 1)):
        """Writes superblock copies with `segs` fewer segments (block_count,
        section_count, segment_count and segment_count_main; one segment a section)."""
        sb = bytearray(self.sb)
        block_count = SUPER_BLOCK.get(sb, "block_count")
        SUPER_BLOCK.put(sb, "block_count", block_count - segs * BLOCKS_PER_SEG)
        for member in ("section_count", "segment_count", "segment_count_main"):
            SUPER_BLOCK.put(sb, member, SUPER_BLOCK.get(self.sb, member) - segs)
        for copy in copies:
            self.f.seek(copy * BLOCK + f2fs.F2FS_SUPER_OFFSET)
            self.f.write(sb)

    def block(self, addr):
        self.f.seek(addr * BLOCK)
        return self.f.read(BLOCK)

    def checkpoint_at(self):
        """The block address of the current checkpoint pack (the newer consistent one)."""
        cp_blkaddr = SUPER_BLOCK.get(self.sb, "cp_blkaddr")
        return f2fs.newest_checkpoint(self.block, cp_blkaddr, BLOCKS_PER_SEG)[3]

    def edit_checkpoint(self, d_user_blocks, d_free_segs, flags=0):
        """Rewrites both checkpoint blocks of the current pack with user_block_count
        and free_segment_count moved by the deltas and `flags` added."""
        pack = self.checkpoint_at()
        self.f.seek(pack * BLOCK)
        cp = bytearray(self.f.read(BLOCK))
        user = CHECKPOINT.get(cp, "user_block_count")
        CHECKPOINT.put(cp, "user_block_count", user + d_user_blocks)
        free = CHECKPOINT.get(cp, "free_segment_count")
        CHECKPOINT.put(cp, "free_segment_count", free + d_free_segs)
        CHECKPOINT.put(cp, "ckpt_flags", CHECKPOINT.get(cp, "ckpt_flags") | flags)
        crc_at = CHECKPOINT.get(cp, "checksum_offset")
        f2fs.put_u32_at(cp, crc_at, f2fs.f2fs_crc32(bytes(cp[:crc_at])))
        total = CHECKPOINT.get(cp, "cp_pack_total_block_count")
        for at in (pack, pack + total - 1):
            self.f.seek(at * BLOCK)
            self.f.write(cp)
        return user, free

    def close(self):
        self.f.close()


def fsck(path):
    out = subprocess.run(["fsck.f2fs", "-f", "--dry-run", path], capture_output=True, text=True)
    text = out.stdout + out.stderr
    bad = [
        " ".join(line.split())
        for line in text.splitlines()
        if "[Fail]" in line or "[FIX" in line or "ASSERT" in line or "Wrong" in line
    ]
    return out.returncode, bad


def main():
    work = sys.argv[1] if len(sys.argv) > 1 else "/tmp/resize-window"
    size_mib = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
    segs = int(sys.argv[3]) if len(sys.argv) > 3 else 80
    os.makedirs(work, exist_ok=True)
    base = os.path.join(work, "base.img")
    with open(base, "wb") as f:
        f.truncate(size_mib << 20)
    subprocess.run(["mkfs.f2fs", "-q", "-f", "-a", "0", base], check=True)
    # (name, superblock copies shrunk, checkpoint's user_block_count and
    # free_segment_count shrunk, extra checkpoint flags)
    states = [
        ("old superblocks, old checkpoint", (), False, False, 0),
        ("old superblocks, checkpoint with the smaller user_block_count only", (), True, False, 0),
        ("old superblocks, new checkpoint", (), True, True, 0),
        ("old superblocks, new checkpoint + CP_RESIZEFS_FLAG", (), True, True, CP_RESIZEFS_FLAG),
        ("new superblocks, old checkpoint (Linux's window)", (0, 1), False, False, 0),
        ("new superblocks, old checkpoint + CP_RESIZEFS_FLAG", (0, 1), False, False, CP_RESIZEFS_FLAG),
        ("new superblocks, smaller user_block_count, old free count", (0, 1), True, False, 0),
        ("new superblock 0, old superblock 1, new checkpoint", (0,), True, True, 0),
        ("new superblocks, new checkpoint", (0, 1), True, True, 0),
    ]
    path = os.path.join(work, "state.img")
    for name, copies, user, free, flags in states:
        shutil.copyfile(base, path)
        img = Image(path)
        img.edit_checkpoint(-segs * 512 if user else 0, -segs if free else 0, flags)
        if copies:
            img.shrink_superblocks(segs, copies)
        img.close()
        rc, bad = fsck(path)
        verdict = "clean" if rc == 0 and not bad else "; ".join(bad) or f"exit {rc}"
        print(f"{name}: {verdict}")
    os.remove(path)
    os.remove(base)


if __name__ == "__main__":
    main()
