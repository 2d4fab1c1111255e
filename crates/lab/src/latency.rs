//! The latency lab behind `uf2fs bench latency`: front-I/O latency under each GC
//! pacer, on the WAF lab's volumes, with a device latency model and a simulated clock,
//! so that results are deterministic and independent of the machine's noise.
//!
//! The model: one device queue. Every block read, written or copied, and every block
//! discarded (zone reset), moves the simulated clock on by its cost
//! ([`LatencyModel`]), so the clock is the time the device is busy until. Front I/O is
//! the seed's fio job: 4 KiB random overwrites of the file, direct (each write is
//! written back at once), either back to back (`full`: each arrives when the previous
//! completes) or at a fixed rate. The paced cleaner (`Fs::paced_gc_step`) wakes at the
//! times it asks for; a wake-up due before a front write arrives runs first, and a
//! write arriving while a step runs waits for it (a step is not preempted). A write's
//! latency is its completion time less its arrival time: its own device time, any
//! foreground GC or checkpoint it ran, and the wait for a step in progress.

use crate::clock::CLOCK_BLOCKS_PER_SEC;
use crate::setup::{Setup, BLOCK_BYTES};
use crate::volume::{SharedDevice, Volume};
use crate::workload::{Generator, Op, Phase, Shape, Workload, CHUNK_BLOCKS};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use uf2fs_core::clock::{Clock, ManualClock};
use uf2fs_core::device::{BlockDevice, SharedBlock, WriteKind};
use uf2fs_core::gc::PacedOutcome;
use uf2fs_core::{GcPacing, GcPolicy, Ino, PacingSettings};

/// Width of a latency-over-time window (fio's `log_avg_msec=10`).
pub const WINDOW: Duration = Duration::from_millis(10);

/// Per-block device costs in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencyModel {
    /// Reading a 4 KiB block.
    pub read_us: f64,
    /// Writing a 4 KiB block.
    pub write_us: f64,
    /// Erasing (discarding, resetting the zone of) a 4 KiB block.
    pub erase_us: f64,
    /// What a zone reset occupies: the whole device (the default, [`Resets::Serial`])
    /// or only its zone ([`Resets::Parallel`]). Left out of the JSON when serial, so
    /// the figures of runs without it stay comparable.
    #[serde(skip_serializing_if = "Resets::is_serial")]
    pub resets: Resets,
}

/// What a zone reset occupies in the device model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Resets {
    /// One device queue: a reset moves the clock on by its cost, so every I/O after
    /// it waits for it, whichever zone it goes to.
    #[default]
    Serial,
    /// As on zoned SSDs: a reset occupies its zone for its cost, beside I/O to other
    /// zones; a read or write of the resetting zone (and a later reset of it) waits
    /// until the reset ends.
    Parallel,
}

impl Resets {
    /// The names `--device-model` takes.
    pub const NAMES: &'static str = "serial, parallel-resets";

    fn is_serial(&self) -> bool {
        *self == Resets::Serial
    }
}

impl std::str::FromStr for Resets {
    type Err = String;

    fn from_str(s: &str) -> Result<Resets, String> {
        match s {
            "serial" => Ok(Resets::Serial),
            "parallel-resets" => Ok(Resets::Parallel),
            _ => Err(format!("unknown device model '{s}' (known: {})", Resets::NAMES)),
        }
    }
}

impl std::fmt::Display for Resets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Resets::Serial => "serial",
            Resets::Parallel => "parallel-resets",
        })
    }
}

impl Default for LatencyModel {
    /// A typical TLC NVMe SSD at queue depth 1 (see docs/gc-pacing.md): 4 KiB random
    /// read 80 µs, 4 KiB write 20 µs, erase 3 ms per 4 MiB erase block (3 µs a block).
    fn default() -> LatencyModel {
        LatencyModel {
            read_us: 80.0,
            write_us: 20.0,
            erase_us: 3.0,
            resets: Resets::Serial,
        }
    }
}

/// A device that charges its model's costs to a simulated clock (while timing is on).
struct TimedDevice {
    inner: SharedDevice,
    clock: Arc<ManualClock>,
    model: LatencyModel,
    on: Arc<AtomicBool>,
    /// Blocks per zone (zones are aligned to block 0: the lab's sequential zones
    /// start at a zone boundary).
    zone_blocks: u64,
    /// Under [`Resets::Parallel`]: the time each zone being reset is busy until.
    busy: Mutex<HashMap<u64, Duration>>,
    /// Under [`Resets::Parallel`]: nanoseconds I/O has waited for zone resets, in all.
    reset_wait_ns: Arc<AtomicU64>,
}

impl TimedDevice {
    fn charge(&self, blocks: u64, us: f64) {
        if self.on.load(Ordering::Relaxed) && blocks > 0 {
            self.clock
                .advance(Duration::from_nanos((blocks as f64 * us * 1000.0).round() as u64));
        }
    }

    /// Under [`Resets::Parallel`], waits until no zone of `blocks` blocks at each of
    /// `starts` is being reset.
    fn wait_for_zones(&self, starts: &[u64], blocks: u64) {
        if self.model.resets == Resets::Serial || !self.on.load(Ordering::Relaxed) || blocks == 0 {
            return;
        }
        let now = self.clock.now();
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        busy.retain(|_, until| *until > now);
        let until = starts
            .iter()
            .flat_map(|&a| a / self.zone_blocks..=(a + blocks - 1) / self.zone_blocks)
            .filter_map(|z| busy.get(&z).copied())
            .max();
        if let Some(until) = until.filter(|&u| u > now) {
            self.clock.advance(until - now);
            self.reset_wait_ns
                .fetch_add((until - now).as_nanos() as u64, Ordering::Relaxed);
        }
    }

    /// A reset of `blocks` blocks at `blkaddr`: under [`Resets::Serial`] it occupies
    /// the device; under [`Resets::Parallel`] each zone it covers is busy for its
    /// share of the cost, from when the zone is free (a reset of a zone being reset
    /// queues behind it).
    fn reset(&self, blkaddr: u64, blocks: u64) {
        if self.model.resets == Resets::Serial {
            return self.charge(blocks, self.model.erase_us);
        }
        if !self.on.load(Ordering::Relaxed) || blocks == 0 {
            return;
        }
        let now = self.clock.now();
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        let (mut addr, end) = (blkaddr, blkaddr + blocks);
        while addr < end {
            let zone = addr / self.zone_blocks;
            let next = ((zone + 1) * self.zone_blocks).min(end);
            let cost = Duration::from_nanos(((next - addr) as f64 * self.model.erase_us * 1000.0).round() as u64);
            let from = busy.get(&zone).copied().unwrap_or(now).max(now);
            busy.insert(zone, from + cost);
            addr = next;
        }
    }

    fn blocks(buf_len: usize) -> u64 {
        (buf_len as u64).div_ceil(BLOCK_BYTES)
    }
}

impl BlockDevice for TimedDevice {
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> uf2fs_core::Result<()> {
        self.wait_for_zones(&[blkaddr], Self::blocks(buf.len()));
        self.charge(Self::blocks(buf.len()), self.model.read_us);
        self.inner.read_blocks(blkaddr, buf)
    }

    fn block_count(&self) -> u64 {
        self.inner.block_count()
    }

    fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> uf2fs_core::Result<()> {
        self.wait_for_zones(&[blkaddr], Self::blocks(buf.len()));
        self.charge(Self::blocks(buf.len()), self.model.write_us);
        self.inner.write_blocks(blkaddr, buf)
    }

    fn flush(&self) -> uf2fs_core::Result<()> {
        self.inner.flush()
    }

    fn write_kind(&self, blkaddr: u64, buf: &[u8], kind: WriteKind) -> uf2fs_core::Result<()> {
        self.wait_for_zones(&[blkaddr], Self::blocks(buf.len()));
        self.charge(Self::blocks(buf.len()), self.model.write_us);
        self.inner.write_kind(blkaddr, buf, kind)
    }

    fn write_blocks_from(&self, blkaddr: u64, blocks: &[&[u8]], kind: WriteKind) -> uf2fs_core::Result<()> {
        self.wait_for_zones(&[blkaddr], blocks.len() as u64);
        self.charge(blocks.len() as u64, self.model.write_us);
        self.inner.write_blocks_from(blkaddr, blocks, kind)
    }

    fn forget(&self, blkaddr: u64) {
        self.inner.forget(blkaddr)
    }

    fn read_shared(&self, blkaddr: u64) -> uf2fs_core::Result<SharedBlock> {
        self.wait_for_zones(&[blkaddr], 1);
        self.charge(1, self.model.read_us);
        self.inner.read_shared(blkaddr)
    }

    fn write_shared(&self, blkaddr: u64, blocks: &[SharedBlock], kind: WriteKind) -> uf2fs_core::Result<()> {
        self.wait_for_zones(&[blkaddr], blocks.len() as u64);
        self.charge(blocks.len() as u64, self.model.write_us);
        self.inner.write_shared(blkaddr, blocks, kind)
    }

    fn copy_blocks(&self, sources: &[u64], dst: u64, kind: WriteKind) -> uf2fs_core::Result<()> {
        self.wait_for_zones(sources, 1);
        self.wait_for_zones(&[dst], sources.len() as u64);
        self.charge(sources.len() as u64, self.model.read_us + self.model.write_us);
        self.inner.copy_blocks(sources, dst, kind)
    }

    fn discard(&self, blkaddr: u64, blocks: u64) -> uf2fs_core::Result<()> {
        self.reset(blkaddr, blocks);
        self.inner.discard(blkaddr, blocks)
    }
}

/// How front I/O arrives.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Load {
    /// Back to back: each write arrives when the previous one completes.
    Full,
    /// At a fixed rate: this share of what `off` sustained at full speed in the same
    /// run.
    Share(f64),
}

impl std::fmt::Display for Load {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Load::Full => f.write_str("full"),
            Load::Share(s) => write!(f, "{}%", (s * 100.0).round()),
        }
    }
}

/// One 10 ms window of latency over time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// Start of the window, in ms of simulated time since the overwrites began.
    pub ms: u64,
    /// Mean latency of the writes completed in it, µs.
    pub avg_us: f64,
    /// Their largest latency, µs.
    pub max_us: f64,
    /// Writes completed.
    pub writes: u64,
    /// Their mean and largest `clat` (see [`LatencyResult::clat_p50_us`]), µs.
    pub clat_avg_us: f64,
    pub clat_max_us: f64,
}

/// What a front write's latency is made of, µs (simulated time).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    /// Waiting for earlier front writes (fixed rates only: arrived while the previous
    /// write was still in progress).
    pub queue_us: f64,
    /// Waiting for paced steps that moved blocks (begun before the write could start).
    pub step_us: f64,
    /// Waiting for paced checkpoints (the pacer's checkpoint of prefree sections).
    pub paced_cp_us: f64,
    /// Waiting for the cleaner's discards (zone resets) of freed sections.
    pub discard_us: f64,
    /// Foreground GC the write ran itself (finishing the paced victim, passes), its
    /// checkpoints not counted.
    pub fg_gc_us: f64,
    /// Checkpoints the write ran itself (inside its foreground GC).
    pub cp_us: f64,
    /// The rest: the write's own device time (data, node write-outs).
    pub own_us: f64,
}

impl Breakdown {
    fn add(&mut self, o: &Breakdown) {
        self.queue_us += o.queue_us;
        self.step_us += o.step_us;
        self.paced_cp_us += o.paced_cp_us;
        self.discard_us += o.discard_us;
        self.fg_gc_us += o.fg_gc_us;
        self.cp_us += o.cp_us;
        self.own_us += o.own_us;
    }

    /// The sum: the write's latency.
    pub fn total_us(&self) -> f64 {
        self.queue_us + self.step_us + self.paced_cp_us + self.discard_us + self.fg_gc_us + self.cp_us + self.own_us
    }
}

/// What one (pacer, load) run measured. Times are simulated.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LatencyResult {
    /// The pacer.
    pub pacer: String,
    /// The load.
    pub load: String,
    /// Front writes per second offered (`None`: full speed).
    pub offered_iops: Option<f64>,
    /// Front writes per second completed.
    pub iops: f64,
    /// Latency percentiles, µs.
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub p9999_us: f64,
    pub max_us: f64,
    /// Mean latency, µs.
    pub mean_us: f64,
    /// The same percentiles of completion latency as fio reports it at iodepth 1
    /// (`clat`): from when the write could be issued (its arrival, or the previous
    /// write's completion if later) to its completion. At full speed the two agree; at
    /// fixed rates the latencies above also count the wait behind earlier writes.
    pub clat_p50_us: f64,
    pub clat_p99_us: f64,
    pub clat_p999_us: f64,
    pub clat_p9999_us: f64,
    pub clat_max_us: f64,
    /// Front writes whose `clat` is over 1 ms.
    pub clat_over_1ms: u64,
    /// Front writes of more than 1 ms.
    pub over_1ms: u64,
    /// Device blocks written over user blocks, over the overwrites.
    pub waf: f64,
    /// Device blocks written per user block, by kind: data moved by GC, nodes moved
    /// by GC, nodes written by the write path and checkpoints, metadata (checkpoint
    /// packs, SIT, NAT, SSA).
    pub gc_data_per_user: f64,
    pub gc_node_per_user: f64,
    pub user_node_per_user: f64,
    pub meta_per_user: f64,
    /// GC's checkpoints, and data and node victims.
    pub checkpoints: u64,
    pub data_victims: u64,
    pub node_victims: u64,
    /// Seconds of simulated time spent in GC (steps, passes, their checkpoints).
    pub gc_s: f64,
    /// Average time from a victim's start to its end, ms (sleeps included).
    pub avg_victim_ms: f64,
    /// The same for data victims alone, whose cost per block does not change with the
    /// share of node victims in the mix.
    pub avg_data_victim_ms: f64,
    /// Sections GC emptied.
    pub sections_freed: u64,
    /// Foreground GC passes.
    pub fg_gc_calls: u64,
    /// Paced steps, their sleeps and the time slept (s).
    pub paced_steps: u64,
    pub paced_sleeps: u64,
    pub slept_s: f64,
    /// Sections the cleaner discarded (zones reset) in idle time.
    pub paced_discards: u64,
    /// Times a writer with no room finished the paced victim itself.
    pub writer_finishes: u64,
    /// Of [`LatencyResult::checkpoints`], those the paced cleaner took (the rest are
    /// writers' and foreground passes').
    pub paced_checkpoints: u64,
    /// Dirty nodes the paced cleaner wrote ahead of checkpoints, in steps.
    pub paced_flushed_nodes: u64,
    /// Real seconds the run took on this machine, fill included (the only figure that
    /// is not deterministic; named `elapsed` as every timing of the lab's JSON is).
    pub elapsed_s: f64,
    /// Simulated seconds of the overwrite phase.
    pub sim_s: f64,
    /// The slowest write's latency (from arrival), by part.
    pub max_breakdown: Breakdown,
    /// The write with the largest `clat`, its latency by part.
    pub clat_max_breakdown: Breakdown,
    /// Writes over 1 ms, their latencies summed by part.
    pub over_1ms_breakdown: Breakdown,
    /// Every write's latency summed by part.
    pub all_breakdown: Breakdown,
    /// Latency over time: 10 ms windows, or in `--json` runs of consecutive windows
    /// merged ([`LatencyResult::coarse`]).
    pub windows: Vec<Window>,
    /// How many consecutive 10 ms windows each entry of `windows` merges (1: none).
    pub windows_merged: usize,
    /// The latency CDF: (latency µs, fraction of writes at or below).
    pub cdf: Vec<(f64, f64)>,
    /// The `clat` CDF, likewise.
    pub clat_cdf: Vec<(f64, f64)>,
}

/// What a latency run needs besides the setup.
#[derive(Debug, Clone, Copy)]
pub struct LatencyRun {
    /// The victim policy.
    pub policy: GcPolicy,
    /// The pacer.
    pub pacing: GcPacing,
    /// `gc_latency_target_us`.
    pub target: Duration,
    /// The device model.
    pub model: LatencyModel,
    /// Front writes per second (`None`: full speed).
    pub rate: Option<f64>,
    /// The pacers' start margin (`None`: their default).
    pub start_margin: Option<u32>,
}

static ZEROS: [u8; CHUNK_BLOCKS as usize * BLOCK_BYTES as usize] = [0; CHUNK_BLOCKS as usize * BLOCK_BYTES as usize];

/// Runs the uniform workload of `setup` with pacer `r.pacing` on a fresh volume.
/// `advance` is told of overwrite blocks done (in steps of a few thousand).
pub fn run(setup: &Setup, r: &LatencyRun, load: Load, advance: &(dyn Fn(u64) + Sync)) -> Result<LatencyResult, String> {
    let started = std::time::Instant::now();
    let clock = Arc::new(ManualClock::new());
    let on = Arc::new(AtomicBool::new(false));
    let reset_wait_ns = Arc::new(AtomicU64::new(0));
    let vol = {
        let (clock, on, model, waited) = (clock.clone(), on.clone(), r.model, reset_wait_ns.clone());
        let zone_blocks = setup.zone_blocks();
        Volume::create_with(setup, move |inner| {
            Box::new(TimedDevice {
                inner,
                clock,
                model,
                on,
                zone_blocks,
                busy: Mutex::new(HashMap::new()),
                reset_wait_ns: waited,
            })
        })?
    };
    let fs = &vol.fs;
    let err = |e: uf2fs_core::Error| format!("{} at {load}: {e}", r.pacing);
    fs.set_gc_policy(r.policy).map_err(err)?;
    fs.set_simulated_clock(Some(CLOCK_BLOCKS_PER_SEC)).map_err(err)?;
    fs.set_clock(clock.clone()).map_err(err)?;
    fs.set_gc_pacing(PacingSettings {
        pacing: r.pacing,
        latency_target: r.target,
        start_margin: r.start_margin.unwrap_or(PacingSettings::default().start_margin),
        ..PacingSettings::default()
    })
    .map_err(err)?;
    let shape = Shape {
        file_blocks: setup.file_blocks(),
        io_blocks: setup.io_blocks(),
        seed: setup.seed,
    };
    let mut gen = Generator::new(Workload::Uniform, shape)?;
    let mut ino: Option<Ino> = None;
    let mut hist = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).map_err(|e| e.to_string())?;
    let mut clat = hist.clone();
    let mut windows: Vec<Window> = Vec::new();
    let mut base = None;
    let mut t0 = Duration::ZERO;
    let mut next_wake = Duration::ZERO;
    let mut arrival = Duration::ZERO;
    let mut done = 0u64;
    let mut reported = 0u64;
    let interval = r.rate.map(|iops| Duration::from_secs_f64(1.0 / iops));
    let us_of = |d: Duration| d.as_nanos() as f64 / 1000.0;
    let (mut all_parts, mut over_parts, mut max_parts) =
        (Breakdown::default(), Breakdown::default(), Breakdown::default());
    let mut max_lat = 0.0f64;
    let (mut max_clat, mut clat_max_parts) = (0.0f64, Breakdown::default());
    while let Some((phase, op)) = gen.next_op() {
        if phase == Phase::Fill {
            match op {
                Op::Create { .. } => ino = Some(fs.create(fs.root(), b"f0", 0o644, 0, 0).map_err(err)?.ino),
                Op::Write { block, blocks, .. } => {
                    let ino = ino.ok_or("the workload wrote before creating")?;
                    let len = blocks as usize * BLOCK_BYTES as usize;
                    fs.write(ino, block * BLOCK_BYTES, &ZEROS[..len]).map_err(err)?;
                }
                Op::Delete { .. } => return Err("the uniform workload deletes nothing".into()),
            }
            continue;
        }
        let Op::Write { block, .. } = op else {
            return Err("the uniform workload's overwrites are writes".into());
        };
        let ino = ino.ok_or("no file")?;
        if base.is_none() {
            fs.write_checkpoint().map_err(err)?;
            base = Some((fs.accounting().map_err(err)?, fs.pacing_stats().map_err(err)?));
            on.store(true, Ordering::Relaxed);
            t0 = clock.now();
            next_wake = t0;
            arrival = t0;
        }
        // Front I/O arrives now (full speed: when the previous write completed).
        if let Some(i) = interval {
            arrival += i;
        } else {
            arrival = arrival.max(clock.now());
        }
        // Paced wake-ups due before the write arrives run first; a write arriving at the
        // same instant goes first.
        let prev_end = clock.now();
        let ready = arrival.max(prev_end);
        let mut parts = Breakdown {
            queue_us: us_of(prev_end.saturating_sub(arrival)),
            ..Breakdown::default()
        };
        while next_wake < arrival {
            if clock.now() < next_wake {
                clock.advance(next_wake - clock.now());
            }
            let began = clock.now();
            let w = fs.paced_gc_step().map_err(err)?;
            // The part of this wake-up the write waited for.
            let waited = us_of(clock.now().saturating_sub(began.max(ready)));
            match w.outcome {
                PacedOutcome::Checkpointed => parts.paced_cp_us += waited,
                PacedOutcome::Discarded(_) => parts.discard_us += waited,
                _ => parts.step_us += waited,
            }
            let wait = if w.outcome == PacedOutcome::Off {
                Duration::from_secs(3600)
            } else {
                w.wait
            };
            next_wake = clock.now() + wait;
        }
        if clock.now() < arrival {
            clock.advance(arrival - clock.now());
        }
        let started = clock.now();
        let p_before = fs.pacing_stats().map_err(err)?;
        let reset_wait_before = reset_wait_ns.load(Ordering::Relaxed);
        fs.write(ino, block * BLOCK_BYTES, &ZEROS[..BLOCK_BYTES as usize])
            .map_err(err)?;
        fs.writeback().map_err(err)?;
        let end = clock.now();
        let p_after = fs.pacing_stats().map_err(err)?;
        let cp = us_of(p_after.checkpoint_time.saturating_sub(p_before.checkpoint_time));
        let fg = us_of(p_after.writer_gc_time.saturating_sub(p_before.writer_gc_time));
        parts.cp_us = cp;
        parts.fg_gc_us = (fg - cp).max(0.0);
        // Under parallel resets, the write's own wait for the reset of a zone it wrote
        // to counts as waiting for discards (serial resets are the cleaner's steps').
        let reset_wait = (reset_wait_ns.load(Ordering::Relaxed) - reset_wait_before) as f64 / 1000.0;
        let own = (us_of(end.saturating_sub(started)) - fg.max(cp)).max(0.0);
        let reset_wait = reset_wait.min(own);
        parts.discard_us += reset_wait;
        parts.own_us = own - reset_wait;
        let lat = end.saturating_sub(arrival);
        clat.record(end.saturating_sub(ready).as_nanos().max(1) as u64)
            .map_err(|e| e.to_string())?;
        {
            let us = us_of(lat);
            all_parts.add(&parts);
            if us > 1000.0 {
                over_parts.add(&parts);
            }
            if us > max_lat {
                max_lat = us;
                max_parts = parts;
            }
            let c = us_of(end.saturating_sub(ready));
            if c > max_clat {
                max_clat = c;
                clat_max_parts = parts;
            }
        }
        hist.record(lat.as_nanos().max(1) as u64).map_err(|e| e.to_string())?;
        let w = (end.saturating_sub(t0).as_nanos() / WINDOW.as_nanos()) as u64;
        if windows.last().is_none_or(|l| l.ms != w * WINDOW.as_millis() as u64) {
            windows.push(Window {
                ms: w * WINDOW.as_millis() as u64,
                avg_us: 0.0,
                max_us: 0.0,
                writes: 0,
                clat_avg_us: 0.0,
                clat_max_us: 0.0,
            });
        }
        let cur = windows.last_mut().expect("pushed");
        let us = lat.as_nanos() as f64 / 1000.0;
        cur.avg_us += us;
        cur.max_us = cur.max_us.max(us);
        cur.writes += 1;
        let cus = us_of(end.saturating_sub(ready));
        cur.clat_avg_us += cus;
        cur.clat_max_us = cur.clat_max_us.max(cus);
        if interval.is_none() {
            arrival = end;
        }
        done += 1;
        if done - reported >= 4096 {
            advance(done - reported);
            reported = done;
        }
    }
    advance(done - reported);
    on.store(false, Ordering::Relaxed);
    for w in &mut windows {
        w.avg_us /= w.writes.max(1) as f64;
        w.clat_avg_us /= w.writes.max(1) as f64;
    }
    let (a0, p0) = base.ok_or("no overwrite phase")?;
    let a = fs.accounting().map_err(err)?;
    let p = fs.pacing_stats().map_err(err)?;
    let sim = clock.now().saturating_sub(t0).as_secs_f64();
    let user = a.user_blocks - a0.user_blocks;
    let device = a.device.total() - a0.device.total();
    let us = |q: f64| hist.value_at_quantile(q) as f64 / 1000.0;
    let per_user = |n: u64| n as f64 / user.max(1) as f64;
    let cus = |q: f64| clat.value_at_quantile(q) as f64 / 1000.0;
    let mut cdf = Vec::new();
    for v in hist.iter_quantiles(1) {
        cdf.push((v.value_iterated_to() as f64 / 1000.0, v.quantile_iterated_to()));
    }
    let clat_cdf: Vec<(f64, f64)> = clat
        .iter_quantiles(1)
        .map(|v| (v.value_iterated_to() as f64 / 1000.0, v.quantile_iterated_to()))
        .collect();
    let victims = p.victims_timed - p0.victims_timed;
    let victim_time = p.victim_time.saturating_sub(p0.victim_time);
    Ok(LatencyResult {
        pacer: r.pacing.to_string(),
        load: load.to_string(),
        offered_iops: r.rate,
        iops: done as f64 / sim.max(1e-9),
        p50_us: us(0.5),
        p99_us: us(0.99),
        p999_us: us(0.999),
        p9999_us: us(0.9999),
        max_us: hist.max() as f64 / 1000.0,
        mean_us: hist.mean() / 1000.0,
        over_1ms: hist.count_between(1_000_001, u64::MAX),
        clat_p50_us: cus(0.5),
        clat_p99_us: cus(0.99),
        clat_p999_us: cus(0.999),
        clat_p9999_us: cus(0.9999),
        clat_max_us: clat.max() as f64 / 1000.0,
        clat_over_1ms: clat.count_between(1_000_001, u64::MAX),
        waf: if user == 0 { 0.0 } else { device as f64 / user as f64 },
        gc_data_per_user: per_user(a.device.gc_data - a0.device.gc_data),
        gc_node_per_user: per_user(a.device.gc_node - a0.device.gc_node),
        user_node_per_user: per_user(a.device.user_node - a0.device.user_node),
        meta_per_user: per_user(
            (a.device.checkpoint + a.device.sit + a.device.nat + a.device.ssa)
                - (a0.device.checkpoint + a0.device.sit + a0.device.nat + a0.device.ssa),
        ),
        checkpoints: a.gc.checkpoints - a0.gc.checkpoints,
        data_victims: a.gc.data_victims - a0.gc.data_victims,
        node_victims: a.gc.node_victims - a0.gc.node_victims,
        gc_s: p.gc_time.saturating_sub(p0.gc_time).as_secs_f64(),
        avg_data_victim_ms: {
            let n = p.data_victims_timed - p0.data_victims_timed;
            let t = p.data_victim_time.saturating_sub(p0.data_victim_time);
            if n == 0 {
                0.0
            } else {
                t.as_secs_f64() * 1000.0 / n as f64
            }
        },
        avg_victim_ms: if victims == 0 {
            0.0
        } else {
            victim_time.as_secs_f64() * 1000.0 / victims as f64
        },
        sections_freed: a.gc.sections_freed - a0.gc.sections_freed,
        fg_gc_calls: a.gc.fg_calls - a0.gc.fg_calls,
        paced_steps: p.steps - p0.steps,
        paced_sleeps: p.sleeps - p0.sleeps,
        slept_s: p.slept.saturating_sub(p0.slept).as_secs_f64(),
        paced_discards: p.discards - p0.discards,
        writer_finishes: p.writer_finishes - p0.writer_finishes,
        paced_checkpoints: p.checkpoints - p0.checkpoints,
        paced_flushed_nodes: p.flushed_nodes - p0.flushed_nodes,
        elapsed_s: started.elapsed().as_secs_f64(),
        sim_s: sim,
        max_breakdown: max_parts,
        clat_max_breakdown: clat_max_parts,
        over_1ms_breakdown: over_parts,
        all_breakdown: all_parts,
        windows,
        windows_merged: 1,
        cdf,
        clat_cdf,
    })
}

/// Entries of `windows` a run keeps in `--json` at most (the plot draws 1500).
pub const JSON_WINDOWS: usize = 2000;

impl LatencyResult {
    /// The result with its windows merged in runs of consecutive windows (as recorded:
    /// windows without a completed write are not there) down to at most `max`
    /// entries: each keeps the first window's start, the writes' sum, their mean
    /// latencies (weighted by writes) and the largest latencies, so that spikes stay.
    /// Deterministic, as the windows are.
    pub fn coarse(&self, max: usize) -> LatencyResult {
        let per = self.windows.len().div_ceil(max.max(1)).max(1);
        let windows = self
            .windows
            .chunks(per)
            .map(|c| {
                let writes: u64 = c.iter().map(|w| w.writes).sum();
                let mean = |f: &dyn Fn(&Window) -> f64| {
                    c.iter().map(|w| f(w) * w.writes as f64).sum::<f64>() / writes.max(1) as f64
                };
                Window {
                    ms: c[0].ms,
                    avg_us: mean(&|w| w.avg_us),
                    max_us: c.iter().map(|w| w.max_us).fold(0.0, f64::max),
                    writes,
                    clat_avg_us: mean(&|w| w.clat_avg_us),
                    clat_max_us: c.iter().map(|w| w.clat_max_us).fold(0.0, f64::max),
                }
            })
            .collect();
        LatencyResult {
            windows,
            windows_merged: self.windows_merged * per,
            ..self.clone()
        }
    }
}

/// The `--json` document of a latency lab run.
#[derive(Debug, Serialize)]
pub struct LatencyReport<'a> {
    /// The preset.
    pub preset: Option<crate::Preset>,
    /// The victim policy.
    pub policy: String,
    /// The device model.
    pub model: LatencyModel,
    /// The adaptive pacer's target, µs.
    pub target_us: u64,
    /// Bytes of overwrites per run.
    pub io_bytes: u64,
    /// One record per (pacer, load), windows merged to at most [`JSON_WINDOWS`].
    pub results: &'a [LatencyResult],
}

impl LatencyReport<'_> {
    /// As pretty JSON.
    pub fn to_json(&self) -> Result<String, String> {
        serde_json::to_string_pretty(self).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Preset;

    /// The simulated clock makes runs repeatable to the nanosecond, and a write costs
    /// at least the model's write time.
    #[test]
    fn runs_are_deterministic_and_charge_the_model() {
        let mut setup = Preset::Small.setup();
        setup.io_bytes = 96 << 20;
        let r = LatencyRun {
            policy: GcPolicy::Greedy,
            pacing: GcPacing::Adaptive,
            target: Duration::from_micros(1000),
            model: LatencyModel::default(),
            rate: None,
            start_margin: None,
        };
        let a = run(&setup, &r, Load::Full, &|_| {}).unwrap();
        let b = run(&setup, &r, Load::Full, &|_| {}).unwrap();
        assert_eq!(
            (a.max_us, a.p99_us, a.waf, a.sim_s, a.windows.len()),
            (b.max_us, b.p99_us, b.waf, b.sim_s, b.windows.len())
        );
        assert!(a.p50_us >= LatencyModel::default().write_us * 0.99, "{}", a.p50_us);
        assert!(a.sections_freed > 0 && a.paced_steps > 0, "{a:?}");
    }

    /// A timed device of four 16-block zones (the first conventional) under `resets`.
    fn timed(resets: Resets) -> TimedDevice {
        use uf2fs_core::device::{ZonedMemDevice, ZonedMemOptions};
        let dev = ZonedMemDevice::new(ZonedMemOptions {
            blocks: 64,
            seq_start: 16,
            zone_blocks: 16,
            forget_moved: false,
        })
        .unwrap();
        TimedDevice {
            inner: SharedDevice(Arc::new(dev)),
            clock: Arc::new(ManualClock::new()),
            model: LatencyModel {
                resets,
                ..LatencyModel::default()
            },
            on: Arc::new(AtomicBool::new(true)),
            zone_blocks: 16,
            busy: Mutex::new(HashMap::new()),
            reset_wait_ns: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The time a call to `f` moves the device's clock on by.
    fn took(dev: &TimedDevice, f: impl FnOnce(&TimedDevice)) -> Duration {
        let before = dev.clock.now();
        f(dev);
        dev.clock.now() - before
    }

    /// Serial resets occupy the device: the reset itself takes its cost, and a write
    /// to another zone after it is not delayed further (it already waited).
    /// Parallel resets occupy only their zone: the reset returns at once, a write to
    /// another zone takes only its own time, one to the resetting zone waits for the
    /// reset to end, and one after the reset ended is not delayed.
    #[test]
    fn parallel_resets_occupy_their_zone_not_the_device() {
        let block = [7u8; BLOCK_BYTES as usize];
        let model = LatencyModel::default();
        let write = Duration::from_nanos((model.write_us * 1000.0) as u64);
        let reset = Duration::from_nanos((16.0 * model.erase_us * 1000.0) as u64);
        let fill = |d: &TimedDevice| {
            for b in 16..32 {
                d.write_blocks(b, &block).unwrap();
            }
        };

        let serial = timed(Resets::Serial);
        fill(&serial);
        assert_eq!(took(&serial, |d| d.discard(16, 16).unwrap()), reset);
        assert_eq!(took(&serial, |d| d.write_blocks(32, &block).unwrap()), write);

        let parallel = timed(Resets::Parallel);
        fill(&parallel);
        assert_eq!(took(&parallel, |d| d.discard(16, 16).unwrap()), Duration::ZERO);
        // Another zone: only the write's own time, while the reset still runs.
        assert_eq!(took(&parallel, |d| d.write_blocks(32, &block).unwrap()), write);
        // The resetting zone: the rest of the reset, then the write.
        assert_eq!(
            took(&parallel, |d| d.write_blocks(16, &block).unwrap()),
            reset - write + write
        );
        assert_eq!(
            parallel.reset_wait_ns.load(Ordering::Relaxed),
            (reset - write).as_nanos() as u64
        );
        // The reset is over: no wait.
        assert_eq!(took(&parallel, |d| d.write_blocks(17, &block).unwrap()), write);
        // A read of a zone being reset waits too; a second reset of it queues behind.
        assert_eq!(took(&parallel, |d| d.discard(32, 16).unwrap()), Duration::ZERO);
        assert_eq!(took(&parallel, |d| d.discard(32, 16).unwrap()), Duration::ZERO);
        let mut buf = [0u8; BLOCK_BYTES as usize];
        let read = Duration::from_nanos((model.read_us * 1000.0) as u64);
        assert_eq!(
            took(&parallel, |d| d.read_blocks(33, &mut buf).unwrap()),
            reset * 2 + read
        );
    }

    /// Under a pacer the zone resets of freed sections wait for the cleaner, which
    /// issues them between front writes; a section is never written again before its
    /// reset (the emulated zoned device refuses a write that is not at its zone's
    /// write pointer, which a zone still full has at its end).
    #[test]
    fn deferred_zone_resets_come_before_reuse() {
        let mut setup = Preset::Small.setup();
        setup.io_bytes = 96 << 20;
        for pacing in [GcPacing::Seed, GcPacing::Adaptive] {
            let r = LatencyRun {
                policy: GcPolicy::Greedy,
                pacing,
                target: Duration::from_micros(1000),
                model: LatencyModel::default(),
                rate: Some(300.0),
                start_margin: None,
            };
            let a = run(&setup, &r, Load::Share(0.5), &|_| {}).unwrap();
            assert!(a.sections_freed > 0 && a.paced_discards > 0, "{pacing}: {a:?}");
        }
    }

    /// One run of `setup` under `policy` and `pacing` with a 1 ms target: at `rate`
    /// writes/s (counted as half load), or at full speed.
    fn run_at(setup: &Setup, policy: GcPolicy, pacing: GcPacing, rate: Option<f64>) -> LatencyResult {
        let r = LatencyRun {
            policy,
            pacing,
            target: Duration::from_micros(1000),
            model: LatencyModel::default(),
            rate,
            start_margin: None,
        };
        let load = if rate.is_some() { Load::Share(0.5) } else { Load::Full };
        run(setup, &r, load, &|_| {}).unwrap()
    }

    /// Under the batching default policy a paced run shares checkpoints among
    /// emptied victims as `off`'s passes do: each checkpoint writes every dirty node,
    /// so checkpointing a few victims at a time costs WAF (three times `off`'s
    /// checkpoints at full speed before the rule was fixed).
    #[test]
    fn paced_runs_under_the_default_policy_batch_checkpoints_as_off_does() {
        let mut setup = Preset::Small.setup();
        setup.io_bytes = 128 << 20;
        let run_with = |pacing, rate| run_at(&setup, GcPolicy::Default, pacing, rate);
        let off = run_with(GcPacing::Off, None);
        assert!(off.checkpoints > 0, "{off:?}");
        let per_section = |r: &LatencyResult| r.checkpoints as f64 / r.sections_freed.max(1) as f64;
        for rate in [None, Some(off.iops * 0.5)] {
            let adaptive = run_with(GcPacing::Adaptive, rate);
            assert!(adaptive.sections_freed > 0, "{adaptive:?}");
            assert!(
                per_section(&adaptive) <= 1.25 * per_section(&off),
                "at {rate:?} writes/s, checkpoints per freed section: adaptive {} ({} / {}), off {} ({} / {})",
                per_section(&adaptive),
                adaptive.checkpoints,
                adaptive.sections_freed,
                per_section(&off),
                off.checkpoints,
                off.sections_freed
            );
        }
    }

    /// Under `adaptive` at half load, no writer writes a checkpoint or cleans: the
    /// cleaner's emptied sections stand in for reserved ones until its checkpoint,
    /// so a write whose data log must open a section does not find the volume full
    /// while the cleaner writes the dirty nodes ahead of that checkpoint (before the
    /// rule, writers took checkpoints of up to 4 ms in this run, 9 ms with 2.5 GiB).
    #[test]
    fn adaptive_writers_at_half_load_write_no_checkpoint_of_their_own() {
        let mut setup = Preset::Small.setup();
        setup.file_bytes = 1800 << 20;
        setup.io_bytes = 1 << 30;
        let run_with = |pacing, rate| run_at(&setup, GcPolicy::Greedy, pacing, rate);
        let off = run_with(GcPacing::Off, None);
        let adaptive = run_with(GcPacing::Adaptive, Some(off.iops * 0.5));
        assert!(
            adaptive.sections_freed > 0 && adaptive.paced_checkpoints > 0,
            "{adaptive:?}"
        );
        let b = &adaptive.all_breakdown;
        assert_eq!(
            (b.cp_us, b.fg_gc_us, adaptive.writer_finishes),
            (0.0, 0.0, 0),
            "writers' checkpoints, foreground GC and finished victims"
        );
    }

    /// Merging windows keeps the writes, the largest latencies and the mean.
    #[test]
    fn coarse_windows_keep_spikes_and_counts() {
        let mut setup = Preset::Small.setup();
        setup.io_bytes = 32 << 20;
        let r = LatencyRun {
            policy: GcPolicy::Greedy,
            pacing: GcPacing::Off,
            target: Duration::from_micros(1000),
            model: LatencyModel::default(),
            rate: None,
            start_margin: None,
        };
        let a = run(&setup, &r, Load::Full, &|_| {}).unwrap();
        assert!(a.windows.len() > 10, "{}", a.windows.len());
        let c = a.coarse(5);
        assert!(c.windows.len() <= 5 && c.windows_merged > 1, "{}", c.windows.len());
        let sum = |w: &[Window]| w.iter().map(|w| w.writes).sum::<u64>();
        assert_eq!(sum(&c.windows), sum(&a.windows));
        let max = |w: &[Window]| w.iter().map(|w| w.clat_max_us).fold(0.0, f64::max);
        assert_eq!(max(&c.windows), max(&a.windows));
        let total = |w: &[Window]| w.iter().map(|w| w.avg_us * w.writes as f64).sum::<f64>();
        assert!((total(&c.windows) - total(&a.windows)).abs() <= 1e-6 * total(&a.windows));
    }
}
