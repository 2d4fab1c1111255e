//! The 2023 seed patches' prefer-data policies: the kernel's costs, but node sections
//! are candidates only while node cleaning (`need_node_clean`) is on, and the pass
//! runs the patches' loop, which turns it on when free sections run down.
//! - v1: in the foreground only; a data section found cheapest while node cleaning is
//!   on, with enough free sections, ends the pass and turns node cleaning off;
//! - v2: in both kinds of pass; no data victim left in the foreground turns node
//!   cleaning on.

use super::{kernel_cost, Candidates, GcKind, NodeCleanRules, PassLoop, VictimPolicy};
use crate::segment::SectionInfo;

/// prefer-data-v1 (`v2` false) or prefer-data-v2.
pub struct PreferData {
    /// Whether this is the second version of the patches.
    pub v2: bool,
}

impl VictimPolicy for PreferData {
    fn pass_loop(&self) -> PassLoop {
        PassLoop::NodeClean
    }

    fn node_clean_rules(&self, kind: GcKind) -> Option<NodeCleanRules> {
        if self.v2 {
            Some(NodeCleanRules {
                on_when_no_data_victim: kind == GcKind::Foreground,
                off_when_data_suffices: false,
            })
        } else if kind == GcKind::Foreground {
            Some(NodeCleanRules {
                on_when_no_data_victim: false,
                off_when_data_suffices: true,
            })
        } else {
            None
        }
    }

    fn cost(&self, s: &SectionInfo, kind: GcKind, c: &Candidates) -> f64 {
        kernel_cost(s, kind, c)
    }
}
