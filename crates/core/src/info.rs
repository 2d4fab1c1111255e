//! The `uf2fs info` report.

use crate::checkpoint::{CheckpointState, SuperblockChoice};
use crate::segment::SegmentUsage;
use crate::{Fs, Result, StatFs};
use std::fmt::Write;
use std::path::PathBuf;

fn uuid(u: &[u8; 16]) -> String {
    let h: Vec<String> = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        h[..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..].concat()
    )
}

fn mib(blocks: u64, block_size: usize) -> String {
    format!("{:.1} MiB", blocks as f64 * block_size as f64 / (1024.0 * 1024.0))
}

/// Builds the report: one `key: value` line each, grouped by subject.
pub fn report(paths: &[PathBuf], sbc: &SuperblockChoice, cps: &CheckpointState, usage: &SegmentUsage) -> String {
    let sb = &sbc.sb;
    let cp = &cps.cp;
    let mut s = String::new();
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let _ = writeln!(s, "image:              {}", names.join(" + "));
    let _ = writeln!(
        s,
        "volume name:        {}",
        if sb.volume_name.is_empty() {
            "(none)"
        } else {
            &sb.volume_name
        }
    );
    let _ = writeln!(s, "uuid:               {}", uuid(&sb.uuid));
    let _ = writeln!(s, "format version:     {}.{}", sb.major_ver, sb.minor_ver);
    let _ = writeln!(s, "made by:            {}", sb.init_version.trim());
    let _ = writeln!(s, "last written by:    {}", sb.version.trim());
    let feats = sb.feature_names();
    let _ = writeln!(
        s,
        "features:           {}",
        if feats.is_empty() {
            "(none)".to_string()
        } else {
            feats.join(", ")
        }
    );
    let other = sbc
        .other_problem
        .as_deref()
        .map(|p| format!(" (other copy bad: {p})"))
        .unwrap_or_default();
    let _ = writeln!(s, "superblock copy:    {}{other}", sbc.copy);
    let bs = sb.block_size();
    let _ = writeln!(
        s,
        "block size:         {bs} (sector size {})",
        1u32 << sb.log_sectorsize
    );
    let _ = writeln!(
        s,
        "blocks:             {} ({})",
        sb.block_count,
        mib(sb.block_count, bs)
    );
    let _ = writeln!(
        s,
        "segment:            {} blocks ({} MiB)",
        sb.blocks_per_seg(),
        (sb.blocks_per_seg() as usize * bs) >> 20
    );
    let _ = writeln!(
        s,
        "section:            {} segment(s); zone: {} section(s)",
        sb.segs_per_sec, sb.secs_per_zone
    );
    let _ = writeln!(
        s,
        "segments:           {} (main area {}, {} sections)",
        sb.segment_count, sb.segment_count_main, sb.section_count
    );
    for (name, addr, segs) in [
        ("checkpoint area", sb.cp_blkaddr, sb.segment_count_ckpt),
        ("SIT area", sb.sit_blkaddr, sb.segment_count_sit),
        ("NAT area", sb.nat_blkaddr, sb.segment_count_nat),
        ("SSA area", sb.ssa_blkaddr, sb.segment_count_ssa),
        ("main area", sb.main_blkaddr, sb.segment_count_main),
    ] {
        let _ = writeln!(s, "{:<20}block {addr:#x}, {segs} segment(s)", format!("{name}:"));
    }
    for (i, d) in sb.devices.iter().enumerate() {
        let _ = writeln!(s, "device {i}:           {} ({} segments)", d.path, d.total_segments);
    }
    let _ = writeln!(s, "root inode:         {}", sb.root_ino);
    let _ = writeln!(
        s,
        "checkpoint:         pack {} at block {:#x}, version {}",
        cps.pack + 1,
        cps.pack_blkaddr,
        cp.checkpoint_ver
    );
    let _ = writeln!(s, "checkpoint flags:   {}", cp.flag_names().join(", "));
    let _ = writeln!(s, "other pack:         {}", cps.other);
    let used = if cp.user_block_count > 0 {
        100.0 * cp.valid_block_count as f64 / cp.user_block_count as f64
    } else {
        0.0
    };
    let _ = writeln!(
        s,
        "user blocks:        {} ({})",
        cp.user_block_count,
        mib(cp.user_block_count, bs)
    );
    let _ = writeln!(s, "valid blocks:       {} ({used:.1}% used)", cp.valid_block_count);
    let _ = writeln!(s, "free segments:      {}", cp.free_segment_count);
    let (f, full, part) = (usage.free, usage.full, usage.partial);
    let _ = writeln!(s, "segments (SIT):     {f} free, {full} full, {part} partly valid");
    if usage.valid_blocks != cp.valid_block_count {
        let (a, b) = (usage.valid_blocks, cp.valid_block_count);
        let _ = writeln!(
            s,
            "warning:            SIT counts {a} valid blocks, the checkpoint {b}: run fsck.f2fs"
        );
    }
    let _ = writeln!(s, "reserved segments:  {}", cp.rsvd_segment_count);
    let _ = writeln!(s, "overprovisioned:    {} segments", cp.overprov_segment_count);
    let _ = writeln!(s, "valid nodes:        {}", cp.valid_node_count);
    let _ = writeln!(s, "valid inodes:       {}", cp.valid_inode_count);
    let _ = writeln!(s, "orphan inodes:      {}", cps.orphans.len());
    let _ = writeln!(
        s,
        "journal entries:    NAT {}, SIT {}",
        cps.nat_journal.len(),
        cps.sit_journal.len()
    );
    s
}

/// Summary of an image for `uf2fs info`: its `Display` is the human-readable report.
#[derive(Debug, Clone)]
pub struct FsInfo {
    /// The report, one `key: value` per line.
    pub text: String,
}

impl std::fmt::Display for FsInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl Fs {
    /// Geometry, features, active checkpoint and counts.
    pub fn info(&self) -> Result<FsInfo> {
        if let Some(rw) = &self.rw {
            let writer = rw.cp_shared();
            let usage = rw.segs().usage();
            return Ok(FsInfo {
                text: crate::info::report(&self.paths, &self.sbc, writer.last(), &usage),
            });
        }
        let usage = crate::segment::segment_usage(self.dev.as_ref(), &self.sbc.sb, &self.cps)?;
        let mut text = crate::info::report(&self.paths, &self.sbc, &self.cps, &usage);
        if self.replayed {
            text.push_str(
                "roll-forward:       fsync'd data after the last checkpoint, replayed in memory (the image is \
                 unchanged; a read-write mount replays it on the image)\n",
            );
        }
        Ok(FsInfo { text })
    }

    /// File system statistics: of the opened checkpoint when read-only, of the live
    /// state (blocks reserved for pending writes counted as used) when read-write.
    pub fn statfs(&self) -> Result<StatFs> {
        let cp = &self.cps.cp;
        let blocks = cp.user_block_count;
        let (free, nodes) = match &self.rw {
            Some(rw) => {
                // The node counts first, then `segs` (a `NodeManager` lock is never
                // taken under the `SegmentManager`: crate::lockrank).
                let nodes = self.nodes.counts().valid_node_count;
                (rw.segs().free_user_blocks(), nodes)
            }
            None => (blocks.saturating_sub(cp.valid_block_count), cp.valid_node_count),
        };
        let files = self.nodes.max_nid().saturating_sub(3);
        Ok(StatFs {
            block_size: self.sbc.sb.block_size() as u32,
            blocks,
            blocks_free: free,
            blocks_avail: free,
            files,
            files_free: files.saturating_sub(nodes as u64),
            name_max: uf2fs_format::consts::F2FS_NAME_LEN as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::mkfs::{mkfs, MkfsOptions};
    use crate::Fs;

    fn fresh(dir: &std::path::Path) -> Fs {
        let img = dir.join("statfs.img");
        let opts = MkfsOptions {
            size_bytes: Some(128 << 20),
            ..MkfsOptions::default()
        };
        mkfs(&img, &opts).unwrap();
        Fs::open_rw(&img, &[]).unwrap()
    }

    /// statfs of a read-write volume reads the node counts and the free blocks in the
    /// lock order (debug builds panic otherwise), and both follow a create.
    #[test]
    fn statfs_of_a_read_write_volume_follows_a_create() {
        let tmp = tempfile::tempdir().unwrap();
        let fs = fresh(tmp.path());
        let before = fs.statfs().unwrap();
        let ino = fs.create(fs.root(), b"f", 0o644, 0, 0).unwrap().ino;
        fs.write(ino, 0, &[7; 3 * 4096]).unwrap();
        fs.write_checkpoint().unwrap();
        let after = fs.statfs().unwrap();
        assert_eq!(after.files, before.files);
        assert_eq!(after.files_free + 1, before.files_free, "one inode more in use");
        assert!(after.blocks_free < before.blocks_free, "{after:?} against {before:?}");
    }

    /// The node counts are a `NodeManager` lock (rank 5): reading them while holding the
    /// `SegmentManager` (rank 6) is the inversion the checker reports.
    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "taking NodeManager's counts with Segments")]
    fn node_counts_under_the_segment_manager_panic() {
        let tmp = tempfile::tempdir().unwrap();
        let fs = fresh(tmp.path());
        let _segs = fs.segments().unwrap();
        let _ = fs.nodes().counts();
    }
}
