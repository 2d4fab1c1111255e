//! Open inodes and orphans, as F2FS keeps them (checkpoint.c's orphan list, namei.c's
//! unlink, inode.c's eviction).
//!
//! A read-write file system counts the open handles of every inode
//! ([`Fs::open_file`], [`Fs::release_file`]). When unlink, rmdir or a rename over a
//! name takes the last link of an inode that is open, its entry goes and its link count
//! drops to 0, but its inode, nodes and data stay and its number joins the orphan list:
//! reads, writes, stat, fsync and truncate through the number keep working. Its last
//! release frees it as an unlink frees an inode no one holds, and it leaves the list.
//!
//! Every checkpoint records the list in its pack's orphan blocks
//! (`CP_ORPHAN_PRESENT_FLAG`), so that after a crash the next read-write open frees
//! what was orphaned ([`Fs::reclaim_orphans`], as the kernel's
//! `f2fs_recover_orphan_inodes`); an unmount releases every handle first, so clean
//! images hold no orphans. The list is bounded as the kernel bounds it: its blocks
//! must fit the checkpoint pack, and an unlink that would pass the bound fails with
//! [`Error::NoSpace`] before it changes anything.
//!
//! Locking: the table has its own mutex, taken alone and briefly (after the inode
//! locks in the lock order of lockrank.rs). Handle counts change under the inode's lock, so
//! an open, a release and an unlink of one inode never interleave.

pub(crate) mod table;

use table::OrphanSlot;

use crate::inode::InodeMut;
use crate::ops::Op;
use crate::{Error, Fs, Ino, Result};
use uf2fs_format::consts::NULL_ADDR;

impl Fs {
    /// Records one more open handle on inode `ino` (a FUSE open, create or opendir):
    /// while it has handles, losing its last link makes it an orphan instead of freeing
    /// it. [`Error::NotFound`] when the inode is not allocated (it went between a lookup
    /// and the open). A read-only file system counts nothing: its inodes cannot go.
    pub fn open_file(&self, ino: Ino) -> Result<()> {
        let Ok(rw) = self.rw() else {
            self.stat(ino)?;
            return Ok(());
        };
        let _g = rw.lock_inodes(&[ino]);
        self.check_allocated(ino)?;
        rw.open_inodes().opened(ino);
        Ok(())
    }

    /// Gives back a handle taken with [`Fs::open_file`]. The last handle of an orphan
    /// frees it (data, nodes, inode) and takes it off the orphan list. [`Error::Invalid`]
    /// when `ino` has no handles; nothing on a read-only file system.
    pub fn release_file(&self, ino: Ino) -> Result<()> {
        let Ok(rw) = self.rw() else {
            return Ok(());
        };
        // Handle counts change under the inode's lock (see the module notes).
        {
            let _g = rw.lock_inodes(&[ino]);
            if !rw.open_inodes().is_last_of_orphan(ino)? {
                rw.open_inodes().closed(ino)?;
                return Ok(());
            }
        }
        // The last handle of an orphan: it is freed by an operation, which takes
        // cp_lock before the inode's lock. A failed file system still counts the
        // release (the orphan stays listed, to be freed at the next open).
        let op = self.begin_op();
        let g = rw.lock_inodes(&[ino]);
        if !rw.open_inodes().closed(ino)? {
            return Ok(()); // opened again meanwhile
        }
        let mut op = op?;
        let r = op.free_orphan(ino);
        drop(g);
        op.end(r)
    }

    /// Frees the orphans a checkpoint recorded (at a read-write open, before anyone
    /// else can reach the file system); the next checkpoint records the empty list.
    /// Each must be an allocated inode without links: anything else is
    /// [`Error::Corrupt`] and the open fails.
    pub(crate) fn reclaim_orphans(&self, inos: &[Ino]) -> Result<()> {
        let mut inos = inos.to_vec();
        inos.sort_unstable();
        inos.dedup();
        for ino in inos {
            let shown = || format!("orphan inode {ino}");
            self.check_allocated(ino).map_err(|_| {
                Error::corrupt(
                    shown(),
                    Some(self.cps.pack_blkaddr),
                    "is on the orphan list of the checkpoint pack at this block but not allocated; run fsck.f2fs",
                )
            })?;
            let mut op = self.begin_op()?;
            let r = op.reclaim(ino);
            op.end(r)?;
        }
        Ok(())
    }

    /// Gives back every handle and frees every orphan (before an unmount checkpoint).
    pub(crate) fn release_all(&self) -> Result<()> {
        let rw = self.rw()?;
        for ino in rw.open_inodes().close_all() {
            let mut op = self.begin_op()?;
            let g = rw.lock_inodes(&[ino]);
            let r = op.free_orphan(ino);
            drop(g);
            op.end(r)?;
        }
        Ok(())
    }

    /// [`Error::NotFound`] unless inode `ino` is allocated (its NAT entry names it and
    /// points at a block).
    pub(crate) fn check_allocated(&self, ino: Ino) -> Result<()> {
        let e = self
            .nodes()
            .nat_entry(self.device(), ino)
            .map_err(|_| Error::NotFound(format!("inode {ino}")))?;
        if e.block_addr == NULL_ADDR || e.ino != ino {
            return Err(Error::NotFound(format!("inode {ino}")));
        }
        Ok(())
    }
}

impl<'a> Op<'a> {
    /// Before an operation's first change: when inode `ino` is open and keeps
    /// `links_after` links (none), an orphan slot for it; [`Error::NoSpace`] when the
    /// orphan list is full. The caller holds `ino`'s lock, so no open or release can
    /// change the answer before [`Op::drop_last_link`].
    pub(crate) fn orphan_slot(&self, ino: Ino, links_after: u32) -> Result<Option<OrphanSlot<'a>>> {
        let rw: &'a crate::fs::ReadWrite = self.rw;
        if links_after == 0 && rw.open_inodes().is_open(ino) {
            return rw.open_inodes().reserve().map(Some);
        }
        Ok(None)
    }

    /// Inode `i` lost its last link: with a slot (it is open) it is stored without
    /// links and becomes an orphan; without, it is freed with all it holds.
    pub(crate) fn drop_last_link(&mut self, i: InodeMut, slot: Option<OrphanSlot<'_>>) -> Result<()> {
        match slot {
            Some(slot) => {
                let ino = i.ino;
                self.t.store_inode(i)?;
                slot.fill(ino);
                Ok(())
            }
            None => self.t.free_inode(&i),
        }
    }

    /// Frees orphan `ino` (its last handle went) and takes it off the list. The caller
    /// holds `ino`'s lock.
    fn free_orphan(&mut self, ino: Ino) -> Result<()> {
        let rw = self.rw;
        let i = self.load(ino)?;
        self.commit();
        self.t.free_inode(&i)?;
        rw.open_inodes().forget_orphan(ino);
        Ok(())
    }

    /// Frees orphan `ino` of the opened checkpoint.
    fn reclaim(&mut self, ino: Ino) -> Result<()> {
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino]);
        let i = self.load(ino)?;
        if i.inode.links != 0 {
            return Err(Error::corrupt(
                format!("orphan inode {ino}"),
                self.t.nodes.blkaddr_of(self.t.dev, ino),
                format!(
                    "is on the checkpoint's orphan list but has {} links; run fsck.f2fs",
                    i.inode.links
                ),
            ));
        }
        self.commit();
        self.t.free_inode(&i)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Error, Fs};

    #[test]
    fn unlinks_and_renames_past_a_full_orphan_list_change_nothing() {
        use crate::device::MemDevice;
        use crate::mkfs::{mkfs, MkfsOptions};
        let tmp = tempfile::tempdir().unwrap();
        let img = tmp.path().join("img");
        let opts = MkfsOptions {
            size_bytes: Some(64 << 20),
            ..MkfsOptions::default()
        };
        mkfs(&img, &opts).unwrap();
        let dev = MemDevice::new(std::fs::read(&img).unwrap());
        let fs = Fs::open_device_with(Box::new(dev), "mem", crate::OpenOptions { read_write: true }).unwrap();
        fs.rw().unwrap().open_inodes().set_max_orphans(1);
        let root = fs.root();
        let a = fs.create(root, b"a", 0o644, 0, 0).unwrap().ino;
        let b = fs.create(root, b"b", 0o644, 0, 0).unwrap().ino;
        fs.create(root, b"c", 0o644, 0, 0).unwrap();
        fs.write(b, 0, b"kept").unwrap();
        for ino in [a, b] {
            fs.open_file(ino).unwrap();
        }
        fs.unlink(root, b"a").unwrap();
        assert!(matches!(fs.unlink(root, b"b"), Err(Error::NoSpace(_))));
        assert!(matches!(fs.rename(root, b"c", root, b"b", 0), Err(Error::NoSpace(_))));
        assert_eq!(fs.lookup(root, b"b").unwrap(), b);
        assert_eq!(fs.stat(b).unwrap().nlink, 1);
        assert!(fs.lookup(root, b"c").is_ok());
        assert_eq!(fs.orphan_inodes(), vec![a]);
        fs.release_file(a).unwrap();
        fs.rename(root, b"c", root, b"b", 0).unwrap();
        assert_eq!(fs.orphan_inodes(), vec![b]);
        let mut buf = [0u8; 8];
        assert_eq!(fs.read(b, 0, &mut buf).unwrap(), 4);
        fs.unmount().unwrap();
    }
}
