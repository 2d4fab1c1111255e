//! The lock order of a read-write file system, outermost first, as one table: the
//! code checks it at run time in debug builds, and a test checks that
//! docs/architecture.md (§3) lists the same order. No lock is held across a call
//! back up this list.
//!
//! 1. `cp_lock` (F2FS's cp_rwsem): modifying operations hold it shared, a checkpoint
//!    (and the collector) exclusive; it guards the checkpoint writer's state;
//! 2. `rename_lock` (the VFS's rename mutex): renames hold it, so that directories do
//!    not move while one checks that a directory is not moved into itself;
//! 3. inode locks: an operation takes the set of inodes it changes at once
//!    ([`crate::namei::locks`]), so operations never wait for each other in a cycle;
//! 4. the `PageCache` mutex and the open-inode table ([`crate::orphan`]), each
//!    taken alone;
//! 5. the `NodeManager`'s own locks (dirty nodes, free nids, NAT table, caches);
//! 6. the `SegmentManager` mutex;
//! 7. the device.
//!
//! In debug builds every thread keeps the ranks it holds of `cp_lock`, `rename_lock`,
//! the inode locks, the `NodeManager`'s dirty-node map and the `SegmentManager` mutex
//! (the locks whose holders wait for others), and taking one of them while holding one
//! of the same rank or a later one panics, naming both: a deadlock found by a test
//! instead of a hang in the field. Functions that need a lock held (or none held, before
//! they wait) say so with [`assert_held`] and [`assert_none_held`]. Release builds keep
//! nothing ([`Ranked`] is then its guard alone, the assertions nothing).

use std::ops::{Deref, DerefMut};

/// A place in the lock order (the numbers of the module notes' list).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Rank {
    /// `cp_lock`.
    Checkpoint = 1,
    /// `rename_lock`.
    Rename = 2,
    /// The inode locks ([`crate::namei::locks::InodeLocks`]).
    Inodes = 3,
    /// The page cache's mutex and the open-inode table (not tracked).
    #[allow(dead_code)]
    PageCache = 4,
    /// The `NodeManager`'s locks (tracked: the dirty-node map, the one held while
    /// the `SegmentManager` is locked; its `counts` mutex checks that the
    /// `SegmentManager` is not held).
    Nodes = 5,
    /// The `SegmentManager` mutex.
    Segments = 6,
    /// The device (not tracked).
    #[allow(dead_code)]
    Device = 7,
}

/// The lock order, outermost first: each rank and the name docs/architecture.md's
/// list gives it (in backquotes, first in its item).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) const ORDER: [(Rank, &str); 7] = [
    (Rank::Checkpoint, "cp_lock"),
    (Rank::Rename, "rename_lock"),
    (Rank::Inodes, "InodeLocks"),
    (Rank::PageCache, "PageCache"),
    (Rank::Nodes, "NodeManager"),
    (Rank::Segments, "SegmentManager"),
    (Rank::Device, "BlockDevice"),
];

#[cfg(debug_assertions)]
thread_local! {
    /// The ranks the thread holds, in the order taken.
    static HELD: std::cell::RefCell<Vec<Rank>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// One rank held by the thread (debug builds), given back when dropped (by the thread
/// that took it: the guards it sits beside are not sent across threads).
pub(crate) struct Held {
    #[cfg(debug_assertions)]
    rank: Rank,
}

/// Records that the thread is about to wait for a lock of `rank`; panics in debug
/// builds when it holds one of the same rank or a later one.
pub(crate) fn enter(rank: Rank) -> Held {
    #[cfg(not(debug_assertions))]
    let _ = rank;
    #[cfg(debug_assertions)]
    HELD.with(|h| {
        let mut h = h.borrow_mut();
        if let Some(&worst) = h.iter().max() {
            if worst >= rank && !std::thread::panicking() {
                drop(h);
                panic!(
                    "lock order broken: taking {rank:?} (rank {}) while holding {worst:?} (rank {}); \
                     see crate::lockrank",
                    rank as u8, worst as u8
                );
            }
        }
        h.push(rank);
    });
    Held {
        #[cfg(debug_assertions)]
        rank,
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        #[cfg(debug_assertions)]
        HELD.with(|h| {
            let mut h = h.borrow_mut();
            if let Some(i) = h.iter().rposition(|&r| r == self.rank) {
                h.remove(i);
            }
        });
    }
}

/// A lock guard with its place in the lock order recorded (see the module notes).
pub(crate) struct Ranked<G> {
    guard: G,
    _held: Held,
}

impl<G> Ranked<G> {
    /// Takes a lock of `rank` with `take` (the rank checked before it waits).
    pub(crate) fn take(rank: Rank, take: impl FnOnce() -> G) -> Ranked<G> {
        let held = enter(rank);
        Ranked {
            guard: take(),
            _held: held,
        }
    }
}

impl<G: Deref> Deref for Ranked<G> {
    type Target = G::Target;
    fn deref(&self) -> &G::Target {
        &self.guard
    }
}

impl<G: DerefMut> DerefMut for Ranked<G> {
    fn deref_mut(&mut self) -> &mut G::Target {
        &mut self.guard
    }
}

/// Panics (debug builds) unless the thread holds a lock of `rank`: the precondition
/// of a function that `what` names.
#[track_caller]
pub(crate) fn assert_held(rank: Rank, what: &str) {
    #[cfg(not(debug_assertions))]
    let _ = (rank, what);
    #[cfg(debug_assertions)]
    HELD.with(|h| {
        if !h.borrow().contains(&rank) && !std::thread::panicking() {
            panic!("{what} needs {rank:?} (rank {}) held; see crate::lockrank", rank as u8);
        }
    });
}

/// Panics (debug builds) when the thread holds a lock of `rank` or a later one, before
/// `what` (which waits for others that take such locks).
#[track_caller]
pub(crate) fn assert_none_held(rank: Rank, what: &str) {
    #[cfg(not(debug_assertions))]
    let _ = (rank, what);
    #[cfg(debug_assertions)]
    HELD.with(|h| {
        if let Some(&worst) = h.borrow().iter().max() {
            if worst >= rank && !std::thread::panicking() {
                panic!("{what} with {worst:?} (rank {}) held; see crate::lockrank", worst as u8);
            }
        }
    });
}

/// Locks a `NodeManager` mutex of rank [`Rank::Nodes`] (the dirty-node map), its rank
/// recorded (debug builds).
pub(crate) fn lock_nodes<T>(m: &std::sync::Mutex<T>) -> Ranked<std::sync::MutexGuard<'_, T>> {
    Ranked::take(Rank::Nodes, || {
        m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    })
}

/// Locks the segment manager's mutex, its rank recorded (debug builds).
pub(crate) fn lock_segments(
    segs: &std::sync::Mutex<crate::segment::SegmentManager>,
) -> Ranked<std::sync::MutexGuard<'_, crate::segment::SegmentManager>> {
    Ranked::take(Rank::Segments, || {
        segs.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbered list of docs/architecture.md's "Lock order" section names the
    /// ranks of [`ORDER`], in its order: one list, the code's.
    #[test]
    fn architecture_md_lists_the_code_s_lock_order() {
        let doc = include_str!("../../../docs/architecture.md");
        let section = doc
            .split("\n## ")
            .find(|s| s.starts_with("3. Lock order"))
            .expect("docs/architecture.md has a \"3. Lock order\" section");
        let items: Vec<&str> = section
            .lines()
            .skip(1)
            .filter(|l| l.chars().next().is_some_and(|c| c.is_ascii_digit()) && l.contains(". "))
            .collect();
        assert_eq!(items.len(), ORDER.len(), "items: {items:#?}");
        for (i, (item, (rank, name))) in items.iter().zip(ORDER).enumerate() {
            assert_eq!(rank as usize, i + 1);
            let want = format!("{}. ", i + 1);
            assert!(item.starts_with(&want), "item {} is numbered {item:?}", i + 1);
            let first = item.split('`').nth(1);
            assert_eq!(first, Some(name), "item {}: {item:?} should name `{name}` first", i + 1);
        }
    }

    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "lock order broken")]
    fn taking_an_outer_lock_inside_an_inner_one_panics() {
        let _segs = enter(Rank::Segments);
        let _cp = enter(Rank::Checkpoint);
    }

    #[test]
    fn the_order_outermost_first_passes() {
        let cp = enter(Rank::Checkpoint);
        let ino = enter(Rank::Inodes);
        drop(cp);
        let segs = enter(Rank::Segments);
        drop(segs);
        drop(ino);
        let _again = enter(Rank::Checkpoint);
    }
}
