//! Victim policies as values: one [`VictimPolicy`] per policy, each in its own file,
//! chosen from the user-facing [`GcPolicy`] by [`for_policy`]. A policy says what the
//! GC engine ([`super`]) asks of it and nothing else:
//! - which candidate section to clean ([`VictimPolicy::cost`], lower wins, or a whole
//!   [`VictimPolicy::pick`] of its own, as ATGC's background choice);
//! - which loop the foreground pass runs ([`PassLoop`]): the kernel's (Linux 6.1's or
//!   6.12's, [`crate::KernelGcLoop`]), the 2023 seed patches' with `need_node_clean`, or
//!   uf2fs's batched checkpoints;
//! - the seed patches' node-cleaning rules ([`NodeCleanRules`]), where they apply.
//!
//! The engine takes the candidates ([`SectionInfo`]) from the segment manager and
//! keeps the loop, the checkpoints and the migration; a new policy is a new file here
//! and one arm in [`for_policy`].
//!
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

mod age_benefit;
mod atgc;
mod cost_benefit;
mod greedy;
mod prefer_data;
mod weighted;

use super::policy::GcPolicy;
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
    /// Foreground or background.
    pub kind: GcKind,
    /// The prefer-data policies' switch: node sections may be chosen.
    pub node_clean: bool,
    /// Now, on the SIT's age clock (seconds; ATGC's age threshold uses it).
    pub now_secs: u64,
    /// Node writes a moved data block has cost so far
    /// ([`super::GcStats::node_writes_per_data_block`]).
    pub node_writes_per_data_block: f64,
}

/// The loop a foreground pass runs (see the GC engine's notes in [`super`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassLoop {
    /// The kernel's `f2fs_gc`, as the release [`crate::KernelGcLoop`] names has it: a
    /// checkpoint of the prefree sections when a round finds too little room (Linux
    /// 6.12: every round; 6.1: the first) and when free sections run down to the need
    /// + 3.
    Kernel,
    /// The seed patches': the checkpoint step at the top of the loop, which also turns
    /// node cleaning on ([`NodeCleanRules`]).
    NodeClean,
    /// uf2fs's default: emptied sections wait across passes for one checkpoint and
    /// count as room meanwhile; a pass ends as soon as there is room.
    Batched,
}

/// The seed patches' `need_node_clean` rules of a policy, for one kind of pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeCleanRules {
    /// No data victim left turns node cleaning on (and the search runs again).
    pub on_when_no_data_victim: bool,
    /// A data section found cheapest while node cleaning is on, with enough free
    /// sections, turns node cleaning off (besides ending the pass).
    pub off_when_data_suffices: bool,
}

/// What costs relative to all the candidates of one selection need.
#[derive(Debug, Clone, Copy)]
pub struct Candidates {
    /// Oldest and youngest modification time among them (cost-benefit's age scale).
    pub min_mtime: u64,
    /// See `min_mtime`.
    pub max_mtime: u64,
    /// Node writes a moved data block costs ([`Selection::node_writes_per_data_block`]).
    pub node_writes_per_data_block: f64,
}

impl Candidates {
    fn new(all: &[SectionInfo], sel: &Selection) -> Candidates {
        let (min_mtime, max_mtime) = all.iter().fold((u64::MAX, 0), |(lo, hi), s| {
            (lo.min(s.mtime_secs), hi.max(s.mtime_secs))
        });
        Candidates {
            min_mtime,
            max_mtime,
            node_writes_per_data_block: sel.node_writes_per_data_block,
        }
    }
}

/// A victim policy (see the module notes).
pub trait VictimPolicy {
    /// The loop foreground passes run under this policy.
    fn pass_loop(&self) -> PassLoop {
        PassLoop::Kernel
    }

    /// The seed patches' node-cleaning rules for passes of `kind`, if this policy has
    /// them; then node sections are candidates only while node cleaning is on.
    fn node_clean_rules(&self, kind: GcKind) -> Option<NodeCleanRules> {
        let _ = kind;
        None
    }

    /// The cost of cleaning `s` in a pass of `kind` (lower is better).
    fn cost(&self, s: &SectionInfo, kind: GcKind, candidates: &Candidates) -> f64;

    /// The section to clean, or `None` when no candidate qualifies: by default the
    /// cheapest (the first of equal costs), node sections left out while node
    /// cleaning rules apply and are off.
    fn pick(&self, candidates: &[SectionInfo], sel: &Selection) -> Option<SectionInfo> {
        cheapest(self, candidates, sel)
    }
}

/// The default [`VictimPolicy::pick`]: the cheapest candidate under `policy` (the first
/// of equal costs), node sections left out while node cleaning rules apply and are
/// off. Policies with a pick of their own call it for the cases they leave as is.
pub fn cheapest<P: VictimPolicy + ?Sized>(
    policy: &P,
    candidates: &[SectionInfo],
    sel: &Selection,
) -> Option<SectionInfo> {
    let view = Candidates::new(candidates, sel);
    let skip_nodes = policy.node_clean_rules(sel.kind).is_some() && !sel.node_clean;
    let mut best: Option<(f64, SectionInfo)> = None;
    for s in candidates {
        if skip_nodes && s.is_node {
            continue;
        }
        let cost = policy.cost(s, sel.kind, &view);
        if best.as_ref().is_none_or(|(c, _)| cost < *c) {
            best = Some((cost, *s));
        }
    }
    best.map(|(_, s)| s)
}

/// The implementation of `policy`.
pub fn for_policy(policy: GcPolicy) -> Box<dyn VictimPolicy> {
    match policy {
        GcPolicy::Greedy => Box::new(greedy::Greedy),
        GcPolicy::CostBenefit => Box::new(cost_benefit::CostBenefit),
        GcPolicy::Atgc => Box::new(atgc::Atgc),
        GcPolicy::PreferDataV1 => Box::new(prefer_data::PreferData { v2: false }),
        GcPolicy::PreferDataV2 => Box::new(prefer_data::PreferData { v2: true }),
        GcPolicy::Weighted { data, node } => Box::new(weighted::Weighted { data, node }),
        GcPolicy::Default => Box::new(age_benefit::AgeBenefit),
    }
}

/// Greedy's cost: the valid blocks.
fn greedy_cost(s: &SectionInfo) -> f64 {
    s.valid_blocks as f64
}

/// Cost-benefit's benefit (higher is better): `100 (100 - u) age / (100 + u)`, with
/// `u` the percentage of valid blocks and `age` 0..=100 from the youngest to the
/// oldest candidate (the kernel's `get_cb_cost`).
fn cb_benefit(s: &SectionInfo, c: &Candidates) -> u64 {
    let (min_mtime, max_mtime) = (c.min_mtime, c.max_mtime);
    let u = s.valid_blocks as u64 * 100 / s.capacity.max(1) as u64;
    let age = if max_mtime > min_mtime {
        100 - 100 * (s.mtime_secs.clamp(min_mtime, max_mtime) - min_mtime) / (max_mtime - min_mtime)
    } else {
        0
    };
    100 * (100 - u) * age / (100 + u)
}

/// Cost-benefit as a cost: the benefit's distance from the best possible, so that
/// weights scale it sensibly.
fn cb_cost(s: &SectionInfo, c: &Candidates) -> f64 {
    (100 * 100) as f64 - cb_benefit(s, c) as f64
}

/// The kernel's default choice: greedy in the foreground, cost-benefit in the
/// background.
fn kernel_cost(s: &SectionInfo, kind: GcKind, c: &Candidates) -> f64 {
    match kind {
        GcKind::Foreground => greedy_cost(s),
        GcKind::Background => cb_cost(s, c),
    }
}

#[cfg(test)]
mod tests {
    use crate::gc::policies::{for_policy, GcKind, Selection};
    use crate::gc::policy::GcPolicy;
    use crate::segment::SectionInfo;

    fn pick(candidates: &[SectionInfo], (policy, sel): (GcPolicy, Selection)) -> Option<SectionInfo> {
        for_policy(policy).pick(candidates, &sel)
    }

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

    fn fg(policy: GcPolicy, node_clean: bool) -> (GcPolicy, Selection) {
        let sel = Selection {
            kind: GcKind::Foreground,
            node_clean,
            now_secs: 0,
            node_writes_per_data_block: 0.0,
        };
        (policy, sel)
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
        bg.1.kind = GcKind::Background;
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
        let sel = (
            GcPolicy::Greedy,
            Selection {
                kind: GcKind::Background,
                node_clean: false,
                now_secs: 0,
                node_writes_per_data_block: 0.0,
            },
        );
        // Section 2 is older still, but fuller; section 1 wins on benefit.
        assert_eq!(pick(&c, sel).unwrap().secno, 1);
        assert_eq!(pick(&c, fg(GcPolicy::CostBenefit, false)).unwrap().secno, 1);
    }
}
