//! One lab run: a fresh volume, one GC policy, one workload; what it cost.
//!
//! WAF is counted as the seed counts it — every block written to the device (both
//! null_blks: metadata, nodes, data, GC moves) over the user blocks written — from the
//! start of the overwrite phase: the fill and the checkpoint that ends it are left
//! out, as the seed's fio job measures only its random writes. A checkpoint ends the
//! overwrite phase too (it writes back what the page cache still holds, as the kernel
//! eventually does), and is counted.

use crate::clock::CLOCK_BLOCKS_PER_SEC;
use crate::idle::Idler;
use crate::setup::{Setup, BLOCK_BYTES};
use crate::volume::{Geometry, Volume};
use crate::workload::{Generator, Op, Phase, Shape, Workload, CHUNK_BLOCKS};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::time::Instant;
use uf2fs_core::device::WriteCounts;
use uf2fs_core::{Accounting, Fs, GcPolicy, Ino};

/// Points of the WAF curve taken during the overwrite phase (plus the final one).
pub const CURVE_POINTS: u64 = 200;

/// Blocks written to the device over a span, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceCounts {
    /// Superblock blocks.
    pub superblock: u64,
    /// Checkpoint pack blocks.
    pub checkpoint: u64,
    /// SIT blocks.
    pub sit: u64,
    /// NAT blocks.
    pub nat: u64,
    /// SSA blocks.
    pub ssa: u64,
    /// Data written back from the page cache.
    pub user_data: u64,
    /// Data moved by GC.
    pub gc_data: u64,
    /// Nodes written by the write path and checkpoints.
    pub user_node: u64,
    /// Nodes moved by GC.
    pub gc_node: u64,
    /// Main-area blocks of no kind.
    pub main_other: u64,
    /// All of them.
    pub total: u64,
}

impl DeviceCounts {
    /// What was written between `before` and `after`.
    pub fn between(before: &WriteCounts, after: &WriteCounts) -> DeviceCounts {
        DeviceCounts {
            superblock: after.superblock - before.superblock,
            checkpoint: after.checkpoint - before.checkpoint,
            sit: after.sit - before.sit,
            nat: after.nat - before.nat,
            ssa: after.ssa - before.ssa,
            user_data: after.user_data - before.user_data,
            gc_data: after.gc_data - before.gc_data,
            user_node: after.user_node - before.user_node,
            gc_node: after.gc_node - before.gc_node,
            main_other: after.main_other - before.main_other,
            total: after.total() - before.total(),
        }
    }
}

/// A point of the WAF curve: blocks written since the overwrite phase began.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// User blocks.
    pub user_blocks: u64,
    /// Device blocks.
    pub device_blocks: u64,
}

impl Sample {
    /// Cumulative WAF at this point (0 before any user block).
    pub fn waf(&self) -> f64 {
        if self.user_blocks == 0 {
            0.0
        } else {
            self.device_blocks as f64 / self.user_blocks as f64
        }
    }
}

/// Foreground GC passes that took `victims` victims and wrote `checkpoints`
/// checkpoints; the highest count of either stands for that many or more
/// ([`uf2fs_core::PASS_WORK_BINS`] - 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PassBin {
    /// Victims of each pass.
    pub victims: u32,
    /// Checkpoints of each pass.
    pub checkpoints: u32,
    /// Passes.
    pub passes: u64,
}

/// Foreground GC passes begun with `free` free sections beyond the reserved ones (the
/// highest, [`uf2fs_core::PASS_FREE_BINS`] - 1, stands for that many or more).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FreeBin {
    /// Free sections beyond the reserved ones.
    pub free: u32,
    /// Passes.
    pub passes: u64,
}

/// Foreground GC passes begun with at least `pages` dirty file data pages and fewer
/// than `pages` + [`uf2fs_core::PASS_DIRTY_BIN_PAGES`] (the highest bin: at least
/// `pages`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirtyBin {
    /// The bin's fewest dirty pages.
    pub pages: u64,
    /// Passes.
    pub passes: u64,
}

/// The non-empty bins of `passes` by dirty pages.
fn dirty_bins(passes: &uf2fs_core::PassCounts) -> Vec<DirtyBin> {
    (passes.by_dirty.iter().enumerate())
        .filter(|(_, &n)| n > 0)
        .map(|(i, &n)| DirtyBin {
            pages: i as u64 * uf2fs_core::PASS_DIRTY_BIN_PAGES,
            passes: n,
        })
        .collect()
}

/// The non-empty bins of `passes`, in order of victims, then checkpoints.
fn pass_bins(passes: &uf2fs_core::PassCounts) -> Vec<PassBin> {
    let mut bins = Vec::new();
    for (victims, row) in passes.by_work.iter().enumerate() {
        for (checkpoints, &n) in row.iter().enumerate() {
            if n > 0 {
                bins.push(PassBin {
                    victims: victims as u32,
                    checkpoints: checkpoints as u32,
                    passes: n,
                });
            }
        }
    }
    bins
}

/// The non-empty bins of `passes` by free sections.
fn free_bins(passes: &uf2fs_core::PassCounts) -> Vec<FreeBin> {
    (passes.by_free.iter().enumerate())
        .filter(|(_, &n)| n > 0)
        .map(|(free, &n)| FreeBin {
            free: free as u32,
            passes: n,
        })
        .collect()
}

/// What one (policy, workload) run measured. Counts are of the overwrite phase
/// unless named `fill_*`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    /// GC policy.
    pub policy: String,
    /// Workload.
    pub workload: String,
    /// Device blocks / user blocks.
    pub waf: f64,
    /// Relative change of `waf` against greedy's on the same workload (None without a
    /// greedy run), e.g. -0.29 for 29% lower.
    pub waf_vs_greedy: Option<f64>,
    /// User blocks written.
    pub user_blocks: u64,
    /// Device blocks written.
    pub device_blocks: u64,
    /// Data blocks GC moved.
    pub data_blocks_moved: u64,
    /// Node blocks GC moved.
    pub node_blocks_moved: u64,
    /// Foreground GC passes.
    pub fg_gc_calls: u64,
    /// Background GC passes.
    pub bg_gc_calls: u64,
    /// Data sections cleaned.
    pub data_victims: u64,
    /// Node sections cleaned.
    pub node_victims: u64,
    /// Victims left empty.
    pub sections_freed: u64,
    /// Checkpoints GC wrote.
    pub gc_checkpoints: u64,
    /// Foreground GC passes by victims taken and checkpoints written, the bins that
    /// have passes (see [`PassBin`]): what Linux's trace of `f2fs_gc` shows of its
    /// passes (`scripts/kernel/gc-passes.py` reads both).
    #[serde(default)]
    pub gc_passes: Vec<PassBin>,
    /// Foreground GC passes by the free sections beyond the reserved ones at their
    /// start, the bins that have passes (see [`FreeBin`]).
    #[serde(default)]
    pub gc_pass_free: Vec<FreeBin>,
    /// Foreground GC passes by the dirty file data pages at their start, the bins
    /// that have passes (see [`DirtyBin`]).
    #[serde(default)]
    pub gc_pass_dirty: Vec<DirtyBin>,
    /// Foreground GC passes begun with the warm data log's current section short of
    /// the dirty data's remainder (by the free-section rule's room).
    #[serde(default)]
    pub gc_pass_warm_short: u64,
    /// The same of the cold data log.
    #[serde(default)]
    pub gc_pass_cold_short: u64,
    /// Live blocks over main-area blocks at the end.
    pub utilization: f64,
    /// Greedy's analytical WAF at that utilisation (uniform overwrites, data moves
    /// only; see `uf2fs_core::gc::greedy_model`).
    pub greedy_limit: Option<f64>,
    /// The same at the utilisation of the space cleaning can use (the main area less
    /// the reserved sections and the open logs): what greedy can reach at best here.
    pub greedy_limit_usable: Option<f64>,
    /// Seconds of the whole run (format, fill, overwrites).
    pub elapsed_s: f64,
    /// Seconds of the fill.
    pub fill_elapsed_s: f64,
    /// User blocks of the fill.
    pub fill_user_blocks: u64,
    /// Device blocks of the fill (with the mount's first writes and its checkpoint).
    pub fill_device_blocks: u64,
    /// Device blocks by kind.
    pub device: DeviceCounts,
    /// The values of the run.
    pub setup: Setup,
    /// The volume's geometry.
    pub geometry: Geometry,
    /// Cumulative WAF against user data, [`CURVE_POINTS`] points and the end.
    pub curve: Vec<Sample>,
}

/// Zeros for every write (the device keeps no zero block).
static ZEROS: [u8; CHUNK_BLOCKS as usize * BLOCK_BYTES as usize] = [0; CHUNK_BLOCKS as usize * BLOCK_BYTES as usize];

/// Runs `workload` under `policy` on a fresh volume for `setup`. `advance` is told of
/// user blocks written as they are (in steps of a few thousand).
pub fn run(
    setup: &Setup,
    policy: GcPolicy,
    workload: Workload,
    advance: &(dyn Fn(u64) + Sync),
) -> Result<RunResult, String> {
    let started = Instant::now();
    let vol = Volume::create(setup)?;
    run_on(&vol, setup, policy, workload, advance, started)
}

/// [`run`] on a volume made for `setup` and not yet written, which stays mounted
/// afterwards (to be checked); `started` is when the run began.
pub fn run_on(
    vol: &Volume,
    setup: &Setup,
    policy: GcPolicy,
    workload: Workload,
    advance: &(dyn Fn(u64) + Sync),
    started: Instant,
) -> Result<RunResult, String> {
    vol.fs.set_gc_policy(policy).map_err(|e| e.to_string())?;
    // Linux's writer and flusher, as in the kernel comparisons (docs/waf-lab.md).
    vol.fs
        .set_writer_model(uf2fs_core::WriterModel::Kernel)
        .map_err(|e| e.to_string())?;
    vol.fs.set_kernel_gc_loop(setup.kernel).map_err(|e| e.to_string())?;
    if let Some(hold) = setup.writer_hold {
        vol.fs.set_writer_hold(hold).map_err(|e| e.to_string())?;
    }
    vol.fs
        .set_simulated_clock(Some(CLOCK_BLOCKS_PER_SEC))
        .map_err(|e| e.to_string())?;
    let shape = Shape {
        file_blocks: setup.file_blocks(),
        io_blocks: setup.io_blocks(),
        seed: setup.seed,
    };
    let mut gen = Generator::new(workload, shape)?;
    let mut idler = match setup.idle {
        Some(idle) => Some(Idler::install(&vol.fs, idle).map_err(|e| e.to_string())?),
        None => None,
    };
    let mut files = Files::default();
    let context = |phase: &str, done: u64, e: &dyn std::fmt::Display| {
        format!("{policy} on {workload}: {e} (after {done} blocks of the {phase})")
    };
    let at_open = accounting(&vol.fs)?;
    let mut user = 0u64;
    let mut reported = 0u64;
    let step = (setup.io_blocks() / CURVE_POINTS).max(1);
    let mut next_sample = step;
    let mut base: Option<(Accounting, f64)> = None;
    let mut curve = Vec::with_capacity(CURVE_POINTS as usize + 2);
    while let Some((phase, op)) = gen.next_op() {
        if phase == Phase::Overwrite && base.is_none() {
            vol.fs.write_checkpoint().map_err(|e| context("fill", user, &e))?;
            base = Some((accounting(&vol.fs)?, started.elapsed().as_secs_f64()));
            curve.push(Sample {
                user_blocks: 0,
                device_blocks: 0,
            });
            advance(user - reported);
            (user, reported) = (0, 0);
            if let Some(idler) = idler.as_mut() {
                idler.start();
            }
        }
        let what = if phase == Phase::Fill {
            "fill"
        } else {
            "overwrite phase"
        };
        files.apply(&vol.fs, op).map_err(|e| context(what, user, &e))?;
        user += op.user_blocks();
        if let Some(idler) = idler.as_mut() {
            idler
                .wrote(&vol.fs, op.user_blocks())
                .map_err(|e| context(what, user, &e))?;
        }
        if user - reported >= 4096 {
            advance(user - reported);
            reported = user;
        }
        if let (Some((a0, _)), true) = (&base, user >= next_sample) {
            let a = accounting(&vol.fs)?;
            curve.push(Sample {
                user_blocks: a.user_blocks - a0.user_blocks,
                device_blocks: a.device.total() - a0.device.total(),
            });
            next_sample = (user / step + 1) * step;
        }
    }
    advance(user - reported);
    vol.fs
        .write_checkpoint()
        .map_err(|e| context("overwrite phase", user, &e))?;
    let end = accounting(&vol.fs)?;
    let (a0, fill_elapsed_s) = base.ok_or_else(|| format!("{policy} on {workload}: no overwrite phase"))?;
    let user_blocks = end.user_blocks - a0.user_blocks;
    if user_blocks != setup.io_blocks() {
        return Err(format!(
            "{policy} on {workload}: the file system counted {user_blocks} user blocks where the lab wrote {}",
            setup.io_blocks()
        ));
    }
    let device = DeviceCounts::between(&a0.device, &end.device);
    let last = Sample {
        user_blocks,
        device_blocks: device.total,
    };
    if curve.last().is_some_and(|s| s.user_blocks == user_blocks) {
        curve.pop();
    }
    curve.push(last);
    let gc = |f: fn(&uf2fs_core::GcStats) -> u64| f(&end.gc) - f(&a0.gc);
    let passes = end.gc.passes.since(&a0.gc.passes);
    Ok(RunResult {
        policy: policy.to_string(),
        workload: workload.to_string(),
        waf: last.waf(),
        waf_vs_greedy: None,
        user_blocks,
        device_blocks: device.total,
        data_blocks_moved: gc(|g| g.data_blocks_moved),
        node_blocks_moved: gc(|g| g.node_blocks_moved),
        fg_gc_calls: gc(|g| g.fg_calls),
        bg_gc_calls: gc(|g| g.bg_calls),
        data_victims: gc(|g| g.data_victims),
        node_victims: gc(|g| g.node_victims),
        sections_freed: gc(|g| g.sections_freed),
        gc_checkpoints: gc(|g| g.checkpoints),
        gc_passes: pass_bins(&passes),
        gc_pass_free: free_bins(&passes),
        gc_pass_dirty: dirty_bins(&passes),
        gc_pass_warm_short: passes.warm_short,
        gc_pass_cold_short: passes.cold_short,
        utilization: end.utilization(),
        greedy_limit: uf2fs_core::gc::greedy_model::greedy_limit(end.utilization()),
        greedy_limit_usable: vol
            .geometry
            .usable_utilization(end.utilization())
            .and_then(uf2fs_core::gc::greedy_model::greedy_limit),
        elapsed_s: started.elapsed().as_secs_f64(),
        fill_elapsed_s,
        fill_user_blocks: a0.user_blocks - at_open.user_blocks,
        fill_device_blocks: a0.device.total() - at_open.device.total(),
        device,
        setup: setup.clone(),
        geometry: vol.geometry.clone(),
        curve,
    })
}

fn accounting(fs: &Fs) -> Result<Accounting, String> {
    fs.accounting().map_err(|e| format!("reading the write counters: {e}"))
}

/// The workload's files on the volume, by number.
#[derive(Default)]
struct Files {
    inos: HashMap<u32, Ino>,
}

impl Files {
    fn name(file: u32) -> Vec<u8> {
        format!("f{file}").into_bytes()
    }

    fn apply(&mut self, fs: &Fs, op: Op) -> uf2fs_core::Result<()> {
        match op {
            Op::Create { file } => {
                let st = fs.create(fs.root(), &Files::name(file), 0o644, 0, 0)?;
                self.inos.insert(file, st.ino);
            }
            Op::Write { file, block, blocks } => {
                let ino = self.ino(file)?;
                let len = blocks as usize * BLOCK_BYTES as usize;
                let n = fs.write(ino, block * BLOCK_BYTES, &ZEROS[..len])?;
                if n != len {
                    return Err(uf2fs_core::Error::Invalid(format!(
                        "short write of {n} bytes of {len} to file {file}"
                    )));
                }
            }
            Op::Delete { file } => {
                self.ino(file)?;
                fs.unlink(fs.root(), &Files::name(file))?;
                self.inos.remove(&file);
            }
        }
        Ok(())
    }

    fn ino(&self, file: u32) -> uf2fs_core::Result<Ino> {
        self.inos
            .get(&file)
            .copied()
            .ok_or_else(|| uf2fs_core::Error::Invalid(format!("the workload used file {file} before making it")))
    }
}
