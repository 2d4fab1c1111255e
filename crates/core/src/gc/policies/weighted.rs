//! The maintainers' weighted policy `D:N`: the kernel's cost (greedy in the
//! foreground, cost-benefit in the background) times D for data sections and N for
//! node sections.

use super::{kernel_cost, Candidates, GcKind, VictimPolicy};
use crate::segment::SectionInfo;

/// Costs scaled per section type.
pub struct Weighted {
    /// Weight of data sections.
    pub data: u32,
    /// Weight of node sections.
    pub node: u32,
}

impl VictimPolicy for Weighted {
    fn cost(&self, s: &SectionInfo, kind: GcKind, c: &Candidates) -> f64 {
        let weight = if s.is_node { self.node } else { self.data };
        kernel_cost(s, kind, c) * weight as f64
    }
}
