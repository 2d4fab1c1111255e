#!/usr/bin/env python3
"""Cuts the blocks each fuzz target parses out of real F2FS images.

Usage: seed_cut.py CORPUS_DIR IMAGE...
       seed_cut.py --sparse IMAGE OUT.gz   (base image of the whole-image target)

Writes fuzz/corpus/<target>/<image>-<what>-<block address> files. Locates structures
the way a reader does: superblock -> checkpoint packs -> summaries and NAT journal ->
NAT blocks -> node blocks -> directory data blocks and xattr nodes. Keeps a few samples
of each kind so the committed corpora stay small; libFuzzer grows them from there.
"""
import hashlib
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "lib"))
import f2fs  # noqa: E402  (scripts/lib/f2fs.py)
from f2fs import CHECKPOINT, SUPER_BLOCK  # noqa: E402

BLK = 4096
I_ADDR = 360
I_NID = I_ADDR + 923 * 4
NAT_PER_BLOCK = BLK // 9


def u16(b, o):
    return struct.unpack_from("<H", b, o)[0]


def u32(b, o):
    return struct.unpack_from("<I", b, o)[0]


class Cutter:
    def __init__(self, corpus):
        self.corpus = corpus
        self.seen = set()
        self.counts = {}

    def put(self, target, name, data):
        digest = hashlib.sha1(data).digest()
        if (target, digest) in self.seen or not any(data):
            return
        self.seen.add((target, digest))
        d = os.path.join(self.corpus, target)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        self.counts[target] = self.counts.get(target, 0) + 1


def inode_layout(node, feature):
    """(addr_start, addrs_in_inode, inline data range, inline xattr range)."""
    inline = node[3]
    extra = inline & 0x20
    extra_isize = u16(node, I_ADDR) if extra else 0
    if extra and feature & 0x40:
        xattr_addrs = u16(node, I_ADDR + 2)
    elif inline & 0x05:
        xattr_addrs = 50
    else:
        xattr_addrs = 0
    start = extra_isize // 4
    if extra_isize > 36 or xattr_addrs > 903:
        return None
    data0 = I_ADDR + 4 * (start + 1)
    data_len = 4 * (923 - start - xattr_addrs - 1)
    return (start, 923 - start - xattr_addrs, (data0, data0 + data_len), (I_NID - 4 * xattr_addrs, I_NID))


def cut(c, path):
    tag = os.path.basename(path).rsplit(".", 1)[0]
    img = open(path, "rb").read()
    nblocks = len(img) // BLK

    def block(a):
        return img[a * BLK:(a + 1) * BLK] if 0 <= a < nblocks else b""

    sb = img[f2fs.F2FS_SUPER_OFFSET:BLK]
    c.put("superblock", f"{tag}-sb0", sb)
    c.put("superblock", f"{tag}-sb1", img[BLK + f2fs.F2FS_SUPER_OFFSET:2 * BLK])
    field = lambda *names: (SUPER_BLOCK.get(sb, n) for n in names)
    (feature,) = field("feature")
    cp_addr, sit_addr, nat_addr, ssa_addr, main_addr = field(
        "cp_blkaddr", "sit_blkaddr", "nat_blkaddr", "ssa_blkaddr", "main_blkaddr")
    seg_sit, seg_nat, seg_ssa, seg_main = field(
        "segment_count_sit", "segment_count_nat", "segment_count_ssa", "segment_count_main")
    main_end = main_addr + seg_main * 512
    (payload,) = field("cp_payload")

    # Checkpoint packs, their orphan and summary blocks; NAT journal entries.
    nat = {}
    for p in (0, 1):
        start = cp_addr + 512 * p
        cpb = block(start)
        if not any(cpb):
            continue
        flags, total, start_sum = (CHECKPOINT.get(cpb, n) for n in
                                   ("ckpt_flags", "cp_pack_total_block_count", "cp_pack_start_sum"))
        c.put("checkpoint", f"{tag}-cp{p}-{start:x}", b"".join(block(start + i) for i in range(1 + payload)))
        if 2 <= total <= 512:
            c.put("checkpoint", f"{tag}-cp{p}-last-{start + total - 1:x}", block(start + total - 1))
        if flags & f2fs.CP_ORPHAN_PRESENT_FLAG:
            for i in range(1 + payload, start_sum):
                c.put("orphan", f"{tag}-orphan-{start + i:x}", block(start + i))
        if not 1 <= start_sum < total <= 512:
            continue
        sums = [block(start + i) for i in range(start_sum, total - 1)]
        for i, s in enumerate(sums):
            c.put("summary", f"{tag}-cp{p}-sum{i}-{start + start_sum + i:x}", s)
        compact = bool(flags & f2fs.CP_COMPACT_SUM_FLAG)
        c.put("summary", f"{tag}-cp{p}-journals{'-compact' if compact else ''}", b"".join(sums[: 1 if compact else 3]))
        if sums:
            j = sums[0][:BLK] if compact else sums[0][3584:]
            n = u16(j, 0)
            for i in range(min(n, 38)):
                at = 2 + 13 * i
                nid, ino, addr = u32(j, at), u32(j, at + 5), u32(j, at + 9)
                nat.setdefault(nid, (ino, addr))

    # NAT and SIT blocks (both copies), SSA blocks.
    for area, addr, segs, limit in (("nat", nat_addr, seg_nat, 8), ("sit", sit_addr, seg_sit, 8), ("summary", ssa_addr, seg_ssa, 12)):
        kept = 0
        for a in range(addr, addr + segs * 512):
            b = block(a)
            if not any(b):
                continue
            if area == "nat":
                first = ((a - addr) // 1024) * 512 + (a - addr) % 512
                for i in range(NAT_PER_BLOCK):
                    ino, blkaddr = u32(b, 9 * i + 1), u32(b, 9 * i + 5)
                    if blkaddr:
                        nat.setdefault(first * NAT_PER_BLOCK + i, (ino, blkaddr))
            if kept < limit:
                c.put(area, f"{tag}-{area}-{a:x}", b)
                kept += 1

    # Node blocks: keep a few inodes of each kind and a few direct/indirect nodes.
    kinds = {}
    inodes = {}
    for nid, (ino, addr) in sorted(nat.items()):
        if not main_addr <= addr < main_end:
            continue
        b = block(addr)
        if u32(b, 4072) != nid:
            continue
        if nid == ino and (u32(b, 4080) >> 3) == 0:
            inodes[nid] = b
            key = ("inode", u16(b, 0) & 0o170000, b[3], u32(b, 76) != 0)
        else:
            key = ("node", u32(b, 4080) & 7)
        kinds[key] = kinds.get(key, 0) + 1
        if kinds[key] <= (2 if key[0] == "inode" else 6):
            c.put("node", f"{tag}-node-{nid}-{addr:x}", b)

    # Directory contents and xattr areas.
    dirs = 0
    for ino, b in sorted(inodes.items()):
        lay = inode_layout(b, feature)
        if lay is None:
            continue
        start, in_inode, (d0, d1), (x0, x1) = lay
        xattr_nid = u32(b, 76)
        area = b[x0:x1]
        if xattr_nid in nat and main_addr <= nat[xattr_nid][1] < main_end:
            area += block(nat[xattr_nid][1])[:4072]
        if any(area):
            c.put("xattr", f"{tag}-xattr-{ino}", area)
        if u16(b, 0) & 0o170000 != 0o040000:
            continue
        if b[3] & 0x04:
            c.put("dentry", f"{tag}-inline-dentry-{ino}", b[d0:d1])
            continue
        dirs += 1
        size_blocks = (struct.unpack_from("<Q", b, 16)[0] + BLK - 1) // BLK
        kept = 0
        for i in range(min(in_inode, size_blocks)):
            a = u32(b, I_ADDR + 4 * (start + i))
            if main_addr <= a < main_end and kept < (8 if dirs < 4 else 1):
                c.put("dentry", f"{tag}-dentry-{ino}-{a:x}", block(a))
                kept += 1


def inline_dentry_from(block, area_len=3488):
    """Moves the first entries of a dentry block into an inline dentry area (sload never
    writes inline directories)."""
    nr = area_len * 8 // ((11 + 8) * 8 + 1)
    bitmap_len = (nr + 7) // 8
    d0 = area_len - nr * 19
    n0 = d0 + 11 * nr
    out = bytearray(area_len)
    slot = 0
    while slot < nr:
        if not block[slot // 8] & (1 << (slot % 8)):
            slot += 1
            continue
        de = block[27 + 3 + 11 * slot:27 + 3 + 11 * (slot + 1)]
        name_len = u16(de, 8)
        used = max(1, (name_len + 7) // 8)
        if name_len == 0 or slot + used > nr:
            break
        for s in range(slot, slot + used):
            out[s // 8] |= 1 << (s % 8)
        out[d0 + 11 * slot:d0 + 11 * (slot + 1)] = de
        src = 27 + 3 + 11 * 214 + 8 * slot
        out[n0 + 8 * slot:n0 + 8 * slot + name_len] = block[src:src + name_len]
        slot += used
    assert bitmap_len <= d0
    return bytes(out)


def synthetic(c, dentry_blocks):
    """Structures the images above never contain."""
    for name, b in dentry_blocks[:3]:
        c.put("dentry", f"synthetic-inline-{name}", inline_dentry_from(b))
        c.put("dentry", f"synthetic-inline-extra-{name}", inline_dentry_from(b, 3488 - 4 * 9))
    def xattr_entry(index, name, value):
        e = struct.pack("<BBH", index, len(name), len(value)) + name + value
        return e + b"\0" * (-len(e) % 4)
    inline = struct.pack("<II16x", 0xF2F52011, 1) + xattr_entry(1, b"small", b"value")
    inline += xattr_entry(6, b"selinux", b"system_u:object_r:file_t:s0\0")
    c.put("xattr", "synthetic-inline-only", inline.ljust(200, b"\0"))
    big = xattr_entry(1, b"big", b"v" * 1500) + xattr_entry(4, b"trusted", b"t")
    c.put("xattr", "synthetic-inline-and-node", (inline.ljust(200, b"\0") + big).ljust(200 + 4072, b"\0"))
    # An orphan block as the kernel writes them: three orphans, block 1 of 1.
    b = bytearray(BLK)
    for i, ino in enumerate((5, 6, 7)):
        struct.pack_into("<I", b, 4 * i, ino)
    struct.pack_into("<HHI", b, 4084, 1, 1, 3)
    c.put("orphan", "synthetic-3-orphans", bytes(b))
    # POSIX ACLs in F2FS's compact form, alone and inside an xattr area.
    acl = struct.pack("<I", 1) + struct.pack("<HH", 0x01, 6) + struct.pack("<HHI", 0x02, 6, 1234)
    acl += struct.pack("<HH", 0x04, 4) + struct.pack("<HHI", 0x08, 5, 99) + struct.pack("<HH", 0x10, 7)
    acl += struct.pack("<HH", 0x20, 4)
    c.put("xattr", "synthetic-acl", acl)
    area = struct.pack("<II16x", 0xF2F52011, 1)
    for index, name, value in ((2, b"", acl), (3, b"", acl), (1, b"comment", b"hi"), (6, b"selinux", b"ctx\0")):
        e = struct.pack("<BBH", index, len(name), len(value)) + name + value
        area += e + b"\0" * (-len(e) % 4)
    c.put("xattr", "synthetic-area", area + b"\0" * 4)


def sparse(image, out):
    """Writes IMAGE as gzip'd (magic, block count, non-zero blocks) for the image target."""
    import gzip
    img = open(image, "rb").read()
    n = len(img) // BLK
    parts = [b"uf2fsSPR", struct.pack("<Q", n)]
    for a in range(n):
        b = img[a * BLK:(a + 1) * BLK]
        if any(b):
            parts.append(struct.pack("<Q", a) + b)
    with open(out, "wb") as f:
        f.write(gzip.compress(b"".join(parts), compresslevel=9, mtime=0))


def main():
    if sys.argv[1] == "--sparse":
        sparse(sys.argv[2], sys.argv[3])
        return
    corpus, images = sys.argv[1], sys.argv[2:]
    c = Cutter(corpus)
    for path in images:
        cut(c, path)
    d = os.path.join(corpus, "dentry")
    blocks = [(n, open(os.path.join(d, n), "rb").read()) for n in sorted(os.listdir(d)) if "-dentry-" in n]
    synthetic(c, blocks)
    for t in sorted(c.counts):
        print(f"{t}: {c.counts[t]} new seed(s)")


if __name__ == "__main__":
    main()
