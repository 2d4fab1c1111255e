//! The plain data of a victim's emptying, kept where `GcState` (`gc/state.rs`) can hold
//! it across passes without importing the migration engine (`gc/migrate.rs`, which
//! has the methods).

use std::sync::Arc;
use uf2fs_format::summary::SummaryBlock;

/// Blocks moved out of one section.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Moved {
    /// Data blocks moved to the cold data log.
    pub data: u64,
    /// Of those, blocks whose dirty page was written in the move (its current
    /// contents, the page then clean) instead of a copy of the old block.
    pub data_from_pages: u64,
    /// Node blocks rewritten to their node logs.
    pub node: u64,
    /// Whether the section was left without a valid block.
    pub emptied: bool,
    /// Data blocks of pinned files left where they are (`F2FS_PIN_FILE`).
    pub pinned: u64,
    /// Nodes (inodes or direct nodes) the moved data blocks dirtied, each counted once
    /// per migration step: the node writes the data moves cost.
    pub data_owners: u64,
}

/// The emptying of one victim section, resumable between steps: a cursor over its
/// segments and, within the segment being emptied, over its block offsets. The
/// methods are in `gc/migrate.rs`.
#[derive(Debug, Clone)]
pub struct Migration {
    /// The victim section.
    pub(crate) secno: u32,
    /// The section's first segment, the segment being emptied, and the end.
    pub(crate) first: u32,
    pub(crate) next: u32,
    pub(crate) end: u32,
    /// The first block offset of segment `next` not looked at yet.
    pub(crate) off: u32,
    pub(crate) moved: Moved,
    /// The summary block of segment `next` as last read, and the footer version of the
    /// checkpoint it was read under: a step of the same segment under the same
    /// checkpoint uses it again instead of reading the SSA block once per step (a victim
    /// is no log, so its summaries change only if it is freed and reused, which takes a
    /// checkpoint).
    pub(crate) sums: Option<(u32, u64, Arc<SummaryBlock>)>,
    /// The section's log entries when it was picked
    /// (`SegmentManager::section_opens`): once they change, the section was freed (every
    /// block it held was overwritten meanwhile) and a log writes it again, so nothing in
    /// it is the victim's any more.
    pub(crate) opens: u64,
    /// A foreground collection: each pinned file whose blocks it leaves counts a GC
    /// failure (`i_gc_failures`), as Linux's foreground GC does.
    pub(crate) foreground: bool,
}

impl Migration {
    /// The victim section.
    pub fn secno(&self) -> u32 {
        self.secno
    }

    /// Blocks moved so far.
    pub fn moved(&self) -> Moved {
        self.moved
    }
}
