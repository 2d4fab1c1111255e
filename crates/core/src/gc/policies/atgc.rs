//! Age-threshold GC (the kernel's ATGC): greedy in the foreground; in the background,
//! among the oldest candidates past 7 days, the best mix of age (60%) and free space
//! (40%) (the kernel's `atgc_lookup_victim`). uf2fs keeps no separate ATGC log: moved
//! blocks go to the cold data log as with the other policies.

use super::{cheapest, greedy_cost, Candidates, GcKind, Selection, VictimPolicy};
use crate::segment::SectionInfo;

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

/// The ATGC policy.
pub struct Atgc;

impl VictimPolicy for Atgc {
    fn cost(&self, s: &SectionInfo, _kind: GcKind, _c: &Candidates) -> f64 {
        greedy_cost(s)
    }

    fn pick(&self, candidates: &[SectionInfo], sel: &Selection) -> Option<SectionInfo> {
        match sel.kind {
            GcKind::Background => pick_atgc(candidates, sel.now_secs),
            GcKind::Foreground => cheapest(self, candidates, sel),
        }
    }
}
