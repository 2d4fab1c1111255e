//! Garbage collection judged from outside: volumes filled close to their user capacity,
//! then overwritten several times their size (random 4 KiB overwrites, files deleted
//! and recreated, directories churned), so that writes only go on because foreground
//! GC empties victim sections. Every policy, one and four segments per section. After
//! each run: unmount, `fsck.f2fs -f` clean, reopen and every byte compared with the
//! model; the GC counters must show sections really cleaned.

#[path = "common/cuts.rs"]
mod cuts;
#[path = "filedata/support.rs"]
#[allow(dead_code)]
mod support;

use std::collections::BTreeMap;
use std::path::Path;
use support::{fsck_clean, MIB};
use uf2fs_core::mkfs::{mkfs, MkfsOptions};
use uf2fs_core::{Fs, GcKind, GcPolicy, Ino, KernelGcLoop, OpenOptions};

const B: usize = 4096;

/// xorshift64*: deterministic and good enough for offsets.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Contents of block `index` at version `ver`: distinct per block and version.
fn block(index: u64, ver: u32) -> Vec<u8> {
    let mut b = vec![0u8; B];
    for (i, chunk) in b.chunks_mut(8).enumerate() {
        let v = (index << 20 | ver as u64) ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        chunk.copy_from_slice(&v.to_le_bytes());
    }
    b
}

fn make_image(dir: &Path, name: &str, size: u64, segs_per_sec: u32) -> std::path::PathBuf {
    let img = dir.join(name);
    let opts = MkfsOptions {
        size_bytes: Some(size),
        segs_per_sec,
        ..MkfsOptions::default()
    };
    mkfs(&img, &opts).unwrap();
    img
}

fn open_rw(img: &Path, policy: GcPolicy) -> Fs {
    let fs = Fs::open_with(img, &[], OpenOptions { read_write: true }).unwrap();
    fs.set_gc_policy(policy).unwrap();
    fs
}

/// Blocks users may still take (statfs's available blocks).
fn free_blocks(fs: &Fs) -> u64 {
    fs.statfs().unwrap().blocks_avail
}

/// Checks every block of the file at `ino` against `versions`.
fn check_file(fs: &Fs, ino: Ino, versions: &[u32], what: &str) {
    let mut buf = vec![0u8; B];
    for (i, &v) in versions.iter().enumerate() {
        let n = fs.read(ino, i as u64 * B as u64, &mut buf).unwrap();
        assert_eq!(n, B, "{what}: short read at block {i}");
        assert!(
            buf == block(i as u64, v),
            "{what}: block {i} differs (version {v} expected)"
        );
    }
}

/// One file filling `fill` of the free space, then random 4 KiB overwrites totalling
/// `passes` times the volume's user blocks, a checkpoint every `cp_every` writes.
fn random_overwrites(img: &Path, policy: GcPolicy, fill: f64, passes: f64, cp_every: u64) {
    let fs = open_rw(img, policy);
    let root = fs.root();
    let ino = fs.create(root, b"sustain", 0o644, 0, 0).unwrap().ino;
    let blocks = (free_blocks(&fs) as f64 * fill) as u64;
    let mut versions = vec![0u32; blocks as usize];
    let mut chunk = Vec::with_capacity(64 * B);
    for first in (0..blocks).step_by(64) {
        chunk.clear();
        for i in first..(first + 64).min(blocks) {
            chunk.extend_from_slice(&block(i, 0));
        }
        assert_eq!(fs.write(ino, first * B as u64, &chunk).unwrap(), chunk.len());
    }
    fs.write_checkpoint().unwrap();
    let user = fs.statfs().unwrap().blocks;
    let writes = (user as f64 * passes) as u64;
    let mut rng = Rng(0x5eed ^ blocks);
    for n in 0..writes {
        let i = rng.below(blocks);
        versions[i as usize] += 1;
        let w = fs.write(ino, i * B as u64, &block(i, versions[i as usize]));
        let w = w.unwrap_or_else(|e| {
            panic!(
                "{policy}: write {n} of {writes}: {e}; {:?}; {}",
                fs.gc_stats(),
                fs.info().unwrap()
            )
        });
        assert_eq!(w, B);
        if (n + 1) % cp_every == 0 {
            fs.write_checkpoint().unwrap();
        }
    }
    let stats = fs.gc_stats().unwrap();
    assert!(
        stats.fg_calls > 0 && stats.sections_freed > 0,
        "{policy}: no GC ran: {stats:?}"
    );
    assert!(stats.data_blocks_moved > 0, "{policy}: {stats:?}");
    check_file(&fs, ino, &versions, &format!("{policy} before unmount"));
    fs.unmount().unwrap();
    fsck_clean(img, &format!("{policy}: random overwrites"));
    let fs = Fs::open(img, &[]).unwrap();
    check_file(&fs, ino, &versions, &format!("{policy} after reopen"));
}

#[test]
fn greedy_gc_sustains_random_overwrites_of_a_nearly_full_volume() {
    let dir = tempfile::tempdir().unwrap();
    let img = make_image(dir.path(), "g.img", 96 * MIB, 1);
    random_overwrites(&img, GcPolicy::Greedy, 0.85, 3.0, 4096);
}

#[test]
fn every_policy_sustains_overwrites_with_large_sections() {
    let dir = tempfile::tempdir().unwrap();
    for policy in [
        "greedy",
        "cost-benefit",
        "prefer-data-v1",
        "prefer-data-v2",
        "weighted:1:512",
        "default",
    ] {
        let policy: GcPolicy = policy.parse().unwrap();
        let img = make_image(dir.path(), "p.img", 512 * MIB, 4);
        random_overwrites(&img, policy, 0.8, 1.5, 3000);
        std::fs::remove_file(&img).unwrap();
    }
}

/// Files of mixed sizes created, overwritten, truncated and deleted in several
/// directories until the volume has been written over a few times; directories'
/// dentry blocks and inline files get moved too.
#[test]
fn gc_moves_directories_small_files_and_node_blocks_under_churn() {
    let dir = tempfile::tempdir().unwrap();
    let img = make_image(dir.path(), "churn.img", 96 * MIB, 1);
    let fs = open_rw(&img, GcPolicy::Greedy);
    let root = fs.root();
    let dirs: Vec<Ino> = (0..4)
        .map(|d| fs.mkdir(root, format!("d{d}").as_bytes(), 0o755, 0, 0).unwrap().ino)
        .collect();
    // name -> (dir, ino, blocks, version)
    let mut files: BTreeMap<String, (Ino, Ino, u64, u32)> = BTreeMap::new();
    let mut rng = Rng(42);
    let user = fs.statfs().unwrap().blocks;
    let mut written = 0u64;
    let mut step = 0u32;
    while written < user * 3 {
        step += 1;
        let d = dirs[rng.below(dirs.len() as u64) as usize];
        let name = format!("f{}", rng.below(400));
        let key = format!("{d}/{name}");
        let free = free_blocks(&fs);
        match files.get(&key).copied() {
            Some((_, ino, _, _)) if rng.below(4) == 0 || free < 2048 => {
                fs.unlink(d, name.as_bytes()).unwrap();
                files.remove(&key);
                let _ = ino;
            }
            existing => {
                // Mostly small files (some inline), a few large ones.
                let blocks = match rng.below(10) {
                    0 => 64 + rng.below(256),
                    1..=3 => 0,
                    _ => 1 + rng.below(8),
                };
                if blocks * 2 > free {
                    continue;
                }
                let ino = match existing {
                    Some((_, ino, _, _)) => ino,
                    None => fs.create(d, name.as_bytes(), 0o644, 0, 0).unwrap().ino,
                };
                let ver = step;
                if blocks == 0 {
                    fs.truncate(ino, 0).unwrap();
                    fs.write(ino, 0, format!("inline {ver}").as_bytes()).unwrap();
                } else {
                    fs.truncate(ino, 0).unwrap();
                    let mut data = Vec::with_capacity(blocks as usize * B);
                    for i in 0..blocks {
                        data.extend_from_slice(&block(i, ver));
                    }
                    assert_eq!(fs.write(ino, 0, &data).unwrap(), data.len());
                }
                written += blocks.max(1);
                files.insert(key, (d, ino, blocks, ver));
            }
        }
        if step % 500 == 0 {
            fs.write_checkpoint().unwrap();
        }
    }
    let stats = fs.gc_stats().unwrap();
    assert!(stats.sections_freed > 0, "no GC ran: {stats:?}");
    let check = |fs: &Fs, what: &str| {
        for (key, &(d, ino, blocks, ver)) in &files {
            let name = key.split('/').nth(1).unwrap();
            assert_eq!(fs.lookup(d, name.as_bytes()).unwrap(), ino, "{what}: {key}");
            if blocks == 0 {
                let want = format!("inline {ver}");
                let mut buf = vec![0u8; 64];
                let n = fs.read(ino, 0, &mut buf).unwrap();
                assert_eq!(&buf[..n], want.as_bytes(), "{what}: {key}");
            } else {
                check_file(fs, ino, &vec![ver; blocks as usize], &format!("{what}: {key}"));
            }
        }
        for &d in &dirs {
            let names = fs.read_dir(d).unwrap().len();
            let want = files.values().filter(|f| f.0 == d).count();
            assert_eq!(names, want, "{what}: entries of directory {d}");
        }
    };
    check(&fs, "before unmount");
    fs.unmount().unwrap();
    fsck_clean(&img, "churn with GC");
    check(&Fs::open(&img, &[]).unwrap(), "after reopen");
}

/// A file "f" in the root of `blocks` blocks written at version 0, then every even block
/// rewritten at version 1, each pass checkpointed: the sections holding it are half
/// valid. Returns the file and each block's version.
fn half_valid_file(fs: &Fs, blocks: u64) -> (Ino, Vec<u32>) {
    let ino = fs.create(fs.root(), b"f", 0o644, 0, 0).unwrap().ino;
    let mut versions = vec![0u32; blocks as usize];
    for i in 0..blocks {
        fs.write(ino, i * B as u64, &block(i, 0)).unwrap();
    }
    fs.write_checkpoint().unwrap();
    for i in (0..blocks).step_by(2) {
        versions[i as usize] = 1;
        fs.write(ino, i * B as u64, &block(i, 1)).unwrap();
    }
    fs.write_checkpoint().unwrap();
    (ino, versions)
}

/// A background pass cleans one victim at a time; an explicit foreground pass on a
/// volume with room still cleans one victim (as the kernel's), and both leave a clean
/// image.
#[test]
fn explicit_passes_clean_one_victim_and_stay_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let img = make_image(dir.path(), "bg.img", 96 * MIB, 1);
    let fs = open_rw(&img, GcPolicy::Greedy);
    let (ino, versions) = half_valid_file(&fs, 4096);
    let before = fs.gc_stats().unwrap();
    assert_eq!(fs.gc(GcKind::Background).unwrap(), 1);
    assert_eq!(fs.gc(GcKind::Foreground).unwrap(), 1);
    let after = fs.gc_stats().unwrap();
    assert_eq!(after.bg_calls, before.bg_calls + 1);
    assert_eq!(after.sections_freed, before.sections_freed + 2);
    assert_eq!(after.data_blocks_moved - before.data_blocks_moved, 512);
    check_file(&fs, ino, &versions, "after two passes");
    fs.unmount().unwrap();
    fsck_clean(&img, "explicit GC passes");
    check_file(&Fs::open(&img, &[]).unwrap(), ino, &versions, "after reopen");
}

/// A write that finds too few free sections while emptied ones wait for a checkpoint
/// gets that checkpoint, and under Linux 6.1's loop no victim (its `f2fs_balance_fs`
/// calls `f2fs_gc` as background GC with `no_bg_gc`: it checkpoints the prefree
/// sections and turns to foreground GC only if free sections are still short),
/// though half-valid sections are there to clean; under Linux 6.12's loop (the
/// default) the pass has turned foreground before its checkpoint and takes one.
#[test]
fn a_balance_whose_checkpoint_makes_room_takes_a_victim_only_under_linux_6_12() {
    for kernel in KernelGcLoop::ALL {
        let victims = match kernel {
            KernelGcLoop::Linux61 => 0,
            KernelGcLoop::Linux612 => 1,
        };
        balance_after_a_checkpoint_that_makes_room(kernel, victims);
    }
}

fn balance_after_a_checkpoint_that_makes_room(kernel: KernelGcLoop, victims: u64) {
    let dir = tempfile::tempdir().unwrap();
    let img = make_image(dir.path(), "bal.img", 96 * MIB, 1);
    let fs = open_rw(&img, GcPolicy::Greedy);
    fs.set_kernel_gc_loop(kernel).unwrap();
    let (ino, mut versions) = half_valid_file(&fs, 2048);
    // With GC off, a second file takes every section the room check gives, then
    // goes: its sections are emptied, free only after the next checkpoint.
    fs.set_gc_enabled(false).unwrap();
    let g = fs.create(fs.root(), b"g", 0o644, 0, 0).unwrap().ino;
    let chunk = vec![0x5a; 64 * B];
    let mut off = 0u64;
    loop {
        match fs.write(g, off, &chunk) {
            Ok(n) => off += n as u64,
            Err(e) if e.is_no_space() => break,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(off >= 4 * MIB, "the second file took {off} bytes");
    fs.write_checkpoint().unwrap();
    fs.unlink(fs.root(), b"g").unwrap();
    fs.set_gc_enabled(true).unwrap();
    let before = fs.gc_stats().unwrap();
    versions[1] = 2;
    fs.write(ino, B as u64, &block(1, 2)).unwrap();
    let after = fs.gc_stats().unwrap();
    assert_eq!(
        after.fg_calls,
        before.fg_calls + 1,
        "Linux {kernel}: no balance ran: {after:?}"
    );
    assert_eq!(after.checkpoints, before.checkpoints + 1, "Linux {kernel}: {after:?}");
    assert_eq!(
        after.data_victims,
        before.data_victims + victims,
        "Linux {kernel}: victims after the balance's checkpoint made room"
    );
    // One pass, counted by its work: the checkpoint and the victims.
    let pass = after.passes.since(&before.passes);
    assert_eq!(pass.total(), 1, "Linux {kernel}: {pass:?}");
    assert_eq!(pass.by_work[victims as usize][1], 1, "Linux {kernel}: {pass:?}");
    check_file(&fs, ino, &versions, "after the balance");
    fs.unmount().unwrap();
    fsck_clean(&img, "a balance ended by its checkpoint");
}

/// A victim's block whose page the user dirtied since it was written moves with the
/// page's contents (as F2FS's `move_data_page`): written once, by GC, and the page is
/// then clean, not written back again. Until a checkpoint or an fsync the move is not
/// durable (a crash finds the last checkpoint's data); after an fsync a crash finds the
/// new data (roll-forward); after remount, every block reads back right.
#[test]
fn gc_moves_a_dirty_pages_contents_and_cleans_it() {
    let dir = tempfile::tempdir().unwrap();
    let img = make_image(dir.path(), "dirty.img", 96 * MIB, 1);
    let fs = open_rw(&img, GcPolicy::Greedy);
    // Four segments of data, then the even blocks rewritten: four half-valid sections.
    let blocks = 2048u64;
    let (ino, mut versions) = half_valid_file(&fs, blocks);
    let checkpointed = versions.clone();
    // The odd blocks of the first two sections, still valid there, rewritten in
    // memory only: 512 dirty pages, at (not past) the bound past which a file write
    // writes back.
    for i in (1..blocks / 2).step_by(2) {
        versions[i as usize] = 2;
        fs.write(ino, i * B as u64, &block(i, 2)).unwrap();
    }
    let w0 = fs.write_counts();
    let before = fs.gc_stats().unwrap();
    assert_eq!(fs.gc(GcKind::Foreground).unwrap(), 1);
    let after = fs.gc_stats().unwrap();
    let moved = after.data_blocks_moved - before.data_blocks_moved;
    assert_eq!(moved, 256, "one half-valid section's blocks moved");
    assert_eq!(
        after.data_pages_cleaned - before.data_pages_cleaned,
        moved,
        "every moved block had a dirty page"
    );
    check_file(&fs, ino, &versions, "after GC, before a checkpoint");
    // A crash now: the moves were not made durable, the last checkpoint stands.
    let cut = dir.path().join("cut.img");
    std::fs::copy(&img, &cut).unwrap();
    check_file(
        &Fs::open(&cut, &[]).unwrap(),
        ino,
        &checkpointed,
        "a crash after GC, before a checkpoint",
    );
    // An fsync makes the moved pages durable like those it writes back.
    fs.fsync(ino, false).unwrap();
    std::fs::copy(&img, &cut).unwrap();
    {
        let recovered = Fs::open_with(&cut, &[], OpenOptions { read_write: true }).unwrap();
        check_file(&recovered, ino, &versions, "a crash after GC and fsync");
        recovered.unmount().unwrap();
    }
    fsck_clean(&cut, "recovered after GC of dirty pages and fsync");
    fs.write_checkpoint().unwrap();
    let w1 = fs.write_counts();
    // Each of the 512 dirty pages reached the device once: by GC (moved) or by
    // writeback (the rest); copying the old blocks would have written 256 more.
    assert_eq!(w1.gc_data - w0.gc_data, moved);
    assert_eq!(
        (w1.user_data - w0.user_data) + (w1.gc_data - w0.gc_data),
        512,
        "a dirty page written twice"
    );
    check_file(&fs, ino, &versions, "after the checkpoint");
    fs.unmount().unwrap();
    fsck_clean(&img, "GC of dirty pages");
    check_file(&Fs::open(&img, &[]).unwrap(), ino, &versions, "after reopen");
}

/// Images made by mkfs.f2fs and filled by sload.f2fs (logs in SSR mode, summaries and
/// SIT written by f2fs-tools): GC cleans them too, and sload's own files survive.
#[test]
fn gc_cleans_images_made_by_f2fs_tools() {
    let dir = tempfile::tempdir().unwrap();
    for v in [support::Variant::Sload(""), support::Variant::Sload(support::EXTRA)] {
        let img = support::image(dir.path(), "sload.img", v, 128 * MIB);
        random_overwrites(&img, GcPolicy::Default, 0.8, 1.5, 3000);
        let fs = Fs::open(&img, &[]).unwrap();
        let ino = fs.resolve(b"/medium", true).unwrap();
        let want = support::medium_contents();
        let mut got = vec![0u8; want.len()];
        assert_eq!(fs.read(ino, 0, &mut got).unwrap(), want.len());
        assert!(got == want, "{v:?}: sload's /medium changed");
        assert_eq!(fs.read_dir(fs.resolve(b"/sub", true).unwrap()).unwrap().len(), 40);
    }
}

/// Power cuts around GC: random 4 KiB overwrites of a nearly full volume, so that
/// foreground GC empties victims (copying their blocks to the cold log) and
/// checkpoints between them, all on a device that records every write. At every cut
/// (after each flush, with none, all, half or a seeded subset of the writes in
/// flight) the image opens at one of the checkpoints written, fsck.f2fs finds it
/// clean, and the file reads back as it was at that checkpoint: a victim is reused
/// only after the checkpoint that records its moves, so no cut can leave a checkpoint
/// pointing at overwritten blocks.
#[test]
fn power_cuts_during_gc_lose_nothing() {
    power_cuts_during_gc(GcPolicy::Greedy);
}

/// [`power_cuts_during_gc_lose_nothing`] under the default policy, which keeps emptied
/// sections waiting across GC passes for a shared checkpoint and lets writes use the
/// reserved sections they stand in for meanwhile.
#[test]
fn power_cuts_during_batched_gc_lose_nothing() {
    power_cuts_during_gc(GcPolicy::Default);
}

fn power_cuts_during_gc(policy: GcPolicy) {
    use std::collections::HashMap;
    use uf2fs_core::device::{CrashDevice, MemDevice};
    let dir = tempfile::tempdir().unwrap();
    let img = make_image(dir.path(), "pc.img", 96 * MIB, 1);
    let fs = open_rw(&img, policy);
    let ino = fs.create(fs.root(), b"f", 0o644, 0, 0).unwrap().ino;
    let blocks = (free_blocks(&fs) as f64 * 0.85) as u64;
    let mut versions = vec![0u32; blocks as usize];
    for i in 0..blocks {
        if let Err(e) = fs.write(ino, i * B as u64, &block(i, 0)) {
            panic!(
                "fill: block {i} of {blocks}: {e}; {:?}; {}",
                fs.statfs().unwrap(),
                fs.info().unwrap()
            );
        }
    }
    fs.unmount().unwrap();

    let dev = CrashDevice::new(std::fs::read(&img).unwrap(), 1 << 17);
    let fs = Fs::open_device_with(Box::new(dev.clone()), "crash", OpenOptions { read_write: true }).unwrap();
    fs.set_gc_policy(policy).unwrap();
    // The file at each checkpoint, block by block from the version of the last
    // checkpoint of every dirty page (here the unmount's) to the one after the write
    // that ran it: GC's checkpoints leave the file's dirty pages, as the kernel's do,
    // so each block shows the last version written back before one.
    let mut at_checkpoint: HashMap<u64, (Vec<u32>, Vec<u32>)> = HashMap::new();
    let durable = versions.clone();
    at_checkpoint.insert(fs.last_checkpoint().checkpoint_ver, (durable.clone(), durable.clone()));
    let before = fs.gc_stats().unwrap();
    let mut rng = Rng(0xc0ffee);
    let mut last = fs.last_checkpoint().checkpoint_ver;
    for _ in 0..blocks / 2 {
        let i = rng.below(blocks);
        versions[i as usize] += 1;
        fs.write(ino, i * B as u64, &block(i, versions[i as usize])).unwrap();
        // The write's GC may have written several checkpoints.
        let now = fs.last_checkpoint().checkpoint_ver;
        for cp in last + 1..=now {
            at_checkpoint.insert(cp, (durable.clone(), versions.clone()));
        }
        last = now;
    }
    fs.write_checkpoint().unwrap();
    at_checkpoint.insert(
        fs.last_checkpoint().checkpoint_ver,
        (versions.clone(), versions.clone()),
    );
    let after = fs.gc_stats().unwrap();
    assert!(
        after.sections_freed > before.sections_freed && after.data_blocks_moved > before.data_blocks_moved,
        "no GC: {before:?} -> {after:?}"
    );

    let mut tried = 0;
    for (k, keep) in cuts::cuts(&dev, 0x2545_f491_4f6c_dd1d) {
        let n = keep.len();
        {
            let what = format!(
                "cut after flush {k}, kept {} of {n}",
                keep.iter().filter(|&&x| x).count()
            );
            let cut = dir.path().join("cut.img");
            std::fs::write(&cut, dev.image_after_cut(k, &|i| keep[i])).unwrap();
            let fs = Fs::open(&cut, &[]).unwrap();
            let cp = fs.checkpoint().checkpoint_ver;
            let (floor, ceil) = at_checkpoint
                .get(&cp)
                .unwrap_or_else(|| panic!("{what}: checkpoint {cp} was never written"));
            let mut buf = vec![0u8; B];
            for (i, (&lo, &hi)) in floor.iter().zip(ceil).enumerate() {
                assert_eq!(fs.read(ino, i as u64 * B as u64, &mut buf).unwrap(), B);
                assert!(
                    (lo..=hi).any(|v| buf == block(i as u64, v)),
                    "{what}: block {i} of the file is none of versions {lo} to {hi} at checkpoint {cp}"
                );
            }
            drop(fs);
            support::fsck_clean_in_place(&cut, &what);
            tried += 1;
        }
    }
    let fs = Fs::open_device(Box::new(MemDevice::new(dev.image_now())), "after").unwrap();
    check_file(&fs, ino, &versions, "after the last checkpoint");
    println!(
        "{policy}: {tried} cuts of {} checkpoints checked; GC: {} victims, {} blocks moved, {} checkpoints",
        at_checkpoint.len(),
        after.data_victims + after.node_victims - before.data_victims - before.node_victims,
        after.data_blocks_moved + after.node_blocks_moved - before.data_blocks_moved - before.node_blocks_moved,
        after.checkpoints - before.checkpoints
    );
}

/// A simulated clock advances with the blocks written, not with time: 6400 blocks at
/// a hundred per second make the checkpoint 64 seconds older, within a test that takes
/// far less.
#[test]
fn a_simulated_clock_counts_blocks_not_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let img = make_image(dir.path(), "clock.img", 96 * MIB, 1);
    let fs = open_rw(&img, GcPolicy::CostBenefit);
    let start = fs.last_checkpoint().elapsed_time;
    let started = std::time::Instant::now();
    fs.set_simulated_clock(Some(100)).unwrap();
    let ino = fs.create(fs.root(), b"f", 0o644, 0, 0).unwrap().ino;
    let chunk = vec![0x5au8; 64 * B];
    for i in 0..100u64 {
        fs.write(ino, i * chunk.len() as u64, &chunk).unwrap();
    }
    fs.write_checkpoint().unwrap();
    let aged = fs.last_checkpoint().elapsed_time - start;
    assert!(
        aged >= 64 && started.elapsed().as_secs() < aged,
        "{aged} s of simulated age after {:?}",
        started.elapsed()
    );
    fs.unmount().unwrap();
    fsck_clean(&img, "simulated clock");
}

/// `uf2fs status` names the sections the default policy keeps free for its checkpoint
/// batches (none on a volume this small: its few nodes make batches worth nothing),
/// and says nothing of them under other policies.
#[test]
fn status_reports_the_default_policys_batch_sections() {
    let dir = tempfile::tempdir().unwrap();
    let img = make_image(dir.path(), "st.img", 96 * MIB, 1);
    let fs = open_rw(&img, GcPolicy::Default);
    let report = fs.status_report().unwrap();
    let line = report
        .lines()
        .find_map(|l| l.strip_prefix("batch sections:"))
        .unwrap_or_else(|| panic!("no batch sections in:\n{report}"));
    let kept: u32 = line.split_whitespace().next().unwrap().parse().unwrap();
    assert_eq!(kept, 0, "{report}");
    fs.set_gc_policy(GcPolicy::Greedy).unwrap();
    let report = fs.status_report().unwrap();
    assert!(!report.contains("batch sections"), "{report}");
}

/// Paced GC under random workloads and pacer settings: a volume filled to 50–90%,
/// checkpointed every 2048 writes (as `random_overwrites`),
/// overwritten at random (with a second file created and deleted now and then) on a
/// simulated clock, the paced cleaner woken whenever it asked, each step costing a
/// random simulated time per block. No write may fail, free sections must never reach
/// zero, the pacer must have taken steps, and the image must be fsck-clean with every
/// byte intact, before and after a reopen.
mod paced {
    use super::*;
    use proptest::prelude::*;
    use std::sync::Arc;
    use std::time::Duration;
    use uf2fs_core::clock::{Clock, ManualClock};
    use uf2fs_core::{GcPacing, PacingSettings};

    #[derive(Debug, Clone)]
    struct Case {
        policy: GcPolicy,
        pacing: GcPacing,
        start_margin: u32,
        target_us: u64,
        busy_us: u64,
        fill: f64,
        gap_us: u64,
        block_cost_us: u64,
        churn_every: u64,
        seed: u64,
    }

    fn case() -> impl Strategy<Value = Case> {
        (
            prop_oneof![
                Just(GcPolicy::Greedy),
                Just(GcPolicy::Default),
                Just(GcPolicy::CostBenefit)
            ],
            prop_oneof![Just(GcPacing::Seed), Just(GcPacing::Adaptive)],
            // 0: chosen from the volume (`AUTO_START_MARGIN`).
            0u32..6,
            20u64..5000,
            0u64..5000,
            0.5f64..0.9,
            (1u64..400, 1u64..100),
            (50u64..2000, any::<u64>()),
        )
            .prop_map(
                |(
                    policy,
                    pacing,
                    start_margin,
                    target_us,
                    busy_us,
                    fill,
                    (gap_us, block_cost_us),
                    (churn_every, seed),
                )| Case {
                    policy,
                    pacing,
                    start_margin,
                    target_us,
                    busy_us,
                    fill,
                    gap_us,
                    block_cost_us,
                    churn_every,
                    seed,
                },
            )
    }

    /// Runs case `c`; returns the pacer's counters.
    fn run(c: &Case) -> uf2fs_core::PacingStats {
        let dir = tempfile::tempdir().unwrap();
        let img = make_image(dir.path(), "paced.img", 96 * MIB, 1);
        let fs = open_rw(&img, c.policy);
        let clock = Arc::new(ManualClock::new());
        fs.set_clock(clock.clone()).unwrap();
        fs.set_gc_pacing(PacingSettings {
            pacing: c.pacing,
            latency_target: Duration::from_micros(c.target_us),
            start_margin: c.start_margin,
            busy_window: Duration::from_micros(c.busy_us),
            ..PacingSettings::default()
        })
        .unwrap();
        let root = fs.root();
        let ino = fs.create(root, b"paced", 0o644, 0, 0).unwrap().ino;
        let blocks = (free_blocks(&fs) as f64 * c.fill) as u64;
        let mut versions = vec![0u32; blocks as usize];
        for i in 0..blocks {
            fs.write(ino, i * B as u64, &block(i, 0)).unwrap();
        }
        fs.write_checkpoint().unwrap();
        let writes = fs.statfs().unwrap().blocks;
        let mut rng = Rng(c.seed | 1);
        let mut next_wake = clock.now();
        let mut min_free = u32::MAX;
        let mut churn: Option<Ino> = None;
        for n in 0..writes {
            clock.advance(Duration::from_micros(rng.below(c.gap_us) + 1));
            while next_wake <= clock.now() {
                let w = fs.paced_gc_step().unwrap();
                if let uf2fs_core::gc::PacedOutcome::Stepped(b) = w.outcome {
                    clock.advance(Duration::from_micros(b as u64 * c.block_cost_us));
                }
                next_wake = clock.now() + w.wait;
            }
            let i = rng.below(blocks);
            versions[i as usize] += 1;
            let w = fs.write(ino, i * B as u64, &block(i, versions[i as usize]));
            assert_eq!(
                w.unwrap_or_else(|e| panic!("{c:?}: write {n}: {e}; {:?}", fs.pacing_stats())),
                B
            );
            if n % c.churn_every == 0 {
                match churn.take() {
                    None => {
                        let f = fs.create(root, b"churn", 0o644, 0, 0).unwrap().ino;
                        fs.write(f, 0, &vec![7u8; 16 * B]).unwrap();
                        churn = Some(f);
                    }
                    Some(_) => fs.unlink(root, b"churn").unwrap(),
                }
            }
            if (n + 1) % 2048 == 0 {
                fs.write_checkpoint().unwrap();
            }
            let (free, _) = fs.free_sections_now().unwrap();
            assert!(free > 0, "{c:?}: free sections ran out at write {n}");
            min_free = min_free.min(free);
        }
        let p = fs.pacing_stats().unwrap();
        check_file(&fs, ino, &versions, &format!("{c:?} before unmount"));
        fs.unmount().unwrap();
        fsck_clean(&img, &format!("{c:?}"));
        let fs = Fs::open(&img, &[]).unwrap();
        check_file(&fs, ino, &versions, &format!("{c:?} after reopen"));
        eprintln!(
            "{:?}/{:?}: min free sections {min_free}, {} steps, {} paced victims, {} writer finishes",
            c.policy, c.pacing, p.steps, p.victims, p.writer_finishes
        );
        p
    }

    /// The pacers really clean: on a volume 85% full, both take steps and empty
    /// victims ahead of the writers.
    #[test]
    fn both_pacers_take_steps() {
        for pacing in [GcPacing::Seed, GcPacing::Adaptive] {
            let c = Case {
                policy: GcPolicy::Greedy,
                pacing,
                start_margin: 3,
                target_us: 1000,
                busy_us: 2000,
                fill: 0.85,
                gap_us: 100,
                block_cost_us: 20,
                churn_every: 997,
                seed: 42,
            };
            let p = run(&c);
            assert!(p.steps > 0 && p.sections_freed > 0, "{pacing}: {p:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        #[test]
        fn pacing_never_lets_free_sections_run_out(c in case()) {
            run(&c);
        }
    }
}

/// A pinned file (`F2FS_IOC_SET_PIN_FILE`) keeps its blocks: foreground GC leaves
/// them in a victim whose other blocks are gone (counting a GC failure), an
/// overwrite goes in place; unpinned, the next pass moves them.
#[test]
fn gc_leaves_pinned_files_blocks_where_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let img = make_image(dir.path(), "pin.img", 96 * MIB, 1);
    let fs = open_rw(&img, GcPolicy::Greedy);
    let p = fs.create(fs.root(), b"pinned", 0o644, 0, 0).unwrap().ino;
    let u = fs.create(fs.root(), b"other", 0o644, 0, 0).unwrap().ino;
    assert_eq!(fs.set_pin_file(p, true).unwrap(), 0);
    assert_eq!(fs.pin_file(p).unwrap(), 0);
    let mut versions = vec![0u32; 64];
    for i in 0..64 {
        fs.write(p, i * B as u64, &block(i, 0)).unwrap();
    }
    fs.write_checkpoint().unwrap();
    for i in 0..448 {
        fs.write(u, i * B as u64, &block(i, 9)).unwrap();
    }
    fs.write_checkpoint().unwrap();
    let placed = fs.extents(p).unwrap();
    fs.unlink(fs.root(), b"other").unwrap();
    fs.write_checkpoint().unwrap();
    // In place: an overwrite keeps the addresses.
    versions[5] = 1;
    fs.write(p, 5 * B as u64, &block(5, 1)).unwrap();
    fs.write_checkpoint().unwrap();
    assert_eq!(fs.extents(p).unwrap(), placed, "an overwrite moved a pinned block");
    let before = fs.gc_stats().unwrap();
    fs.gc(GcKind::Foreground).unwrap();
    assert_eq!(fs.extents(p).unwrap(), placed, "GC moved a pinned block");
    assert!(fs.pin_file(p).unwrap() >= 1, "no GC failure counted");
    assert_eq!(fs.gc_stats().unwrap().data_blocks_moved, before.data_blocks_moved);
    check_file(&fs, p, &versions, "pinned, after GC");
    // Unpinned (the count reset), the blocks move with the next pass.
    assert_eq!(fs.set_pin_file(p, false).unwrap(), 0);
    assert_eq!(fs.pin_file(p).unwrap(), 0);
    fs.gc(GcKind::Foreground).unwrap();
    assert_ne!(fs.extents(p).unwrap(), placed, "GC left an unpinned file's blocks");
    check_file(&fs, p, &versions, "unpinned, after GC");
    fs.unmount().unwrap();
    fsck_clean(&img, "pinned file under GC");
}
