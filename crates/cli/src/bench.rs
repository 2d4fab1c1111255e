//! `uf2fs bench waf`: the WAF lab (crate `uf2fs-lab`) from the command line — options,
//! progress bar, table, `--json` and `--plot`, `--shard`; and `uf2fs bench merge`, which
//! joins the shard files of any bench subcommand (crate::sweep checks them).

use crate::bench_output::{check_output, progress_bar};
use crate::errors::UsageError;
use crate::sweep::{Shard, ShardFile};
use clap::{Args, Subcommand};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use uf2fs_core::{GcPolicy, KernelGcLoop};
use uf2fs_lab::size::parse_size;
use uf2fs_lab::{report, Event, Preset, RunResult, Setup, Workload};

/// The benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Write amplification of GC policies, side by side, on in-memory zoned volumes.
    ///
    /// Each (policy, workload) pair formats its own emulated zoned device (conventional
    /// space for the metadata, then sequential zones of one section each), writes the
    /// workload's data once, then overwrites it with 4 KiB writes, and reports WAF =
    /// device blocks written / user blocks written over the overwrites, as the seed
    /// measured it. Runs in process: no FUSE, no root. Without options: the small
    /// preset, the uniform workload, greedy, prefer-data-v2 and default.
    Waf(WafArgs),
    /// Front-I/O latency under each GC pacer (gc_pacing=off, seed, adaptive), with a
    /// device latency model and a simulated clock: deterministic results. See
    /// docs/gc-pacing.md.
    Latency(crate::bench_latency::LatencyArgs),
    /// Throughput and file contiguity with 1 to N parallel writeback contexts (flusher
    /// threads), each inode affined to one (the 2025 parallel-writeback seed); in
    /// process, on memory volumes. See docs/writeback.md.
    Writeback(crate::bench_writeback::WritebackArgs),
    /// Join the shard files of a sweep (`bench waf|latency|writeback --shard I/N --json
    /// FILE` on each machine) into the JSON one run of the whole sweep writes (timings
    /// aside); refuses missing, repeated or foreign shards. See docs/sweeps.md.
    Merge(MergeArgs),
}

/// `uf2fs bench merge` options.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Where to write the merged JSON (not one of the shards).
    #[arg(long, value_name = "FILE", required = true)]
    pub json: PathBuf,
    /// Also draw the merged results as the subcommand's `--plot` does (waf, latency).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// The shard files, one for each shard of the sweep, in any order.
    #[arg(value_name = "SHARD", required = true)]
    pub shards: Vec<PathBuf>,
}

/// `uf2fs bench waf` options.
#[derive(Debug, Args)]
pub struct WafArgs {
    /// Values to start from: small (the seed's shape scaled to about a minute per policy
    /// and workload) or seed (the published setup at full scale: 228 MiB conventional +
    /// 4068 zones of 8 MiB, -o 3.89 -Z 8, a 31187 MiB file, 128 GiB of overwrites).
    #[arg(long, value_name = "NAME", default_value = "small", value_parser = parse_preset)]
    pub preset: Preset,
    /// Conventional space for the metadata (K, M, G or T suffixes); zones start at the
    /// next section boundary.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub conv_size: Option<u64>,
    /// Zone size, a multiple of 2 MiB; one section per zone.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub zone_size: Option<u64>,
    /// Number of sequential zones.
    #[arg(long, value_name = "N")]
    pub zones: Option<u64>,
    /// Overprovision ratio in percent (mkfs.f2fs -o).
    #[arg(long, value_name = "PCT")]
    pub overprovision: Option<f64>,
    /// GC-reserved sections (mkfs.f2fs -Z, at least 8); 0 for mkfs.f2fs 1.15's
    /// automatic reserve of 2 * (100 / PCT + 1) + 6 sections.
    #[arg(long, value_name = "N")]
    pub reserved_sections: Option<u32>,
    /// Size of the file written first (for multifile: the space its files fill).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub file_size: Option<u64>,
    /// Bytes of 4 KiB writes measured after the fill.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub io_size: Option<u64>,
    /// Seed of the workloads' random choices.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Workloads, comma-separated: uniform, zipf, hotcold, multifile.
    #[arg(long, value_name = "LIST", default_value = "uniform", value_parser = parse_workloads)]
    pub workload: WorkloadList,
    /// GC policies, comma-separated: greedy, cost-benefit, atgc, prefer-data-v1,
    /// prefer-data-v2, weighted:D:N, default.
    #[arg(long, value_name = "LIST", default_value = "greedy,prefer-data-v2,default", value_parser = parse_policies)]
    pub policy: PolicyList,
    /// Also write the results as JSON, one record per policy and workload.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also draw WAF against data written, one line per policy, as SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Runs at once, each on its own device (default: the available cores).
    #[arg(long, value_name = "N", value_parser = parse_jobs)]
    pub jobs: Option<usize>,
    /// Pause the writer after every SIZE of overwrites, and run the mount's background
    /// work (F2FS's background cleaner and 60 s checkpoints) on the simulated clock,
    /// which moves at 256 MiB/s of writes and through the pauses (needs --idle-secs).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, requires = "idle_secs")]
    pub idle_every: Option<u64>,
    /// Length of each pause of --idle-every, in simulated seconds.
    #[arg(long, value_name = "S", value_parser = parse_pause, requires = "idle_every")]
    pub idle_secs: Option<f64>,
    /// The Linux release whose f2fs_gc loop greedy, cost-benefit, ATGC and the weights
    /// run: 6.12 (a checkpoint at the top of every round that finds too little room)
    /// or 6.1 (of the first round only); the writer follows Linux 6.1's flusher either
    /// way.
    #[arg(long, value_name = "RELEASE", default_value_t = KernelGcLoop::default(), value_parser = |s: &str| s.parse::<KernelGcLoop>())]
    pub kernel: KernelGcLoop,
    /// The dirty pages at which the lab's writer is held, as Linux's balance_dirty_pages
    /// holds it in the kernel comparisons (513 to 1024; default 960, measured on the
    /// host they were first run on). Near a full volume the WAF follows the dirty
    /// level, which on Linux depends on how fast the guest's flusher runs against its
    /// writer on the host: give the mean dirty level at a Linux run's victims
    /// (scripts/kernel/waf-compare.sh --kprobe at do_garbage_collect prints it) to
    /// compare with that run.
    #[arg(long, value_name = "PAGES", value_parser = parse_writer_hold)]
    pub writer_hold: Option<usize>,
    /// Run only shard I of N of the (workload, policy) runs (I from 1; run r is shard
    /// r mod N + 1's) and write them to --json as a shard file for `bench merge`.
    #[arg(long, value_name = "I/N", requires = "json", value_parser = |s: &str| s.parse::<Shard>())]
    pub shard: Option<Shard>,
}

fn parse_writer_hold(s: &str) -> Result<usize, String> {
    let range = uf2fs_core::WRITER_HOLD_MIN_PAGES..=uf2fs_core::WRITER_HOLD_MAX_PAGES;
    match s.parse::<usize>() {
        Ok(v) if range.contains(&v) => Ok(v),
        _ => Err(format!(
            "'{s}' is not a writer hold in dirty pages ({} to {})",
            range.start(),
            range.end()
        )),
    }
}

fn parse_pause(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!("'{s}' is not a pause in seconds (more than 0, at most 86400)")),
    }
}

/// `--workload`'s list.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadList(pub Vec<Workload>);

/// `--policy`'s list.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyList(pub Vec<GcPolicy>);

fn parse_preset(s: &str) -> Result<Preset, String> {
    s.parse()
}

/// Splits a comma-separated list, refusing empty items and repeats.
fn parse_list<T: PartialEq>(s: &str, what: &str, one: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    let mut out: Vec<T> = Vec::new();
    for item in s.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(format!("empty {what} name in '{s}'"));
        }
        let v = one(item)?;
        if out.contains(&v) {
            return Err(format!("{what} '{item}' given twice"));
        }
        out.push(v);
    }
    Ok(out)
}

fn parse_workloads(s: &str) -> Result<WorkloadList, String> {
    parse_list(s, "workload", |w| w.parse()).map(WorkloadList)
}

fn parse_policies(s: &str) -> Result<PolicyList, String> {
    parse_list(s, "policy", |p| p.parse::<GcPolicy>().map_err(|e| e.to_string())).map(PolicyList)
}

fn parse_jobs(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("'{s}' is not a number of jobs (1 or more)")),
    }
}

impl WafArgs {
    /// The preset with the options given on top.
    pub fn setup(&self) -> Setup {
        let mut s = self.preset.setup();
        let base = s.clone();
        s.conv_bytes = self.conv_size.unwrap_or(s.conv_bytes);
        s.zone_bytes = self.zone_size.unwrap_or(s.zone_bytes);
        s.zones = self.zones.unwrap_or(s.zones);
        s.overprovision_pct = self.overprovision.unwrap_or(s.overprovision_pct);
        s.reserved_sections = self.reserved_sections.unwrap_or(s.reserved_sections);
        s.file_bytes = self.file_size.unwrap_or(s.file_bytes);
        s.io_bytes = self.io_size.unwrap_or(s.io_bytes);
        s.seed = self.seed.unwrap_or(s.seed);
        s.kernel = self.kernel;
        s.writer_hold = self.writer_hold;
        if let (Some(every_bytes), Some(pause_secs)) = (self.idle_every, self.idle_secs) {
            s.idle = Some(uf2fs_lab::Idle {
                every_bytes: every_bytes.max(1),
                pause_secs,
            });
        }
        // Still "the preset" only if nothing but the seed, the pauses, the GC loop and
        // the writer's hold changed (the volume and the workload are the preset's).
        let same_but_seed = Setup {
            seed: base.seed,
            idle: base.idle,
            kernel: base.kernel,
            writer_hold: base.writer_hold,
            ..s.clone()
        };
        if same_but_seed != base {
            s.preset = None;
        }
        s
    }
}

/// Runs a benchmark.
pub fn run(cmd: BenchCommand) -> anyhow::Result<()> {
    match cmd {
        BenchCommand::Waf(args) => waf(&args),
        BenchCommand::Latency(args) => crate::bench_latency::latency(&args),
        BenchCommand::Writeback(args) => crate::bench_writeback::writeback(&args),
        BenchCommand::Merge(args) => merge(&args),
    }
}

/// The options of `bench waf` that decide its runs and their figures, for shard files.
fn waf_options(setup: &Setup, args: &WafArgs) -> anyhow::Result<serde_json::Value> {
    let names = |v: Vec<String>| serde_json::Value::from(v);
    Ok(serde_json::json!({
        "setup": serde_json::to_value(setup)?,
        "policies": names(args.policy.0.iter().map(|p| p.to_string()).collect()),
        "workloads": names(args.workload.0.iter().map(|w| w.to_string()).collect()),
    }))
}

fn waf(args: &WafArgs) -> anyhow::Result<()> {
    let setup = args.setup();
    let (geometry, _) = uf2fs_lab::volume::plan(&setup).map_err(UsageError)?;
    let all_pairs = uf2fs_lab::pairs(&args.policy.0, &args.workload.0);
    let runs: Vec<usize> = match args.shard {
        Some(shard) => shard.runs(all_pairs.len()),
        None => (0..all_pairs.len()).collect(),
    };
    let pairs: Vec<_> = runs.iter().map(|&r| all_pairs[r]).collect();
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    // Fail on an output that cannot be written before the runs, not after them.
    for path in [&args.json, &args.plot].into_iter().flatten() {
        check_output(path)?;
    }
    let mut out = std::io::stdout().lock();
    out.write_all(report::describe(&setup, &geometry).as_bytes())?;
    if let Some(shard) = args.shard {
        writeln!(out, "shard {shard}: {} of the {} runs", pairs.len(), all_pairs.len())?;
    }
    out.flush()?;

    let total: u64 = pairs
        .iter()
        .map(|p| uf2fs_lab::batch::blocks_of(&setup, p.workload))
        .sum();
    let bar = std::io::stderr().is_terminal().then(|| progress_bar(total));
    let running: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let observe = |event: Event<'_>| {
        let Some(bar) = &bar else { return };
        match event {
            Event::Advanced { blocks } => bar.inc(blocks),
            Event::Started { pair, .. } | Event::Finished { pair, .. } => {
                let name = format!("{}/{}", pair.policy, pair.workload);
                let mut r = running.lock().unwrap_or_else(|p| p.into_inner());
                if matches!(event, Event::Started { .. }) {
                    r.push(name);
                } else {
                    r.retain(|n| *n != name);
                }
                bar.set_message(r.join(", "));
            }
        }
    };
    let outcomes = uf2fs_lab::run_all(&setup, &pairs, jobs, &observe);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }

    let mut results: Vec<RunResult> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    // A shard's records leave waf_vs_greedy out (greedy may run in another shard):
    // the merge sets it.
    let mut shard_file = match args.shard {
        Some(shard) => Some(ShardFile::new(
            "waf",
            waf_options(&setup, args)?,
            shard,
            all_pairs.len(),
            serde_json::Value::Null,
        )),
        None => None,
    };
    for (o, &run) in outcomes.into_iter().zip(&runs) {
        match o {
            Ok(r) => {
                if let Some(f) = shard_file.as_mut() {
                    f.push(run, format!("{}/{}", r.policy, r.workload), &r)?;
                }
                results.push(r)
            }
            Err(e) => failures.push(e),
        }
    }
    if let (Some(f), Some(path)) = (&shard_file, &args.json) {
        f.write(path)?;
    }
    report::compare_with_greedy(&mut results);
    if !results.is_empty() {
        writeln!(out)?;
        out.write_all(report::table(&results).as_bytes())?;
        writeln!(out)?;
        out.write_all(report::limits(&results).as_bytes())?;
        out.flush()?;
        if let (Some(path), None) = (&args.json, &shard_file) {
            report::write_json(&results, path).map_err(anyhow::Error::msg)?;
        }
        if let Some(path) = &args.plot {
            uf2fs_lab::plot::plot(&results, path).map_err(anyhow::Error::msg)?;
        }
    }
    match failures.len() {
        0 => Ok(()),
        n => Err(anyhow::anyhow!(
            "{n} of {} runs failed: {}",
            pairs.len(),
            failures.join("; ")
        )),
    }
}

/// Runs `uf2fs bench merge`.
fn merge(args: &MergeArgs) -> anyhow::Result<()> {
    for path in [Some(&args.json), args.plot.as_ref()].into_iter().flatten() {
        check_output(path)?;
        if let Some(shard) = args.shards.iter().find(|s| same_file(s, path)) {
            return Err(UsageError(format!(
                "{} is one of the shards: the merge would overwrite it",
                shard.display()
            ))
            .into());
        }
    }
    let merged = crate::sweep::load(&args.shards)?;
    let runs = merged.records.len();
    match merged.bench.as_str() {
        "waf" => merge_waf(merged.records, args)?,
        "latency" => crate::bench_latency::merge(merged.frame, merged.records, &args.json, args.plot.as_deref())?,
        "writeback" => crate::bench_writeback::merge(merged.records, &args.json, args.plot.as_deref())?,
        other => return Err(UsageError(format!("shards of an unknown bench '{other}'")).into()),
    }
    println!(
        "merged {} shards of bench {}: {runs} runs into {}",
        args.shards.len(),
        merged.bench,
        args.json.display()
    );
    Ok(())
}

/// Whether `a` and `b` name one file (both existing), or are the same path.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => a == b,
    }
}

/// `bench waf`'s records joined: the table, and the JSON and plot a run of the whole
/// sweep writes.
fn merge_waf(records: Vec<serde_json::Value>, args: &MergeArgs) -> anyhow::Result<()> {
    let mut results: Vec<RunResult> = records
        .into_iter()
        .map(serde_json::from_value)
        .collect::<Result<_, _>>()
        .map_err(|e| UsageError(format!("a damaged waf record in the shards: {e}")))?;
    report::compare_with_greedy(&mut results);
    let mut out = std::io::stdout().lock();
    if let Some(first) = results.first() {
        out.write_all(report::describe(&first.setup, &first.geometry).as_bytes())?;
        writeln!(out)?;
        out.write_all(report::table(&results).as_bytes())?;
        writeln!(out)?;
        out.write_all(report::limits(&results).as_bytes())?;
    }
    report::write_json(&results, &args.json).map_err(anyhow::Error::msg)?;
    if let Some(path) = &args.plot {
        uf2fs_lab::plot::plot(&results, path).map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Top {
        #[command(subcommand)]
        cmd: BenchCommand,
    }

    fn waf_args(extra: &[&str]) -> Result<WafArgs, clap::Error> {
        let argv = ["bench", "waf"].iter().chain(extra).copied();
        Top::try_parse_from(argv).map(|t| match t.cmd {
            BenchCommand::Waf(a) => a,
            BenchCommand::Latency(_) | BenchCommand::Writeback(_) | BenchCommand::Merge(_) => {
                unreachable!("parsed as bench waf")
            }
        })
    }

    #[test]
    fn no_options_mean_the_small_preset_uniform_and_three_policies() {
        let a = waf_args(&[]).unwrap();
        assert_eq!(a.setup(), Preset::Small.setup());
        assert_eq!(a.workload.0, [Workload::Uniform]);
        let names: Vec<String> = a.policy.0.iter().map(|p| p.to_string()).collect();
        assert_eq!(names, ["greedy", "prefer-data-v2", "default"]);
        assert!(a.jobs.is_none() && a.json.is_none() && a.plot.is_none());
    }

    #[test]
    fn the_kernel_gc_loop_is_6_12_unless_chosen_and_keeps_the_preset() {
        assert_eq!(waf_args(&[]).unwrap().setup().kernel, KernelGcLoop::Linux612);
        let s = waf_args(&["--kernel", "6.1"]).unwrap().setup();
        assert_eq!(s.kernel, KernelGcLoop::Linux61);
        assert_eq!(s.preset, Some(Preset::Small));
        for bad in ["6", "6.2", "linux", ""] {
            let e = waf_args(&["--kernel", bad]).unwrap_err();
            assert!(e.to_string().contains("not a kernel GC loop"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_writer_hold_is_the_default_unless_chosen_keeps_the_preset_and_is_bounded() {
        assert_eq!(waf_args(&[]).unwrap().setup().writer_hold, None);
        let s = waf_args(&["--writer-hold", "700"]).unwrap().setup();
        assert_eq!(s.writer_hold, Some(700));
        assert_eq!(s.preset, Some(Preset::Small));
        for ok in ["513", "1024"] {
            assert!(waf_args(&["--writer-hold", ok]).is_ok(), "{ok}");
        }
        for bad in ["512", "1025", "0", "x", ""] {
            let e = waf_args(&["--writer-hold", bad]).unwrap_err();
            assert!(e.to_string().contains("not a writer hold"), "{bad}: {e}");
        }
    }

    #[test]
    fn pauses_keep_the_preset_and_need_both_options() {
        let a = waf_args(&["--idle-every", "64M", "--idle-secs", "40"]).unwrap();
        let s = a.setup();
        assert_eq!(s.preset, Some(Preset::Small));
        assert_eq!(
            s.idle,
            Some(uf2fs_lab::Idle {
                every_bytes: 64 << 20,
                pause_secs: 40.0
            })
        );
        assert!(waf_args(&["--idle-every", "64M"]).is_err());
        assert!(waf_args(&["--idle-secs", "40"]).is_err());
        for bad in ["0", "nan", "1e9", "soon"] {
            let e = waf_args(&["--idle-every", "64M", "--idle-secs", bad]).unwrap_err();
            assert!(e.to_string().contains("not a pause in seconds"), "{bad}: {e}");
        }
    }

    #[test]
    fn options_override_the_preset() {
        let a = waf_args(&[
            "--preset",
            "seed",
            "--zones",
            "64",
            "--zone-size",
            "2M",
            "--file-size",
            "100M",
            "--io-size",
            "1G",
            "--overprovision",
            "5",
            "--reserved-sections",
            "0",
            "--conv-size",
            "16M",
            "--seed",
            "9",
            "--workload",
            "zipf,multifile",
            "--policy",
            "weighted:1:512,atgc",
            "--jobs",
            "3",
        ])
        .unwrap();
        let s = a.setup();
        assert_eq!(s.preset, None);
        assert_eq!(
            (s.zones, s.zone_bytes, s.file_bytes, s.io_bytes, s.conv_bytes),
            (64, 2 << 20, 100 << 20, 1 << 30, 16 << 20)
        );
        assert_eq!((s.overprovision_pct, s.reserved_sections, s.seed), (5.0, 0, 9));
        assert_eq!(a.workload.0, [Workload::Zipf, Workload::Multifile]);
        assert_eq!(a.policy.0[0], GcPolicy::Weighted { data: 1, node: 512 });
        assert_eq!(a.jobs, Some(3));
        // Only the seed changed: still the preset.
        let a = waf_args(&["--preset", "seed", "--seed", "5"]).unwrap();
        assert_eq!(a.setup().preset, Some(Preset::Seed));
    }

    #[test]
    fn bad_values_are_usage_errors_naming_the_option() {
        for (argv, want) in [
            (&["--zone-size", "8X"][..], "unknown size suffix"),
            (&["--io-size", "lots"], "not a size"),
            (&["--preset", "huge"], "known: small, seed"),
            (&["--workload", "uniform,bogus"], "known: uniform, zipf"),
            (&["--workload", "uniform,,zipf"], "empty workload"),
            (&["--policy", "greedy,greedy"], "given twice"),
            (&["--policy", "fastest"], "known: greedy"),
            (&["--jobs", "0"], "number of jobs"),
            (&["--zones", "many"], "--zones"),
        ] {
            let e = waf_args(argv).unwrap_err().to_string();
            assert!(e.contains(want), "{argv:?}: {e}");
        }
    }
}
