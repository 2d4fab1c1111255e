//! Open regular files, and the last names of open files that were unlinked.
//!
//! The core frees an inode when its last name goes, but an open file must stay usable
//! until its last close (Linux F2FS keeps such inodes on the orphan list; the core has
//! no orphans yet). So the unlink of an open file's last name renames it to a hidden
//! name in the same directory instead (as libfuse's high-level API does), readdir leaves
//! that name out, attributes show no links, and the last release (or the end of the
//! session) unlinks it.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use uf2fs_core::Ino;

/// Prefix of the hidden names of unlinked open files.
pub(crate) const HIDDEN_PREFIX: &str = ".uf2fs_hidden_";

/// Open counts and hidden names, behind one lock.
#[derive(Default)]
pub(crate) struct OpenFiles {
    inner: Mutex<Inner>,
}

/// The state [`OpenFiles`] guards.
#[derive(Default)]
pub(crate) struct Inner {
    /// Open handles per inode.
    open: HashMap<Ino, usize>,
    /// Hidden (directory, name) of unlinked open inodes.
    hidden: HashMap<Ino, (Ino, Vec<u8>)>,
    /// Makes hidden names unique.
    counter: u64,
}

impl OpenFiles {
    /// The state, locked: unlinks hold it across their core calls so that a close
    /// cannot slip between the check and the rename.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `ino` is an unlinked open file.
    pub(crate) fn is_hidden(&self, ino: Ino) -> bool {
        self.lock().hidden.contains_key(&ino)
    }
}

impl Inner {
    /// One more handle on `ino`.
    pub(crate) fn opened(&mut self, ino: Ino) {
        *self.open.entry(ino).or_insert(0) += 1;
    }

    /// One handle fewer on `ino`; the hidden name to unlink when it was the last.
    pub(crate) fn closed(&mut self, ino: Ino) -> Option<(Ino, Vec<u8>)> {
        let count = self.open.get_mut(&ino)?;
        *count -= 1;
        if *count > 0 {
            return None;
        }
        self.open.remove(&ino);
        self.hidden.remove(&ino)
    }

    /// Whether `name` in `dir` is the hidden name of an unlinked open file.
    pub(crate) fn is_hidden_name(&self, dir: Ino, name: &[u8]) -> bool {
        name.starts_with(HIDDEN_PREFIX.as_bytes()) && self.hidden.values().any(|(d, n)| *d == dir && n == name)
    }

    /// Whether `ino` has open handles.
    pub(crate) fn is_open(&self, ino: Ino) -> bool {
        self.open.contains_key(&ino)
    }

    /// A fresh hidden name for `ino`.
    pub(crate) fn hidden_name(&mut self, ino: Ino) -> Vec<u8> {
        self.counter += 1;
        format!("{HIDDEN_PREFIX}{ino}_{}", self.counter).into_bytes()
    }

    /// Record that `ino`'s last name is now `name` in `dir`.
    pub(crate) fn hide(&mut self, ino: Ino, dir: Ino, name: Vec<u8>) {
        self.hidden.insert(ino, (dir, name));
    }

    /// Every hidden name, forgotten (the end of the session).
    pub(crate) fn take_all_hidden(&mut self) -> Vec<(Ino, Vec<u8>)> {
        self.open.clear();
        self.hidden.drain().map(|(_, v)| v).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_close_hands_back_the_hidden_name() {
        let files = OpenFiles::default();
        let mut g = files.lock();
        g.opened(7);
        g.opened(7);
        assert!(g.is_open(7));
        let name = g.hidden_name(7);
        assert!(name.starts_with(HIDDEN_PREFIX.as_bytes()));
        g.hide(7, 3, name.clone());
        assert!(g.is_hidden_name(3, &name));
        assert!(!g.is_hidden_name(4, &name));
        drop(g);
        assert!(files.is_hidden(7));
        let mut g = files.lock();
        assert_eq!(g.closed(7), None);
        assert_eq!(g.closed(7), Some((3, name)));
        assert!(!g.is_open(7));
        assert_eq!(g.closed(7), None);
    }
}
