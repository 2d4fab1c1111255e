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
import struct
import subprocess
import sys
import zlib

BLOCK = 4096
F2FS_MAGIC = 0xF2F52010
CP_RESIZEFS_FLAG = 0x4000


def f2fs_crc(data: bytes) -> int:
    """F2FS's checksum: CRC-32 (reflected) seeded with the magic, no final inversion."""
    return (~zlib.crc32(data, (~F2FS_MAGIC) & 0xFFFFFFFF)) & 0xFFFFFFFF


class Image:
    """The superblocks and the current checkpoint of one image file."""

    def __init__(self, path):
        self.f = open(path, "r+b")
        self.f.seek(1024)
        self.sb = bytearray(self.f.read(3072))

    def sb_u32(self, off):
        return struct.unpack_from("<I", self.sb, off)[0]

    def shrink_superblocks(self, segs, copies=(0, 1)):
        """Writes superblock copies with `segs` fewer segments (block_count,
        section_count, segment_count and segment_count_main; one segment a section)."""
        sb = bytearray(self.sb)
        block_count = struct.unpack_from("<Q", sb, 36)[0]
        struct.pack_into("<Q", sb, 36, block_count - segs * 512)
        for off in (44, 48, 68):
            struct.pack_into("<I", sb, off, self.sb_u32(off) - segs)
        for copy in copies:
            self.f.seek(copy * BLOCK + 1024)
            self.f.write(sb)

    def checkpoint_at(self):
        """The block address of the current checkpoint pack (the higher version)."""
        cp_blkaddr = self.sb_u32(76)
        best = None
        for pack in (cp_blkaddr, cp_blkaddr + 512):
            self.f.seek(pack * BLOCK)
            version = struct.unpack("<Q", self.f.read(8))[0]
            if best is None or version > best[1]:
                best = (pack, version)
        return best[0]

    def edit_checkpoint(self, d_user_blocks, d_free_segs, flags=0):
        """Rewrites both checkpoint blocks of the current pack with user_block_count
        and free_segment_count moved by the deltas and `flags` added."""
        pack = self.checkpoint_at()
        self.f.seek(pack * BLOCK)
        cp = bytearray(self.f.read(BLOCK))
        user = struct.unpack_from("<Q", cp, 8)[0]
        struct.pack_into("<Q", cp, 8, user + d_user_blocks)
        free = struct.unpack_from("<I", cp, 32)[0]
        struct.pack_into("<I", cp, 32, free + d_free_segs)
        ckpt_flags = struct.unpack_from("<I", cp, 132)[0]
        struct.pack_into("<I", cp, 132, ckpt_flags | flags)
        crc_at = struct.unpack_from("<I", cp, 164)[0]
        struct.pack_into("<I", cp, crc_at, f2fs_crc(bytes(cp[:crc_at])))
        total = struct.unpack_from("<I", cp, 136)[0]
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
