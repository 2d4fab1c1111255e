//! Zoned volumes (`uf2fs mkfs --zoned`, the `blkzoned` feature): opened read-write,
//! every main-area write goes through the zone emulator, which refuses any write off
//! a zone's write pointer; freed sections reset their zones. A nearly full volume
//! overwritten twice its size (so GC runs), unmounted, judged by `fsck.f2fs -f`,
//! reopened (write pointers rebuilt from the segment table) and written again.

#[path = "filedata/support.rs"]
#[allow(dead_code)]
mod support;

use support::{fsck_clean, MIB};
use uf2fs_core::mkfs::{mkfs, parse_features, MkfsOptions};
use uf2fs_core::{Fs, GcPolicy, OpenOptions};

const B: u64 = 4096;

fn block(index: u64, ver: u32) -> Vec<u8> {
    let mut b = vec![(index as u8) ^ (ver as u8); B as usize];
    b[..8].copy_from_slice(&index.to_le_bytes());
    b[8..12].copy_from_slice(&ver.to_le_bytes());
    b
}

fn overwrite(fs: &Fs, ino: u32, versions: &mut [u32], writes: u64, seed: &mut u64) {
    for n in 0..writes {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        let i = *seed % versions.len() as u64;
        versions[i as usize] += 1;
        let w = fs.write(ino, i * B, &block(i, versions[i as usize]));
        assert_eq!(w.unwrap_or_else(|e| panic!("write {n}: {e}")), B as usize);
    }
}

fn check(fs: &Fs, ino: u32, versions: &[u32], what: &str) {
    let mut buf = vec![0u8; B as usize];
    for (i, &v) in versions.iter().enumerate() {
        fs.read(ino, i as u64 * B, &mut buf).unwrap();
        assert!(buf == block(i as u64, v), "{what}: block {i} (version {v})");
    }
}

/// Formats `img` as a zoned volume of `bytes` with sections of `segs_per_sec` segments.
fn mkfs_zoned(img: &std::path::Path, bytes: u64, segs_per_sec: u32) {
    let opts = MkfsOptions {
        size_bytes: Some(bytes),
        segs_per_sec,
        features: parse_features("blkzoned").unwrap(),
        ..MkfsOptions::default()
    };
    mkfs(img, &opts).unwrap();
}

#[test]
fn zoned_volumes_stay_sequential_through_gc_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    for policy in [GcPolicy::Greedy, GcPolicy::Default] {
        let img = dir.path().join("z.img");
        let _ = std::fs::remove_file(&img);
        mkfs_zoned(&img, 512 * MIB, 4);
        fsck_clean(&img, "mkfs --zoned");
        let fs = Fs::open_with(&img, &[], OpenOptions { read_write: true }).unwrap();
        fs.set_gc_policy(policy).unwrap();
        let ino = fs.create(fs.root(), b"f", 0o644, 0, 0).unwrap().ino;
        let blocks = fs.statfs().unwrap().blocks_avail * 85 / 100;
        let mut versions = vec![0u32; blocks as usize];
        for i in 0..blocks {
            fs.write(ino, i * B, &block(i, 0)).unwrap();
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        overwrite(&fs, ino, &mut versions, blocks * 2, &mut seed);
        let stats = fs.gc_stats().unwrap();
        assert!(stats.sections_freed > 0, "{policy}: no GC: {stats:?}");
        fs.unmount().unwrap();
        fsck_clean(&img, &format!("{policy}: zoned overwrites"));
        // Reopened: write pointers come from the segment table; writing goes on.
        let fs = Fs::open_with(&img, &[], OpenOptions { read_write: true }).unwrap();
        check(&fs, ino, &versions, "after reopen");
        overwrite(&fs, ino, &mut versions, blocks / 2, &mut seed);
        fs.unmount().unwrap();
        fsck_clean(&img, &format!("{policy}: zoned overwrites after reopen"));
        check(&Fs::open(&img, &[]).unwrap(), ino, &versions, "read-only at the end");
    }
}

/// The queued zone resets in a status report ("paced discards: N (...), M queued").
fn queued_discards(fs: &Fs) -> u64 {
    let report = fs.status_report().unwrap();
    let line = report
        .lines()
        .find(|l| l.starts_with("paced discards:"))
        .unwrap_or_else(|| panic!("no paced discards line in\n{report}"));
    let count = line.rsplit(", ").next().and_then(|t| t.strip_suffix(" queued"));
    count.and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{line}"))
}

/// Under a pacer, checkpoints leave the zone resets of the sections they free queued
/// for the cleaner. A power cut loses the queue: the sections are free in the
/// checkpoint but their zones were never reset. The next open must take the zones as
/// reset (as Linux resets the zones of sections with no valid block at mount), so
/// that writing into those sections goes on, and nothing is lost.
#[test]
fn zone_resets_queued_at_a_power_cut_do_not_block_the_sections_after_it() {
    use uf2fs_core::gc::{GcPacing, PacingSettings};
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("z.img");
    mkfs_zoned(&img, 256 * MIB, 2);
    let fs = Fs::open_with(&img, &[], OpenOptions { read_write: true }).unwrap();
    fs.set_gc_pacing(PacingSettings {
        pacing: GcPacing::Adaptive,
        ..PacingSettings::default()
    })
    .unwrap();
    let ino = fs.create(fs.root(), b"f", 0o644, 0, 0).unwrap().ino;
    let blocks = fs.statfs().unwrap().blocks_avail * 85 / 100;
    let mut versions = vec![0u32; blocks as usize];
    for i in 0..blocks {
        fs.write(ino, i * B, &block(i, 0)).unwrap();
    }
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    // Writers clean for themselves (no paced cleaner thread runs here), and the
    // checkpoints that free their victims queue the resets.
    overwrite(&fs, ino, &mut versions, blocks, &mut seed);
    fs.write_checkpoint().unwrap();
    let queued = queued_discards(&fs);
    assert!(queued > 0, "no zone reset queued: {}", fs.status_report().unwrap());
    assert!(fs.gc_stats().unwrap().sections_freed > 0);
    drop(fs); // a power cut: no unmount, the queue is gone
    fsck_clean(&img, "power cut with queued zone resets");

    let fs = Fs::open_with(&img, &[], OpenOptions { read_write: true }).unwrap();
    check(&fs, ino, &versions, "after the power cut");
    // Twice the free space over again: every freed section is written into.
    overwrite(&fs, ino, &mut versions, blocks, &mut seed);
    fs.unmount().unwrap();
    fsck_clean(&img, "writes after the power cut");
    check(&Fs::open(&img, &[]).unwrap(), ino, &versions, "read-only at the end");
}

/// Under a pacer a log opening a section takes one whose zone is already reset before
/// one whose reset is still queued: entering a queued section resets its zone inside
/// the write that opens it (6.1 ms for an 8 MiB zone in the latency lab's device
/// model), where the paced cleaner would reset it in a gap between front writes.
#[test]
fn logs_open_reset_sections_before_ones_whose_reset_is_queued() {
    use uf2fs_core::gc::{GcPacing, PacingSettings};
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("z.img");
    mkfs_zoned(&img, 1024 * MIB, 2);
    let fs = Fs::open_with(&img, &[], OpenOptions { read_write: true }).unwrap();
    let pacing = |p| {
        fs.set_gc_pacing(PacingSettings {
            pacing: p,
            ..PacingSettings::default()
        })
        .unwrap()
    };
    pacing(GcPacing::Adaptive);
    let section_blocks = 2 * 512;
    let avail = fs.statfs().unwrap().blocks_avail;
    let write_file = |name: &[u8], blocks: u64| {
        let ino = fs.create(fs.root(), name, 0o644, 0, 0).unwrap().ino;
        for first in (0..blocks).step_by(64) {
            let chunk: Vec<u8> = (first..blocks.min(first + 64)).flat_map(|i| block(i, 1)).collect();
            assert_eq!(fs.write(ino, first * B, &chunk).unwrap(), chunk.len());
        }
        ino
    };
    // a, b and c in turn from the start of the main area; a free tail after c.
    let a = write_file(b"a", avail / 4);
    let b = write_file(b"b", avail / 4);
    write_file(b"c", avail * 2 / 5);
    fs.write_checkpoint().unwrap();
    let (tail, _) = fs.free_sections_now().unwrap();
    // b's sections freed with their zones reset at once (pacing off) ...
    pacing(GcPacing::Off);
    fs.truncate(b, 0).unwrap();
    fs.write_checkpoint().unwrap();
    pacing(GcPacing::Adaptive);
    assert_eq!(queued_discards(&fs), 0);
    // ... a's freed with their resets queued.
    fs.truncate(a, 0).unwrap();
    fs.write_checkpoint().unwrap();
    let queued = queued_discards(&fs);
    assert!(queued > 2, "{}", fs.status_report().unwrap());
    // The tail, then two sections more: from b's sections, not a's.
    let d = write_file(b"d", (tail as u64 + 2) * section_blocks);
    assert_eq!(
        queued_discards(&fs),
        queued,
        "a log entered a section whose reset was queued"
    );
    fs.unmount().unwrap();
    fsck_clean(&img, "sections opened around queued zone resets");
    let fs = Fs::open(&img, &[]).unwrap();
    let mut buf = vec![0u8; B as usize];
    let last = (tail as u64 + 2) * section_blocks - 1;
    for i in [0, last / 2, last] {
        assert_eq!(fs.read(d, i * B, &mut buf).unwrap(), B as usize);
        assert_eq!(buf, block(i, 1), "block {i} of d");
    }
}
