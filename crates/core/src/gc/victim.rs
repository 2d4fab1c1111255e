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
//! - atgc: greedy in the foreground; in the background the kernel's age-threshold
//!   choice among the oldest candidates past 7 days (uf2fs keeps no separate ATGC log:
//!   moved blocks go to the cold data log as with the other policies);
//! - default: cost-benefit on the logical age, `(1 - u) (1 + age) / (1 + u)` with `age`
//!   the blocks written since the section's blocks were (not normalized to the
//!   candidates, so a young empty section still scores), any segment type; see
//!   docs/gc-default.md.

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
    /// Now, on the SIT's age clock (seconds; ATGC's age threshold uses it).
    pub now_secs: u64,
}

/// ATGC: sections younger than this are not candidates (the kernel's
/// `DEF_GC_THREAD_AGE_THRESHOLD`, 7 days).
pub const ATGC_AGE_THRESHOLD_SECS: u64 = 7 * 24 * 3600;
/// ATGC: share of the oldest candidates examined, in percent
/// (`DEF_GC_THREAD_CANDIDATE_RATIO`).
pub const ATGC_CANDIDATE_RATIO: usize = 20;
/// ATGC: most candidates examined (`DEF_GC_THREAD_MAX_CANDIDATE_COUNT`).
pub const ATGC_MAX_CANDIDATES: usize = 10;
/// ATGC: weight of age against free space, in percent (`DEF_GC_THREAD_AGE_WEIGHT`).
pub const ATGC_AGE_WEIGHT: u64 = 60;

/// ATGC's background choice (the kernel's `atgc_lookup_victim`): among the oldest
/// candidates past the age threshold, the best mix of age (60%) and free space (40%).
fn pick_atgc(candidates: &[SectionInfo], now: u64) -> Option<SectionInfo> {
    let mut old: Vec<&SectionInfo> = candidates
        .iter()
        .filter(|s| s.mtime_secs.saturating_add(ATGC_AGE_THRESHOLD_SECS) <= now)
        .collect();
    if old.is_empty() {
        return None;
    }
    old.sort_by_key(|s| s.mtime_secs);
    let min = old[0].mtime_secs;
    let max = old[old.len() - 1].mtime_secs + 1;
    let total = (max - min) as u128;
    let examine = (old.len() * ATGC_CANDIDATE_RATIO / 100).clamp(1, ATGC_MAX_CANDIDATES);
    old.iter()
        .take(examine)
        .map(|s| {
            // Both terms on a 0..=10000 scale.
            let age = 10_000 * (max - s.mtime_secs) as u128 / total * ATGC_AGE_WEIGHT as u128;
            let free = 10_000 * (s.capacity - s.valid_blocks) as u128 / s.capacity.max(1) as u128
                * (100 - ATGC_AGE_WEIGHT) as u128;
            (u128::MAX - (age + free), **s)
        })
        .min_by_key(|(cost, s)| (*cost, std::cmp::Reverse(s.mtime_secs)))
        .map(|(_, s)| s)
}

/// The cost function a policy uses for `kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Greedy,
    CostBenefit,
    /// Cost-benefit with the logical age (blocks written since), not normalized.
    AgeBenefit,
}

fn mode(policy: GcPolicy, kind: GcKind) -> Mode {
    match (policy, kind) {
        (GcPolicy::Default, _) => Mode::AgeBenefit,
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
    if sel.policy == GcPolicy::Atgc && sel.kind == GcKind::Background {
        return pick_atgc(candidates, sel.now_secs);
    }
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
    let mut best: Option<(f64, SectionInfo)> = None;
    for s in candidates {
        if skip_nodes && s.is_node {
            continue;
        }
        let base: f64 = match m {
            Mode::Greedy => s.valid_blocks as f64,
            // Turned into "distance from the best possible" so weights scale it sensibly.
            Mode::CostBenefit => (100 * 100) as f64 - cb_benefit(s, min_mtime, max_mtime) as f64,
            Mode::AgeBenefit => {
                let (v, c) = (s.valid_blocks as f64, s.capacity.max(1) as f64);
                -((c - v) * (1.0 + s.age_blocks as f64) / (c + v))
            }
        };
        let (data, node) = match sel.policy {
            GcPolicy::Weighted { data, node } => (data, node),
            _ => (1, 1),
        };
        let cost = base * if s.is_node { node } else { data } as f64;
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
            age_blocks: 0,
        }
    }

    fn fg(policy: GcPolicy, node_clean: bool) -> Selection {
        Selection {
            policy,
            kind: GcKind::Foreground,
            node_clean,
            now_secs: 0,
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
    fn default_weighs_free_space_by_logical_age() {
        let mut c = [sec(0, 1024, false, 5), sec(1, 1536, true, 5), sec(2, 200, false, 5)];
        c[0].age_blocks = 100_000;
        c[1].age_blocks = 1_000_000;
        c[2].age_blocks = 10;
        let sel = fg(GcPolicy::Default, false);
        // Half full but old beats nearly empty but just written; older still beats
        // fuller, whatever the type.
        assert_eq!(pick(&c, sel).unwrap().secno, 1);
        c[1].age_blocks = 0;
        assert_eq!(pick(&c, sel).unwrap().secno, 0);
        c[2].age_blocks = 100_000;
        assert_eq!(pick(&c, sel).unwrap().secno, 2, "same age: the emptier");
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
            now_secs: 0,
        };
        // Section 2 is older still, but fuller; section 1 wins on benefit.
        assert_eq!(pick(&c, sel).unwrap().secno, 1);
        assert_eq!(pick(&c, fg(GcPolicy::CostBenefit, false)).unwrap().secno, 1);
    }
}
