//! `uf2fs bench writeback`: parallel writeback contexts (crate `uf2fs-lab`, module
//! `writeback`) from the command line — options, table, `--json`, `--plot`,
//! `--save-image`.

use crate::errors::UsageError;
use crate::sweep::{Shard, ShardFile};
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};
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
    /// Also draw throughput against contexts, one line per policy, as SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Save each configuration's last volume in DIR as an image
    /// (writeback-WORKLOAD-CONTEXTS-POLICY.img, unmounted) and check the extents of its
    /// files against f2fs-tools' `dump.f2fs -M` (up to 64 files per image).
    #[arg(long, value_name = "DIR")]
    pub save_image: Option<PathBuf>,
    /// Run only shard I of N of the configurations (workload, contexts, policy; I from
    /// 1; configuration c is shard c mod N + 1's), each with all its --runs, and write
    /// them to --json as a shard file for `bench merge`. Throughput is wall-clock time:
    /// compare configurations of one machine (docs/sweeps.md).
    #[arg(long, value_name = "I/N", requires = "json", value_parser = |s: &str| s.parse::<Shard>())]
    pub shard: Option<Shard>,
}

/// Files per saved image whose extents `--save-image` checks with dump.f2fs.
const DUMP_CHECKED_FILES: usize = 64;

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
                let save_image = args
                    .save_image
                    .as_ref()
                    .map(|d| d.join(format!("writeback-{}-{c}-{policy}.img", workload.name())));
                configs.push(WbRun {
                    workload,
                    writers: args.writers,
                    contexts: c,
                    policy,
                    volume_bytes,
                    write_us: args.write_us,
                    save_image,
                });
            }
        }
    }
    if let Some(dir) = &args.save_image {
        if !dir.is_dir() {
            return Err(UsageError(format!("--save-image: {} is not a directory", dir.display())).into());
        }
    }
    for path in [&args.json, &args.plot].into_iter().flatten() {
        crate::bench_output::check_output(path)?;
    }
    let owned: Vec<usize> = match args.shard {
        Some(shard) => shard.runs(configs.len()),
        None => (0..configs.len()).collect(),
    };
    let mut shard_file = match args.shard {
        Some(shard) => {
            // The options that decide the configurations and their figures (not the
            // outputs).
            let options = serde_json::json!({
                "workload": args.workload,
                "writers": args.writers,
                "contexts": args.contexts,
                "policy": args.policy,
                "large_size": args.large_size,
                "large_files": args.large_files,
                "small_size": args.small_size,
                "small_files": args.small_files,
                "write_us": args.write_us,
                "runs": args.runs,
                "verify": args.verify,
            });
            println!("shard {shard}: {} of the {} configurations", owned.len(), configs.len());
            Some(ShardFile::new(
                "writeback",
                options,
                shard,
                configs.len(),
                serde_json::Value::Null,
            ))
        }
        None => None,
    };
    let mut all: Vec<WbResult> = Vec::new();
    let mut points = Vec::new();
    let bar = crate::bench_output::progress_bar((owned.len() * args.runs) as u64);
    let mut out = std::io::stdout().lock();
    let header = format!(
        "{:<8} {:>7} {:>8} {:<13} {:>9} {:>8} {:>11} {:>7} {:>6} {:>11} {:>10}",
        "workload",
        "writers",
        "contexts",
        "policy",
        "MiB/s",
        "vs 1",
        "extents/file",
        "max",
        "WAF",
        "ctx CPU s",
        "writers CPU"
    );
    bar.suspend(|| writeln!(out, "{header}"))?;
    let mut base = std::collections::HashMap::new();
    for (c, cfg) in configs.iter().enumerate().filter(|(c, _)| owned.contains(c)) {
        let mut runs = Vec::new();
        for i in 0..args.runs {
            bar.set_message(format!(
                "{} {} context(s) {} run {}/{}",
                cfg.workload.name(),
                cfg.contexts,
                cfg.policy,
                i + 1,
                args.runs
            ));
            let r = writeback::run(cfg, args.verify).map_err(anyhow::Error::msg)?;
            bar.inc(1);
            runs.push(r);
        }
        if let (Some(img), Some(last)) = (&cfg.save_image, runs.last()) {
            let files = &last.file_extents[..last.file_extents.len().min(DUMP_CHECKED_FILES)];
            let n = writeback::check_extents_with_dump(img, files)
                .map_err(|e| anyhow::anyhow!("{}: {e}", img.display()))?;
            bar.suspend(|| eprintln!("{}: dump.f2fs -M agrees on the extents of {n} files", img.display()));
        }
        let mbs = median(runs.iter().map(|r| r.mib_per_s).collect());
        let ext = median(runs.iter().map(|r| r.extents_per_file).collect());
        let max = runs.iter().map(|r| r.extents_max).max().unwrap_or(0);
        let waf = median(runs.iter().map(|r| r.waf).collect());
        if cfg.contexts == 1 {
            base.insert(cfg.workload.name(), mbs);
        }
        // Against one context on this machine ("-" in a shard without that run).
        let ratio = base
            .get(cfg.workload.name())
            .map_or("-".to_string(), |b| format!("{:.2}x", mbs / b));
        // CPU per context, medians over the runs: "a/b/..." (or "-" where unknown).
        let ctx_cpu = (0..cfg.contexts)
            .map(|c| {
                let v: Vec<f64> = runs.iter().filter_map(|r| r.context_cpu_s.get(c).copied()).collect();
                if v.is_empty() {
                    "-".to_string()
                } else {
                    format!("{:.2}", median(v))
                }
            })
            .collect::<Vec<_>>()
            .join("/");
        let writers_cpu = median(runs.iter().map(|r| r.writers_cpu_s).collect());
        let line = format!(
            "{:<8} {:>7} {:>8} {:<13} {:>9.1} {:>8} {:>11.1} {:>7} {:>6.3} {:>11} {:>10.2}",
            cfg.workload.name(),
            cfg.writers,
            cfg.contexts,
            cfg.policy,
            mbs,
            ratio,
            ext,
            max,
            waf,
            ctx_cpu,
            writers_cpu
        );
        bar.suspend(|| -> std::io::Result<()> {
            writeln!(out, "{line}")?;
            out.flush()
        })?;
        points.push(uf2fs_lab::plot::WbPoint {
            workload: cfg.workload.name().to_string(),
            policy: cfg.policy.clone(),
            contexts: cfg.contexts,
            mib_per_s: mbs,
        });
        if let Some(f) = shard_file.as_mut() {
            f.push(
                c,
                format!("{}/{}/{}", cfg.workload.name(), cfg.contexts, cfg.policy),
                &runs,
            )?;
        }
        all.extend(runs);
    }
    bar.finish_and_clear();
    match (&args.json, &shard_file) {
        (Some(path), None) => std::fs::write(path, writeback::to_json(&all))?,
        (Some(path), Some(f)) => f.write(path)?,
        (None, _) => {}
    }
    if let Some(path) = &args.plot {
        uf2fs_lab::plot::plot_writeback(&points, path).map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// `bench writeback`'s shards joined: the JSON a run of all the configurations writes
/// (every run, configuration by configuration), and the plot of their median
/// throughputs. `records` holds one array of runs per configuration.
pub fn merge(records: Vec<serde_json::Value>, json: &Path, plot: Option<&Path>) -> anyhow::Result<()> {
    let damaged = || UsageError("a damaged writeback record in the shards".into());
    let mut all = Vec::new();
    let mut points = Vec::new();
    for config in records {
        let serde_json::Value::Array(runs) = config else {
            return Err(damaged().into());
        };
        let first = runs.first().ok_or_else(damaged)?;
        let field = |k: &str| first.get(k).ok_or_else(damaged);
        let mbs: Option<Vec<f64>> = runs
            .iter()
            .map(|r| r.get("mib_per_s").and_then(|v| v.as_f64()))
            .collect();
        points.push(uf2fs_lab::plot::WbPoint {
            workload: field("workload")?.as_str().ok_or_else(damaged)?.to_string(),
            policy: field("policy")?.as_str().ok_or_else(damaged)?.to_string(),
            contexts: field("contexts")?.as_u64().ok_or_else(damaged)? as usize,
            mib_per_s: median(mbs.ok_or_else(damaged)?),
        });
        all.extend(runs);
    }
    let text = serde_json::to_string_pretty(&all).map_err(|e| anyhow::anyhow!("encoding the results: {e}"))?;
    std::fs::write(json, text).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", json.display()))?;
    if let Some(path) = plot {
        uf2fs_lab::plot::plot_writeback(&points, path).map_err(anyhow::Error::msg)?;
    }
    Ok(())
}
