//! The writeback contexts and the policy that assigns each inode to one: state the
//! page cache owns (it files each dirty inode under its context), kept apart from the
//! write-out itself ([`super`]), which reads the page cache.

use crate::Ino;
use std::sync::{Mutex, PoisonError};

/// Chooses the writeback context of an inode (a policy value: the lab compares several
/// on identical workloads). Asked once per inode when its first page gets dirty; the
/// inode stays with that context until it is clean again.
pub trait WritebackPolicy: Send + Sync {
    /// A short name for reports (as `-o writeback_policy=` spells it).
    fn name(&self) -> &'static str;
    /// The context that writes inode `ino`'s pages; `loads` holds the dirty pages of
    /// each context now (its length is the number of contexts).
    fn context_of(&self, ino: Ino, loads: &[u64]) -> usize;
}

/// Every inode in context 0.
#[derive(Debug, Clone, Copy, Default)]
pub struct SingleContext;

impl WritebackPolicy for SingleContext {
    fn name(&self) -> &'static str {
        "single"
    }

    fn context_of(&self, _ino: Ino, _loads: &[u64]) -> usize {
        0
    }
}

/// The seed's policy: inode number modulo the number of contexts. Fixed for an inode
/// whatever the load, so a file always goes through the same context; a few big files
/// whose numbers share a residue land on one context while others idle.
#[derive(Debug, Clone, Copy, Default)]
pub struct InoHash;

impl WritebackPolicy for InoHash {
    fn name(&self) -> &'static str {
        "ino-hash"
    }

    fn context_of(&self, ino: Ino, loads: &[u64]) -> usize {
        ino as usize % loads.len().max(1)
    }
}

/// uf2fs's policy: an inode that gets dirty goes to the context with the fewest dirty
/// pages (the lowest-numbered one among equals), and keeps it while it stays dirty, so
/// its pages are still written by one context, in order. Big files no longer pile up on
/// one context because of their numbers, and small files spread evenly.
#[derive(Debug, Clone, Copy, Default)]
pub struct LeastLoaded;

impl WritebackPolicy for LeastLoaded {
    fn name(&self) -> &'static str {
        "least-loaded"
    }

    fn context_of(&self, _ino: Ino, loads: &[u64]) -> usize {
        (0..loads.len()).min_by_key(|&c| (loads[c], c)).unwrap_or(0)
    }
}

/// The policy named `name` (`single`, `ino-hash`, `least-loaded`).
pub fn policy_by_name(name: &str) -> Option<Box<dyn WritebackPolicy>> {
    match name {
        "single" => Some(Box::new(SingleContext)),
        "ino-hash" => Some(Box::new(InoHash)),
        "least-loaded" => Some(Box::new(LeastLoaded)),
        _ => None,
    }
}

/// Names of the policies [`policy_by_name`] knows.
pub const POLICY_NAMES: [&str; 3] = ["single", "ino-hash", "least-loaded"];

/// What one writeback context has done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WritebackStats {
    /// Times it was run.
    pub runs: u64,
    /// Inodes whose pages it wrote.
    pub inodes: u64,
    /// Pages (blocks) it wrote.
    pub pages: u64,
    /// Microseconds its flusher thread spent writing (0 without threads).
    pub busy_us: u64,
    /// Microseconds of CPU its flusher thread used, known once the thread has ended
    /// (0 without threads, or where the system does not tell a thread's CPU time).
    pub cpu_us: u64,
}

/// One writeback context: its counters (its queue is the page cache's list of the
/// inodes assigned to it).
#[derive(Debug, Default)]
pub struct WritebackContext {
    pub(super) stats: Mutex<WritebackStats>,
}

impl WritebackContext {
    pub(super) fn add(&self, inodes: u64, pages: u64) {
        let mut s = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
        s.inodes += inodes;
        s.pages += pages;
    }
}

/// The writeback contexts and the policy assigning inodes to them.
pub struct Writeback {
    policy: Box<dyn WritebackPolicy>,
    pub(super) contexts: Vec<WritebackContext>,
}

impl Default for Writeback {
    fn default() -> Writeback {
        Writeback::new(Box::new(SingleContext), 1)
    }
}

impl Writeback {
    /// `contexts` contexts (at least one) under `policy`.
    pub fn new(policy: Box<dyn WritebackPolicy>, contexts: usize) -> Writeback {
        Writeback {
            policy,
            contexts: (0..contexts.max(1)).map(|_| WritebackContext::default()).collect(),
        }
    }

    /// The context for inode `ino` with `loads` dirty pages per context (the policy's
    /// choice, kept within range).
    pub fn context_of(&self, ino: Ino, loads: &[u64]) -> usize {
        self.policy.context_of(ino, loads) % self.contexts.len()
    }

    /// Number of contexts.
    pub fn contexts(&self) -> usize {
        self.contexts.len()
    }

    /// The policy's name.
    pub fn policy_name(&self) -> &'static str {
        self.policy.name()
    }

    /// Counters of every context, by context number.
    pub fn stats(&self) -> Vec<WritebackStats> {
        self.contexts
            .iter()
            .map(|c| *c.stats.lock().unwrap_or_else(PoisonError::into_inner))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::writeback::context::{policy_by_name, InoHash, LeastLoaded, Writeback, WritebackStats, POLICY_NAMES};

    #[test]
    fn policies_choose_contexts() {
        let one = Writeback::default();
        assert_eq!(
            (one.contexts(), one.context_of(77, &[5]), one.policy_name()),
            (1, 0, "single")
        );
        let hash = Writeback::new(Box::new(InoHash), 2);
        assert_eq!((hash.context_of(4, &[0, 9]), hash.context_of(7, &[0, 9])), (0, 1));
        assert_eq!(hash.stats(), vec![WritebackStats::default(); 2]);
        let least = Writeback::new(Box::new(LeastLoaded), 3);
        assert_eq!(least.context_of(4, &[7, 2, 5]), 1);
        assert_eq!(least.context_of(4, &[3, 3, 3]), 0);
        assert_eq!(least.context_of(4, &[3, 0, 0]), 1);
        for name in POLICY_NAMES {
            assert_eq!(policy_by_name(name).unwrap().name(), name);
        }
        assert!(policy_by_name("fastest").is_none());
    }
}
