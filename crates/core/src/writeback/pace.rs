//! The pace of Linux's background flusher under the kernel's writer model
//! ([`crate::WriterModel::Kernel`]): how many pages a writeback round takes and when
//! the flusher's next page is due, against what the writer dirties. The writer runs
//! it ([`crate::file`]'s `kernel_writeback`); this module keeps its state.

use crate::pagecache::DIRTY_PAGES_BACKGROUND;

/// Device blocks Linux's flusher writes while the writer dirties one page, in the
/// kernel comparisons (QEMU, null_blk; `scripts/kernel/waf-compare.sh`): fitted on
/// the 64-zone geometry, where 25 to 50 give WAFs within 10% of each other from 80%
/// to 99.8% of df and 25 the closest to Linux 6.1 (docs/waf-lab.md).
pub const FLUSHER_BLOCKS_PER_PAGE: i64 = 25;

/// Dirty pages past which the writer writes pages back itself whatever the flusher's
/// budget, unless [`crate::Fs::set_writer_hold`] chose another level: where Linux's
/// `balance_dirty_pages` held the writer in the kernel comparisons on the host they
/// were first run on, measured. Their `vm.dirty_bytes` of 4 MiB is a limit of 1024 pages on
/// every dirty and writeback page, which `balance_dirty_pages` approaches by pausing
/// the writer while the flusher (each of whose pages may run a victim that cleans
/// dozens) writes on, so F2FS's dirty data stays below it: at 415 MiB on 64 zones
/// Linux 6.12's F2FS dirty data count averaged 937 pages (median 966) when a pass took
/// a victim (kprobe on `f2fs_gc`; Linux 6.1's, 988, but a hold of its own would take
/// the lab's 6.1 plateau further from Linux's), where a writer held at 1024 averages
/// 1007 in the lab and one held at 960 averages 943 (docs/waf-lab.md, "Near full:
/// what a victim cleans").
pub const WRITER_HOLD_PAGES: usize = 960;

/// The lowest hold [`crate::Fs::set_writer_hold`] takes: one past the background
/// threshold, where the flusher's rounds start.
pub const WRITER_HOLD_MIN_PAGES: usize = DIRTY_PAGES_BACKGROUND + 1;

/// The highest hold [`crate::Fs::set_writer_hold`] takes: the kernel comparisons'
/// `vm.dirty_bytes` of 4 MiB.
pub const WRITER_HOLD_MAX_PAGES: usize = 1024;

/// The flusher's state between writes (owned by the file system's read-write state,
/// locked alone, never across a page write).
#[derive(Debug, Default)]
pub(crate) struct FlusherPace {
    /// Device blocks the flusher may still write before the writer dirties more
    /// pages; below zero, the flusher wrote ahead and the debt is carried.
    budget: i64,
    /// Pages left in the writeback round under way (0: none is).
    round_left: usize,
    /// The flusher is in the balance after one of its own pages: a pass it runs there
    /// holds it, so no page of its round goes out beside that pass.
    balancing: bool,
    /// The writer's hold, if not [`WRITER_HOLD_PAGES`].
    hold: Option<usize>,
}

impl FlusherPace {
    /// Holds the writer at `pages` dirty pages instead of [`WRITER_HOLD_PAGES`].
    pub(crate) fn set_hold(&mut self, pages: usize) {
        self.hold = Some(pages);
    }

    /// The dirty pages past which the writer writes pages back itself.
    pub(crate) fn hold(&self) -> usize {
        self.hold.unwrap_or(WRITER_HOLD_PAGES)
    }

    /// The writer dirtied `pages` pages and `dirty` are dirty: the budget refills (at
    /// most to one write's worth, a debt carried), and a round starts past the
    /// background threshold if none runs.
    pub(crate) fn dirtied(&mut self, pages: u64, dirty: usize) {
        let grant = FLUSHER_BLOCKS_PER_PAGE.saturating_mul(pages.max(1) as i64);
        self.budget = self.budget.saturating_add(grant).min(grant);
        if self.round_left == 0 && dirty > DIRTY_PAGES_BACKGROUND {
            self.round_left = dirty;
        }
    }

    /// Whether the flusher writes another page now, with `dirty` pages dirty.
    pub(crate) fn writes_now(&mut self, dirty: usize) -> bool {
        if dirty == 0 {
            self.round_left = 0;
        }
        self.round_left > 0 && (self.budget > 0 || dirty > self.hold())
    }

    /// One page was written with `dirty` pages dirty before, costing `blocks` device
    /// blocks; past the writer's hold the writer waited and its time was the
    /// flusher's, so no debt is kept.
    pub(crate) fn wrote(&mut self, dirty: usize, blocks: u64) {
        self.round_left = self.round_left.saturating_sub(1);
        if dirty > self.hold() {
            self.budget = self.budget.max(0);
        } else {
            self.budget = self.budget.saturating_sub(blocks.max(1) as i64);
        }
    }

    /// The round under way ends (nothing left to write).
    pub(crate) fn end_round(&mut self) {
        self.round_left = 0;
    }

    /// The flusher enters (`true`) or leaves the balance after one of its pages.
    pub(crate) fn set_balancing(&mut self, on: bool) {
        self.balancing = on;
    }

    /// Whether the next page of the round under way goes out while another writer's
    /// foreground pass moves a victim (and takes it from the round): Linux's flusher
    /// is a thread of its own, which writes on while that pass waits for the victim's
    /// I/O, each of its pages' balance returning at once while the free-section rule
    /// finds room (the caller checks that). Its time is the pass's, so the budget is
    /// not charged. Not while the flusher runs a pass itself.
    pub(crate) fn page_beside_pass(&mut self) -> bool {
        if self.balancing || self.round_left == 0 {
            return false;
        }
        self.round_left -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_starts_past_the_background_threshold_and_takes_the_pages_dirty_then() {
        let mut p = FlusherPace::default();
        p.dirtied(1, DIRTY_PAGES_BACKGROUND);
        assert!(!p.writes_now(DIRTY_PAGES_BACKGROUND), "no round at the threshold");
        p.dirtied(1, DIRTY_PAGES_BACKGROUND + 1);
        assert_eq!(p.round_left, DIRTY_PAGES_BACKGROUND + 1);
        assert!(p.writes_now(DIRTY_PAGES_BACKGROUND + 1));
    }

    #[test]
    fn the_budget_refills_per_page_dirtied_and_carries_a_debt() {
        let mut p = FlusherPace::default();
        p.dirtied(2, DIRTY_PAGES_BACKGROUND + 1);
        assert_eq!(p.budget, 2 * FLUSHER_BLOCKS_PER_PAGE);
        // A page whose balance ran a victim: far more than the grant.
        p.wrote(DIRTY_PAGES_BACKGROUND, 2000);
        assert!(!p.writes_now(DIRTY_PAGES_BACKGROUND), "in debt below the hold");
        p.dirtied(1, DIRTY_PAGES_BACKGROUND);
        assert_eq!(p.budget, 2 * FLUSHER_BLOCKS_PER_PAGE - 2000 + FLUSHER_BLOCKS_PER_PAGE);
        // Unused budget does not pile up beyond one write's grant.
        let mut q = FlusherPace::default();
        for _ in 0..10 {
            q.dirtied(1, 0);
        }
        assert_eq!(q.budget, FLUSHER_BLOCKS_PER_PAGE);
    }

    #[test]
    fn past_the_hold_the_writer_writes_whatever_the_budget_and_keeps_no_debt() {
        let mut p = FlusherPace::default();
        p.dirtied(1, WRITER_HOLD_PAGES + 1);
        p.budget = -5000;
        assert!(p.writes_now(WRITER_HOLD_PAGES + 1));
        p.wrote(WRITER_HOLD_PAGES + 1, 3000);
        assert_eq!(p.budget, 0);
        assert!(!p.writes_now(WRITER_HOLD_PAGES), "at the hold the budget rules again");
    }

    #[test]
    fn pages_beside_a_pass_come_from_the_round_free_of_charge_and_not_beside_the_flusher_s_own() {
        let mut p = FlusherPace::default();
        assert!(!p.page_beside_pass(), "no round under way");
        p.dirtied(1, DIRTY_PAGES_BACKGROUND + 2);
        p.budget = -500;
        p.set_balancing(true);
        assert!(!p.page_beside_pass(), "the flusher's own pass holds it");
        p.set_balancing(false);
        assert!(p.page_beside_pass());
        assert_eq!((p.round_left, p.budget), (DIRTY_PAGES_BACKGROUND + 1, -500));
        p.round_left = 1;
        assert!(p.page_beside_pass());
        assert!(!p.page_beside_pass(), "the round is written");
    }

    #[test]
    fn a_hold_of_its_own_moves_where_the_writer_writes_regardless_of_the_budget() {
        let mut p = FlusherPace::default();
        assert_eq!(p.hold(), WRITER_HOLD_PAGES);
        p.set_hold(700);
        p.dirtied(1, 701);
        p.budget = -5000;
        assert!(p.writes_now(701), "past its own hold");
        p.wrote(701, 3000);
        assert_eq!(p.budget, 0, "no debt kept past the hold");
        p.budget = -5000;
        assert!(!p.writes_now(700), "at the hold the budget rules");
    }

    #[test]
    fn a_round_ends_when_nothing_is_dirty() {
        let mut p = FlusherPace::default();
        p.dirtied(1, DIRTY_PAGES_BACKGROUND + 10);
        assert!(!p.writes_now(0));
        assert_eq!(p.round_left, 0);
    }
}
