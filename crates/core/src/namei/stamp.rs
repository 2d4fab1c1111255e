//! Setting an inode's times and generation exactly, for images built from a tree
//! (`uf2fs mkfs` with a source): unlike [`Fs::setattr`] the change time is the one
//! given, the creation time too (where the inode keeps one), and `i_generation` is
//! fixed, so that the same tree gives the same bytes.

use super::Op;
use crate::{Fs, Ino, Result, Timestamp};
use uf2fs_format::node::RawTime;

/// The times and generation [`Fs::set_stamp`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Access time.
    pub atime: Timestamp,
    /// Modification time.
    pub mtime: Timestamp,
    /// Change time.
    pub ctime: Timestamp,
    /// Creation time (kept only where the volume has `inode_crtime`).
    pub crtime: Timestamp,
    /// `i_generation`.
    pub generation: u32,
}

use super::setattr::raw;

impl Fs {
    /// Sets the times and generation of inode `ino` to `s`, nothing else.
    pub fn set_stamp(&self, ino: Ino, s: &Stamp) -> Result<()> {
        let times = [s.atime, s.mtime, s.ctime, s.crtime].map(raw);
        let [a, m, c, cr] = times;
        let (a, m, c, cr) = (a?, m?, c?, cr?);
        self.with_room(|fs| {
            let mut op = fs.begin_op()?;
            let r = op.set_stamp(ino, [a, m, c, cr], s.generation);
            op.end(r)
        })
    }
}

impl Op<'_> {
    fn set_stamp(&mut self, ino: Ino, [a, m, c, cr]: [RawTime; 4], generation: u32) -> Result<()> {
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino]);
        let mut i = self.load(ino)?;
        self.ensure_room(super::need([0, 0, 0, 1, 1, 0], 0), 0)?;
        self.commit();
        i.inode.atime = a;
        i.inode.mtime = m;
        i.inode.ctime = c;
        if i.inode.crtime.is_some() && self.fs.superblock().has(uf2fs_format::superblock::FEATURE_INODE_CRTIME) {
            i.inode.crtime = Some(cr);
        }
        i.inode.generation = generation;
        self.t.store_inode(i)
    }
}
