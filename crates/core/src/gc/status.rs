//! The status of a mounted file system, as `uf2fs status MOUNTPOINT` shows it: what it
//! wrote and what its garbage collection did. [`Fs::status`] gathers it into one
//! [`Status`] value; [`Fs::status_report`] prints that as `key: value` lines, and with
//! the `serde` feature the same value serialises to the JSON of `uf2fs status --json`
//! (its field names, documented in docs/json.md, are those of the structures below).

use crate::{Fs, Result};
use std::fmt::Write;

/// The status of a file system (see the module notes). A read-only one reports its mode
/// and nothing else.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Status {
    /// `"read-write"` or `"read-only"`.
    pub mode: &'static str,
    /// Everything else: only on a read-write file system.
    #[cfg_attr(feature = "serde", serde(flatten))]
    pub writes: Option<WriteStatus>,
}

/// What a read-write file system wrote, and its collector's work, since it was opened.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct WriteStatus {
    /// Why the file system stopped writing (damage found on the image, a device error,
    /// a failed checkpoint), as in the `EIO` every change then gets; `None` while it
    /// writes.
    pub stopped: Option<String>,
    /// The GC policy (`gc_policy=` mount option).
    pub gc_policy: String,
    /// `on`, `off` or `sync` (`background_gc=`).
    pub background_gc: &'static str,
    /// Active logs (`active_logs=`: 2, 4 or 6).
    pub active_logs: u32,
    /// `posix`, `strict` or `nobarrier` (`fsync_mode=`).
    pub fsync_mode: &'static str,
    /// How the fsyncs since open were made durable.
    pub fsyncs: Fsyncs,
    /// What roll-forward recovery replayed when the file system was opened.
    pub recovered_at_open: Recovered,
    /// Valid blocks over the main area's blocks (0 to 1).
    pub utilization: f64,
    /// Bytes in a block of this volume (4096 or 16384): the unit of every block count.
    pub block_size: u64,
    /// Blocks the users' writes covered.
    pub user_blocks_written: u64,
    /// Write amplification: device blocks written per user block (0 before any).
    pub waf: f64,
    /// Device blocks written, by kind.
    pub device_blocks: DeviceBlocks,
    /// Garbage-collection passes.
    pub gc_calls: GcCalls,
    /// Sections chosen as victims, by kind.
    pub victims: ByKind,
    /// Victims left without a valid block.
    pub sections_freed: u64,
    /// Blocks GC moved, by kind.
    pub blocks_moved: ByKind,
    /// Checkpoints GC wrote to turn prefree sections free.
    pub gc_checkpoints: u64,
    /// The writeback contexts, when the mount has its own (`writeback=`).
    pub writeback: Option<Writeback>,
    /// `off`, `seed` or `adaptive` (`gc_pacing=`).
    pub gc_pacing: &'static str,
    /// The latency target of adaptive pacing, microseconds (`None` otherwise).
    pub gc_latency_target_us: Option<u64>,
    /// What paced cleaning did: present when pacing is on or has run.
    pub paced: Option<Paced>,
    /// Time spent in GC, seconds (paced steps, passes and their checkpoints).
    pub gc_time: f64,
    /// Sections kept free so that victims share checkpoints (`gc_policy=default`
    /// only).
    pub batch_sections: Option<u64>,
    /// What compression saved on the whole volume (`None` on a volume without the
    /// compression feature).
    pub compression: Option<CompressionSaved>,
}

/// What compression saved on the whole volume, counted over every compressed file's
/// clusters as written back (pages still in the page cache count once written). A
/// compressed cluster of `N` blocks whose data takes `n` blocks saves `N - n`; those
/// stay counted as used by `df` (reserved: the cluster's `COMPRESS_ADDR` and `NEW_ADDR`
/// slots, so a rewrite that compresses worse still fits, as Linux reserves them) until
/// `F2FS_IOC_RELEASE_COMPRESS_BLOCKS` gives them back to the free space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct CompressionSaved {
    /// Compressed files (`+c` regular files).
    pub files: u64,
    /// Clusters stored compressed.
    pub compressed_clusters: u64,
    /// Blocks those clusters would take stored plain.
    pub logical_blocks: u64,
    /// Blocks their compressed data takes.
    pub stored_blocks: u64,
    /// Blocks saved: `logical_blocks - stored_blocks`.
    pub saved_blocks: u64,
    /// Of the saved blocks, those still reserved (the files' `i_compr_blocks`): `df`
    /// counts them as used.
    pub reserved_blocks: u64,
    /// Of the saved blocks, those given back by `RELEASE_COMPRESS_BLOCKS`: free in `df`.
    pub released_blocks: u64,
    /// Files whose blocks are released (read-only until `RESERVE_COMPRESS_BLOCKS`).
    pub released_files: u64,
}

/// Fsyncs since open, by how they were made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Fsyncs {
    /// By roll-forward records (node blocks replayed at the next open).
    pub roll_forward: u64,
    /// By a checkpoint.
    pub by_checkpoint: u64,
}

/// What roll-forward recovery replayed at open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Recovered {
    /// Inodes recovered.
    pub inodes: u64,
    /// Fsync'd node blocks replayed.
    pub node_blocks: u64,
}

/// Device blocks written since open, by kind.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DeviceBlocks {
    /// All of them.
    pub total: u64,
    /// Data written back from the page cache.
    pub user_data: u64,
    /// Data moved by GC.
    pub gc_data: u64,
    /// Nodes written by the write path and checkpoints.
    pub user_node: u64,
    /// Nodes moved by GC.
    pub gc_node: u64,
    /// Checkpoint packs.
    pub checkpoint: u64,
    /// NAT blocks.
    pub nat: u64,
    /// SIT blocks.
    pub sit: u64,
    /// SSA blocks.
    pub ssa: u64,
    /// Superblock blocks.
    pub superblock: u64,
    /// Blocks written to each device (one entry on a single-device volume).
    pub per_device: Vec<u64>,
}

/// Garbage-collection passes since open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct GcCalls {
    /// Foreground passes (a writer waited).
    pub foreground: u64,
    /// Background passes.
    pub background: u64,
}

/// A count for data and for nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ByKind {
    /// Of data.
    pub data: u64,
    /// Of nodes.
    pub node: u64,
}

/// The writeback contexts of a mount.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Writeback {
    /// How many.
    pub contexts: u64,
    /// The policy that spreads files over them.
    pub policy: &'static str,
    /// Dirty pages each holds now.
    pub pages_by_context: Vec<u64>,
}

/// What paced cleaning did since open.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Paced {
    /// Sections above the foreground threshold at which paced cleaning starts.
    pub start_margin: u64,
    /// The spare sections that margin was worked out from (automatic margin only).
    pub spare_sections: Option<u64>,
    /// Paced steps that moved blocks.
    pub steps: u64,
    /// Blocks they moved.
    pub step_blocks: u64,
    /// Victims paced cleaning started.
    pub victims: u64,
    /// Victims it emptied.
    pub sections_freed: u64,
    /// Checkpoints it wrote.
    pub checkpoints: u64,
    /// Sleeps taken because front I/O was in flight.
    pub sleeps: u64,
    /// Time those sleeps asked for, seconds.
    pub slept: f64,
    /// Times a writer with no room finished the paced victim itself.
    pub writer_finishes: u64,
    /// Freed sections discarded (zones reset) between front writes.
    pub discards: u64,
    /// Freed sections still waiting for their discard.
    pub queued_discards: u64,
    /// The section being cleaned (`None` between victims).
    pub victim: Option<u64>,
}

impl Fs {
    /// The status of this file system (see [`Status`]).
    pub fn status(&self) -> Result<Status> {
        if !self.is_read_write() {
            return Ok(Status {
                mode: "read-only",
                writes: None,
            });
        }
        let a = self.accounting()?;
        let settings = self.settings();
        let policy = self.gc_policy()?;
        let rw = self.rw()?;
        let (rolled, checkpointed) = rw.fsync_track().counts();
        let (inodes, nodes) = rw.fsync_track().recovered();
        let d = &a.device;
        let g = &a.gc;
        let writeback = self.writeback_setup().map(|(policy, contexts)| Writeback {
            contexts: contexts as u64,
            policy,
            pages_by_context: self.writeback_stats().iter().map(|c| c.pages).collect(),
        });
        let pacing = self.gc_pacing()?;
        let p = self.pacing_stats()?;
        let paced = if pacing.pacing != crate::GcPacing::Off || p.steps > 0 {
            let auto = pacing.start_margin == crate::gc::pacer::AUTO_START_MARGIN;
            Some(Paced {
                start_margin: self.start_margin(pacing)? as u64,
                spare_sections: if auto {
                    Some(self.segments()?.spare_sections() as u64)
                } else {
                    None
                },
                steps: p.steps,
                step_blocks: p.step_blocks,
                victims: p.victims,
                sections_freed: p.sections_freed,
                checkpoints: p.checkpoints,
                sleeps: p.sleeps,
                slept: p.slept.as_secs_f64(),
                writer_finishes: p.writer_finishes,
                discards: p.discards,
                queued_discards: self.segments()?.queued_discards() as u64,
                victim: self.paced_victim()?.map(u64::from),
            })
        } else {
            None
        };
        let batched = crate::gc::policies::for_policy(policy).pass_loop() == crate::gc::policies::PassLoop::Batched;
        let batch_sections = if batched {
            Some(rw.gc().batch_extra as u64)
        } else {
            None
        };
        Ok(Status {
            mode: "read-write",
            writes: Some(WriteStatus {
                stopped: rw.failure(),
                gc_policy: policy.to_string(),
                background_gc: settings.background_gc.name(),
                active_logs: settings.active_logs.count(),
                fsync_mode: settings.fsync_mode.name(),
                fsyncs: Fsyncs {
                    roll_forward: rolled,
                    by_checkpoint: checkpointed,
                },
                recovered_at_open: Recovered {
                    inodes,
                    node_blocks: nodes,
                },
                utilization: a.utilization(),
                block_size: self.sbc.sb.geometry().block_size() as u64,
                user_blocks_written: a.user_blocks,
                waf: a.waf(),
                device_blocks: DeviceBlocks {
                    total: d.total(),
                    user_data: d.user_data,
                    gc_data: d.gc_data,
                    user_node: d.user_node,
                    gc_node: d.gc_node,
                    checkpoint: d.checkpoint,
                    nat: d.nat,
                    sit: d.sit,
                    ssa: d.ssa,
                    superblock: d.superblock,
                    per_device: d.per_device.clone(),
                },
                gc_calls: GcCalls {
                    foreground: g.fg_calls,
                    background: g.bg_calls,
                },
                victims: ByKind {
                    data: g.data_victims,
                    node: g.node_victims,
                },
                sections_freed: g.sections_freed,
                blocks_moved: ByKind {
                    data: g.data_blocks_moved,
                    node: g.node_blocks_moved,
                },
                gc_checkpoints: g.checkpoints,
                writeback,
                gc_pacing: pacing.pacing.name(),
                gc_latency_target_us: (pacing.pacing == crate::GcPacing::Adaptive)
                    .then_some(pacing.latency_target.as_micros() as u64),
                paced,
                gc_time: p.gc_time.as_secs_f64(),
                batch_sections,
                compression: self.compression_saved()?,
            }),
        })
    }

    /// What compression saved on the whole volume (see [`CompressionSaved`]): every
    /// inode the NAT names, each compressed file's clusters counted. `None` on a
    /// volume without the compression feature.
    pub fn compression_saved(&self) -> Result<Option<CompressionSaved>> {
        if !self.superblock().has(uf2fs_format::superblock::FEATURE_COMPRESSION) {
            return Ok(None);
        }
        let mut out = CompressionSaved::default();
        for ino in self.nodes.inode_nids(self.dev.as_ref())? {
            let i = match self.inode(ino) {
                Ok(i) => i,
                // Unlinked since the NAT was read.
                Err(crate::Error::NotFound(_)) => continue,
                Err(e) => return Err(e),
            };
            if !i.inode.is_compressed() || i.kind()? != crate::FileKind::File {
                continue;
            }
            let released = i.inode.has_inline(uf2fs_format::node::F2FS_COMPRESS_RELEASED);
            let end = i.inode.size.div_ceil(i.inode.geometry.block_size() as u64);
            let Some(c) = self.mapper(&i).cluster_census(end)? else {
                continue;
            };
            let logical = c.compressed_clusters * c.cluster_blocks as u64;
            let saved = logical.saturating_sub(c.compressed_blocks);
            out.files += 1;
            out.compressed_clusters += c.compressed_clusters;
            out.logical_blocks += logical;
            out.stored_blocks += c.compressed_blocks;
            out.saved_blocks += saved;
            let reserved = c.saved_blocks.min(saved);
            out.reserved_blocks += reserved;
            out.released_blocks += saved - reserved;
            out.released_files += u64::from(released);
        }
        Ok(Some(out))
    }

    /// The status report of this file system: [`Fs::status`] as `key: value` lines.
    pub fn status_report(&self) -> Result<String> {
        Ok(self.status()?.report())
    }
}

impl Status {
    /// The status as `key: value` lines (what `uf2fs status` prints).
    pub fn report(&self) -> String {
        let mut s = String::new();
        let Some(w) = &self.writes else {
            s.push_str("mode:                read-only (nothing is written)\n");
            return s;
        };
        let gib = |blocks: u64| blocks as f64 * w.block_size as f64 / (1u64 << 30) as f64;
        let _ = writeln!(s, "mode:                {}", self.mode);
        if let Some(why) = &w.stopped {
            let _ = writeln!(s, "stopped:             {why}");
        }
        let _ = writeln!(s, "gc policy:           {}", w.gc_policy);
        let _ = writeln!(s, "background gc:       {}", w.background_gc);
        let _ = writeln!(s, "active logs:         {}", w.active_logs);
        let _ = writeln!(
            s,
            "fsyncs:              {} roll-forward, {} by checkpoint (fsync_mode={})",
            w.fsyncs.roll_forward, w.fsyncs.by_checkpoint, w.fsync_mode
        );
        let _ = writeln!(
            s,
            "recovered at open:   {} inodes from {} fsync'd node blocks",
            w.recovered_at_open.inodes, w.recovered_at_open.node_blocks
        );
        let _ = writeln!(s, "utilization:         {:.4}", w.utilization);
        let _ = writeln!(
            s,
            "user blocks written: {} ({:.3} GiB)",
            w.user_blocks_written,
            gib(w.user_blocks_written)
        );
        // WAF before the device blocks: the lines indented under them are their kinds.
        let _ = writeln!(s, "waf:                 {:.3}", w.waf);
        let d = &w.device_blocks;
        let _ = writeln!(s, "device blocks:       {} ({:.3} GiB)", d.total, gib(d.total));
        let _ = writeln!(s, "  user data:         {}", d.user_data);
        let _ = writeln!(s, "  gc data:           {}", d.gc_data);
        let _ = writeln!(s, "  user node:         {}", d.user_node);
        let _ = writeln!(s, "  gc node:           {}", d.gc_node);
        let _ = writeln!(s, "  checkpoint:        {}", d.checkpoint);
        let _ = writeln!(s, "  nat:               {}", d.nat);
        let _ = writeln!(s, "  sit:               {}", d.sit);
        let _ = writeln!(s, "  ssa:               {}", d.ssa);
        let _ = writeln!(s, "  superblock:        {}", d.superblock);
        if d.per_device.len() > 1 {
            for (i, n) in d.per_device.iter().enumerate() {
                let _ = writeln!(s, "  device {i}:          {n}");
            }
        }
        let _ = writeln!(
            s,
            "gc calls:            {} foreground, {} background",
            w.gc_calls.foreground, w.gc_calls.background
        );
        let _ = writeln!(
            s,
            "victims:             {} data, {} node",
            w.victims.data, w.victims.node
        );
        let _ = writeln!(s, "sections freed:      {}", w.sections_freed);
        let _ = writeln!(
            s,
            "blocks moved:        {} data, {} node",
            w.blocks_moved.data, w.blocks_moved.node
        );
        let _ = writeln!(s, "gc checkpoints:      {}", w.gc_checkpoints);
        if let Some(wb) = &w.writeback {
            let pages: Vec<String> = wb.pages_by_context.iter().map(u64::to_string).collect();
            let _ = writeln!(s, "writeback:           {} contexts, policy {}", wb.contexts, wb.policy);
            let _ = writeln!(s, "  pages by context:  {}", pages.join(" "));
        }
        match w.gc_latency_target_us {
            Some(us) => {
                let _ = writeln!(s, "gc pacing:           {} (target {us} us)", w.gc_pacing);
            }
            None => {
                let _ = writeln!(s, "gc pacing:           {}", w.gc_pacing);
            }
        }
        if let Some(p) = &w.paced {
            let _ = writeln!(
                s,
                "paced start margin:  {} sections above the foreground threshold{}",
                p.start_margin,
                match p.spare_sections {
                    Some(spare) => format!(" (of {spare} spare)"),
                    None => String::new(),
                }
            );
            let _ = writeln!(
                s,
                "paced steps:         {} ({} blocks), {} victims, {} freed, {} checkpoints",
                p.steps, p.step_blocks, p.victims, p.sections_freed, p.checkpoints
            );
            let _ = writeln!(s, "paced sleeps:        {} ({:.3} s slept)", p.sleeps, p.slept);
            let _ = writeln!(s, "writer finishes:     {}", p.writer_finishes);
            let _ = writeln!(
                s,
                "paced discards:      {} (zone resets of freed sections, between front writes), {} queued",
                p.discards, p.queued_discards
            );
            let _ = match p.victim {
                Some(secno) => writeln!(s, "paced victim:        section {secno}"),
                None => writeln!(s, "paced victim:        none"),
            };
        }
        let _ = writeln!(s, "gc time:             {:.3} s", w.gc_time);
        if let Some(kept) = w.batch_sections {
            let _ = writeln!(s, "batch sections:      {kept} kept free for shared checkpoints");
        }
        if let Some(c) = &w.compression {
            let _ = writeln!(
                s,
                "compressed files:    {} ({} clusters compressed, {} released)",
                c.files, c.compressed_clusters, c.released_files
            );
            let _ = writeln!(
                s,
                "compression saved:   {} of {} blocks: {} reserved (used in df), {} released",
                c.saved_blocks, c.logical_blocks, c.reserved_blocks, c.released_blocks
            );
        }
        s
    }
}
