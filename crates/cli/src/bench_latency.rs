//! `uf2fs bench latency`: front-I/O latency under each GC pacer (crate `uf2fs-lab`,
//! module `latency`) from the command line — options, progress bar, table, `--json`.

use crate::errors::UsageError;
use crate::sweep::{Shard, ShardFile};
use clap::Args;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;
use uf2fs_core::{GcPacing, GcPolicy};
use uf2fs_lab::latency::{self, LatencyModel, LatencyResult, LatencyRun, Load, Resets};
use uf2fs_lab::size::parse_size;
use uf2fs_lab::Preset;

/// `uf2fs bench latency` options.
#[derive(Debug, Args)]
pub struct LatencyArgs {
    /// Values to start from: small or seed (as `bench waf`).
    #[arg(long, value_name = "NAME", default_value = "small", value_parser = |s: &str| s.parse::<Preset>())]
    pub preset: Preset,
    /// Bytes of 4 KiB overwrites measured after the fill (default: the preset's).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub io_size: Option<u64>,
    /// Size of the file written first and overwritten (default: the preset's); a
    /// smaller file leaves GC more free space and less of the device's time.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub file_size: Option<u64>,
    /// The victim policy.
    #[arg(long, value_name = "NAME", default_value = "greedy", value_parser = |s: &str| s.parse::<GcPolicy>().map_err(|e| e.to_string()))]
    pub policy: GcPolicy,
    /// Pacers, comma-separated: off, seed, adaptive (off always runs first: it sets the
    /// fixed rates).
    #[arg(long, value_name = "LIST", default_value = "off,seed,adaptive")]
    pub pacer: String,
    /// Fixed rates, comma-separated percentages of what `off` sustains at full speed
    /// (full speed always runs).
    #[arg(long, value_name = "LIST", default_value = "50")]
    pub rate: String,
    /// The adaptive pacer's latency target (gc_latency_target_us).
    #[arg(long, value_name = "US", default_value_t = 1000)]
    pub target_us: u64,
    /// Device model: µs to read a 4 KiB block.
    #[arg(long, value_name = "US", default_value_t = LatencyModel::default().read_us)]
    pub read_us: f64,
    /// Device model: µs to write a 4 KiB block.
    #[arg(long, value_name = "US", default_value_t = LatencyModel::default().write_us)]
    pub write_us: f64,
    /// Device model: µs to erase (reset, discard) a 4 KiB block.
    #[arg(long, value_name = "US", default_value_t = LatencyModel::default().erase_us)]
    pub erase_us: f64,
    /// Device model: what a zone reset occupies. `serial` (the default): the device,
    /// so every I/O after a reset waits for it. `parallel-resets`: only its zone, as on
    /// zoned SSDs; I/O to other zones goes on beside it, I/O to the zone waits for it.
    #[arg(long, value_name = "MODEL", default_value = "serial", value_parser = |s: &str| s.parse::<Resets>())]
    pub device_model: Resets,
    /// Also write the results as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also draw, per load, clat over time (one line per pacer) and its CDF, as SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Sections above the foreground threshold at which the paced pacers start a victim
    /// (default: the pacers' own).
    #[arg(long, value_name = "N")]
    pub start_margin: Option<u32>,
    /// Runs at once (default 2).
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub jobs: usize,
    /// Run only shard I of N of the (pacer, load) runs (I from 1; run r is shard
    /// r mod N + 1's) and write them to --json as a shard file for `bench merge`. A
    /// shard with a fixed-rate run but not `off` at full speed runs that too (its
    /// rates are shares of off's IOPS; the simulated clock makes it the same
    /// everywhere) and leaves it out of its records.
    #[arg(long, value_name = "I/N", requires = "json", value_parser = |s: &str| s.parse::<Shard>())]
    pub shard: Option<Shard>,
}

fn pacers(s: &str) -> Result<Vec<GcPacing>, String> {
    let mut v: Vec<GcPacing> = Vec::new();
    for p in s.split(',') {
        let p: GcPacing = p.trim().parse()?;
        if !v.contains(&p) {
            v.push(p);
        }
    }
    if !v.contains(&GcPacing::Off) {
        v.insert(0, GcPacing::Off);
    }
    Ok(v)
}

fn rates(s: &str) -> Result<Vec<f64>, String> {
    s.split(',')
        .filter(|x| !x.trim().is_empty())
        .map(|x| match x.trim().trim_end_matches('%').parse::<f64>() {
            Ok(p) if p > 0.0 && p <= 100.0 => Ok(p / 100.0),
            _ => Err(format!("'{x}' is not a percentage between 0 and 100")),
        })
        .collect()
}

/// Runs `uf2fs bench latency`.
pub fn latency(args: &LatencyArgs) -> anyhow::Result<()> {
    let mut setup = args.preset.setup();
    if let Some(io) = args.io_size {
        setup.io_bytes = io;
        setup.preset = None;
    }
    if let Some(f) = args.file_size {
        setup.file_bytes = f;
        setup.preset = None;
    }
    let pacers = pacers(&args.pacer).map_err(UsageError)?;
    let shares = rates(&args.rate).map_err(UsageError)?;
    let model = LatencyModel {
        read_us: args.read_us,
        write_us: args.write_us,
        erase_us: args.erase_us,
        resets: args.device_model,
    };
    let run_for = |pacing, rate| LatencyRun {
        policy: args.policy,
        pacing,
        target: Duration::from_micros(args.target_us),
        model,
        rate,
        start_margin: args.start_margin,
    };
    // The runs go to `--jobs` workers from one queue: the full-speed runs first, then
    // the fixed-rate runs, which wait only for `off`'s full-speed run (their rates are
    // shares of what it sustained), not for every full-speed run to end.
    let mut all_runs: Vec<(GcPacing, Load)> = pacers.iter().map(|&p| (p, Load::Full)).collect();
    for &share in &shares {
        all_runs.extend(pacers.iter().map(|&p| (p, Load::Share(share))));
    }
    // The runs of this shard (all without --shard), and off at full speed where a
    // fixed-rate run needs its IOPS.
    let owned: Vec<usize> = match args.shard {
        Some(shard) => shard.runs(all_runs.len()),
        None => (0..all_runs.len()).collect(),
    };
    let off_full = all_runs
        .iter()
        .position(|&r| r == (GcPacing::Off, Load::Full))
        .ok_or_else(|| anyhow::anyhow!("no run of off at full speed"))?;
    let mut picked = owned.clone();
    if !picked.contains(&off_full) && picked.iter().any(|&i| all_runs[i].1 != Load::Full) {
        picked.insert(0, off_full);
    }
    let runs: Vec<(GcPacing, Load)> = picked.iter().map(|&i| all_runs[i]).collect();
    let total = setup.io_blocks() * runs.len() as u64;
    let bar = std::io::stderr()
        .is_terminal()
        .then(|| crate::bench_output::progress_bar(total));
    let advance = |n: u64| {
        if let Some(b) = &bar {
            b.inc(n)
        }
    };
    println!(
        "latency lab: preset {}, policy {}, file {} MiB, uniform 4 KiB overwrites of {} MiB, device read {} us, write {} us, erase {} us a block",
        args.preset,
        args.policy,
        setup.file_bytes >> 20,
        setup.io_bytes >> 20,
        model.read_us,
        model.write_us,
        model.erase_us
    );
    if model.resets != Resets::Serial {
        println!(
            "device model: {} (a zone reset occupies its zone, not the device)",
            model.resets
        );
    }
    if let Some(shard) = args.shard {
        let helper = if picked.len() > owned.len() {
            " (and off at full speed, for the fixed rates)"
        } else {
            ""
        };
        println!("shard {shard}: {} of the {} runs{helper}", owned.len(), all_runs.len());
    }
    let queue = RunQueue::new(runs.len());
    std::thread::scope(|s| {
        for _ in 0..args.jobs.clamp(1, runs.len().max(1)) {
            s.spawn(|| {
                while let Some((i, rate)) = queue.next(&runs) {
                    let (p, load) = runs[i];
                    // A panicking run fails the lab instead of leaving the others
                    // waiting for a rate that never comes.
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        latency::run(&setup, &run_for(p, rate), load, &advance)
                    }))
                    .unwrap_or_else(|_| Err("a run panicked".into()));
                    queue.done(i, p == GcPacing::Off && load == Load::Full, r);
                }
            });
        }
    });
    let results = queue.results().map_err(anyhow::Error::msg)?;
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    // This shard's runs (all without --shard), in the sweep's order.
    let results: Vec<LatencyResult> = results
        .into_iter()
        .zip(&picked)
        .filter(|(_, i)| owned.contains(i))
        .map(|(r, _)| r)
        .collect();
    print_table(&results)?;
    if let Some(path) = &args.json {
        let coarse: Vec<_> = results.iter().map(|r| r.coarse(latency::JSON_WINDOWS)).collect();
        let doc = latency::LatencyReport {
            preset: setup.preset,
            policy: args.policy.to_string(),
            model,
            target_us: args.target_us,
            io_bytes: setup.io_bytes,
            results: if args.shard.is_some() { &[] } else { &coarse },
        };
        match args.shard {
            None => std::fs::write(path, doc.to_json().map_err(anyhow::Error::msg)?)?,
            Some(shard) => {
                // The options that decide the runs and their figures (not the outputs
                // nor --jobs).
                let options = serde_json::json!({
                    "setup": serde_json::to_value(&setup)?,
                    "policy": args.policy.to_string(),
                    "pacers": pacers.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
                    "rates": shares,
                    "target_us": args.target_us,
                    "model": serde_json::to_value(model)?,
                    "start_margin": args.start_margin,
                });
                let mut file = ShardFile::new("latency", options, shard, all_runs.len(), serde_json::to_value(&doc)?);
                for (r, &i) in coarse.iter().zip(&owned) {
                    file.push(i, format!("{}/{}", r.pacer, r.load), r)?;
                }
                file.write(path)?;
            }
        }
    }
    if let Some(path) = &args.plot {
        uf2fs_lab::plot::plot_latency(&results, path).map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// The table of results, one line per (pacer, load), on stdout.
fn print_table(results: &[LatencyResult]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<9} {:>5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>8} {:>9} {:>9} {:>7} {:>7} {:>8} {:>7}",
        "pacer",
        "load",
        "iops",
        "p50 us",
        "p99 us",
        "p99.9 us",
        "p99.99",
        "max us",
        "clat p99",
        "clat max",
        "WAF",
        "gc s",
        "victim ms",
        "data vict",
        "freed",
        "fg gc",
        "steps",
        "run s"
    )?;
    for r in results {
        writeln!(
            out,
            "{:<9} {:>5} {:>9.0} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>7.3} {:>8.2} {:>9.2} {:>9.2} {:>7} {:>7} {:>8} {:>7.0}",
            r.pacer,
            r.load,
            r.iops,
            r.p50_us,
            r.p99_us,
            r.p999_us,
            r.p9999_us,
            r.max_us,
            r.clat_p99_us,
            r.clat_max_us,
            r.waf,
            r.gc_s,
            r.avg_victim_ms,
            r.avg_data_victim_ms,
            r.sections_freed,
            r.fg_gc_calls,
            r.paced_steps,
            r.elapsed_s
        )?;
    }
    Ok(())
}

/// `bench latency`'s shards joined: the table, the JSON document a run of the whole
/// sweep writes (`frame` with the `records` as its results), and the plot (drawn from
/// the JSON's windows, which merge up to [`latency::JSON_WINDOWS`] of 10 ms each).
pub fn merge(
    mut frame: serde_json::Value,
    records: Vec<serde_json::Value>,
    json: &Path,
    plot: Option<&Path>,
) -> anyhow::Result<()> {
    let results: Vec<LatencyResult> = records
        .iter()
        .map(|r| serde_json::from_value(r.clone()))
        .collect::<Result<_, _>>()
        .map_err(|e| UsageError(format!("a damaged latency record in the shards: {e}")))?;
    print_table(&results)?;
    match frame.get_mut("results") {
        Some(slot) => *slot = serde_json::Value::Array(records),
        None => return Err(UsageError("the latency shards have no results in their document".into()).into()),
    }
    let text = serde_json::to_string_pretty(&frame).map_err(|e| anyhow::anyhow!("encoding the results: {e}"))?;
    std::fs::write(json, text).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", json.display()))?;
    if let Some(path) = plot {
        uf2fs_lab::plot::plot_latency(&results, path).map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// The lab's runs, handed to workers in order; a fixed-rate run is handed out only once
/// `off`'s full-speed run has set the rate it is a share of.
struct RunQueue {
    state: std::sync::Mutex<QueueState>,
    changed: std::sync::Condvar,
}

struct QueueState {
    next: usize,
    off_iops: Option<f64>,
    failed: bool,
    results: Vec<Option<Result<LatencyResult, String>>>,
}

impl RunQueue {
    fn new(runs: usize) -> RunQueue {
        RunQueue {
            state: std::sync::Mutex::new(QueueState {
                next: 0,
                off_iops: None,
                failed: false,
                results: (0..runs).map(|_| None).collect(),
            }),
            changed: std::sync::Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The next run to take and its fixed rate (`None`: full speed); `None` when every
    /// run is taken or one failed. Waits while the next one needs `off`'s rate.
    fn next(&self, runs: &[(GcPacing, Load)]) -> Option<(usize, Option<f64>)> {
        let mut st = self.lock();
        loop {
            if st.failed || st.next >= runs.len() {
                return None;
            }
            let i = st.next;
            let rate = match runs[i].1 {
                Load::Full => None,
                Load::Share(share) => match st.off_iops {
                    Some(iops) => Some(iops * share),
                    None => {
                        st = self.changed.wait(st).unwrap_or_else(std::sync::PoisonError::into_inner);
                        continue;
                    }
                },
            };
            st.next += 1;
            return Some((i, rate));
        }
    }

    /// Records run `i`'s result (`sets_rate`: `off` at full speed).
    fn done(&self, i: usize, sets_rate: bool, r: Result<LatencyResult, String>) {
        let mut st = self.lock();
        match &r {
            Ok(res) if sets_rate => st.off_iops = Some(res.iops),
            Ok(_) => {}
            Err(_) => st.failed = true,
        }
        st.results[i] = Some(r);
        drop(st);
        self.changed.notify_all();
    }

    /// Every run's result in order, or the first error.
    fn results(self) -> Result<Vec<LatencyResult>, String> {
        let st = self
            .state
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(Err(e)) = st.results.iter().flatten().find(|r| r.is_err()) {
            return Err(e.clone());
        }
        st.results
            .into_iter()
            .map(|r| r.ok_or_else(|| "a run did not complete".to_string()).and_then(|r| r))
            .collect()
    }
}
