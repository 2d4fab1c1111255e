//! Per-inode locks: an operation takes the set of inodes it changes all at once (so
//! no two operations can wait for each other's inodes), and gives them back when its
//! guard drops. Bound: the held set has one entry per inode of each running operation.
//!
//! In debug builds each held inode records the thread holding it: a thread that locks
//! an inode it holds (which would wait for itself forever) panics instead, and the
//! set's rank in the lock order is checked ([`crate::lockrank`]).

use crate::lockrank::{Held, Rank};
use crate::Ino;
use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, PoisonError};

/// Who holds an inode: the thread, in debug builds (nothing in release builds).
#[cfg(debug_assertions)]
type Owner = std::thread::ThreadId;
#[cfg(not(debug_assertions))]
type Owner = ();

fn me() -> Owner {
    #[cfg(debug_assertions)]
    return std::thread::current().id();
    #[cfg(not(debug_assertions))]
    ()
}

/// The inodes held by running operations.
#[derive(Default)]
pub struct InodeLocks {
    held: Mutex<BTreeMap<Ino, Owner>>,
    released: Condvar,
}

/// Inodes held by one operation until dropped.
pub struct InodeGuard<'a> {
    locks: &'a InodeLocks,
    inos: Vec<Ino>,
    _rank: Held,
}

impl InodeLocks {
    /// Waits until none of `inos` is held by another operation, then holds them all.
    /// Panics in debug builds when the calling thread holds one of them already.
    pub fn lock(&self, inos: &[Ino]) -> InodeGuard<'_> {
        let mut want: Vec<Ino> = inos.to_vec();
        want.sort_unstable();
        want.dedup();
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        #[cfg(debug_assertions)]
        if let Some(ino) = want.iter().find(|i| held.get(i) == Some(&me())) {
            drop(held);
            panic!("inode {ino} locked again by the thread holding it (it would wait for itself)");
        }
        let rank = crate::lockrank::enter(Rank::Inodes);
        while want.iter().any(|i| held.contains_key(i)) {
            held = self.released.wait(held).unwrap_or_else(PoisonError::into_inner);
        }
        held.extend(want.iter().map(|&i| (i, me())));
        InodeGuard {
            locks: self,
            inos: want,
            _rank: rank,
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

    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "locked again by the thread holding it")]
    fn relocking_a_held_inode_panics_in_debug_builds() {
        let l = InodeLocks::default();
        let _g = l.lock(&[3, 5]);
        let _again = l.lock(&[5]);
    }

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
        // Another set, disjoint, is taken meanwhile (by another thread: one thread
        // holds one set at a time).
        let l3 = l.clone();
        std::thread::spawn(move || drop(l3.lock(&[4]))).join().unwrap();
        drop(g);
        assert!(t.join().unwrap());
    }
}
