//! The files under an F2FS atomic write on this mount (`F2FS_IOC_START_ATOMIC_WRITE`
//! or `START_ATOMIC_REPLACE` until `COMMIT_ATOMIC_WRITE` or `ABORT_ATOMIC_WRITE`, see
//! [`uf2fs_core::AtomicWrite`]): the writes, size changes and reads of such a file go
//! through its staged state here, and nothing reaches the core's file until the
//! commit. As Linux, the state belongs to the inode (every descriptor of the file
//! writes into it) and goes with the last handle's release (an abort).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use uf2fs_core::{AtomicWrite, Ino};

/// Atomic writes in progress, per inode.
#[derive(Default)]
pub(crate) struct AtomicFiles {
    files: Mutex<HashMap<Ino, AtomicWrite>>,
}

impl AtomicFiles {
    fn lock(&self) -> MutexGuard<'_, HashMap<Ino, AtomicWrite>> {
        self.files.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the staged state of `ino`; `None` when no atomic write is in
    /// progress on it.
    pub(crate) fn with<T>(&self, ino: Ino, f: impl FnOnce(&mut AtomicWrite) -> T) -> Option<T> {
        self.lock().get_mut(&ino).map(f)
    }

    /// Whether `ino` is under an atomic write.
    pub(crate) fn contains(&self, ino: Ino) -> bool {
        self.lock().contains_key(&ino)
    }

    /// Records the start of atomic write `aw` on `ino`; false (nothing changes) when one
    /// is in progress already.
    pub(crate) fn start(&self, ino: Ino, aw: AtomicWrite) -> bool {
        let mut files = self.lock();
        if files.contains_key(&ino) {
            return false;
        }
        files.insert(ino, aw);
        true
    }

    /// Takes the staged state of `ino` out (a commit or an abort).
    pub(crate) fn take(&self, ino: Ino) -> Option<AtomicWrite> {
        self.lock().remove(&ino)
    }

    /// Puts back the staged state a failed commit took.
    pub(crate) fn put_back(&self, ino: Ino, aw: AtomicWrite) {
        self.lock().entry(ino).or_insert(aw);
    }
}
