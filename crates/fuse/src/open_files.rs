//! The handles a read-write mount holds in the core.
//!
//! Every FUSE open, create and opendir takes a handle with
//! [`uf2fs_core::Fs::open_file`] and every release and releasedir gives it back with
//! [`uf2fs_core::Fs::release_file`]: the core keeps an open inode that loses its last
//! link as an orphan (nlink 0, data kept) until its last handle goes, as Linux F2FS
//! does, and an unmount or a crash cannot leak it. This table records what the adapter
//! took, so that the end of the session gives back exactly what the kernel did not
//! release, and a release the adapter never saw an open for does not reach the core.
//!
//! The kernel's lookups hold inodes too, in their own table ([`crate::lookups`]): an
//! inode that lost its last link stays an orphan until the kernel has released every
//! handle and forgotten every lookup, as Linux F2FS keeps it until its last reference.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use uf2fs_core::Ino;

/// Handles taken in the core, per inode.
#[derive(Default)]
pub(crate) struct OpenFiles {
    handles: Mutex<HashMap<Ino, u64>>,
}

impl OpenFiles {
    fn lock(&self) -> MutexGuard<'_, HashMap<Ino, u64>> {
        self.handles.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a handle on `ino` the core granted.
    pub(crate) fn opened(&self, ino: Ino) {
        *self.lock().entry(ino).or_insert(0) += 1;
    }

    /// Whether the adapter holds a handle on `ino`.
    pub(crate) fn is_open(&self, ino: Ino) -> bool {
        self.lock().contains_key(&ino)
    }

    /// Forgets one handle on `ino`: false when the adapter holds none (then there is
    /// nothing to give back to the core).
    pub(crate) fn closed(&self, ino: Ino) -> bool {
        let mut handles = self.lock();
        let Some(n) = handles.get_mut(&ino) else {
            return false;
        };
        *n -= 1;
        if *n == 0 {
            handles.remove(&ino);
        }
        true
    }

    /// Forgets every handle; returns each inode with the number of handles it had.
    pub(crate) fn take_all(&self) -> Vec<(Ino, u64)> {
        self.lock().drain().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_counted_per_inode() {
        let files = OpenFiles::default();
        files.opened(7);
        files.opened(7);
        files.opened(9);
        assert!(files.closed(7));
        assert!(!files.closed(8), "never opened");
        let mut left = files.take_all();
        left.sort_unstable();
        assert_eq!(left, vec![(7, 1), (9, 1)]);
        assert!(!files.closed(7), "all taken");
        assert!(files.take_all().is_empty());
    }
}
