//! The quota files of a volume with the `quota` feature (and `project_quota`), as a
//! builder leaves them: usage counted from the tree, written in the quota inodes.
//!
//! uf2fs does not account quota while it writes (a read-write mount refuses quota
//! volumes); a builder that fills a fresh volume ([`Fs::open_to_build`]) calls
//! [`Fs::write_quota_files`] once the tree is complete. The usage is what fsck.f2fs
//! counts: every inode reachable from the root once (a hard-linked inode once), one
//! inode and `(i_blocks - 1)` blocks of space (its data, direct, indirect and xattr
//! node blocks; not the inode block) for its owner, its group and its project id.

use crate::{FileKind, Fs, Ino, Result};
use std::collections::{BTreeMap, HashSet};
use uf2fs_format::quota;
pub use uf2fs_format::quota::{entries, QuotaType, Usage};

/// One quota file written: its type, its inode, and the ids with their usage.
pub type QuotaFileWritten = (QuotaType, Ino, Vec<(u32, Usage)>);

/// What [`Fs::write_quota_files`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuotaReport {
    /// Per quota type written: the type, its inode, and the ids with their usage.
    pub files: Vec<QuotaFileWritten>,
}

impl Fs {
    /// The usage by user, group and project id of every inode reachable from the root
    /// (see the module notes).
    pub fn quota_usage(&self) -> Result<[BTreeMap<u32, Usage>; 3]> {
        let mut usage: [BTreeMap<u32, Usage>; 3] = Default::default();
        let block = self.block_bytes();
        let mut seen: HashSet<Ino> = HashSet::new();
        let mut dirs = vec![self.root()];
        seen.insert(self.root());
        while let Some(dir) = dirs.pop() {
            let i = self.inode(dir)?;
            count(&mut usage, &i.inode, block);
            for e in self.read_dir(dir)? {
                if !seen.insert(e.ino) {
                    continue;
                }
                if e.kind == FileKind::Dir {
                    dirs.push(e.ino);
                } else {
                    count(&mut usage, &self.inode(e.ino)?.inode, block);
                }
            }
        }
        Ok(usage)
    }

    /// Writes the volume's quota files (those the superblock's `qf_ino` names) with
    /// the usage of the tree as it is ([`Fs::quota_usage`]), each laid out by
    /// [`uf2fs_format::quota::build`]. For builders: call it when the tree is
    /// complete, before the last checkpoint.
    pub fn write_quota_files(&self) -> Result<QuotaReport> {
        let qf_ino = self.superblock().qf_ino;
        let mut report = QuotaReport::default();
        if qf_ino.iter().all(|&q| q == 0) {
            return Ok(report);
        }
        let usage = self.quota_usage()?;
        for qtype in QuotaType::ALL {
            let ino = qf_ino[qtype.index()] as Ino;
            if ino == 0 {
                continue;
            }
            let entries: Vec<(u32, Usage)> = usage[qtype.index()].iter().map(|(&id, &u)| (id, u)).collect();
            let bytes = quota::build(qtype, &entries);
            let written = self.write(ino, 0, &bytes)?;
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
            report.files.push((qtype, ino, entries));
        }
        Ok(report)
    }
}

/// Adds one inode's usage to its owner's, group's and project's.
fn count(usage: &mut [BTreeMap<u32, Usage>; 3], inode: &uf2fs_format::node::Inode, block: u64) {
    let space = inode.blocks.saturating_sub(1) * block;
    for (qtype, id) in [
        (QuotaType::User, inode.uid),
        (QuotaType::Group, inode.gid),
        (QuotaType::Project, inode.projid),
    ] {
        let u = usage[qtype.index()].entry(id).or_default();
        u.inodes += 1;
        u.space += space;
    }
}
