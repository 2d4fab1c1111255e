//! `uf2fs bench writeback`: parallel writeback contexts (crate `uf2fs-lab`, module
//! `writeback`) from the command line — options, table, `--json`.

use crate::errors::UsageError;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use uf2fs_lab::size::parse_size;
use uf2fs_lab::writeback::{self, WbResult, WbRun, WbWorkload};

/// `uf2fs bench writeback` options.
#[derive(Debug, Args)]
pub struct WritebackArgs {
    /// Workloads, comma-separated: large (a few big files per writer, written
    /// sequentially), small (many small files per writer).
    #[arg(long, value_name = "LIST", default_value = "large,small")]
    pub workload: String,
    /// Writer threads, each writing its own files.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub writers: usize,
    /// Numbers of writeback contexts to compare, comma-separated.
    #[arg(long, value_name = "LIST", default_value = "1,2,4,8")]
    pub contexts: String,
    /// Policies to compare for more than one context, comma-separated: ino-hash,
    /// least-loaded (one context always runs `single`).
    #[arg(long, value_name = "LIST", default_value = "ino-hash,least-loaded")]
    pub policy: String,
    /// Bytes per file of the large workload.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "256M")]
    pub large_size: u64,
    /// Files per writer of the large workload.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub large_files: u32,
    /// Bytes per file of the small workload.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "64K")]
    pub small_size: u64,
    /// Files per writer of the small workload.
    #[arg(long, value_name = "N", default_value_t = 4000)]
    pub small_files: u32,
    /// Device model: microseconds each written 4 KiB block costs the thread writing it
    /// (slept; threads overlap, as NVMe queues do). 0: memory speed.
    #[arg(long, value_name = "US", default_value_t = 0.0)]
    pub write_us: f64,
    /// Runs of each configuration (the table shows medians).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub runs: usize,
    /// Read every file back after each run and compare it with what was written.
    #[arg(long)]
    pub verify: bool,
    /// Also write every run's results as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

fn list<T: std::str::FromStr>(s: &str, what: &str) -> Result<Vec<T>, UsageError> {
    s.split(',')
        .map(|x| {
            x.trim()
                .parse::<T>()
                .map_err(|_| UsageError(format!("bad {what} '{x}'")))
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Runs `uf2fs bench writeback`.
pub fn writeback(args: &WritebackArgs) -> anyhow::Result<()> {
    let contexts: Vec<usize> = list(&args.contexts, "number of contexts")?;
    if contexts
        .iter()
        .any(|&c| !(1..=uf2fs_core::writeback::MAX_WRITEBACK_CONTEXTS).contains(&c))
    {
        return Err(UsageError("contexts must be 1 to 64".into()).into());
    }
    let policies: Vec<String> = args.policy.split(',').map(|p| p.trim().to_string()).collect();
    for p in &policies {
        if !uf2fs_core::writeback::POLICY_NAMES.contains(&p.as_str()) {
            return Err(UsageError(format!("unknown writeback policy '{p}'")).into());
        }
    }
    if args.writers == 0 || args.runs == 0 {
        return Err(UsageError("--writers and --runs must be at least 1".into()).into());
    }
    let mut workloads = Vec::new();
    for w in args.workload.split(',') {
        workloads.push(match w.trim() {
            "large" => WbWorkload::Large {
                files: args.large_files,
                file_bytes: args.large_size,
            },
            "small" => WbWorkload::Small {
                files: args.small_files,
                file_bytes: args.small_size,
            },
            other => return Err(UsageError(format!("unknown workload '{other}' (large, small)")).into()),
        });
    }
    let mut configs = Vec::new();
    for &workload in &workloads {
        let (files, size) = match workload {
            WbWorkload::Large { files, file_bytes } | WbWorkload::Small { files, file_bytes } => (files, file_bytes),
        };
        // Room for the data, its nodes, and GC's reserve: twice the data, at least 1 GiB.
        let data = args.writers as u64 * files as u64 * size.div_ceil(4096) * 4096;
        let volume_bytes = (2 * data).max(1 << 30).next_multiple_of(2 << 20);
        for &c in &contexts {
            let ps: Vec<String> = if c == 1 {
                vec!["single".into()]
            } else {
                policies.clone()
            };
            for policy in ps {
                configs.push(WbRun {
                    workload,
                    writers: args.writers,
                    contexts: c,
                    policy,
                    volume_bytes,
                    write_us: args.write_us,
                });
            }
        }
    }
    let mut all: Vec<WbResult> = Vec::new();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<8} {:>7} {:>8} {:<13} {:>9} {:>8} {:>11} {:>7} {:>6}",
        "workload", "writers", "contexts", "policy", "MiB/s", "vs 1", "extents/file", "max", "WAF"
    )?;
    let mut base = std::collections::HashMap::new();
    for cfg in &configs {
        let mut runs = Vec::new();
        for _ in 0..args.runs {
            let r = writeback::run(cfg, args.verify).map_err(anyhow::Error::msg)?;
            runs.push(r);
        }
        let mbs = median(runs.iter().map(|r| r.mib_per_s).collect());
        let ext = median(runs.iter().map(|r| r.extents_per_file).collect());
        let max = runs.iter().map(|r| r.extents_max).max().unwrap_or(0);
        let waf = median(runs.iter().map(|r| r.waf).collect());
        if cfg.contexts == 1 {
            base.insert(cfg.workload.name(), mbs);
        }
        let ratio = base.get(cfg.workload.name()).map_or(f64::NAN, |b| mbs / b);
        writeln!(
            out,
            "{:<8} {:>7} {:>8} {:<13} {:>9.1} {:>7.2}x {:>11.1} {:>7} {:>6.3}",
            cfg.workload.name(),
            cfg.writers,
            cfg.contexts,
            cfg.policy,
            mbs,
            ratio,
            ext,
            max,
            waf
        )?;
        out.flush()?;
        all.extend(runs);
    }
    if let Some(path) = &args.json {
        std::fs::write(path, writeback::to_json(&all))?;
    }
    Ok(())
}
