//! The report `uf2fs status MOUNTPOINT` prints: what a mounted file system wrote and
//! what its garbage collection did, one `key: value` per line; under the default policy
//! also the sections it keeps free so that victims share checkpoints.

use crate::{Fs, Result};
use std::fmt::Write;

impl Fs {
    /// The status report of this file system (see the module notes). A read-only file
    /// system reports only that it writes nothing.
    pub fn status_report(&self) -> Result<String> {
        let mut s = String::new();
        if !self.is_read_write() {
            s.push_str("mode:                read-only (nothing is written)\n");
            return Ok(s);
        }
        let a = self.accounting()?;
        let settings = self.settings();
        let policy = self.gc_policy()?;
        let d = &a.device;
        let gib = |blocks: u64| blocks as f64 * 4096.0 / (1u64 << 30) as f64;
        let _ = writeln!(s, "mode:                read-write");
        let _ = writeln!(s, "gc policy:           {policy}");
        let _ = writeln!(s, "background gc:       {}", settings.background_gc.name());
        let _ = writeln!(s, "active logs:         {}", settings.active_logs.count());
        let rw = self.rw()?;
        let (rolled, checkpointed) = rw.fsync_track().counts();
        let _ = writeln!(
            s,
            "fsyncs:              {rolled} roll-forward, {checkpointed} by checkpoint (fsync_mode={})",
            settings.fsync_mode.name()
        );
        let (inodes, nodes) = rw.fsync_track().recovered();
        let _ = writeln!(
            s,
            "recovered at open:   {inodes} inodes from {nodes} fsync'd node blocks"
        );
        let _ = writeln!(s, "utilization:         {:.4}", a.utilization());
        let _ = writeln!(
            s,
            "user blocks written: {} ({:.3} GiB)",
            a.user_blocks,
            gib(a.user_blocks)
        );
        // WAF before the device blocks: the lines indented under them are their kinds.
        let _ = writeln!(s, "waf:                 {:.3}", a.waf());
        let _ = writeln!(s, "device blocks:       {} ({:.3} GiB)", d.total(), gib(d.total()));
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
        let g = &a.gc;
        let _ = writeln!(
            s,
            "gc calls:            {} foreground, {} background",
            g.fg_calls, g.bg_calls
        );
        let _ = writeln!(
            s,
            "victims:             {} data, {} node",
            g.data_victims, g.node_victims
        );
        let _ = writeln!(s, "sections freed:      {}", g.sections_freed);
        let _ = writeln!(
            s,
            "blocks moved:        {} data, {} node",
            g.data_blocks_moved, g.node_blocks_moved
        );
        let _ = writeln!(s, "gc checkpoints:      {}", g.checkpoints);
        if let Some((policy, contexts)) = self.writeback_setup() {
            let stats = self.writeback_stats();
            let pages: Vec<String> = stats.iter().map(|c| c.pages.to_string()).collect();
            let _ = writeln!(s, "writeback:           {contexts} contexts, policy {policy}");
            let _ = writeln!(s, "  pages by context:  {}", pages.join(" "));
        }
        let pacing = self.gc_pacing()?;
        let p = self.pacing_stats()?;
        match pacing.pacing {
            crate::GcPacing::Adaptive => {
                let _ = writeln!(
                    s,
                    "gc pacing:           adaptive (target {} us)",
                    pacing.latency_target.as_micros()
                );
            }
            other => {
                let _ = writeln!(s, "gc pacing:           {other}");
            }
        }
        if pacing.pacing != crate::GcPacing::Off || p.steps > 0 {
            let _ = writeln!(
                s,
                "paced start margin:  {} sections above the foreground threshold{}",
                self.start_margin(pacing)?,
                if pacing.start_margin == crate::gc::pacer::AUTO_START_MARGIN {
                    format!(" (of {} spare)", self.segments()?.spare_sections())
                } else {
                    String::new()
                }
            );
            let _ = writeln!(
                s,
                "paced steps:         {} ({} blocks), {} victims, {} freed, {} checkpoints",
                p.steps, p.step_blocks, p.victims, p.sections_freed, p.checkpoints
            );
            let _ = writeln!(
                s,
                "paced sleeps:        {} ({:.3} s slept)",
                p.sleeps,
                p.slept.as_secs_f64()
            );
            let _ = writeln!(s, "writer finishes:     {}", p.writer_finishes);
            let _ = writeln!(
                s,
                "paced discards:      {} (zone resets of freed sections, between front writes), {} queued",
                p.discards,
                self.segments()?.queued_discards()
            );
            let _ = match self.paced_victim()? {
                Some(secno) => writeln!(s, "paced victim:        section {secno}"),
                None => writeln!(s, "paced victim:        none"),
            };
        }
        let _ = writeln!(s, "gc time:             {:.3} s", p.gc_time.as_secs_f64());
        if crate::gc::policies::for_policy(policy).pass_loop() == crate::gc::policies::PassLoop::Batched {
            let kept = self.rw()?.gc().batch_extra;
            let _ = writeln!(s, "batch sections:      {kept} kept free for shared checkpoints");
        }
        Ok(s)
    }
}
