"""F2FS on-disk structures for the scripts that read or patch images by hand
(scripts/resize-window.py, scripts/kernel/fsync-chain.py, scripts/make-blk16-fixture.py).

Each structure is a list of its members in the kernel's order and with its names
(struct f2fs_super_block, struct f2fs_checkpoint, struct node_footer, the head of
struct f2fs_inode); the structures are packed, so a member's byte offset is the sum of
the sizes before it, and this module computes it rather than spelling numbers out.
Everything is little-endian. The uf2fs crates decode the same structures in
crates/format (superblock.rs, checkpoint.rs, node.rs); `python3 scripts/lib/f2fs.py`
checks a few offsets against the numbers there.

Import it from a script with
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
    import f2fs
(`"../lib"` from scripts/kernel/).
"""

import struct
import zlib

# The superblock's magic number (F2FS_SUPER_MAGIC).
F2FS_SUPER_MAGIC = 0xF2F52010
# Byte offset of the superblock in blocks 0 and 1 (F2FS_SUPER_OFFSET).
F2FS_SUPER_OFFSET = 1024
# Bytes of the superblock structure.
F2FS_SUPER_SIZE = 3072

# Checkpoint flags (ckpt_flags), as the kernel names them.
CP_UMOUNT_FLAG = 0x0001
CP_ORPHAN_PRESENT_FLAG = 0x0002
CP_COMPACT_SUM_FLAG = 0x0004
CP_ERROR_FLAG = 0x0008
CP_FSCK_FLAG = 0x0010
CP_FASTBOOT_FLAG = 0x0020
CP_CRC_RECOVERY_FLAG = 0x0040
CP_NAT_BITS_FLAG = 0x0080
CP_TRIMMED_FLAG = 0x0100
CP_NOCRC_RECOVERY_FLAG = 0x0200
CP_LARGE_NAT_BITMAP_FLAG = 0x0400
CP_QUOTA_NEED_FSCK_FLAG = 0x0800
CP_DISABLED_FLAG = 0x1000
CP_DISABLED_QUICK_FLAG = 0x2000
CP_RESIZEFS_FLAG = 0x4000

# The flags with the names fsck.f2fs prints for them, in bit order.
CP_FLAG_NAMES = [
    (CP_UMOUNT_FLAG, "umount"), (CP_ORPHAN_PRESENT_FLAG, "orphan"),
    (CP_COMPACT_SUM_FLAG, "compacted_summary"), (CP_ERROR_FLAG, "error"),
    (CP_FSCK_FLAG, "fsck"), (CP_FASTBOOT_FLAG, "fastboot"),
    (CP_CRC_RECOVERY_FLAG, "crc_recovery"), (CP_NAT_BITS_FLAG, "nat_bits"),
    (CP_TRIMMED_FLAG, "trimmed"), (CP_NOCRC_RECOVERY_FLAG, "nocrc_recovery"),
    (CP_LARGE_NAT_BITMAP_FLAG, "large_nat_bitmap"), (CP_QUOTA_NEED_FSCK_FLAG, "quota_need_fsck"),
    (CP_DISABLED_FLAG, "disabled"), (CP_DISABLED_QUICK_FLAG, "disabled_quick"),
    (CP_RESIZEFS_FLAG, "resizefs"),
]

# The active logs (enum curseg_type); the checkpoint's cur_node_segno and
# cur_node_blkoff are indexed by a node log's type minus CURSEG_HOT_NODE, its
# cur_data_* arrays by a data log's type.
CURSEG_HOT_DATA, CURSEG_WARM_DATA, CURSEG_COLD_DATA = 0, 1, 2
CURSEG_HOT_NODE, CURSEG_WARM_NODE, CURSEG_COLD_NODE = 3, 4, 5

# Node block flags (node_footer.flag): the low bits are marks, the rest is the node's
# offset in its inode (OFFSET_BIT_SHIFT).
COLD_BIT_SHIFT, FSYNC_BIT_SHIFT, DENT_BIT_SHIFT, OFFSET_BIT_SHIFT = 0, 1, 2, 3

# Node geometry: the nids of an inode's direct and indirect nodes, and the room the
# address arrays leave for them (DEF_NIDS_PER_INODE).
DEF_NIDS_PER_INODE = 5
# Bytes of a block address.
ADDR_BYTES = 4


class Struct:
    """A packed little-endian on-disk structure: `members` are (name, struct format
    character, count) in the structure's order; `offset(name)` is a member's byte
    offset, `get`/`put` read and write a member (element `index` of an array) in a
    buffer holding the structure at `base`."""

    def __init__(self, name, members):
        self.name = name
        self.fields = {}
        off = 0
        for member, fmt, count in members:
            size = struct.calcsize("<" + fmt)
            self.fields[member] = (off, fmt, size, count)
            off += size * count
        self.size = off

    def offset(self, member, index=0):
        off, _, size, count = self.fields[member]
        if not 0 <= index < count:
            raise IndexError("%s.%s[%d] (of %d)" % (self.name, member, index, count))
        return off + index * size

    def get(self, buf, member, index=0, base=0):
        fmt = self.fields[member][1]
        return struct.unpack_from("<" + fmt, buf, base + self.offset(member, index))[0]

    def put(self, buf, member, value, index=0, base=0):
        fmt = self.fields[member][1]
        struct.pack_into("<" + fmt, buf, base + self.offset(member, index), value)

    def bytes_of(self, buf, member, base=0):
        """The raw bytes of a whole member (an array of bytes, such as a name)."""
        off, _, size, count = self.fields[member]
        return bytes(buf[base + off:base + off + size * count])


# struct f2fs_super_block (MAX_VOLUME_NAME 512, F2FS_MAX_EXTENSION 64 of
# F2FS_EXTENSION_LEN 8, VERSION_LEN 256, MAX_DEVICES 8 of struct f2fs_device: a 64-byte
# path and total_segments, F2FS_MAX_QUOTAS 3).
SUPER_BLOCK = Struct("f2fs_super_block", [
    ("magic", "I", 1),
    ("major_ver", "H", 1),
    ("minor_ver", "H", 1),
    ("log_sectorsize", "I", 1),
    ("log_sectors_per_block", "I", 1),
    ("log_blocksize", "I", 1),
    ("log_blocks_per_seg", "I", 1),
    ("segs_per_sec", "I", 1),
    ("secs_per_zone", "I", 1),
    ("checksum_offset", "I", 1),
    ("block_count", "Q", 1),
    ("section_count", "I", 1),
    ("segment_count", "I", 1),
    ("segment_count_ckpt", "I", 1),
    ("segment_count_sit", "I", 1),
    ("segment_count_nat", "I", 1),
    ("segment_count_ssa", "I", 1),
    ("segment_count_main", "I", 1),
    ("segment0_blkaddr", "I", 1),
    ("cp_blkaddr", "I", 1),
    ("sit_blkaddr", "I", 1),
    ("nat_blkaddr", "I", 1),
    ("ssa_blkaddr", "I", 1),
    ("main_blkaddr", "I", 1),
    ("root_ino", "I", 1),
    ("node_ino", "I", 1),
    ("meta_ino", "I", 1),
    ("uuid", "B", 16),
    ("volume_name", "H", 512),
    ("extension_count", "I", 1),
    ("extension_list", "B", 64 * 8),
    ("cp_payload", "I", 1),
    ("version", "B", 256),
    ("init_version", "B", 256),
    ("feature", "I", 1),
    ("encryption_level", "B", 1),
    ("encrypt_pw_salt", "B", 16),
    ("devices", "B", 8 * (64 + 4)),
    ("qf_ino", "I", 3),
    ("hot_ext_count", "B", 1),
    ("s_encoding", "H", 1),
    ("s_encoding_flags", "H", 1),
    ("s_stop_reason", "B", 32),
    ("s_errors", "B", 16),
    ("reserved", "B", 258),
    ("crc", "I", 1),
])

# struct f2fs_checkpoint up to its version bitmaps (MAX_ACTIVE_NODE_LOGS and
# MAX_ACTIVE_DATA_LOGS 8, MAX_ACTIVE_LOGS 16).
CHECKPOINT = Struct("f2fs_checkpoint", [
    ("checkpoint_ver", "Q", 1),
    ("user_block_count", "Q", 1),
    ("valid_block_count", "Q", 1),
    ("rsvd_segment_count", "I", 1),
    ("overprov_segment_count", "I", 1),
    ("free_segment_count", "I", 1),
    ("cur_node_segno", "I", 8),
    ("cur_node_blkoff", "H", 8),
    ("cur_data_segno", "I", 8),
    ("cur_data_blkoff", "H", 8),
    ("ckpt_flags", "I", 1),
    ("cp_pack_total_block_count", "I", 1),
    ("cp_pack_start_sum", "I", 1),
    ("valid_node_count", "I", 1),
    ("valid_inode_count", "I", 1),
    ("next_free_nid", "I", 1),
    ("sit_ver_bitmap_bytesize", "I", 1),
    ("nat_ver_bitmap_bytesize", "I", 1),
    ("checksum_offset", "I", 1),
    ("elapsed_time", "Q", 1),
    ("alloc_type", "B", 16),
])

# struct node_footer: the last bytes of every node block.
NODE_FOOTER = Struct("node_footer", [
    ("nid", "I", 1),
    ("ino", "I", 1),
    ("flag", "I", 1),
    ("cp_ver", "Q", 1),
    ("next_blkaddr", "I", 1),
])

# struct f2fs_inode up to its address array (F2FS_NAME_LEN 255; i_ext is struct
# f2fs_extent: fofs, blk, len).
INODE = Struct("f2fs_inode", [
    ("i_mode", "H", 1),
    ("i_advise", "B", 1),
    ("i_inline", "B", 1),
    ("i_uid", "I", 1),
    ("i_gid", "I", 1),
    ("i_links", "I", 1),
    ("i_size", "Q", 1),
    ("i_blocks", "Q", 1),
    ("i_atime", "Q", 1),
    ("i_ctime", "Q", 1),
    ("i_mtime", "Q", 1),
    ("i_atime_nsec", "I", 1),
    ("i_ctime_nsec", "I", 1),
    ("i_mtime_nsec", "I", 1),
    ("i_generation", "I", 1),
    ("i_current_depth", "I", 1),
    ("i_xattr_nid", "I", 1),
    ("i_flags", "I", 1),
    ("i_pino", "I", 1),
    ("i_namelen", "I", 1),
    ("i_name", "B", 255),
    ("i_dir_level", "B", 1),
    ("i_ext", "I", 3),
])


def u32_at(buf, off):
    """The little-endian 32-bit word at byte `off` of `buf` (for offsets the structure
    itself gives, such as a checkpoint's checksum_offset)."""
    return struct.unpack_from("<I", buf, off)[0]


def put_u32_at(buf, off, value):
    """Writes `value` as the little-endian 32-bit word at byte `off` of `buf`."""
    struct.pack_into("<I", buf, off, value)


def f2fs_crc32(data):
    """F2FS's checksum (f2fs_crc32 of the superblock, checkpoint and inodes): CRC-32,
    reflected, seeded with the magic number, without the final inversion."""
    return (~zlib.crc32(data, (~F2FS_SUPER_MAGIC) & 0xFFFFFFFF)) & 0xFFFFFFFF


def node_footer_offset(block_size):
    """Byte offset of the node footer in a node block of `block_size` bytes."""
    return block_size - NODE_FOOTER.size


def addrs_per_block(block_size, cluster_blocks=1):
    """Block addresses in a direct node block (DEF_ADDRS_PER_BLOCK); for a compressed
    file with clusters of `cluster_blocks`, whole clusters only."""
    addrs = (block_size - NODE_FOOTER.size) // ADDR_BYTES
    return addrs // cluster_blocks * cluster_blocks


def addrs_per_inode(block_size, extra_isize=0, inline_xattr_addrs=0, cluster_blocks=1):
    """Data block addresses in an inode block: the array after the inode's head
    (DEF_ADDRS_PER_INODE), less the words its extra attributes (`extra_isize` bytes)
    and inline xattrs (`inline_xattr_addrs` words) take; for a compressed file with
    clusters of `cluster_blocks`, whole clusters only."""
    room = block_size - INODE.size - DEF_NIDS_PER_INODE * 4 - NODE_FOOTER.size
    addrs = room // ADDR_BYTES - extra_isize // ADDR_BYTES - inline_xattr_addrs
    return addrs // cluster_blocks * cluster_blocks


def newest_checkpoint(read_block, cp_blkaddr, blocks_per_seg):
    """The newest consistent checkpoint pack of the two starting at `cp_blkaddr` and
    one segment later: (checkpoint_ver, ckpt_flags, the pack's first block, its block
    address), or None. A pack is consistent when its block count is 1 to a segment and
    its last block carries the first block's version. `read_block(addr)` gives a
    block's bytes."""
    best = None
    for start in (cp_blkaddr, cp_blkaddr + blocks_per_seg):
        head = read_block(start)
        ver = CHECKPOINT.get(head, "checkpoint_ver")
        total = CHECKPOINT.get(head, "cp_pack_total_block_count")
        if total == 0 or total > blocks_per_seg:
            continue
        tail = read_block(start + total - 1)
        if CHECKPOINT.get(tail, "checkpoint_ver") != ver:
            continue
        if best is None or ver > best[0]:
            best = (ver, CHECKPOINT.get(head, "ckpt_flags"), head, start)
    return best


def _self_check():
    """Offsets the Rust decoders use (crates/format), and the structures' sizes."""
    sb = SUPER_BLOCK
    assert sb.size == F2FS_SUPER_SIZE, sb.size
    assert (sb.offset("block_count"), sb.offset("segment_count_main"), sb.offset("cp_blkaddr"),
            sb.offset("main_blkaddr")) == (36, 68, 76, 92)
    assert (sb.offset("volume_name"), sb.offset("cp_payload"), sb.offset("version"),
            sb.offset("init_version")) == (124, 1664, 1668, 1924)
    assert (sb.offset("qf_ino"), sb.offset("hot_ext_count"), sb.offset("s_encoding_flags"),
            sb.offset("crc")) == (2745, 2757, 2760, 3068)
    cp = CHECKPOINT
    assert (cp.offset("free_segment_count"), cp.offset("cur_node_blkoff"), cp.offset("ckpt_flags"),
            cp.offset("cp_pack_total_block_count"), cp.offset("checksum_offset")) == (32, 68, 132, 136, 164)
    assert cp.size == 192, cp.size
    assert NODE_FOOTER.size == 24 and node_footer_offset(4096) == 4072
    assert (INODE.offset("i_size"), INODE.offset("i_pino"), INODE.offset("i_name"), INODE.size) == (16, 84, 92, 360)
    # 4 KiB: 923 addresses in an inode, 1018 in a direct node.
    assert addrs_per_inode(4096) == 923 and addrs_per_block(4096) == 1018
    assert addrs_per_inode(16384, 36, 50) == 3936 and addrs_per_block(16384) == 4090
    assert addrs_per_inode(16384, 36, 50, 4) == 3936 and addrs_per_block(16384, 4) == 4088


if __name__ == "__main__":
    _self_check()
    print("f2fs.py: offsets and sizes agree")
