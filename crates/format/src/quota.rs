//! Quota files: the contents of an F2FS volume's quota inodes (`quota`,
//! `project_quota`), in the Linux quota format v2 (`QFMT_VFS_V1`, revision 1 entries)
//! that Linux's `quota_v2`/`quota_tree` and f2fs-tools' fsck read.
//!
//! A file is a run of 1 KiB quota blocks: block 0 holds the header (magic, version)
//! and the format's info (grace times, blocks in the file, the first free block, the
//! first block with a free entry); block 1 is the root of a four-level radix tree
//! indexed by the bytes of the id, most significant first (256 references of 32 bits
//! a block); the tree's leaves point at data blocks, each a 16-byte header (next and
//! previous block with free entries, entries used) and 14 entries of 72 bytes (id,
//! limits, usage).
//!
//! [`build`] lays a file out as Linux's and f2fs-tools' quota tree code leave it when
//! the ids are inserted in ascending order into an empty file: a tree block is taken
//! from the end of the file the first time a path needs it, parents before children,
//! and a data block when no block has a free entry, after its path's tree blocks.
//! `mkfs.f2fs` writes this layout for the root directory's one id.

/// Bytes of a quota block (`QT_BLKSIZE`).
pub const QT_BLKSIZE: usize = 1024;
/// Quota block of the tree's root (`QT_TREEOFF`).
pub const QT_TREEOFF: u32 = 1;
/// Levels of the tree (`QT_TREEDEPTH`).
const QT_TREEDEPTH: usize = 4;
/// Bytes of a data block's header (`struct qt_disk_dqdbheader`).
const DATA_HEADER: usize = 16;
/// Bytes of an entry (`struct v2r1_disk_dqblk`).
const ENTRY_BYTES: usize = 72;
/// Entries in a data block.
pub const ENTRIES_PER_BLOCK: usize = (QT_BLKSIZE - DATA_HEADER) / ENTRY_BYTES;
/// Grace time of both limits, in seconds (`MAX_DQ_TIME`, `MAX_IQ_TIME`: a week).
pub const DEFAULT_GRACE: u32 = 7 * 24 * 60 * 60;
/// Byte offset of the info header (`V2_DQINFOOFF`).
const INFO_OFFSET: usize = 8;

/// The three quota types, in the order of the superblock's `qf_ino`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QuotaType {
    /// By owner (`USRQUOTA`).
    User,
    /// By group (`GRPQUOTA`).
    Group,
    /// By project id (`PRJQUOTA`).
    Project,
}

impl QuotaType {
    /// All three, in `qf_ino` order.
    pub const ALL: [QuotaType; 3] = [QuotaType::User, QuotaType::Group, QuotaType::Project];

    /// Index in the superblock's `qf_ino`.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The file's magic number.
    pub fn magic(self) -> u32 {
        match self {
            QuotaType::User => 0xd9c0_1f11,
            QuotaType::Group => 0xd9c0_1927,
            QuotaType::Project => 0xd9c0_3f14,
        }
    }

    /// The name Linux gives the type.
    pub fn name(self) -> &'static str {
        match self {
            QuotaType::User => "user",
            QuotaType::Group => "group",
            QuotaType::Project => "project",
        }
    }
}

/// What one id uses: inodes, and bytes of space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Inodes owned (`dqb_curinodes`).
    pub inodes: u64,
    /// Bytes of space used (`dqb_curspace`).
    pub space: u64,
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn get_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]))
}

/// A quota file being laid out.
struct Builder {
    blocks: Vec<[u8; QT_BLKSIZE]>,
    /// The block with a free entry, 0 when none.
    free_entry: u32,
}

impl Builder {
    /// A new block at the end of the file.
    fn new_block(&mut self) -> u32 {
        self.blocks.push([0; QT_BLKSIZE]);
        (self.blocks.len() - 1) as u32
    }

    /// The reference at `index` of tree block `blk`.
    fn reference(&self, blk: u32, index: usize) -> u32 {
        get_u32(&self.blocks[blk as usize], index * 4)
    }

    /// Puts the entry of `id` in a data block with room, and returns that block.
    fn place_entry(&mut self, id: u32, usage: Usage) -> u32 {
        let blk = if self.free_entry != 0 {
            self.free_entry
        } else {
            let b = self.new_block();
            self.free_entry = b;
            b
        };
        let block = &mut self.blocks[blk as usize];
        let used = u16::from_le_bytes([block[8], block[9]]) as usize;
        let at = DATA_HEADER + used * ENTRY_BYTES;
        put_u32(block, at, id);
        put_u64(block, at + 24, usage.inodes);
        put_u64(block, at + 48, usage.space);
        if block[at..at + ENTRY_BYTES].iter().all(|&b| b == 0) {
            // An all-zero entry reads as unused: Linux marks it with itime 1.
            put_u64(block, at + 64, 1);
        }
        block[8..10].copy_from_slice(&((used + 1) as u16).to_le_bytes());
        if used + 1 == ENTRIES_PER_BLOCK {
            // Full: off the list of blocks with free entries (it was alone on it).
            self.free_entry = 0;
        }
        blk
    }

    /// Inserts `id` below tree block `blk` at `depth`.
    fn insert(&mut self, blk: u32, depth: usize, id: u32, usage: Usage) {
        let index = ((id >> ((QT_TREEDEPTH - depth - 1) * 8)) & 0xff) as usize;
        let child = if depth == QT_TREEDEPTH - 1 {
            self.place_entry(id, usage)
        } else {
            let mut child = self.reference(blk, index);
            if child == 0 {
                child = self.new_block();
                put_u32(&mut self.blocks[blk as usize], index * 4, child);
            }
            self.insert(child, depth + 1, id, usage);
            child
        };
        put_u32(&mut self.blocks[blk as usize], index * 4, child);
    }
}

/// The bytes of a quota file of type `qtype` holding `entries` (id and usage, no
/// limits), as the quota tree code leaves it when they are inserted in ascending id
/// order (see the module notes). The file is whole quota blocks; its length is the
/// quota inode's size.
pub fn build(qtype: QuotaType, entries: &[(u32, Usage)]) -> Vec<u8> {
    let mut sorted = entries.to_vec();
    sorted.sort_by_key(|(id, _)| *id);
    sorted.dedup_by_key(|(id, _)| *id);
    let mut b = Builder {
        blocks: vec![[0; QT_BLKSIZE]; QT_TREEOFF as usize + 1],
        free_entry: 0,
    };
    for (id, usage) in sorted {
        b.insert(QT_TREEOFF, 0, id, usage);
    }
    let count = b.blocks.len() as u32;
    let head = &mut b.blocks[0];
    put_u32(head, 0, qtype.magic());
    put_u32(head, 4, 1);
    put_u32(head, INFO_OFFSET, DEFAULT_GRACE);
    put_u32(head, INFO_OFFSET + 4, DEFAULT_GRACE);
    put_u32(head, INFO_OFFSET + 8, 0);
    put_u32(head, INFO_OFFSET + 12, count);
    put_u32(head, INFO_OFFSET + 16, 0);
    put_u32(head, INFO_OFFSET + 20, b.free_entry);
    b.blocks.concat()
}

/// The entries of a quota file (id and usage), by walking its tree; `None` when the
/// file is not a well-formed v2 file of `qtype` (tests and `uf2fs info` read it back).
pub fn entries(qtype: QuotaType, file: &[u8]) -> Option<Vec<(u32, Usage)>> {
    if file.len() < 2 * QT_BLKSIZE || get_u32(file, 0) != qtype.magic() || get_u32(file, 4) != 1 {
        return None;
    }
    let blocks = (file.len() / QT_BLKSIZE) as u32;
    let block = |n: u32| -> Option<&[u8]> {
        (n < blocks).then(|| &file[n as usize * QT_BLKSIZE..(n as usize + 1) * QT_BLKSIZE])
    };
    let mut out = Vec::new();
    // (block, depth, id bits so far)
    let mut todo = vec![(QT_TREEOFF, 0usize, 0u32)];
    let mut visits = 0usize;
    while let Some((blk, depth, prefix)) = todo.pop() {
        visits += 1;
        if visits > blocks as usize * 256 {
            return None;
        }
        let data = block(blk)?;
        if depth == QT_TREEDEPTH {
            for e in 0..ENTRIES_PER_BLOCK {
                let at = DATA_HEADER + e * ENTRY_BYTES;
                let entry = &data[at..at + ENTRY_BYTES];
                if entry.iter().all(|&b| b == 0) {
                    continue;
                }
                let id = get_u32(entry, 0);
                let u64_at = |o: usize| u64::from_le_bytes(entry[o..o + 8].try_into().unwrap_or([0; 8]));
                if id == prefix {
                    out.push((
                        id,
                        Usage {
                            inodes: u64_at(24),
                            space: u64_at(48),
                        },
                    ));
                }
            }
            continue;
        }
        for index in (0..256u32).rev() {
            let r = get_u32(data, index as usize * 4);
            if r != 0 {
                let shift = (QT_TREEDEPTH - depth - 1) * 8;
                todo.push((r, depth + 1, prefix | (index << shift)));
            }
        }
    }
    out.sort_by_key(|(id, _)| *id);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_id_zero_is_the_file_mkfs_f2fs_writes() {
        let f = build(QuotaType::Group, &[(0, Usage { inodes: 2, space: 8192 })]);
        assert_eq!(f.len(), 6 * 1024);
        assert_eq!(get_u32(&f, 0), 0xd9c0_1927);
        assert_eq!(get_u32(&f, 20), 6, "dqi_blocks");
        assert_eq!(get_u32(&f, 28), 5, "dqi_free_entry");
        for (blk, next) in [(1, 2), (2, 3), (3, 4), (4, 5)] {
            assert_eq!(f[blk * 1024], next);
            assert!(f[blk * 1024 + 1..(blk + 1) * 1024].iter().all(|&b| b == 0));
        }
        assert_eq!(f[5120 + 8], 1, "one entry");
        assert_eq!(u64::from_le_bytes(f[5136 + 24..5136 + 32].try_into().unwrap()), 2);
        assert_eq!(u64::from_le_bytes(f[5136 + 48..5136 + 56].try_into().unwrap()), 8192);
    }

    #[test]
    fn many_ids_read_back_and_share_tree_blocks() {
        let ids: Vec<(u32, Usage)> = (0..40u32)
            .map(|i| {
                (
                    i * 37 + (i % 3) * 70_000,
                    Usage {
                        inodes: i as u64 + 1,
                        space: 4096 * i as u64,
                    },
                )
            })
            .chain([(u32::MAX - 1, Usage { inodes: 9, space: 0 })])
            .collect();
        let f = build(QuotaType::Project, &ids);
        let mut want = ids.clone();
        want.sort_by_key(|(id, _)| *id);
        assert_eq!(entries(QuotaType::Project, &f).unwrap(), want);
        assert!(entries(QuotaType::User, &f).is_none(), "another type's magic");
        // 41 entries in 3 data blocks; the last has free entries.
        let blocks = get_u32(&f, 20);
        assert_eq!(blocks as usize * 1024, f.len());
        assert_ne!(get_u32(&f, 28), 0);
    }
}
