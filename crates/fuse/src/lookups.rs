//! The kernel's lookup counts, and the core holds they keep.
//!
//! Every reply that hands the kernel a node id (lookup, create, mkdir, mknod, symlink,
//! link, each readdirplus entry but "." and "..") adds one to the kernel's `nlookup` of
//! that node; FORGET takes them back. While the kernel counts a node, the core must
//! keep its inode number: a process may still stand in a removed directory or hold a
//! path walk through a removed name, and asks about that node id. Linux F2FS keeps such
//! an inode (no links, still referenced) on the orphan list until its last reference
//! goes; uf2fs does the same with one core handle ([`uf2fs_core::Fs::open_file`]) per
//! inode the kernel counts, given back when the count returns to zero. Were the number
//! freed at unlink instead, a checkpoint would let a new inode take it, and the kernel,
//! finding its old inode under that id with another generation, would mark it bad:
//! the racing process gets `EIO` or `ESTALE` where Linux F2FS answers `ENOENT`.
//!
//! Locking: the table's mutex is taken alone, never while waiting for a core lock. The
//! first count's handle is taken after releasing it (`Fs::open_file` waits for the
//! inode's lock, which a slow fsync of that file may hold: every other lookup of the
//! mount would wait behind it); the count is marked `opening` meanwhile, so that a
//! FORGET coming between the count and the handle leaves the handle's fate to the
//! thread taking it. A last FORGET gives the handle back after releasing the mutex.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use uf2fs_core::{Fs, Ino};

/// The kernel's count of one inode, and whether the core holds it for the kernel.
#[derive(Debug, Clone, Copy)]
struct Count {
    nlookup: u64,
    held: bool,
    /// A thread is taking the core handle for this count (outside the mutex).
    opening: bool,
}

/// Lookup counts by core inode number (the root, which is never forgotten, is not
/// counted).
#[derive(Default)]
pub(crate) struct Lookups {
    counts: Mutex<HashMap<Ino, Count>>,
}

impl Lookups {
    fn lock(&self) -> MutexGuard<'_, HashMap<Ino, Count>> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One more lookup of `ino` handed to the kernel; the first takes a core handle.
    /// An inode that cannot be held (freed meanwhile, a read-only file system) is
    /// still counted, so that the kernel's FORGET finds it.
    pub(crate) fn remember(&self, fs: &Fs, ino: Ino) {
        {
            let mut counts = self.lock();
            let c = counts.entry(ino).or_insert(Count {
                nlookup: 0,
                held: false,
                opening: false,
            });
            c.nlookup += 1;
            if c.nlookup > 1 || c.held || c.opening || !fs.is_read_write() {
                return;
            }
            c.opening = true;
        }
        // Outside the mutex: this may wait for the inode's lock.
        let held = fs.open_file(ino).is_ok();
        let release = {
            let mut counts = self.lock();
            match counts.get_mut(&ino) {
                Some(c) if c.nlookup > 0 => {
                    c.opening = false;
                    c.held = held;
                    false
                }
                // Forgotten while the handle was being taken (or the table emptied at
                // the end): give it back.
                _ => {
                    counts.remove(&ino);
                    held
                }
            }
        };
        if release {
            if let Err(err) = fs.release_file(ino) {
                eprintln!("uf2fs: giving back inode {ino} the kernel forgot: {err}");
            }
        }
    }

    /// The kernel forgot `n` lookups of `ino`; the last gives the core handle back
    /// (which frees an inode that lost its last link meanwhile).
    pub(crate) fn forget(&self, fs: &Fs, ino: Ino, n: u64) {
        let release = {
            let mut counts = self.lock();
            let Some(c) = counts.get_mut(&ino) else {
                return;
            };
            c.nlookup = c.nlookup.saturating_sub(n);
            if c.nlookup > 0 || c.opening {
                // An opening count is settled by the thread taking its handle.
                return;
            }
            let held = c.held;
            counts.remove(&ino);
            held
        };
        if release {
            if let Err(err) = fs.release_file(ino) {
                eprintln!("uf2fs: giving back inode {ino} the kernel forgot: {err}");
            }
        }
    }

    /// Forgets every count; returns the inodes the core holds for them.
    pub(crate) fn take_held(&self) -> Vec<Ino> {
        self.lock()
            .drain()
            .filter(|(_, c)| c.held)
            .map(|(ino, _)| ino)
            .collect()
    }

    /// The kernel's count of `ino` (tests).
    #[cfg(test)]
    pub(crate) fn count(&self, ino: Ino) -> u64 {
        self.lock().get(&ino).map_or(0, |c| c.nlookup)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uf2fs_core::device::MemDevice;
    use uf2fs_core::mkfs::{mkfs_blocks, MkfsOptions};

    fn fs() -> Fs {
        let bytes = 64u64 << 20;
        let (_, writes) = mkfs_blocks(&MkfsOptions::default(), bytes).unwrap();
        let mut image = vec![0u8; bytes as usize];
        for (addr, data) in writes {
            let at = addr as usize * 4096;
            image[at..at + data.len()].copy_from_slice(&data);
        }
        let dev = MemDevice::new(image);
        Fs::open_device_with(Box::new(dev), "mem", uf2fs_core::OpenOptions { read_write: true }).unwrap()
    }

    #[test]
    fn a_counted_inode_outlives_its_last_name_until_forgotten() {
        let fs = fs();
        let root = fs.root();
        let lookups = Lookups::default();
        let ino = fs.create(root, b"f", 0o644, 0, 0).unwrap().ino;
        lookups.remember(&fs, ino);
        lookups.remember(&fs, ino);
        assert_eq!(lookups.count(ino), 2);
        fs.unlink(root, b"f").unwrap();
        // Kept as an orphan: its number cannot be handed to another inode.
        assert_eq!(fs.orphan_inodes(), vec![ino]);
        assert_eq!(fs.stat(ino).unwrap().nlink, 0);
        lookups.forget(&fs, ino, 1);
        assert_eq!(fs.orphan_inodes(), vec![ino]);
        lookups.forget(&fs, ino, 1);
        assert_eq!(lookups.count(ino), 0);
        assert!(fs.orphan_inodes().is_empty());
        assert!(matches!(fs.stat(ino), Err(uf2fs_core::Error::NotFound(_))));
        // Forgetting what is not counted changes nothing.
        lookups.forget(&fs, ino, 5);
        fs.unmount().unwrap();
    }

    #[test]
    fn held_inodes_are_given_back_at_the_end() {
        let fs = fs();
        let root = fs.root();
        let lookups = Lookups::default();
        let a = fs.create(root, b"a", 0o644, 0, 0).unwrap().ino;
        lookups.remember(&fs, a);
        // An inode already gone is counted but not held.
        lookups.remember(&fs, 4000);
        assert_eq!(lookups.count(4000), 1);
        fs.unlink(root, b"a").unwrap();
        let held = lookups.take_held();
        assert_eq!(held, vec![a]);
        fs.release_file(a).unwrap();
        assert!(fs.orphan_inodes().is_empty());
        fs.unmount().unwrap();
    }
}
