//! Cost-benefit in both kinds of pass: `u32::MAX - 100 (100 - u) age / (100 + u)` in the
//! kernel's terms (here the benefit's distance from its best, see [`super::cb_cost`]).

use super::{cb_cost, Candidates, GcKind, VictimPolicy};
use crate::segment::SectionInfo;

/// The kernel's cost-benefit policy (`gc_idle=1`).
pub struct CostBenefit;

impl VictimPolicy for CostBenefit {
    fn cost(&self, s: &SectionInfo, _kind: GcKind, c: &Candidates) -> f64 {
        cb_cost(s, c)
    }
}
