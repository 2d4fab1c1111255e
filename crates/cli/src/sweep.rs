//! Sweeps across machines: `uf2fs bench ... --shard I/N` runs shard I of N of a bench
//! subcommand's runs and writes a shard file; `uf2fs bench merge` checks a sweep's
//! shard files and hands their records back in the runs' order, for the subcommand to
//! write the JSON a run on one machine writes. See docs/sweeps.md.
//!
//! Run `r` (counted from 0 in the order the subcommand runs them on one machine)
//! belongs to shard `r mod N + 1`: the assignment depends only on the options, and
//! neighbouring runs (often of similar cost) go to different shards.

use crate::errors::UsageError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// What a shard file says it is (the `format` field).
pub const SHARD_FORMAT: &str = "uf2fs-bench-shard-1";

/// `--shard I/N`: shard `index` (from 1) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which shard, from 1.
    pub index: usize,
    /// How many shards the runs are split into.
    pub count: usize,
}

impl Shard {
    /// Whether run `run` (from 0) is this shard's.
    pub fn owns(&self, run: usize) -> bool {
        run % self.count == self.index - 1
    }

    /// This shard's runs among `runs` runs.
    pub fn runs(&self, runs: usize) -> Vec<usize> {
        (0..runs).filter(|&r| self.owns(r)).collect()
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || {
            format!(
                "'{s}' is not a shard: I/N with 1 <= I <= N, e.g. 1/4 (a Slurm array task 0-based: $((SLURM_ARRAY_TASK_ID + 1))/N)"
            )
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse::<usize>().map_err(|_| bad())?,
            n.trim().parse::<usize>().map_err(|_| bad())?,
        );
        if count == 0 || index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// The header of a shard file: enough to tell whether shards belong to one sweep.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardHeader {
    /// [`SHARD_FORMAT`].
    pub format: String,
    /// The uf2fs version that ran the shard.
    pub uf2fs: String,
    /// The bench subcommand: waf, latency, writeback.
    pub bench: String,
    /// Every option that decides which runs there are and what they measure (not the
    /// output paths, nor `--jobs`, which changes no figure).
    pub options: Value,
    /// Which shard, from 1.
    pub index: usize,
    /// Of how many.
    pub count: usize,
    /// Runs of the whole sweep.
    pub runs: usize,
}

/// One run's record in a shard file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardRecord {
    /// The run's place in the sweep's order, from 0.
    pub run: usize,
    /// The run's name (e.g. `greedy/uniform`), for messages.
    pub key: String,
    /// The record the subcommand's `--json` holds for it, whole.
    pub record: Value,
}

/// A shard file: `--json` of a run with `--shard`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardFile {
    /// What it is a shard of.
    pub uf2fs_shard: ShardHeader,
    /// The rest of the subcommand's JSON document, the records left out (`null` when
    /// the document is just the records).
    pub frame: Value,
    /// The shard's runs that succeeded, in the sweep's order.
    pub records: Vec<ShardRecord>,
}

impl ShardFile {
    /// A shard file for shard `shard` of `bench`'s `runs` runs.
    pub fn new(bench: &str, options: Value, shard: Shard, runs: usize, frame: Value) -> ShardFile {
        ShardFile {
            uf2fs_shard: ShardHeader {
                format: SHARD_FORMAT.to_string(),
                uf2fs: env!("CARGO_PKG_VERSION").to_string(),
                bench: bench.to_string(),
                options,
                index: shard.index,
                count: shard.count,
                runs,
            },
            frame,
            records: Vec::new(),
        }
    }

    /// Adds run `run`'s record.
    pub fn push(&mut self, run: usize, key: String, record: &impl Serialize) -> anyhow::Result<()> {
        let record = serde_json::to_value(record).map_err(|e| anyhow::anyhow!("encoding run {key}: {e}"))?;
        self.records.push(ShardRecord { run, key, record });
        Ok(())
    }

    /// Writes the file.
    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(|e| anyhow::anyhow!("encoding the shard: {e}"))?;
        std::fs::write(path, text + "\n").map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
    }
}

/// A sweep's shards, checked and joined.
#[derive(Debug)]
pub struct Merged {
    /// The bench subcommand.
    pub bench: String,
    /// The shards' frame (see [`ShardFile::frame`]).
    pub frame: Value,
    /// Every run's record, in the sweep's order.
    pub records: Vec<Value>,
}

/// Reads the shard files `paths` and joins them, refusing (with one line naming the
/// files) anything but exactly one file for each shard of one sweep, with every run's
/// record.
pub fn load(paths: &[PathBuf]) -> anyhow::Result<Merged> {
    let mut shards: Vec<(&Path, ShardFile)> = Vec::new();
    for p in paths {
        shards.push((p, read_shard(p)?));
    }
    let Some((first_path, first)) = shards.first().map(|(p, s)| (*p, s.clone())) else {
        return Err(UsageError("bench merge needs at least one shard file".into()).into());
    };
    let h0 = &first.uf2fs_shard;
    let show = |p: &Path| p.display().to_string();
    let mut by_index: Vec<Option<&Path>> = vec![None; h0.count];
    for (p, s) in &shards {
        let h = &s.uf2fs_shard;
        let mismatch = |what: String| -> anyhow::Error {
            UsageError(format!(
                "{} and {} are not shards of one sweep: {what}",
                show(first_path),
                show(p)
            ))
            .into()
        };
        if h.uf2fs != h0.uf2fs {
            return Err(mismatch(format!("written by uf2fs {} and {}", h0.uf2fs, h.uf2fs)));
        }
        if h.bench != h0.bench {
            return Err(mismatch(format!("bench {} and bench {}", h0.bench, h.bench)));
        }
        if h.count != h0.count || h.runs != h0.runs {
            return Err(mismatch(format!(
                "shard {}/{} of {} runs and shard {}/{} of {} runs",
                h0.index, h0.count, h0.runs, h.index, h.count, h.runs
            )));
        }
        if let Some(path) = first_difference(&h0.options, &h.options, "") {
            return Err(mismatch(format!("run with different options ({path})")));
        }
        if let Some(path) = first_difference(&first.frame, &s.frame, "") {
            return Err(mismatch(format!("different documents ({path})")));
        }
        match by_index[h.index - 1] {
            Some(other) if other == *p => {
                return Err(UsageError(format!("{} is given twice", show(p))).into());
            }
            Some(other) => {
                return Err(UsageError(format!(
                    "{} and {} are both shard {}/{}",
                    show(other),
                    show(p),
                    h.index,
                    h.count
                ))
                .into())
            }
            None => by_index[h.index - 1] = Some(p),
        }
    }
    let missing: Vec<String> = (1..=h0.count)
        .filter(|&i| by_index[i - 1].is_none())
        .map(|i| format!("{i}/{}", h0.count))
        .collect();
    if !missing.is_empty() {
        return Err(UsageError(format!(
            "shard{} {} of the sweep missing (given: {})",
            if missing.len() > 1 { "s" } else { "" },
            missing.join(", "),
            paths.iter().map(|p| show(p)).collect::<Vec<_>>().join(", ")
        ))
        .into());
    }
    let mut records: Vec<Option<Value>> = vec![None; h0.runs];
    for (p, s) in shards {
        let shard = Shard {
            index: s.uf2fs_shard.index,
            count: s.uf2fs_shard.count,
        };
        for r in s.records {
            if r.run >= h0.runs || !shard.owns(r.run) || records[r.run].is_some() {
                return Err(UsageError(format!(
                    "{}: run {} ({}) is not shard {shard}'s or appears twice",
                    show(p),
                    r.run,
                    r.key
                ))
                .into());
            }
            records[r.run] = Some(r.record);
        }
        if let Some(run) = shard.runs(h0.runs).into_iter().find(|&r| records[r].is_none()) {
            return Err(UsageError(format!(
                "{}: run {run} of shard {shard} has no record (it failed there: run that shard again)",
                show(p)
            ))
            .into());
        }
    }
    Ok(Merged {
        bench: h0.bench.clone(),
        frame: first.frame.clone(),
        records: records.into_iter().flatten().collect(),
    })
}

fn read_shard(path: &Path) -> anyhow::Result<ShardFile> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read {shown}: {e}"))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| UsageError(format!("{shown} is not JSON: {e}")))?;
    let format = value
        .get("uf2fs_shard")
        .and_then(|h| h.get("format"))
        .and_then(Value::as_str);
    match format {
        Some(SHARD_FORMAT) => {}
        Some(other) => {
            return Err(UsageError(format!(
                "{shown} is a shard file of another format ({other}; this uf2fs reads {SHARD_FORMAT})"
            ))
            .into())
        }
        None => {
            return Err(UsageError(format!(
                "{shown} is not a shard file (no uf2fs_shard header: write shards with --shard I/N --json FILE)"
            ))
            .into())
        }
    }
    let file: ShardFile =
        serde_json::from_value(value).map_err(|e| UsageError(format!("{shown}: a damaged shard file: {e}")))?;
    let h = &file.uf2fs_shard;
    if h.count == 0 || h.index == 0 || h.index > h.count {
        return Err(UsageError(format!("{shown}: a damaged shard file (shard {}/{})", h.index, h.count)).into());
    }
    Ok(file)
}

/// Where `a` and `b` first differ, as a path with both values (`None`: equal).
fn first_difference(a: &Value, b: &Value, at: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                let here = if at.is_empty() { k.clone() } else { format!("{at}.{k}") };
                match y.get(k) {
                    Some(w) => {
                        if let Some(d) = first_difference(v, w, &here) {
                            return Some(d);
                        }
                    }
                    None => return Some(format!("{here}: {v} and nothing")),
                }
            }
            y.iter()
                .find(|(k, _)| !x.contains_key(*k))
                .map(|(k, w)| format!("{}{k}: nothing and {w}", if at.is_empty() { "" } else { "." }))
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (v, w))| first_difference(v, w, &format!("{at}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!("{}: {a} and {b}", if at.is_empty() { "the value" } else { at })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shards_parse_from_one_and_split_the_runs_round_robin() {
        let s: Shard = "2/3".parse().unwrap();
        assert_eq!(s, Shard { index: 2, count: 3 });
        assert_eq!(s.runs(8), [1, 4, 7]);
        let all: Vec<usize> = (1..=3)
            .flat_map(|i| Shard { index: i, count: 3 }.runs(8))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(all, (0..8).collect::<Vec<_>>());
        for bad in ["0/3", "4/3", "1/0", "3", "a/b", "-1/2", ""] {
            assert!(bad.parse::<Shard>().unwrap_err().contains("not a shard"), "{bad}");
        }
    }

    #[test]
    fn differences_are_named_by_path() {
        let a = json!({"setup": {"zones": 96, "seed": 1}, "policies": ["greedy"]});
        assert_eq!(first_difference(&a, &a.clone(), ""), None);
        let b = json!({"setup": {"zones": 64, "seed": 1}, "policies": ["greedy"]});
        assert_eq!(first_difference(&a, &b, "").unwrap(), "setup.zones: 96 and 64");
        let c = json!({"setup": {"zones": 96, "seed": 1}, "policies": ["greedy", "atgc"]});
        assert!(first_difference(&a, &c, "").unwrap().starts_with("policies:"));
    }
}
