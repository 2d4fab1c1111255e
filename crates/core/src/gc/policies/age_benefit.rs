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

    fn cost(&self, s: &SectionInfo, _kind: GcKind, c: &Candidates) -> f64 {
        let (v, cap) = (s.valid_blocks as f64, s.capacity.max(1) as f64);
        // Moving a data block also rewrites the node that points at it; a node block
        // moves alone (its new address goes to the NAT).
        let per_block = if s.is_node {
            1.0
        } else {
            1.0 + c.node_writes_per_data_block
        };
        -((cap - v) * (1.0 + s.age_blocks as f64) / (cap + v * per_block))
    }
}
