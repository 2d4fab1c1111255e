//! Picking a victim section: each policy's cost over the candidate sections, the
//! cheapest wins (the kernel's `get_victim_by_default` with `get_gc_cost`).
//!
//! Costs, lower is better:
//! - greedy: valid blocks;
//! - cost-benefit: `u32::MAX - 100 (100 - u) age / (100 + u)`, with `u` the percentage of
//!   valid blocks and `age` 0..=100 from the youngest to the oldest candidate (the
//!   kernel's `get_cb_cost`);
//! - weighted `D:N`: the greedy or cost-benefit cost times D for data and N for node
//!   sections (the cost-benefit cost is first turned into its distance from the maximum,
//!   so that weighting makes a section less attractive);
//! - prefer-data-v1/v2: node sections never chosen unless node cleaning is on (v1 in
//!   the foreground only);
//! - default: greedy or cost-benefit weighted as `weighted`, with the weights measured
//!   from the workload (see [`super::hotness`]).

use super::GcPolicy;
use crate::segment::SectionInfo;

/// Foreground (a writer waits) or background (idle time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcKind {
    /// A writer needs free sections now.
    Foreground,
    /// The background thread cleans ahead of need.
    Background,
}

/// What the selection needs besides the candidates.
#[derive(Debug, Clone, Copy)]
pub struct Selection {
    /// The policy.
    pub policy: GcPolicy,
    /// Foreground or background.
    pub kind: GcKind,
    /// The prefer-data policies' switch: node sections may be chosen.
    pub node_clean: bool,
    /// The default policy's measured weights (data, node).
    pub weights: [u32; 2],
}

/// The cost function a policy uses for `kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Greedy,
    CostBenefit,
}

fn mode(policy: GcPolicy, kind: GcKind) -> Mode {
    match (policy, kind) {
        (GcPolicy::CostBenefit, _) => Mode::CostBenefit,
        (_, GcKind::Foreground) => Mode::Greedy,
        (_, GcKind::Background) => Mode::CostBenefit,
    }
}

/// Cost-benefit's benefit (higher is better): `100 (100 - u) age / (100 + u)`.
fn cb_benefit(s: &SectionInfo, min_mtime: u64, max_mtime: u64) -> u64 {
    let u = s.valid_blocks as u64 * 100 / s.capacity.max(1) as u64;
    let age = if max_mtime > min_mtime {
        100 - 100 * (s.mtime_secs.clamp(min_mtime, max_mtime) - min_mtime) / (max_mtime - min_mtime)
    } else {
        0
    };
    100 * (100 - u) * age / (100 + u)
}

/// The cheapest candidate under `sel`, or `None` when no candidate qualifies.
pub fn pick(candidates: &[SectionInfo], sel: Selection) -> Option<SectionInfo> {
    let m = mode(sel.policy, sel.kind);
    let (min_mtime, max_mtime) = candidates.iter().fold((u64::MAX, 0), |(lo, hi), s| {
        (lo.min(s.mtime_secs), hi.max(s.mtime_secs))
    });
    let prefers_data = match sel.policy {
        GcPolicy::PreferDataV1 => sel.kind == GcKind::Foreground,
        GcPolicy::PreferDataV2 => true,
        _ => false,
    };
    let skip_nodes = prefers_data && !sel.node_clean;
    let mut best: Option<(i128, SectionInfo)> = None;
    for s in candidates {
        if skip_nodes && s.is_node {
            continue;
        }
        let base: i128 = match m {
            Mode::Greedy => s.valid_blocks as i128,
            // Turned into "distance from the best possible" so weights scale it sensibly.
            Mode::CostBenefit => (100 * 100) as i128 - cb_benefit(s, min_mtime, max_mtime) as i128,
        };
        let (data, node) = match sel.policy {
            GcPolicy::Weighted { data, node } => (data, node),
            GcPolicy::Default => (sel.weights[0], sel.weights[1]),
            _ => (1, 1),
        };
        let cost = base * if s.is_node { node } else { data } as i128;
        if best.as_ref().is_none_or(|(c, _)| cost < *c) {
            best = Some((cost, *s));
        }
    }
    best.map(|(_, s)| s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sec(secno: u32, valid: u32, is_node: bool, mtime: u64) -> SectionInfo {
        SectionInfo {
            secno,
            valid_blocks: valid,
            capacity: 2048,
            is_node,
            mtime_secs: mtime,
        }
    }

    fn fg(policy: GcPolicy, node_clean: bool) -> Selection {
        Selection {
            policy,
            kind: GcKind::Foreground,
            node_clean,
            weights: [1, 1],
        }
    }

    #[test]
    fn greedy_takes_the_fewest_valid_blocks_of_any_type() {
        let c = [sec(0, 900, false, 5), sec(1, 300, true, 5), sec(2, 400, false, 5)];
        assert_eq!(pick(&c, fg(GcPolicy::Greedy, false)).unwrap().secno, 1);
        assert!(pick(&[], fg(GcPolicy::Greedy, false)).is_none());
    }

    #[test]
    fn prefer_data_skips_node_sections_until_node_cleaning() {
        let c = [sec(0, 900, false, 5), sec(1, 300, true, 5), sec(2, 400, false, 5)];
        for p in [GcPolicy::PreferDataV1, GcPolicy::PreferDataV2] {
            assert_eq!(pick(&c, fg(p, false)).unwrap().secno, 2);
            assert_eq!(pick(&c, fg(p, true)).unwrap().secno, 1);
            assert!(pick(&c[1..2], fg(p, false)).is_none());
        }
    }

    #[test]
    fn v1_prefers_data_in_the_foreground_only() {
        let c = [sec(0, 900, false, 5), sec(1, 300, true, 0)];
        let mut bg = fg(GcPolicy::PreferDataV1, false);
        bg.kind = GcKind::Background;
        assert_eq!(pick(&c, fg(GcPolicy::PreferDataV1, false)).unwrap().secno, 0);
        assert_eq!(pick(&c, bg).unwrap().secno, 1);
    }

    #[test]
    fn default_uses_its_measured_weights() {
        let c = [sec(0, 900, false, 5), sec(1, 300, true, 5)];
        let mut sel = fg(GcPolicy::Default, false);
        assert_eq!(pick(&c, sel).unwrap().secno, 1);
        sel.weights = [1, 4];
        assert_eq!(pick(&c, sel).unwrap().secno, 0);
    }

    #[test]
    fn weights_scale_costs_per_type() {
        let c = [sec(0, 900, false, 5), sec(1, 3, true, 5)];
        let w = GcPolicy::Weighted { data: 1, node: 512 };
        assert_eq!(pick(&c, fg(w, false)).unwrap().secno, 0);
        let w = GcPolicy::Weighted { data: 1, node: 1 };
        assert_eq!(pick(&c, fg(w, false)).unwrap().secno, 1);
    }

    #[test]
    fn cost_benefit_prefers_old_sections_at_equal_utilisation() {
        let c = [
            sec(0, 1000, false, 100),
            sec(1, 1000, false, 10),
            sec(2, 1200, false, 0),
        ];
        let sel = Selection {
            policy: GcPolicy::Greedy,
            kind: GcKind::Background,
            node_clean: false,
            weights: [1, 1],
        };
        // Section 2 is older still, but fuller; section 1 wins on benefit.
        assert_eq!(pick(&c, sel).unwrap().secno, 1);
        assert_eq!(pick(&c, fg(GcPolicy::CostBenefit, false)).unwrap().secno, 1);
    }
}
