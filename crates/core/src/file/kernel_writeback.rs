//! The kernel's writer model ([`crate::WriterModel::Kernel`]) for a file system
//! without flusher threads: after each write, the writer does the share of Linux's
//! background flusher that the flusher would have done meanwhile, and waits (writes
//! pages itself) while too much is dirty, as `balance_dirty_pages` throttles.
//!
//! On Linux near a full F2FS volume almost every foreground GC call comes from the
//! writer's `f2fs_balance_fs` and finds no victim (`ENODATA`): the overwrites waiting
//! in the page cache have not invalidated their old blocks yet. The victims come
//! right after the flusher's page writes, which balance after every page, so what a
//! victim holds depends on how far the flusher got, in which order it writes
//! (`range_cyclic` from each inode's `writeback_index`) and how fast it goes
//! against the writer (docs/waf-lab.md, "Near full").
//!
//! The pace ([`crate::writeback::pace`]): a writeback round starts once more than
//! [`crate::pagecache::DIRTY_PAGES_BACKGROUND`] pages are dirty and takes as many
//! pages as were dirty then; it writes one page at a time (the first dirty inode,
//! cyclically), runs `f2fs_balance_fs` after each and charges what the device wrote
//! for it (the page, its nodes, GC's moves and checkpoints) to a budget that each page
//! the writer dirties refills, a debt carried over; past the level where Linux's
//! dirty limit holds the writer ([`crate::writeback::pace::WRITER_HOLD_PAGES`]) the
//! writer writes regardless of the budget.

use crate::fs::ReadWrite;
use crate::{Fs, Result};

impl Fs {
    /// The flusher's share of writeback after a write that dirtied `dirtied` pages
    /// (see the module notes).
    pub(super) fn kernel_background_writeback(&self, rw: &ReadWrite, dirtied: u64) -> Result<()> {
        let pages = rw.pages();
        rw.flusher_pace().dirtied(dirtied, pages.len());
        loop {
            let dirty = pages.len();
            if !rw.flusher_pace().writes_now(dirty) {
                return Ok(());
            }
            let before = self.write_counts().total();
            if !self.write_back_one_page(None)? {
                rw.flusher_pace().end_round();
                return Ok(());
            }
            rw.flusher_pace().set_balancing(true);
            let balanced = self.balance_fs();
            rw.flusher_pace().set_balancing(false);
            let blocks = self.write_counts().total().saturating_sub(before);
            rw.flusher_pace().wrote(dirty, blocks);
            match balanced {
                // The page is written: the next operation's room check reports a
                // volume GC cannot make room on.
                Err(e) if e.is_no_space() => return Ok(()),
                r => r?,
            }
        }
    }
}
