//! The quota files of a volume with the `quota` feature (and `project_quota`): the one
//! place that builds them, for mkfs and for builders alike.
//!
//! uf2fs does not account quota while it writes (a read-write mount refuses quota
//! volumes). The quota files are written whole, twice in a volume's life at most:
//! mkfs makes each quota inode with the usage of the directories it makes
//! (`QuotaFile::inode`, `QuotaFile::data_blocks`), and a builder that fills a
//! fresh volume ([`Fs::open_to_build`]) calls [`Fs::write_quota_files`] once the tree
//! is complete. Both count usage with [`QuotaUsage`] and lay a file out with
//! [`QuotaFile::new`] (the bytes themselves are [`uf2fs_format::quota::build`]'s).
//!
//! The usage is what fsck.f2fs counts: every inode reachable from the root once (a
//! hard-linked inode once), one inode and `(i_blocks - 1)` blocks of space (its data,
//! direct, indirect and xattr node blocks; not the inode block) for its owner, its
//! group and its project id.

use crate::{FileKind, Fs, Ino, Result};
use std::collections::{BTreeMap, HashSet};
use uf2fs_format::node::{Inode, F2FS_EXTRA_ATTR};
use uf2fs_format::quota;
pub use uf2fs_format::quota::{entries, QuotaType, Usage};
use uf2fs_format::superblock::{Superblock, FEATURE_EXTRA_ATTR, FEATURE_INODE_CRTIME};

/// Bytes mkfs keeps for a new volume's quota file (which holds one id): mkfs.f2fs's
/// `QUOTA_DATA` is this in whole blocks.
const QUOTA_FILE_ROOM: usize = 6 * 1024;

/// Data blocks mkfs gives each quota inode on a volume of `block_bytes`-byte blocks
/// (mkfs.f2fs's `QUOTA_DATA`): 6 KiB rounded up to whole blocks, two of
/// 4 KiB or one of 16 KiB. fsck.f2fs checks the file's size against its blocks.
pub fn quota_data_blocks(block_bytes: usize) -> u32 {
    QUOTA_FILE_ROOM.div_ceil(block_bytes) as u32
}

/// One quota file written: its type, its inode, and the ids with their usage.
pub type QuotaFileWritten = (QuotaType, Ino, Vec<(u32, Usage)>);

/// What [`Fs::write_quota_files`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuotaReport {
    /// Per quota type written: the type, its inode, and the ids with their usage.
    pub files: Vec<QuotaFileWritten>,
}

/// Usage by quota type (in `qf_ino` order) and id, counted inode by inode as fsck.f2fs
/// counts it (see the module notes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuotaUsage {
    by_type: [BTreeMap<u32, Usage>; 3],
}

impl QuotaUsage {
    /// Adds one inode's usage to its owner's, group's and project's: one inode, and
    /// `(i_blocks - 1)` blocks of `block_bytes` of space.
    pub fn count(&mut self, inode: &Inode, block_bytes: u64) {
        let space = inode.blocks.saturating_sub(1) * block_bytes;
        for (qtype, id) in [
            (QuotaType::User, inode.uid),
            (QuotaType::Group, inode.gid),
            (QuotaType::Project, inode.projid),
        ] {
            let u = self.by_type[qtype.index()].entry(id).or_default();
            u.inodes += 1;
            u.space += space;
        }
    }

    /// The ids of `qtype` with their usage, ascending by id.
    pub fn entries(&self, qtype: QuotaType) -> Vec<(u32, Usage)> {
        self.by_type[qtype.index()].iter().map(|(&id, &u)| (id, u)).collect()
    }

    /// The usage by type index and id.
    pub fn into_maps(self) -> [BTreeMap<u32, Usage>; 3] {
        self.by_type
    }
}

/// A quota file as uf2fs writes it: its type, the ids it holds with their usage, and
/// its bytes (whole 1 KiB quota blocks; their length is the quota inode's size).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaFile {
    /// The quota type.
    pub qtype: QuotaType,
    /// The ids held, with their usage, ascending by id.
    pub entries: Vec<(u32, Usage)>,
    /// The file's contents.
    pub bytes: Vec<u8>,
}

impl QuotaFile {
    /// The quota file of `qtype` holding `usage`'s ids of that type.
    pub fn new(qtype: QuotaType, usage: &QuotaUsage) -> QuotaFile {
        let entries = usage.entries(qtype);
        let bytes = quota::build(qtype, &entries);
        QuotaFile { qtype, entries, bytes }
    }

    /// The file's inode as mkfs.f2fs makes it on a new volume: a regular file of mode
    /// 0600 owned by `owner` (uid, gid: the root directory's), immutable, with
    /// [`quota_data_blocks`] data blocks (their addresses go to the inode's encoder),
    /// a size of the file's bytes, no parent or name, all times `time_secs` but a
    /// creation time of 0. With extra_attr its `i_extra_isize` is `extra_isize`, the
    /// one the volume's other new inodes get.
    pub(crate) fn inode(&self, sb: &Superblock, owner: (u32, u32), time_secs: u64, extra_isize: u16) -> Inode {
        let time = (time_secs, 0);
        let extra = sb.feature & FEATURE_EXTRA_ATTR != 0;
        Inode {
            mode: 0o100600,
            advise: 0,
            inline: if extra { F2FS_EXTRA_ATTR } else { 0 },
            uid: owner.0,
            gid: owner.1,
            links: 1,
            size: self.bytes.len() as u64,
            blocks: 1 + quota_data_blocks(sb.block_size()) as u64,
            atime: time,
            ctime: time,
            mtime: time,
            generation: 0,
            current_depth: 0,
            xattr_nid: 0,
            flags: crate::namei::flags::FS_IMMUTABLE_FL,
            pino: 0,
            name: Vec::new(),
            dir_level: 0,
            ext: (0, 0, 0),
            extra_isize: if extra { extra_isize } else { 0 },
            inline_xattr_addrs: 0,
            projid: 0,
            inode_checksum: 0,
            crtime: (sb.feature & FEATURE_INODE_CRTIME != 0).then_some((0, 0)),
            compress: None,
            nids: [0; 5],
            geometry: sb.geometry(),
        }
    }

    /// The contents of the [`quota_data_blocks`] data blocks of `block_bytes` mkfs
    /// gives the file: its bytes, zero-padded.
    pub(crate) fn data_blocks(&self, block_bytes: usize) -> Vec<Vec<u8>> {
        let room = quota_data_blocks(block_bytes) as usize * block_bytes;
        debug_assert!(
            self.bytes.len() <= room,
            "a new volume's {} quota file of {} bytes overflows its {room} bytes of data blocks",
            self.qtype.name(),
            self.bytes.len()
        );
        let mut bytes = self.bytes.clone();
        bytes.resize(room, 0);
        bytes.chunks(block_bytes).map(<[u8]>::to_vec).collect()
    }
}

impl Fs {
    /// The usage by user, group and project id of every inode reachable from the root
    /// (see the module notes).
    pub fn quota_usage(&self) -> Result<[BTreeMap<u32, Usage>; 3]> {
        Ok(self.count_quota_usage()?.into_maps())
    }

    /// [`Fs::quota_usage`] as a [`QuotaUsage`].
    fn count_quota_usage(&self) -> Result<QuotaUsage> {
        let mut usage = QuotaUsage::default();
        let block = self.block_bytes();
        let mut seen: HashSet<Ino> = HashSet::new();
        let mut dirs = vec![self.root()];
        seen.insert(self.root());
        while let Some(dir) = dirs.pop() {
            let i = self.inode(dir)?;
            usage.count(&i.inode, block);
            for e in self.read_dir(dir)? {
                if !seen.insert(e.ino) {
                    continue;
                }
                if e.kind == FileKind::Dir {
                    dirs.push(e.ino);
                } else {
                    usage.count(&self.inode(e.ino)?.inode, block);
                }
            }
        }
        Ok(usage)
    }

    /// Writes the volume's quota files (those the superblock's `qf_ino` names) with
    /// the usage of the tree as it is ([`Fs::quota_usage`]), each laid out by
    /// [`QuotaFile::new`]. For builders: call it when the tree is complete, before the
    /// last checkpoint.
    pub fn write_quota_files(&self) -> Result<QuotaReport> {
        let qf_ino = self.superblock().qf_ino;
        let mut report = QuotaReport::default();
        if qf_ino.iter().all(|&q| q == 0) {
            return Ok(report);
        }
        let usage = self.count_quota_usage()?;
        for qtype in QuotaType::ALL {
            let ino = qf_ino[qtype.index()] as Ino;
            if ino == 0 {
                continue;
            }
            let file = QuotaFile::new(qtype, &usage);
            let bytes = &file.bytes;
            let written = self.write(ino, 0, bytes)?;
            if written < bytes.len() {
                return Err(crate::Error::NoSpace(format!(
                    "no room for the {} quota file ({} bytes)",
                    qtype.name(),
                    bytes.len()
                )));
            }
            if self.stat(ino)?.size != bytes.len() as u64 {
                self.truncate(ino, bytes.len() as u64)?;
            }
            report.files.push((qtype, ino, file.entries));
        }
        Ok(report)
    }
}
