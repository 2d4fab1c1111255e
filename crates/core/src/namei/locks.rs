//! Per-inode locks: an operation takes the set of inodes it changes all at once (so
//! no two operations can wait for each other's inodes), and gives them back when its
//! guard drops. Bound: the held set has one entry per inode of each running operation.

use crate::Ino;
use std::collections::BTreeSet;
use std::sync::{Condvar, Mutex, PoisonError};

/// The inodes held by running operations.
#[derive(Default)]
pub struct InodeLocks {
    held: Mutex<BTreeSet<Ino>>,
    released: Condvar,
}

/// Inodes held by one operation until dropped.
pub struct InodeGuard<'a> {
    locks: &'a InodeLocks,
    inos: Vec<Ino>,
}

impl InodeLocks {
    /// Waits until none of `inos` is held by another operation, then holds them all.
    pub fn lock(&self, inos: &[Ino]) -> InodeGuard<'_> {
        let mut want: Vec<Ino> = inos.to_vec();
        want.sort_unstable();
        want.dedup();
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        while want.iter().any(|i| held.contains(i)) {
            held = self.released.wait(held).unwrap_or_else(PoisonError::into_inner);
        }
        held.extend(want.iter().copied());
        InodeGuard {
            locks: self,
            inos: want,
        }
    }
}

impl InodeGuard<'_> {
    /// Whether `ino` is among the held inodes.
    pub fn holds(&self, ino: Ino) -> bool {
        self.inos.binary_search(&ino).is_ok()
    }
}

impl Drop for InodeGuard<'_> {
    fn drop(&mut self) {
        let mut held = self.locks.held.lock().unwrap_or_else(PoisonError::into_inner);
        for i in &self.inos {
            held.remove(i);
        }
        drop(held);
        self.locks.released.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use crate::namei::locks::InodeLocks;
    use std::sync::Arc;

    #[test]
    fn sets_exclude_each_other_and_release_on_drop() {
        let l = Arc::new(InodeLocks::default());
        let g = l.lock(&[3, 5, 3]);
        assert!(g.holds(3) && g.holds(5) && !g.holds(4));
        let l2 = l.clone();
        let t = std::thread::spawn(move || {
            let g2 = l2.lock(&[5, 7]);
            g2.holds(7)
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!t.is_finished(), "5 is held");
        let other = l.lock(&[4]);
        drop(other);
        drop(g);
        assert!(t.join().unwrap());
    }
}
