//! Victim-selection policies: the kernel's greedy, cost-benefit and ATGC, the seed
//! patches' prefer-data variants, the maintainers' per-type weights, and uf2fs's own
//! default. Parsed from the names `uf2fs mount -o gc_policy=` and `uf2fs bench waf
//! --policy` accept.

use crate::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// How garbage collection picks its victim sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcPolicy {
    /// Linux F2FS's default: greedy (fewest valid blocks) in the foreground,
    /// cost-benefit in the background.
    Greedy,
    /// Cost-benefit (valid blocks against age) in the foreground too.
    CostBenefit,
    /// Age-threshold GC (`-o atgc`): foreground greedy, background by age threshold.
    Atgc,
    /// The 2023 seed patch v1 (`prefer_data_victim`): foreground GC takes data sections
    /// first and node sections only when free sections run short.
    PreferDataV1,
    /// The seed patch v2: node sections skipped unless node cleaning is needed (free
    /// sections at most the pending need + 3, or no data victim left).
    PreferDataV2,
    /// The maintainers' proposal: every cost multiplied by a weight per segment type.
    Weighted {
        /// Weight of data sections.
        data: u32,
        /// Weight of node sections.
        node: u32,
    },
    /// uf2fs's default: cost-benefit on the logical age (blocks written since), any
    /// segment type, with the seed patches' batched checkpoints (see docs/gc-default.md).
    Default,
}

impl GcPolicy {
    /// Every policy name, for help texts.
    pub const NAMES: &'static str = "greedy, cost-benefit, atgc, prefer-data-v1, prefer-data-v2, weighted:D:N, default";
}

impl fmt::Display for GcPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GcPolicy::Greedy => f.write_str("greedy"),
            GcPolicy::CostBenefit => f.write_str("cost-benefit"),
            GcPolicy::Atgc => f.write_str("atgc"),
            GcPolicy::PreferDataV1 => f.write_str("prefer-data-v1"),
            GcPolicy::PreferDataV2 => f.write_str("prefer-data-v2"),
            GcPolicy::Weighted { data, node } => write!(f, "weighted:{data}:{node}"),
            GcPolicy::Default => f.write_str("default"),
        }
    }
}

impl FromStr for GcPolicy {
    type Err = Error;

    fn from_str(s: &str) -> Result<GcPolicy> {
        let bad = |why: &str| Error::Invalid(format!("GC policy '{s}': {why} (known: {})", GcPolicy::NAMES));
        Ok(match s {
            "greedy" => GcPolicy::Greedy,
            "cost-benefit" => GcPolicy::CostBenefit,
            "atgc" => GcPolicy::Atgc,
            "prefer-data-v1" => GcPolicy::PreferDataV1,
            "prefer-data-v2" => GcPolicy::PreferDataV2,
            "default" => GcPolicy::Default,
            _ => {
                let Some(rest) = s.strip_prefix("weighted:") else {
                    return Err(bad("unknown"));
                };
                let (d, n) = rest.split_once(':').ok_or_else(|| bad("weights are D:N"))?;
                let weight = |w: &str| -> Result<u32> {
                    match w.parse::<u32>() {
                        Ok(v) if (1..=1_000_000).contains(&v) => Ok(v),
                        _ => Err(bad("weights are whole numbers from 1 to 1000000")),
                    }
                };
                GcPolicy::Weighted {
                    data: weight(d)?,
                    node: weight(n)?,
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::gc::policy::GcPolicy;

    #[test]
    fn names_round_trip() {
        for name in [
            "greedy",
            "cost-benefit",
            "atgc",
            "prefer-data-v1",
            "prefer-data-v2",
            "weighted:1:512",
            "default",
        ] {
            assert_eq!(name.parse::<GcPolicy>().unwrap().to_string(), name);
        }
    }

    #[test]
    fn bad_names_are_refused_with_the_list() {
        for bad in [
            "",
            "Greedy",
            "weighted",
            "weighted:1",
            "weighted:0:5",
            "weighted:1:x",
            "weighted:1:2:3",
        ] {
            let e = bad.parse::<GcPolicy>().unwrap_err().to_string();
            assert!(e.contains("known: greedy"), "{bad}: {e}");
        }
    }
}
