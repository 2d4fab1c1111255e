//! The `uf2fs info` report.

use crate::checkpoint::{CheckpointState, SuperblockChoice};
use crate::segment::SegmentUsage;
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
