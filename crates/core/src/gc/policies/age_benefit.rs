//! uf2fs's `default`: cost-benefit on the logical age, `(1 - u) (1 + age) / (1 + u)`
//! with `age` the blocks written since the section's blocks were (not normalized to
//! the candidates, so a young empty section still scores), any section type, in both
//! kinds of pass; foreground passes batch their checkpoints. See docs/gc-default.md.

use super::{Candidates, GcKind, PassLoop, VictimPolicy};
use crate::segment::SectionInfo;

/// The default policy.
pub struct AgeBenefit;

impl VictimPolicy for AgeBenefit {
    fn pass_loop(&self) -> PassLoop {
        PassLoop::Batched
    }

    fn cost(&self, s: &SectionInfo, _kind: GcKind, _c: &Candidates) -> f64 {
        let (v, c) = (s.valid_blocks as f64, s.capacity.max(1) as f64);
        -((c - v) * (1.0 + s.age_blocks as f64) / (c + v))
    }
}
