//! Greedy (the kernel's default): the section with the fewest valid blocks in the
//! foreground, cost-benefit in the background.

use super::{kernel_cost, Candidates, GcKind, VictimPolicy};
use crate::segment::SectionInfo;

/// The kernel's greedy policy.
pub struct Greedy;

impl VictimPolicy for Greedy {
    fn cost(&self, s: &SectionInfo, kind: GcKind, c: &Candidates) -> f64 {
        kernel_cost(s, kind, c)
    }
}
