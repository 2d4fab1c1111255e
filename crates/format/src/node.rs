//! Node blocks: inodes, direct nodes and indirect nodes, each ending with a footer.

use crate::consts::*;
use crate::le::{put_u16, put_u32, put_u64, u16_at, u32_at, u64_at};
use crate::superblock::{Superblock, FEATURE_EXTRA_ATTR, FEATURE_FLEXIBLE_INLINE_XATTR, FEATURE_INODE_CHKSUM};
use crate::{FormatError, Geometry, Result};

/// `i_inline`: inline xattrs present.
pub const F2FS_INLINE_XATTR: u8 = 0x01;
/// `i_inline`: data stored in the inode.
pub const F2FS_INLINE_DATA: u8 = 0x02;
/// `i_inline`: dentries stored in the inode.
pub const F2FS_INLINE_DENTRY: u8 = 0x04;
/// `i_inline`: inline data present.
pub const F2FS_DATA_EXIST: u8 = 0x08;
/// `i_inline`: extra attributes present.
pub const F2FS_EXTRA_ATTR: u8 = 0x20;
/// `i_inline`: a pinned file (its blocks stay where they are).
pub const F2FS_PIN_FILE: u8 = 0x40;
/// `i_inline`: a compressed file whose reserved blocks were released
/// (`F2FS_IOC_RELEASE_COMPRESS_BLOCKS`): its clusters' `COMPRESS_ADDR` and `NEW_ADDR`
/// slots no longer count as used blocks.
pub const F2FS_COMPRESS_RELEASED: u8 = 0x80;

/// `i_advise`: file is encrypted.
pub const FADVISE_ENCRYPT_BIT: u8 = 0x04;
/// `i_advise`: fallocate with `KEEP_SIZE` reserved blocks past `i_size`, which the
/// size keeps (roll-forward recovery does not grow it to cover them).
pub const FADVISE_KEEP_SIZE_BIT: u8 = 0x10;
/// `i_advise`: file is protected by fs-verity.
pub const FADVISE_VERITY_BIT: u8 = 0x40;
/// `i_flags`: compressed file.
pub const F2FS_COMPR_FL: u32 = 0x0000_0004;
/// `i_flags`: case-insensitive directory.
pub const F2FS_CASEFOLD_FL: u32 = 0x4000_0000;

/// Smallest `i_log_cluster_size` of a compressed file (clusters of 4 blocks).
pub const MIN_COMPRESS_LOG_SIZE: u8 = 2;
/// Largest `i_log_cluster_size` of a compressed file (clusters of 256 blocks).
pub const MAX_COMPRESS_LOG_SIZE: u8 = 8;
/// `i_compress_flag` bit: every compressed cluster carries a checksum of its data.
pub const COMPRESS_CHKSUM: u16 = 1 << 0;
/// `i_compress_flag`: the compression level sits in the bits from this one up.
pub const COMPRESS_LEVEL_OFFSET: u16 = 8;

/// `i_compress_algorithm` values.
pub mod compress_algorithm {
    /// LZO (lzo1x).
    pub const LZO: u8 = 0;
    /// LZ4 (LZ4HC writes the same format, with a level in `i_compress_flag`).
    pub const LZ4: u8 = 1;
    /// Zstandard.
    pub const ZSTD: u8 = 2;
    /// LZO-RLE (lzo1x with the run-of-zeros extension, bitstream version 1).
    pub const LZORLE: u8 = 3;
}

/// The compression settings in the extra attributes of a compressed file's inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compression {
    /// Blocks saved by compression (`i_compr_blocks`).
    pub compr_blocks: u64,
    /// Algorithm, one of [`compress_algorithm`].
    pub algorithm: u8,
    /// log2 of the blocks per cluster (`i_log_cluster_size`).
    pub log_cluster_size: u8,
    /// [`COMPRESS_CHKSUM`] and the level (`i_compress_flag`).
    pub flag: u16,
}

impl Compression {
    /// Whether clusters carry a checksum of their compressed data.
    pub fn has_checksum(&self) -> bool {
        self.flag & COMPRESS_CHKSUM != 0
    }

    /// The compression level the writer used (0: the algorithm's default).
    pub fn level(&self) -> u8 {
        (self.flag >> COMPRESS_LEVEL_OFFSET) as u8
    }
}

// The inode's extra-attribute limits are layout constants ([`crate::consts`]); inode
// code has always named them from here.
pub use crate::consts::{F2FS_TOTAL_EXTRA_ATTR_SIZE, MAX_INLINE_XATTR_ADDRS};

/// Footer flag bit of a node outside a directory's tree (the kernel's cold node mark;
/// such direct nodes go to the warm node log, a directory's to the hot one).
pub const NODE_COLD_BIT: u32 = 1 << 0;
/// Footer flag bit of a node written by fsync, for roll-forward recovery.
pub const NODE_FSYNC_BIT: u32 = 1 << 1;
/// Footer flag bit of a node whose inode's dentry must be recovered with it.
pub const NODE_DENT_BIT: u32 = 1 << 2;
/// Shift of the node's offset in its inode's tree within the footer flag.
pub const NODE_OFFSET_SHIFT: u32 = 3;

/// The footer at the end of every node block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeFooter {
    /// This node's id.
    pub nid: u32,
    /// The inode it belongs to.
    pub ino: u32,
    /// Cold/fsync/dentry marks and the node's offset in the inode's node tree.
    pub flag: u32,
    /// Checkpoint version when written.
    pub cp_ver: u64,
    /// Next node block for roll-forward recovery.
    pub next_blkaddr: u32,
}

impl NodeFooter {
    /// Decodes the footer of node block `b` (one whole block: its last 24 bytes).
    pub fn decode(b: &[u8]) -> Result<NodeFooter> {
        let f = Geometry::of_block("node block", b.len())?.node_footer_offset();
        Ok(NodeFooter {
            nid: u32_at(b, f),
            ino: u32_at(b, f + 4),
            flag: u32_at(b, f + 8),
            cp_ver: u64_at(b, f + 12),
            next_blkaddr: u32_at(b, f + 20),
        })
    }

    /// Encodes into the last 24 bytes of node block `b` (one whole block).
    pub fn encode(&self, b: &mut [u8]) -> Result<()> {
        let f = Geometry::of_block("node block", b.len())?.node_footer_offset();
        put_u32(b, f, self.nid);
        put_u32(b, f + 4, self.ino);
        put_u32(b, f + 8, self.flag);
        put_u64(b, f + 12, self.cp_ver);
        put_u32(b, f + 20, self.next_blkaddr);
        Ok(())
    }

    /// The footer of a new node `nid` of inode `ino` at `offset` in its tree, cold
    /// unless it belongs to a directory; checkpoint version and next block address
    /// are set when the block is written.
    pub fn new(nid: u32, ino: u32, offset: u32, dir: bool) -> NodeFooter {
        NodeFooter {
            nid,
            ino,
            flag: (offset << NODE_OFFSET_SHIFT) | if dir { 0 } else { NODE_COLD_BIT },
            cp_ver: 0,
            next_blkaddr: 0,
        }
    }

    /// The node's logical offset in its inode's tree (0 for the inode itself).
    pub fn offset(&self) -> u32 {
        self.flag >> NODE_OFFSET_SHIFT
    }

    /// Whether the cold mark is set (the node is not a directory's).
    pub fn is_cold(&self) -> bool {
        self.flag & NODE_COLD_BIT != 0
    }

    /// Whether the fsync mark is set.
    pub fn is_fsync(&self) -> bool {
        self.flag & NODE_FSYNC_BIT != 0
    }
}

/// The shape of one inode's node tree, the only place its numbers come together: data
/// addresses in the inode, per direct node, and node ids per indirect node
/// ([`Inode::tree_shape`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeShape {
    /// Data addresses in the inode itself ([`Inode::addrs_per_inode`]).
    pub in_inode: u64,
    /// Data addresses per direct node ([`Inode::addrs_per_block`]: the geometry's,
    /// rounded down to whole clusters for a compressed file).
    pub per_dnode: u64,
    /// Node ids per indirect node ([`Geometry::nids_per_block`]).
    pub per_indirect: u64,
}

impl TreeShape {
    /// The shape of an uncompressed inode holding `in_inode` addresses on a volume of
    /// geometry `geo`.
    pub fn plain(geo: Geometry, in_inode: u64) -> TreeShape {
        TreeShape {
            in_inode,
            per_dnode: geo.addrs_per_block() as u64,
            per_indirect: geo.nids_per_block() as u64,
        }
    }

    /// File blocks the tree addresses: the inode's own, two direct, two indirect and
    /// one double-indirect node's.
    pub fn max_blocks(&self) -> u64 {
        let (d, n) = (self.per_dnode, self.per_indirect);
        self.in_inode + 2 * d + 2 * d * n + d * n * n
    }

    /// The file blocks whose addresses sit in the same node block as block `index`'s,
    /// as `[start, end)`: `[0, in_inode)` for the inode's own, else one direct node's
    /// `per_dnode` blocks (direct nodes follow one another in file order, whether the
    /// inode, an indirect or a double-indirect node points at them).
    pub fn node_span(&self, index: u64) -> (u64, u64) {
        if index < self.in_inode || self.per_dnode == 0 {
            return (0, self.in_inode);
        }
        let start = self.in_inode + (index - self.in_inode) / self.per_dnode * self.per_dnode;
        (start, start + self.per_dnode)
    }
}

/// A time stamp as stored: seconds and nanoseconds.
pub type RawTime = (u64, u32);

/// A decoded inode (`struct f2fs_inode`); block addresses stay in the raw block and are
/// read with [`Inode::addr`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inode {
    /// File type and permissions.
    pub mode: u16,
    /// `FADVISE_*` hints.
    pub advise: u8,
    /// `F2FS_INLINE_*` flags.
    pub inline: u8,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Link count.
    pub links: u32,
    /// Size in bytes.
    pub size: u64,
    /// Blocks used, in 4 KiB blocks (the inode block included).
    pub blocks: u64,
    /// Access time.
    pub atime: RawTime,
    /// Change time.
    pub ctime: RawTime,
    /// Modification time.
    pub mtime: RawTime,
    /// Generation.
    pub generation: u32,
    /// Directory hash depth (directories only).
    pub current_depth: u32,
    /// Node holding the non-inline xattrs (0 if none).
    pub xattr_nid: u32,
    /// `FS_*_FL` / `F2FS_*_FL` flags.
    pub flags: u32,
    /// Parent inode (a hint).
    pub pino: u32,
    /// Name when created (a hint for recovery).
    pub name: Vec<u8>,
    /// Extra directory hash levels (`i_dir_level`).
    pub dir_level: u8,
    /// Largest extent cache: (file offset, block address, length).
    pub ext: (u32, u32, u32),
    /// Bytes of extra attributes at the start of `i_addr` (0 without extra_attr).
    pub extra_isize: u16,
    /// Inline xattr area in 4-byte slots (already resolved as the kernel does).
    pub inline_xattr_addrs: u16,
    /// Project id.
    pub projid: u32,
    /// Inode checksum (inode_checksum feature).
    pub inode_checksum: u32,
    /// Creation time (inode_crtime feature).
    pub crtime: Option<RawTime>,
    /// Compression settings of a compressed file (`F2FS_COMPR_FL` with the extra
    /// attributes that hold them); `None` otherwise.
    pub compress: Option<Compression>,
    /// Direct(2), indirect(2) and double-indirect(1) node ids.
    pub nids: [u32; DEF_NIDS_PER_INODE],
    /// The volume's block geometry: where `i_addr` ends and `i_nid` sits, how many
    /// addresses the inode and its nodes hold.
    pub geometry: Geometry,
}

impl Inode {
    /// Decodes an inode block, resolving extra attributes and inline xattr size from the
    /// superblock's features.
    pub fn decode(b: &[u8], sb: &Superblock) -> Result<Inode> {
        const S: &str = "inode";
        let geometry = sb.geometry();
        FormatError::need(S, b, geometry.block_size())?;
        let inline = b[3];
        let has_extra = inline & F2FS_EXTRA_ATTR != 0;
        if has_extra && !sb.has(FEATURE_EXTRA_ATTR) {
            return Err(FormatError::invalid(
                S,
                "extra attributes without the extra_attr feature",
            ));
        }
        let extra_isize = if has_extra { u16_at(b, I_ADDR_OFFSET) } else { 0 };
        if extra_isize % 4 != 0 || extra_isize as usize > F2FS_TOTAL_EXTRA_ATTR_SIZE {
            return Err(FormatError::invalid(S, format!("extra_isize {extra_isize}")));
        }
        let inline_xattr_addrs = if has_extra && sb.has(FEATURE_FLEXIBLE_INLINE_XATTR) {
            u16_at(b, I_ADDR_OFFSET + 2)
        } else if inline & (F2FS_INLINE_XATTR | F2FS_INLINE_DENTRY) != 0 {
            DEFAULT_INLINE_XATTR_ADDRS as u16
        } else {
            0
        };
        if inline_xattr_addrs as usize > geometry.max_inline_xattr_addrs() {
            return Err(FormatError::invalid(
                S,
                format!("inline xattr size {inline_xattr_addrs} slots"),
            ));
        }
        let fits = |end: usize| has_extra && end <= extra_isize as usize;
        let namelen = (u32_at(b, 88) as usize).min(F2FS_NAME_LEN);
        let flags = u32_at(b, 80);
        let compress = (flags & F2FS_COMPR_FL != 0 && fits(36)).then(|| Compression {
            compr_blocks: u64_at(b, I_ADDR_OFFSET + 24),
            algorithm: b[I_ADDR_OFFSET + 32],
            log_cluster_size: b[I_ADDR_OFFSET + 33],
            flag: u16_at(b, I_ADDR_OFFSET + 34),
        });
        let mut nids = [0u32; DEF_NIDS_PER_INODE];
        for (i, n) in nids.iter_mut().enumerate() {
            *n = u32_at(b, geometry.i_nid_offset() + 4 * i);
        }
        Ok(Inode {
            mode: u16_at(b, 0),
            advise: b[2],
            inline,
            uid: u32_at(b, 4),
            gid: u32_at(b, 8),
            links: u32_at(b, 12),
            size: u64_at(b, 16),
            blocks: u64_at(b, 24),
            atime: (u64_at(b, 32), u32_at(b, 56)),
            ctime: (u64_at(b, 40), u32_at(b, 60)),
            mtime: (u64_at(b, 48), u32_at(b, 64)),
            generation: u32_at(b, 68),
            current_depth: u32_at(b, 72),
            xattr_nid: u32_at(b, 76),
            flags,
            pino: u32_at(b, 84),
            name: b[92..92 + namelen].to_vec(),
            dir_level: b[347],
            ext: (u32_at(b, 348), u32_at(b, 352), u32_at(b, 356)),
            extra_isize,
            inline_xattr_addrs,
            projid: if fits(8) { u32_at(b, I_ADDR_OFFSET + 4) } else { 0 },
            inode_checksum: if fits(12) {
                u32_at(b, I_INODE_CHECKSUM_OFFSET)
            } else {
                0
            },
            crtime: fits(24).then(|| (u64_at(b, I_ADDR_OFFSET + 12), u32_at(b, I_ADDR_OFFSET + 20))),
            compress,
            nids,
            geometry,
        })
    }

    /// Largest file size the node tree of this inode can address, in bytes.
    pub fn max_file_bytes(&self) -> u64 {
        self.tree_shape().max_blocks() * self.geometry.block_size() as u64
    }

    /// The shape of this inode's node tree.
    pub fn tree_shape(&self) -> TreeShape {
        TreeShape {
            in_inode: self.addrs_per_inode() as u64,
            per_dnode: self.addrs_per_block() as u64,
            per_indirect: self.geometry.nids_per_block() as u64,
        }
    }

    /// Whether this inode carries a checksum the superblock says to verify.
    pub fn has_checksum(&self, sb: &Superblock) -> bool {
        sb.has(crate::superblock::FEATURE_INODE_CHKSUM) && self.extra_isize >= 12
    }

    /// First `i_addr` slot that holds a data address (after extra attributes).
    pub fn addr_start(&self) -> usize {
        self.extra_isize as usize / 4
    }

    /// Data block addresses held in the inode itself. For a compressed file, whole
    /// clusters only (the kernel's `addrs_per_inode`: the count rounded down to a
    /// multiple of the cluster size, so that no cluster straddles two node blocks).
    pub fn addrs_per_inode(&self) -> usize {
        let n = self.geometry.addrs_per_inode() - self.addr_start() - self.inline_xattr_addrs as usize;
        self.align_to_cluster(n)
    }

    /// Data block addresses held in each direct node block of this inode: 1018 (4090
    /// with 16 KiB blocks), or for a compressed file that rounded down to a multiple
    /// of the cluster size (the kernel's `addrs_per_block`).
    pub fn addrs_per_block(&self) -> usize {
        self.align_to_cluster(self.geometry.addrs_per_block())
    }

    fn align_to_cluster(&self, n: usize) -> usize {
        match self.cluster_blocks() {
            Some(c) => n - n % c,
            None => n,
        }
    }

    /// Blocks per compression cluster of a compressed regular file whose cluster size
    /// is one F2FS allows (4 to 256 blocks); `None` for any other inode.
    pub fn cluster_blocks(&self) -> Option<usize> {
        let c = self.compress.filter(|_| self.is_compressed())?;
        (MIN_COMPRESS_LOG_SIZE..=MAX_COMPRESS_LOG_SIZE)
            .contains(&c.log_cluster_size)
            .then(|| 1usize << c.log_cluster_size)
    }

    /// Data address `i` (0..addrs_per_inode) held in the inode block `b`.
    pub fn addr(&self, b: &[u8], i: usize) -> u32 {
        u32_at(b, I_ADDR_OFFSET + 4 * (self.addr_start() + i))
    }

    /// Byte range of inline data (or inline dentries) inside the inode block.
    pub fn inline_data_range(&self) -> std::ops::Range<usize> {
        let start = I_ADDR_OFFSET + 4 * (self.addr_start() + DEF_INLINE_RESERVED_SIZE);
        start..start + self.max_inline_data()
    }

    /// Bytes of inline data an inode can hold (`MAX_INLINE_DATA`).
    pub fn max_inline_data(&self) -> usize {
        4 * (self.geometry.addrs_per_inode()
            - self.addr_start()
            - self.inline_xattr_addrs as usize
            - DEF_INLINE_RESERVED_SIZE)
    }

    /// Byte range of the inline xattr area inside the inode block (empty when none).
    pub fn inline_xattr_range(&self) -> std::ops::Range<usize> {
        let end = self.geometry.i_nid_offset();
        end - 4 * self.inline_xattr_addrs as usize..end
    }

    /// Whether flag bit(s) of `i_inline` are set.
    pub fn has_inline(&self, bit: u8) -> bool {
        self.inline & bit != 0
    }

    /// Whether the file is pinned (`F2FS_PIN_FILE` in `i_inline`, set by
    /// `F2FS_IOC_SET_PIN_FILE`): GC leaves its blocks where they are.
    pub fn is_pinned(&self) -> bool {
        self.has_inline(F2FS_PIN_FILE)
    }

    /// `i_gc_failures` of a regular file: the GC passes that could not move a pinned
    /// file's blocks. On disk it is a `__le16` sharing `i_current_depth`'s first bytes.
    pub fn gc_failures(&self) -> u16 {
        (self.current_depth & 0xffff) as u16
    }

    /// Sets `i_gc_failures` (the low half of `i_current_depth`, see
    /// [`Inode::gc_failures`]).
    pub fn set_gc_failures(&mut self, n: u16) {
        self.current_depth = (self.current_depth & 0xffff_0000) | u32::from(n);
    }

    /// Whether the file's contents are encrypted.
    pub fn is_encrypted(&self) -> bool {
        self.advise & FADVISE_ENCRYPT_BIT != 0
    }

    /// Whether the file is protected by fs-verity.
    pub fn is_verity(&self) -> bool {
        self.advise & FADVISE_VERITY_BIT != 0
    }

    /// Whether this is a compressed regular file (`F2FS_COMPR_FL` on a regular file,
    /// as the kernel's `f2fs_compressed_file`; on a directory the flag only marks what
    /// new files inherit).
    pub fn is_compressed(&self) -> bool {
        self.flags & F2FS_COMPR_FL != 0 && self.mode & 0o170000 == 0o100000
    }

    /// Whether the directory is case-insensitive.
    pub fn is_casefold(&self) -> bool {
        self.flags & F2FS_CASEFOLD_FL != 0
    }
}

/// Byte offset of `i_inode_checksum` in an inode block.
const I_INODE_CHECKSUM_OFFSET: usize = I_ADDR_OFFSET + 8;

/// Checksum seed of a volume: CRC of its UUID (`s_chksum_seed`).
pub fn checksum_seed(uuid: &[u8; 16]) -> u32 {
    crate::crc::crc32_raw(!0, uuid)
}

/// The inode checksum F2FS stores when the inode_checksum feature is on: a CRC seeded
/// with the volume seed, the inode number and generation, over the whole block with the
/// checksum field itself counted as zero.
pub fn inode_checksum(seed: u32, b: &[u8]) -> Result<u32> {
    use crate::crc::crc32_raw;
    let footer = Geometry::of_block("inode", b.len())?.node_footer_offset();
    let ino = &b[footer + 4..footer + 8];
    let generation = &b[68..72];
    let mut crc = crc32_raw(crc32_raw(seed, ino), generation);
    crc = crc32_raw(crc, &b[..I_INODE_CHECKSUM_OFFSET]);
    crc = crc32_raw(crc, &[0; 4]);
    Ok(crc32_raw(crc, &b[I_INODE_CHECKSUM_OFFSET + 4..]))
}

impl Inode {
    /// Writes the inode's own fields, extra attributes and node ids into node block `b`
    /// (4096 bytes). Data slots, inline data and the footer are left untouched; the
    /// stored `inode_checksum` is written as is (see [`seal_inode_checksum`]).
    ///
    /// Extra attributes are written when `inline` has [`F2FS_EXTRA_ATTR`], each only if
    /// `extra_isize` covers it; the inline xattr size only under flexible_inline_xattr,
    /// as [`Inode::decode`] reads them back.
    pub fn encode_fields(&self, b: &mut [u8], sb: &Superblock) -> Result<()> {
        const S: &str = "inode";
        let geometry = sb.geometry();
        FormatError::need(S, b, geometry.block_size())?;
        let has_extra = self.inline & F2FS_EXTRA_ATTR != 0;
        let extra = self.extra_isize as usize;
        if self.name.len() > F2FS_NAME_LEN
            || extra % 4 != 0
            || extra > F2FS_TOTAL_EXTRA_ATTR_SIZE
            || (has_extra && !sb.has(FEATURE_EXTRA_ATTR))
            || self.inline_xattr_addrs as usize > geometry.max_inline_xattr_addrs()
            || self.geometry != geometry
        {
            return Err(FormatError::invalid(
                S,
                format!(
                    "name of {} bytes, extra_isize {extra}, inline {:#x}, inline xattr {} slots",
                    self.name.len(),
                    self.inline,
                    self.inline_xattr_addrs
                ),
            ));
        }
        put_u16(b, 0, self.mode);
        b[2] = self.advise;
        b[3] = self.inline;
        let words = [
            (4, self.uid),
            (8, self.gid),
            (12, self.links),
            (56, self.atime.1),
            (60, self.ctime.1),
            (64, self.mtime.1),
            (68, self.generation),
            (72, self.current_depth),
            (76, self.xattr_nid),
            (80, self.flags),
            (84, self.pino),
            (88, self.name.len() as u32),
            (348, self.ext.0),
            (352, self.ext.1),
            (356, self.ext.2),
        ];
        for (off, v) in words {
            put_u32(b, off, v);
        }
        for (off, v) in [
            (16, self.size),
            (24, self.blocks),
            (32, self.atime.0),
            (40, self.ctime.0),
            (48, self.mtime.0),
        ] {
            put_u64(b, off, v);
        }
        b[92..92 + F2FS_NAME_LEN].fill(0);
        b[92..92 + self.name.len()].copy_from_slice(&self.name);
        b[347] = self.dir_level;
        for (i, nid) in self.nids.iter().enumerate() {
            put_u32(b, geometry.i_nid_offset() + 4 * i, *nid);
        }
        if has_extra {
            self.encode_extra(b, sb);
        }
        Ok(())
    }

    /// The extra attributes at the start of `i_addr`, as far as `extra_isize` reaches.
    fn encode_extra(&self, b: &mut [u8], sb: &Superblock) {
        let a = I_ADDR_OFFSET;
        let fits = |end: usize| end <= self.extra_isize as usize;
        put_u16(b, a, self.extra_isize);
        if sb.has(FEATURE_FLEXIBLE_INLINE_XATTR) {
            put_u16(b, a + 2, self.inline_xattr_addrs);
        }
        if fits(8) {
            put_u32(b, a + 4, self.projid);
        }
        if fits(12) {
            put_u32(b, I_INODE_CHECKSUM_OFFSET, self.inode_checksum);
        }
        if let (Some((sec, nsec)), true) = (self.crtime, fits(24)) {
            put_u64(b, a + 12, sec);
            put_u32(b, a + 20, nsec);
        }
        if let (Some(c), true) = (self.compress, fits(36)) {
            put_u64(b, a + 24, c.compr_blocks);
            b[a + 32] = c.algorithm;
            b[a + 33] = c.log_cluster_size;
            put_u16(b, a + 34, c.flag);
        }
    }

    /// Encodes a whole inode block: the fields, data addresses `addrs` from the first
    /// data slot on (at most [`Inode::addrs_per_inode`]), the footer, and the checksum
    /// when the volume keeps inode checksums.
    pub fn encode(&self, sb: &Superblock, addrs: &[u32], footer: &NodeFooter) -> Result<Vec<u8>> {
        if addrs.len() > self.addrs_per_inode() {
            return Err(FormatError::invalid(
                "inode",
                format!("{} addresses, room for {}", addrs.len(), self.addrs_per_inode()),
            ));
        }
        let mut b = vec![0u8; sb.block_size()];
        self.encode_fields(&mut b, sb)?;
        for (i, addr) in addrs.iter().enumerate() {
            put_u32(&mut b, I_ADDR_OFFSET + 4 * (self.addr_start() + i), *addr);
        }
        footer.encode(&mut b)?;
        seal_inode_checksum(&mut b, sb)?;
        Ok(b)
    }
}

/// Stores the inode checksum of a finished inode block (footer, data and inline areas
/// written) when the volume keeps inode checksums and the inode has room for one.
pub fn seal_inode_checksum(b: &mut [u8], sb: &Superblock) -> Result<()> {
    FormatError::need("inode", b, sb.block_size())?;
    let has_extra = b[3] & F2FS_EXTRA_ATTR != 0;
    if !sb.has(FEATURE_INODE_CHKSUM) || !has_extra || u16_at(b, I_ADDR_OFFSET) < 12 {
        return Ok(());
    }
    let crc = inode_checksum(checksum_seed(&sb.uuid), b)?;
    put_u32(b, I_INODE_CHECKSUM_OFFSET, crc);
    Ok(())
}

/// Entry `i` (0..1018, or 0..4090 with 16 KiB blocks) of a direct node (a block
/// address) or an indirect node (a nid); `b` is the whole node block.
pub fn node_slot(b: &[u8], i: usize) -> Result<u32> {
    if i >= Geometry::of_block("node block", b.len())?.addrs_per_block() {
        return Err(FormatError::invalid("node block", format!("slot {i} out of range")));
    }
    Ok(u32_at(b, 4 * i))
}

/// Sets entry `i` of a direct or indirect node block `b` (see [`node_slot`]).
pub fn set_node_slot(b: &mut [u8], i: usize, value: u32) -> Result<()> {
    if i >= Geometry::of_block("node block", b.len())?.addrs_per_block() {
        return Err(FormatError::invalid("node block", format!("slot {i} out of range")));
    }
    put_u32(b, 4 * i, value);
    Ok(())
}

/// Node id `i` (0..5: direct, direct, indirect, indirect, double indirect) of inode
/// block `b` (the whole block).
pub fn inode_nid(b: &[u8], i: usize) -> Result<u32> {
    let at = Geometry::of_block("inode", b.len())?.i_nid_offset();
    if i >= DEF_NIDS_PER_INODE {
        return Err(FormatError::invalid("inode", format!("node id slot {i} out of range")));
    }
    Ok(u32_at(b, at + 4 * i))
}

/// Sets node id `i` of inode block `b` (see [`inode_nid`]).
pub fn set_inode_nid(b: &mut [u8], i: usize, nid: u32) -> Result<()> {
    let at = Geometry::of_block("inode", b.len())?.i_nid_offset();
    if i >= DEF_NIDS_PER_INODE {
        return Err(FormatError::invalid("inode", format!("node id slot {i} out of range")));
    }
    put_u32(b, at + 4 * i, nid);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::TreeShape;

    #[test]
    fn node_spans_follow_the_inode_then_one_direct_node_after_another() {
        // A compressed file with clusters of 4: 900 addresses in the inode, 1016 a node.
        let s = TreeShape {
            in_inode: 900,
            per_dnode: 1016,
            per_indirect: 1018,
        };
        assert_eq!(s.node_span(0), (0, 900));
        assert_eq!(s.node_span(899), (0, 900));
        assert_eq!(s.node_span(900), (900, 1916));
        assert_eq!(s.node_span(1915), (900, 1916));
        assert_eq!(s.node_span(1916), (1916, 2932));
        // Past the two direct nodes: the first node under the first indirect node.
        assert_eq!(s.node_span(2932 + 5), (2932, 3948));
        let far = s.max_blocks() - 1;
        let (a, b) = s.node_span(far);
        assert_eq!(b, s.max_blocks());
        assert_eq!(b - a, 1016);
    }
}
