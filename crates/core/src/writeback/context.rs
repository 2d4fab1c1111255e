//! The writeback contexts and the policy that assigns each inode to one: state the
//! page cache owns (it files each dirty inode under its context), kept apart from the
//! write-out itself ([`super`]), which reads the page cache.

use crate::Ino;
use std::sync::{Mutex, PoisonError};

/// Chooses the writeback context of an inode (a policy value: the lab will compare
/// several on identical workloads).
pub trait WritebackPolicy: Send + Sync {
    /// A short name for reports.
    fn name(&self) -> &'static str;
    /// The context (`0..contexts`) that writes inode `ino`'s pages.
    fn context_of(&self, ino: Ino, contexts: usize) -> usize;
}

/// Every inode in context 0.
#[derive(Debug, Clone, Copy, Default)]
pub struct SingleContext;

impl WritebackPolicy for SingleContext {
    fn name(&self) -> &'static str {
        "single"
    }

    fn context_of(&self, _ino: Ino, _contexts: usize) -> usize {
        0
    }
}

/// What one writeback context has done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WritebackStats {
    /// Times it was run.
    pub runs: u64,
    /// Inodes whose pages it wrote.
    pub inodes: u64,
    /// Pages (blocks) it wrote.
    pub pages: u64,
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

    /// The context of inode `ino` (the policy's choice, kept within range).
    pub fn context_of(&self, ino: Ino) -> usize {
        self.policy.context_of(ino, self.contexts.len()) % self.contexts.len()
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
    use crate::writeback::context::{Writeback, WritebackPolicy, WritebackStats};
    use crate::Ino;

    struct ByParity;
    impl WritebackPolicy for ByParity {
        fn name(&self) -> &'static str {
            "parity"
        }
        fn context_of(&self, ino: Ino, contexts: usize) -> usize {
            ino as usize % contexts
        }
    }

    #[test]
    fn policies_choose_contexts() {
        let one = Writeback::default();
        assert_eq!(
            (one.contexts(), one.context_of(77), one.policy_name()),
            (1, 0, "single")
        );
        let two = Writeback::new(Box::new(ByParity), 2);
        assert_eq!((two.context_of(4), two.context_of(7)), (0, 1));
        assert_eq!(two.stats(), vec![WritebackStats::default(); 2]);
    }
}
