//! The writeback lab behind `uf2fs bench writeback`: parallel writeback contexts (the
//! 2025 seed) measured in process.
//!
//! Each run formats a fresh volume held in memory, sets its writeback contexts and
//! policy, starts their flusher threads, and has `writers` threads each create and
//! write its own files with buffered writes of 1 MiB (the seed's fio-like jobs: a few
//! large sequential files each, or many small ones). The run ends when every file is
//! written and a checkpoint has made it durable. It reports throughput (file bytes over
//! wall time, checkpoint included), how contiguous each file ended up (extents: runs of
//! consecutive blocks, from [`Fs::extents`]), WAF, and what each context did.
//!
//! Wall time on this machine is the measure (the device is memory, so the file system's
//! own work is what is timed): compare configurations within one invocation, which
//! runs them in turn on the same machine, not across machines.

use std::sync::Arc;
use std::time::{Duration, Instant};
use uf2fs_core::device::{BlockDevice, MemDevice, WriteKind};
use uf2fs_core::mkfs::{mkfs_blocks, MkfsOptions};
use uf2fs_core::writeback::{policy_by_name, WritebackStats};
use uf2fs_core::{Fs, OpenOptions};

/// What the writers write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WbWorkload {
    /// Each writer writes `files` files of `file_bytes` bytes, one after the other.
    Large {
        /// Files per writer.
        files: u32,
        /// Bytes per file.
        file_bytes: u64,
    },
    /// Each writer writes `files` small files of `file_bytes` bytes.
    Small {
        /// Files per writer.
        files: u32,
        /// Bytes per file.
        file_bytes: u64,
    },
}

impl WbWorkload {
    /// Name for reports.
    pub fn name(&self) -> &'static str {
        match self {
            WbWorkload::Large { .. } => "large",
            WbWorkload::Small { .. } => "small",
        }
    }

    fn shape(&self) -> (u32, u64) {
        match *self {
            WbWorkload::Large { files, file_bytes } | WbWorkload::Small { files, file_bytes } => (files, file_bytes),
        }
    }
}

/// One configuration to run.
#[derive(Debug, Clone)]
pub struct WbRun {
    /// The workload.
    pub workload: WbWorkload,
    /// Writer threads.
    pub writers: usize,
    /// Writeback contexts (flusher threads).
    pub contexts: usize,
    /// Policy name (`single`, `ino-hash`, `least-loaded`).
    pub policy: String,
    /// Volume size in bytes.
    pub volume_bytes: u64,
    /// Device model: microseconds each written block costs the thread that writes it
    /// (slept after the write; 0: memory speed). Threads writing at once overlap, as
    /// an NVMe device's queues do.
    pub write_us: f64,
    /// Where to save the volume as an image after the run (unmounted), if anywhere.
    pub save_image: Option<std::path::PathBuf>,
}

/// A memory device whose writes take time: each write sleeps `per_block` times its
/// blocks in the writing thread (see [`WbRun::write_us`]).
struct TimedDevice {
    inner: Arc<MemDevice>,
    per_block: Duration,
}

impl TimedDevice {
    fn wait(&self, blocks: usize) {
        if !self.per_block.is_zero() {
            std::thread::sleep(self.per_block * blocks as u32);
        }
    }
}

impl BlockDevice for TimedDevice {
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> uf2fs_core::Result<()> {
        self.inner.read_blocks(blkaddr, buf)
    }
    fn block_count(&self) -> u64 {
        self.inner.block_count()
    }
    fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> uf2fs_core::Result<()> {
        self.inner.write_blocks(blkaddr, buf)?;
        self.wait(buf.len() / 4096);
        Ok(())
    }
    fn flush(&self) -> uf2fs_core::Result<()> {
        self.inner.flush()
    }
    fn write_kind(&self, blkaddr: u64, buf: &[u8], kind: WriteKind) -> uf2fs_core::Result<()> {
        self.inner.write_kind(blkaddr, buf, kind)?;
        self.wait(buf.len() / 4096);
        Ok(())
    }
    fn write_blocks_from(&self, blkaddr: u64, blocks: &[&[u8]], kind: WriteKind) -> uf2fs_core::Result<()> {
        self.inner.write_blocks_from(blkaddr, blocks, kind)?;
        self.wait(blocks.len());
        Ok(())
    }
}

/// A file's inode number and its extents as [`Fs::extents`] lists them
/// (`(first file block, first device block, blocks)`).
pub type FileExtents = (u32, Vec<(u64, u64, u64)>);

/// What one run measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WbResult {
    /// Workload name.
    pub workload: &'static str,
    /// Writer threads.
    pub writers: usize,
    /// Writeback contexts.
    pub contexts: usize,
    /// Policy name.
    pub policy: String,
    /// The device model's microseconds per written block.
    pub write_us: f64,
    /// File bytes written.
    pub bytes: u64,
    /// Wall seconds from the first write to the checkpoint that made it durable.
    pub elapsed_s: f64,
    /// Throughput: MiB of file data per second.
    pub mib_per_s: f64,
    /// Files written.
    pub files: u64,
    /// Mean extents (runs of consecutive blocks) per file.
    pub extents_per_file: f64,
    /// Most extents of one file.
    pub extents_max: u64,
    /// Device blocks written over file blocks written.
    pub waf: f64,
    /// Pages each context wrote.
    pub context_pages: Vec<u64>,
    /// Seconds each context's flusher thread spent writing.
    pub context_busy_s: Vec<f64>,
    /// CPU seconds each context's flusher thread used (empty where the system does
    /// not tell a thread's CPU time).
    pub context_cpu_s: Vec<f64>,
    /// CPU seconds the writer threads used, together (0 where not known).
    pub writers_cpu_s: f64,
    /// Each file's inode number and extents, in writer and file order (not in the
    /// JSON: the saved image's check reads them).
    #[serde(skip)]
    pub file_extents: Vec<FileExtents>,
}

/// The bytes of block `index` of writer `w`'s file `f`: cheap, distinct per block, so a
/// misplaced block would show in [`verify`].
fn fill(buf: &mut [u8], w: usize, f: u32, offset: u64) {
    for (k, chunk) in buf.chunks_mut(8).enumerate() {
        let v = ((w as u64) << 56) ^ ((f as u64) << 40) ^ (offset + 8 * k as u64);
        chunk.copy_from_slice(&v.to_le_bytes()[..chunk.len()]);
    }
}

fn file_name(w: usize, f: u32) -> Vec<u8> {
    format!("w{w}-f{f}").into_bytes()
}

/// Runs one configuration (see the module notes). `verify` reads every file back
/// afterwards and compares it with what was written.
pub fn run(cfg: &WbRun, verify: bool) -> Result<WbResult, String> {
    let policy = policy_by_name(&cfg.policy).ok_or_else(|| format!("unknown writeback policy {}", cfg.policy))?;
    let (report, blocks) = mkfs_blocks(&MkfsOptions::default(), cfg.volume_bytes).map_err(|e| format!("mkfs: {e}"))?;
    let _ = report;
    let mut image = vec![0u8; cfg.volume_bytes as usize];
    for (blkaddr, data) in blocks {
        let at = blkaddr as usize * 4096;
        image[at..at + data.len()].copy_from_slice(&data);
    }
    let rw = OpenOptions { read_write: true };
    let mem = Arc::new(MemDevice::new(image));
    let dev = TimedDevice {
        inner: Arc::clone(&mem),
        per_block: Duration::from_secs_f64(cfg.write_us.max(0.0) / 1e6),
    };
    let fs = Arc::new(Fs::open_device_with(Box::new(dev), "writeback-lab", rw).map_err(|e| e.to_string())?);
    fs.set_writeback(cfg.contexts, policy).map_err(|e| e.to_string())?;
    let opts = uf2fs_core::background::BackgroundOptions {
        checkpoint_interval: None,
        gc: None,
        writeback_threads: true,
        paced_gc: false,
    };
    let bg = uf2fs_core::background::Background::start(&fs, opts).map_err(|e| e.to_string())?;
    let before = fs.write_counts();
    let (files, file_bytes) = cfg.workload.shape();
    let started = Instant::now();
    let handles: Vec<_> = (0..cfg.writers)
        .map(|w| {
            let fs = Arc::clone(&fs);
            std::thread::spawn(move || -> Result<Duration, String> {
                let mut buf = vec![0u8; 1 << 20];
                for f in 0..files {
                    let ino = fs
                        .create(fs.root(), &file_name(w, f), 0o100644, 0, 0)
                        .map_err(|e| e.to_string())?
                        .ino;
                    let mut off = 0u64;
                    while off < file_bytes {
                        let n = (file_bytes - off).min(buf.len() as u64) as usize;
                        fill(&mut buf[..n], w, f, off);
                        let done = fs.write(ino, off, &buf[..n]).map_err(|e| e.to_string())?;
                        if done != n {
                            return Err(format!("short write: {done} of {n} bytes (volume full?)"));
                        }
                        off += n as u64;
                    }
                }
                Ok(uf2fs_core::clock::thread_cpu_time().unwrap_or_default())
            })
        })
        .collect();
    let mut writers_cpu = Duration::ZERO;
    for h in handles {
        writers_cpu += h.join().map_err(|_| "a writer panicked".to_string())??;
    }
    bg.stop();
    fs.write_checkpoint().map_err(|e| e.to_string())?;
    let elapsed = started.elapsed().as_secs_f64();
    let after = fs.write_counts();
    let stats: Vec<WritebackStats> = fs.writeback_stats();
    let mut extents = Vec::new();
    let mut file_extents = Vec::new();
    for w in 0..cfg.writers {
        for f in 0..files {
            let ino = fs.lookup(fs.root(), &file_name(w, f)).map_err(|e| e.to_string())?;
            let runs = fs.extents(ino).map_err(|e| e.to_string())?;
            extents.push(runs.len() as u64);
            file_extents.push((ino, runs));
            if verify {
                verify_file(&fs, ino, w, f, file_bytes)?;
            }
        }
    }
    let bytes = cfg.writers as u64 * files as u64 * file_bytes;
    let user_blocks = bytes.div_ceil(4096);
    let device = after.total().saturating_sub(before.total());
    let result = WbResult {
        workload: cfg.workload.name(),
        writers: cfg.writers,
        contexts: cfg.contexts,
        policy: cfg.policy.clone(),
        write_us: cfg.write_us,
        bytes,
        elapsed_s: elapsed,
        mib_per_s: bytes as f64 / (1 << 20) as f64 / elapsed,
        files: extents.len() as u64,
        extents_per_file: extents.iter().sum::<u64>() as f64 / extents.len().max(1) as f64,
        extents_max: extents.iter().copied().max().unwrap_or(0),
        waf: device as f64 / user_blocks.max(1) as f64,
        context_pages: stats.iter().map(|s| s.pages).collect(),
        context_busy_s: stats.iter().map(|s| s.busy_us as f64 / 1e6).collect(),
        context_cpu_s: stats
            .iter()
            .filter(|s| s.cpu_us > 0)
            .map(|s| s.cpu_us as f64 / 1e6)
            .collect(),
        writers_cpu_s: writers_cpu.as_secs_f64(),
        file_extents,
    };
    if let Some(path) = &cfg.save_image {
        let fs = Arc::try_unwrap(fs).map_err(|_| "the file system is still in use".to_string())?;
        fs.unmount().map_err(|e| e.to_string())?;
        crate::volume::export_image(mem.as_ref(), path).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(result)
}

/// Checks the extents uf2fs reported for `files` (inode number, `(file block, device
/// block, blocks)` runs) against `dump.f2fs -M -i INO IMAGE` (f2fs-tools' block map of
/// a file) on the saved `image`: the same runs of device blocks, in file order.
/// Returns how many files agreed; an error names the first that did not, or says why
/// dump.f2fs could not run.
pub fn check_extents_with_dump(image: &std::path::Path, files: &[FileExtents]) -> Result<usize, String> {
    for (ino, runs) in files {
        let out = std::process::Command::new("dump.f2fs")
            .args(["-M", "-i", &ino.to_string()])
            .arg(image)
            .output()
            .map_err(|e| format!("cannot run dump.f2fs: {e} (install f2fs-tools)"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(format!("dump.f2fs -M -i {ino} failed: {text}"));
        }
        let line = text.lines().last().unwrap_or("");
        let mut theirs = Vec::new();
        for item in line.split_whitespace() {
            let (a, b) = item.split_once('-').unwrap_or((item, item));
            let (a, b) = a
                .parse::<u64>()
                .ok()
                .zip(b.parse::<u64>().ok())
                .ok_or_else(|| format!("dump.f2fs -M -i {ino}: cannot read '{line}'"))?;
            theirs.push((a, b + 1 - a));
        }
        // dump.f2fs lists the slot at the file's size too when the size is a whole
        // number of blocks (its bound is inclusive), as a hole ("0"): not a block.
        while theirs.last().is_some_and(|&(blk, _)| blk == 0) {
            theirs.pop();
        }
        let ours: Vec<(u64, u64)> = runs.iter().map(|&(_, blk, len)| (blk, len)).collect();
        if ours != theirs {
            return Err(format!(
                "inode {ino}: uf2fs lists {} extents {:?}..., dump.f2fs {} {:?}...",
                ours.len(),
                &ours[..ours.len().min(4)],
                theirs.len(),
                &theirs[..theirs.len().min(4)]
            ));
        }
    }
    Ok(files.len())
}

/// Results as pretty-printed JSON (an array of records).
pub fn to_json(results: &[WbResult]) -> String {
    serde_json::to_string_pretty(results).expect("results serialize")
}

fn verify_file(fs: &Fs, ino: u32, w: usize, f: u32, file_bytes: u64) -> Result<(), String> {
    let mut got = vec![0u8; 1 << 20];
    let mut want = vec![0u8; 1 << 20];
    let mut off = 0u64;
    while off < file_bytes {
        let n = (file_bytes - off).min(got.len() as u64) as usize;
        let r = fs.read(ino, off, &mut got[..n]).map_err(|e| e.to_string())?;
        fill(&mut want[..n], w, f, off);
        if r != n || got[..n] != want[..n] {
            return Err(format!("file w{w}-f{f}: bytes at {off} differ from what was written"));
        }
        off += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_contexts_write_every_file_intact() {
        for (contexts, policy) in [(1, "single"), (2, "ino-hash"), (3, "least-loaded")] {
            let cfg = WbRun {
                workload: WbWorkload::Large {
                    files: 2,
                    file_bytes: 24 << 20,
                },
                writers: 2,
                contexts,
                policy: policy.into(),
                volume_bytes: 512 << 20,
                write_us: 0.0,
                save_image: None,
            };
            let r = run(&cfg, true).unwrap();
            assert_eq!(r.files, 4);
            assert_eq!(r.context_pages.len(), contexts);
            // Every page went through a context; with more than one, more than one
            // context did work.
            assert!(r.context_pages.iter().sum::<u64>() >= 4 * (24 << 20) / 4096, "{r:?}");
            if contexts > 1 {
                assert!(r.context_pages.iter().filter(|&&p| p > 0).count() > 1, "{r:?}");
            }
        }
    }
}
