//! Crash consistency at scale (issue 13 item 3): seeded workloads run on a recording
//! device beside a model, and every cut of each recording (after each flush, with
//! none, all, half and seeded subsets of the writes in flight), deduplicated by image
//! contents, is opened read-write, judged against what completed fsyncs and syncs
//! guarantee, probed with a write, unmounted, checked by `fsck.f2fs -f --dry-run`
//! (f2fs-tools must be installed: these tests fail, not skip, without it) and reopened
//! read-only. The rules are in `common/crash.rs`; docs/crash-consistency.md has the
//! commands and counts.
//!
//! Workloads: `fsx` (writes, truncates, holes, zeroed and reserved ranges and fsyncs
//! on three files, one past the inode's own block addresses), `tree` (mkdir, create,
//! rename, exchange, unlink, rmdir, small writes, file and directory fsyncs, syncs),
//! `small` (many small files each written and fsync'd, rewritten, appended, renamed
//! and removed) and `gc` (4 KiB overwrites with fsyncs on a nearly full 64 MiB volume,
//! so that foreground GC and its checkpoints run inside the recording), `shrink`
//! (fsyncs after `O_TRUNC` rewrites, shrinks, punched and zeroed ranges: roll-forward
//! records, where no freed block may come back), `atomic` (F2FS atomic writes) and
//! `compress` (writes, overwrites, appends, truncates and fsyncs of compressed files,
//! stored per cluster at writeback), `packed_ssa` (writes and fsyncs on a 16 KiB-block
//! `packed_ssa` volume, cut also at every SSA block write with every mix of its four
//! 4 KiB quarters landed: a torn read-modify-write; its images are judged by the
//! development tree's fsck.f2fs, the fsck step skipped with a message when that is not
//! installed) and `move_range` (`F2FS_IOC_MOVE_RANGE` between two fsync'd files, cut
//! also after every device write).
//!
//! The `quick_*` tests check a few hundred points in all; `full` (ignored) checks every
//! distinct cut of several seeds, sized by `UF2FS_CRASH_*` variables.

#[path = "common/crash.rs"]
mod crash;

use crash::{check_recording, is_under, join, parent, run_workload, Recorder, Recording, Rng, Scale, Tally, B};
use uf2fs_core::mkfs::{mkfs, MkfsOptions};

const MIB: u64 = 1 << 20;
const KIB: u64 = 1 << 10;

/// A fresh image of `mib` MiB from uf2fs's mkfs.
fn fresh_image(mib: u64) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("base.img");
    let opts = MkfsOptions {
        size_bytes: Some(mib * MIB),
        ..MkfsOptions::default()
    };
    mkfs(&img, &opts).unwrap();
    std::fs::read(&img).unwrap()
}

/// The fsx-like mix on three files of at most 256 KiB, 1 MiB and 6 MiB (the last
/// reaching past the inode's block addresses into direct nodes).
fn fsx(seed: u64, scale: &Scale) -> Recording {
    let mut r = Recorder::new(fresh_image(64), 1 << 15);
    let mut rng = Rng::new(seed);
    let files = [("/fsx0", 256 * KIB), ("/fsx1", MIB), ("/fsx2", 6 * MIB)];
    for (f, _) in files {
        r.create(f);
    }
    for _ in 0..scale.len(120) {
        let (f, max) = *rng.pick(&files);
        let off = rng.below(max);
        let len = 1 + if rng.pct(30) {
            rng.below(300)
        } else {
            rng.below(64 * KIB)
        };
        match rng.below(100) {
            0..=39 => {
                let len = len.min(max - off) as usize;
                let data = rng.bytes(len);
                r.write(f, off, &data);
            }
            40..=47 => {
                let size = r.data(f).size;
                let to = if rng.pct(70) { rng.below(size + 1) } else { off };
                r.truncate(f, to);
            }
            48..=54 => r.punch(f, off, len),
            55..=59 => {
                let keep = rng.pct(50);
                r.zero_range(f, off, len.min(max - off), keep);
            }
            60..=65 => {
                let keep = rng.pct(50);
                r.allocate(f, off, len.min(max - off), keep);
            }
            66..=86 => {
                let datasync = rng.pct(30);
                r.fsync(f, datasync);
            }
            87..=90 => r.sync_fs(),
            _ => r.verify(f),
        }
    }
    r.finish()
}

const NAMES: [&str; 7] = [
    "a",
    "b",
    "c",
    "dir",
    "file",
    "a-longer-name-that-takes-several-dentry-slots-0123456789",
    "z",
];

/// Namespace churn: directories three deep, files created, renamed (across
/// directories, over files and empty directories, exchanged), unlinked, written,
/// truncated; fsyncs of files and directories and syncs in between.
fn tree(seed: u64, scale: &Scale) -> Recording {
    let mut r = Recorder::new(fresh_image(64), 1 << 15);
    let mut rng = Rng::new(seed);
    for _ in 0..scale.len(220) {
        let all = r.tree();
        let dirs: Vec<&String> = all.iter().filter(|(_, d)| *d).map(|(p, _)| p).collect();
        let files: Vec<&String> = all.iter().filter(|(_, d)| !*d).map(|(p, _)| p).collect();
        let non_root: Vec<&String> = all.iter().map(|(p, _)| p).filter(|p| *p != "/").collect();
        let depth = |p: &str| p.matches('/').count();
        let dir = (*rng.pick(&dirs)).clone();
        let new = join(&dir, rng.pick::<&str>(&NAMES));
        match rng.below(100) {
            0..=11 if depth(&new) <= 3 && !r.exists(&new) => r.mkdir(&new),
            12..=29 if !r.exists(&new) => r.create(&new),
            30..=40 if !files.is_empty() => {
                let f = (*rng.pick(&files)).clone();
                let len = 1 + rng.below(6000) as usize;
                let data = rng.bytes(len);
                r.write(&f, rng.below(16 * KIB), &data);
            }
            41..=54 if !non_root.is_empty() => {
                let src = (*rng.pick(&non_root)).clone();
                let dst = new;
                if dst == src || is_under(&dst, &src) || (r.is_dir(&src) && depth(&dst) > 3) {
                    continue;
                }
                if !r.exists(&dst) {
                    r.rename(&src, &dst, false);
                } else if rng.pct(30) {
                    let too_deep = r.is_dir(&dst) && depth(&src) > 3;
                    if !is_under(&src, &dst) && !too_deep {
                        r.rename(&src, &dst, true);
                    }
                } else {
                    let empty_dir = r.is_dir(&dst) && !all.iter().any(|(p, _)| parent(p) == dst && p != "/");
                    let fits = if r.is_dir(&src) { empty_dir } else { !r.is_dir(&dst) };
                    if fits && !is_under(&src, &dst) {
                        r.rename(&src, &dst, false);
                    }
                }
            }
            55..=63 if !files.is_empty() => {
                let f = (*rng.pick(&files)).clone();
                r.unlink(&f);
            }
            64..=68 if dir != "/" && !all.iter().any(|(p, _)| parent(p) == dir && p != "/") => r.rmdir(&dir),
            69..=78 if !files.is_empty() => {
                let f = (*rng.pick(&files)).clone();
                r.fsync(&f, rng.pct(30));
            }
            79..=83 => r.fsync(&dir, false),
            84..=89 => r.sync_fs(),
            90..=94 if !files.is_empty() => {
                let f = (*rng.pick(&files)).clone();
                r.truncate(&f, rng.below(20_000));
            }
            _ => {
                if let Some(f) = files.first() {
                    r.verify(f);
                }
            }
        }
    }
    r.finish()
}

/// fsync-heavy small files: each created, written (often inline-sized) and fsync'd;
/// older ones rewritten, appended to (fdatasync), renamed then fsync'd, unlinked.
fn small(seed: u64, scale: &Scale) -> Recording {
    let mut r = Recorder::new(fresh_image(64), 1 << 15);
    let mut rng = Rng::new(seed);
    r.mkdir("/s");
    r.sync_fs();
    let mut live: Vec<String> = Vec::new();
    for i in 0..scale.len(90) {
        let pick = |rng: &mut Rng, live: &Vec<String>| live[rng.below(live.len() as u64) as usize].clone();
        match rng.below(100) {
            60..=74 if !live.is_empty() => {
                let f = pick(&mut rng, &live);
                let size = r.data(&f).size;
                let len = 1 + rng.below(3000) as usize;
                let data = rng.bytes(len);
                r.write(&f, rng.below(size + 100), &data);
                r.fsync(&f, false);
            }
            75..=84 if !live.is_empty() => {
                let f = pick(&mut rng, &live);
                let size = r.data(&f).size;
                let len = 1 + rng.below(5000) as usize;
                let data = rng.bytes(len);
                r.write(&f, size, &data);
                r.fsync(&f, true);
            }
            85..=91 if !live.is_empty() => {
                let f = pick(&mut rng, &live);
                live.retain(|x| *x != f);
                r.unlink(&f);
                if rng.pct(50) {
                    r.fsync("/s", false);
                }
            }
            92..=96 if !live.is_empty() => {
                let f = pick(&mut rng, &live);
                let to = format!("/s/r{i}");
                live.retain(|x| *x != f);
                r.rename(&f, &to, false);
                r.fsync(&to, false);
                live.push(to);
            }
            97..=99 => r.sync_fs(),
            _ => {
                let f = format!("/s/f{i}");
                r.create(&f);
                let len = if rng.pct(40) {
                    1 + rng.below(200)
                } else {
                    1 + rng.below(12_000)
                };
                let data = rng.bytes(len as usize);
                r.write(&f, 0, &data);
                r.fsync(&f, rng.pct(30));
                live.push(f);
            }
        }
    }
    r.finish()
}

/// 4 KiB overwrites with fsyncs on a 64 MiB volume filled to 60% of what users may
/// take (set up before the recording starts), so that foreground GC and its
/// checkpoints run inside the recording.
fn gc(seed: u64, scale: &Scale) -> Recording {
    let mut r = Recorder::new(fresh_image(64), 1 << 17);
    let mut rng = Rng::new(seed);
    let avail = r.fs().statfs().unwrap().blocks_avail;
    let files: Vec<String> = (0..8).map(|i| format!("/g{i}")).collect();
    let per = avail * 60 / 100 / files.len() as u64;
    for f in &files {
        r.create(f);
        let mut at = 0;
        while at < per {
            let n = (per - at).min(64);
            let data = rng.bytes((n * B as u64) as usize);
            r.write(f, at * B as u64, &data);
            at += n;
        }
    }
    r.settle();
    let before = r.fs().gc_stats().unwrap();
    for _ in 0..scale.len(2000) {
        let f = rng.pick(&files).clone();
        match rng.below(100) {
            0..=95 => {
                let data = rng.bytes(B);
                r.write(&f, rng.below(per) * B as u64, &data);
            }
            96..=98 => r.fsync(&f, rng.pct(50)),
            _ => r.sync_fs(),
        }
    }
    let after = r.fs().gc_stats().unwrap();
    assert!(
        after.data_blocks_moved > before.data_blocks_moved,
        "gc seed {seed}: no GC ran: {before:?} -> {after:?}"
    );
    let rec = r.finish();
    println!(
        "gc seed {seed}: {} writes recorded; GC moved {} data blocks, {} checkpoints",
        rec.writes(),
        after.data_blocks_moved - before.data_blocks_moved,
        after.checkpoints - before.checkpoints
    );
    rec
}

/// F2FS atomic writes (issue 28): commits of one to six writes on three files (one
/// small enough to start inline, one reaching past the inode's block addresses), some
/// replacing the file, some changing its size, between plain writes and fsyncs of
/// other files and syncs. The judge holds each atomic file to one of its states whole.
fn atomic(seed: u64, scale: &Scale) -> Recording {
    let mut r = Recorder::new(fresh_image(64), 1 << 15);
    let mut rng = Rng::new(seed);
    let files = [("/db0", 3 * KIB), ("/db1", 512 * KIB), ("/db2", 5 * MIB)];
    for (f, _) in files {
        r.create(f);
    }
    r.create("/plain");
    for _ in 0..scale.len(90) {
        let (f, max) = *rng.pick(&files);
        match rng.below(100) {
            0..=69 => {
                let n = 1 + rng.below(6) as usize;
                let writes: Vec<(u64, Vec<u8>)> = (0..n)
                    .map(|_| {
                        let off = rng.below(max);
                        let len = 1 + if rng.pct(40) {
                            rng.below(500)
                        } else {
                            rng.below(48 * KIB)
                        };
                        let len = len.min(max - off) as usize;
                        (off, rng.bytes(len))
                    })
                    .collect();
                let replace = rng.pct(15);
                let size = if rng.pct(20) { Some(rng.below(max)) } else { None };
                r.atomic_commit(f, replace, &writes, size);
            }
            70..=84 => {
                let off = rng.below(MIB);
                let len = 1 + rng.below(20 * KIB) as usize;
                let data = rng.bytes(len);
                r.write("/plain", off, &data);
                if rng.pct(50) {
                    r.fsync("/plain", false);
                }
            }
            85..=89 => r.sync_fs(),
            _ => r.verify(f),
        }
    }
    r.finish()
}

/// Compressible bytes: runs of a few symbols, with a seeded amount of noise.
fn compressible(rng: &mut Rng, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        let b = if rng.pct(10) {
            rng.next() as u8
        } else {
            b"abcd\n"[rng.below(5) as usize]
        };
        let run = 1 + rng.below(40) as usize;
        v.extend(std::iter::repeat_n(b, run));
    }
    v.truncate(len);
    v
}

/// Compressed files (issue 28): every file the workload creates is compressed
/// (`compress_extension=*`, zstd with checksums, clusters of 4 blocks) and takes
/// writes of compressible and random bytes, overwrites inside compressed clusters,
/// appends, truncates (into clusters and to their ends), fsyncs (which checkpoint for
/// compressed files) and syncs. Writeback stores clusters compressed or plain.
fn compress(seed: u64, scale: &Scale) -> Recording {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("base.img");
    let opts = MkfsOptions {
        size_bytes: Some(64 * MIB),
        features: uf2fs_core::mkfs::parse_features("extra_attr,compression").unwrap(),
        ..MkfsOptions::default()
    };
    mkfs(&img, &opts).unwrap();
    let mut r = Recorder::new(std::fs::read(&img).unwrap(), 1 << 15);
    let mut o = uf2fs_core::CompressOptions::default();
    for (n, v) in [
        ("compress_algorithm", Some("zstd")),
        ("compress_chksum", None),
        ("compress_extension", Some("*")),
    ] {
        o.set_option(n, v).unwrap();
    }
    r.fs().set_compress_options(o).unwrap();
    let mut rng = Rng::new(seed);
    let files = [("/c0", 256 * KIB), ("/c1", 2 * MIB)];
    for (f, _) in files {
        r.create(f);
    }
    for _ in 0..scale.len(100) {
        let (f, max) = *rng.pick(&files);
        let off = rng.below(max);
        let len = 1 + if rng.pct(30) {
            rng.below(300)
        } else {
            rng.below(96 * KIB)
        };
        match rng.below(100) {
            0..=54 => {
                let len = len.min(max - off) as usize;
                let data = if rng.pct(80) {
                    compressible(&mut rng, len)
                } else {
                    rng.bytes(len)
                };
                r.write(f, off, &data);
            }
            55..=64 => {
                let size = r.data(f).size;
                let to = if rng.pct(50) {
                    rng.below(size + 1)
                } else {
                    rng.below(size + 1) / 16384 * 16384
                };
                r.truncate(f, to);
            }
            65..=84 => r.fsync(f, rng.pct(30)),
            85..=89 => r.sync_fs(),
            _ => r.verify(f),
        }
    }
    r.finish()
}

/// fsync by roll-forward after the changes that free blocks (issue 28): an `O_TRUNC`
/// rewrite then fsync, shrinks (then regrown past a hole by a far write or a truncate
/// up) then fsync, punched and zeroed ranges then fsync, on a file that starts inline,
/// a 16 MiB sparse one (scattered small writes: a direct node each past the inode's
/// addresses, some under the indirect node) and a dense one; fsyncs before the
/// truncates put direct nodes in the log after the checkpoint, syncs put them in the
/// checkpoint, so that a truncate frees both kinds. No freed block may come back.
fn shrink(seed: u64, scale: &Scale) -> Recording {
    let mut r = Recorder::new(fresh_image(64), 1 << 15);
    let mut rng = Rng::new(seed);
    let files = [("/inl", 8 * KIB), ("/sparse", 16 * MIB), ("/dense", 2 * MIB)];
    for (f, _) in files {
        r.create(f);
    }
    let some = |rng: &mut Rng, max: u64, off: u64| -> usize {
        let len = 1 + if rng.pct(50) {
            rng.below(3000)
        } else {
            rng.below(40 * KIB)
        };
        len.min(max - off) as usize
    };
    for _ in 0..scale.len(150) {
        let (f, max) = *rng.pick(&files);
        match rng.below(100) {
            0..=24 => {
                for _ in 0..1 + rng.below(4) {
                    let off = rng.below(max);
                    let len = some(&mut rng, max, off);
                    let data = rng.bytes(len);
                    r.write(f, off, &data);
                }
            }
            25..=34 => {
                r.truncate(f, 0);
                let len = some(&mut rng, max, 0);
                let data = rng.bytes(len);
                r.write(f, 0, &data);
                r.fsync(f, rng.pct(30));
            }
            35..=49 => {
                let size = r.data(f).size;
                r.truncate(f, rng.below(size + 1));
                match rng.below(4) {
                    0 | 1 => {
                        let off = rng.below(max);
                        let len = some(&mut rng, max, off);
                        let data = rng.bytes(len);
                        r.write(f, off, &data);
                    }
                    2 => r.truncate(f, 1 + rng.below(max)),
                    _ => {}
                }
                r.fsync(f, rng.pct(30));
            }
            50..=59 => {
                let off = rng.below(max);
                let len = 1 + rng.below(max / 2);
                r.punch(f, off, len);
                r.fsync(f, rng.pct(30));
            }
            60..=66 => {
                let off = rng.below(max);
                let len = 1 + rng.below((max - off).min(MIB));
                r.zero_range(f, off, len, rng.pct(50));
                r.fsync(f, rng.pct(30));
            }
            67..=84 => r.fsync(f, rng.pct(30)),
            85..=90 => r.sync_fs(),
            _ => r.verify(f),
        }
    }
    // The point of the workload: these fsyncs are roll-forward records, not checkpoints.
    let status = r.fs().status_report().unwrap();
    let line = status.lines().find(|l| l.trim_start().starts_with("fsyncs:")).unwrap();
    let words: Vec<&str> = line.split_whitespace().collect();
    let (rolled, by_cp): (u64, u64) = (words[1].parse().unwrap(), words[3].parse().unwrap());
    println!("shrink seed {seed}: {rolled} fsyncs by roll-forward, {by_cp} by checkpoint");
    assert!(rolled > 5 * by_cp, "shrink seed {seed}: {line}");
    r.finish()
}

/// A fresh volume of 16 KiB blocks with the `packed_ssa` layout (`uf2fs mkfs -b 16384
/// -O packed_ssa`), `mib` MiB, made in memory.
fn packed_ssa_image(mib: u64) -> Vec<u8> {
    let opts = MkfsOptions {
        block_size: 16384,
        features: uf2fs_core::mkfs::parse_features("packed_ssa").unwrap(),
        ..MkfsOptions::default()
    };
    let (report, writes) = uf2fs_core::mkfs::mkfs_blocks(&opts, mib * MIB).unwrap();
    assert!(report.superblock.geometry().is_packed_ssa());
    let mut image = vec![0u8; (mib * MIB) as usize];
    for (addr, block) in writes {
        let at = addr as usize * 16384;
        image[at..at + block.len()].copy_from_slice(&block);
    }
    image
}

/// The SSA of a 16 KiB-block image, in 4 KiB device blocks (`ssa_blkaddr` to
/// `main_blkaddr` of the superblock, scaled).
fn ssa_device_blocks(image: &[u8]) -> std::ops::Range<u64> {
    let u32_at = |off: usize| u32::from_le_bytes(image[1024 + off..1024 + off + 4].try_into().unwrap()) as u64;
    let per = 1 << (u32_at(16) - 12); // log_blocksize: device blocks per F2FS block
    u32_at(88) * per..u32_at(92) * per
}

/// Writes on a 16 KiB-block `packed_ssa` volume (issue 28): four segments share each
/// 16 KiB SSA block, so a log leaving a segment writes its summary by a
/// read-modify-write of a block three other segments' summaries live in. Large
/// writes (the data log crosses segments, 8 MiB each), small ones, fsyncs (roll-forward
/// records) and syncs on three files of at most 12 MiB, on a 256 MiB volume (uf2fs mkfs's
/// smallest for 16 KiB blocks is 208 MiB). Beyond the flush cuts, the
/// recording is cut at every SSA block write with every subset of its four 4 KiB
/// device blocks landed (the writes before it in its window landed, none after): a
/// torn read-modify-write.
fn packed_ssa(seed: u64, scale: &Scale) -> Recording {
    let image = packed_ssa_image(256);
    let ssa = ssa_device_blocks(&image);
    let mut r = Recorder::new(image, 1 << 16);
    let mut rng = Rng::new(seed);
    let files = [("/p0", 12 * MIB), ("/p1", 12 * MIB), ("/p2", 2 * MIB)];
    for (f, _) in files {
        r.create(f);
    }
    for _ in 0..scale.len(40) {
        let (f, max) = *rng.pick(&files);
        match rng.below(100) {
            0..=59 => {
                let off = rng.below(max);
                let len = 1 + if rng.pct(60) {
                    2 * MIB + rng.below(4 * MIB)
                } else {
                    rng.below(40 * KIB)
                };
                let data = rng.bytes(len.min(max - off) as usize);
                r.write(f, off, &data);
                if rng.pct(50) {
                    r.fsync(f, rng.pct(30));
                }
            }
            60..=79 => r.fsync(f, rng.pct(30)),
            80..=89 => r.sync_fs(),
            _ => r.verify(f),
        }
    }
    let mut rec = r.finish();
    let ssa_writes = rec.writes_in(ssa.clone());
    let torn = rec.add_torn_cuts(ssa, 4, 1);
    println!("packed_ssa seed {seed}: {ssa_writes} SSA device-block writes, {torn} torn cuts");
    assert!(
        ssa_writes >= 4,
        "packed_ssa seed {seed}: the workload wrote no SSA block ({ssa_writes} device blocks)"
    );
    rec
}

/// `F2FS_IOC_MOVE_RANGE` between two files (issue 28): both written (with holes) and
/// fsync'd, then moves of block ranges either way (some reaching the source's end of
/// file, some growing the target), each followed by fsyncs of both, of one or of
/// neither; rewrites of moved-out ranges; syncs. One move in eight spans 300 to 700
/// blocks (chunks of 256). Beyond the flush cuts, the recording is cut after every
/// device write (every write before it since the last flush landed, none after), or
/// after every eighth one when a budget caps the images (the quick test: a
/// deterministic sample).
fn move_range(seed: u64, scale: &Scale) -> Recording {
    let image = fresh_image(64);
    let blocks = (image.len() / B) as u64;
    let mut r = Recorder::new(image, 1 << 15);
    let mut rng = Rng::new(seed);
    let files = ["/m0", "/m1"];
    let max = 3 * MIB;
    for f in files {
        r.create(f);
        for _ in 0..6 {
            let off = rng.below(max);
            let len = (1 + rng.below(400 * KIB)).min(max - off) as usize;
            let data = rng.bytes(len);
            r.write(f, off, &data);
        }
        r.fsync(f, false);
    }
    let b = B as u64;
    let mut big = 0;
    for _ in 0..scale.len(40) {
        let i = rng.below(2) as usize;
        let (src, dst) = (files[i], files[1 - i]);
        match rng.below(100) {
            0..=54 => {
                let size = r.data(src).size;
                if size == 0 {
                    continue;
                }
                let pos_in = rng.below(size.div_ceil(b)) * b;
                // One move in eight spans 300 to 700 blocks: it runs as two or three
                // operations of at most 256 blocks, writeback possibly between them.
                let n = if rng.pct(12) {
                    300 + rng.below(400)
                } else {
                    1 + rng.below(48)
                };
                let len = if pos_in + n * b >= size || rng.pct(15) {
                    size - pos_in
                } else {
                    n * b
                };
                let pos_out = rng.below(max / b) * b;
                big += usize::from(len > 256 * b);
                r.move_range(src, pos_in, dst, pos_out, len);
                match rng.below(10) {
                    0..=4 => {
                        r.fsync(src, rng.pct(30));
                        r.fsync(dst, rng.pct(30));
                    }
                    5..=6 => r.fsync(if rng.pct(50) { src } else { dst }, false),
                    _ => {}
                }
            }
            55..=74 => {
                let off = rng.below(max);
                let len = (1 + rng.below(64 * KIB)).min(max - off) as usize;
                let data = rng.bytes(len);
                r.write(src, off, &data);
                if rng.pct(50) {
                    r.fsync(src, false);
                }
            }
            75..=84 => r.sync_fs(),
            _ => {
                r.verify(src);
                r.verify(dst);
            }
        }
    }
    let mut rec = r.finish();
    // Every write when every distinct image is checked (the full run), else every eighth.
    let every = if scale.points == 0 { 1 } else { 8 };
    let cuts = rec.add_torn_cuts(0..blocks, 1, every);
    println!(
        "move_range seed {seed}: {big} moves of more than 256 blocks, {} device writes, {cuts} cuts at writes",
        rec.writes()
    );
    rec
}

type Workload = (&'static str, fn(u64, &Scale) -> Recording);

const WORKLOADS: [Workload; 9] = [
    ("fsx", fsx),
    ("shrink", shrink),
    ("tree", tree),
    ("small", small),
    ("gc", gc),
    ("atomic", atomic),
    ("compress", compress),
    ("packed_ssa", packed_ssa),
    ("move_range", move_range),
];

fn run(name: &str, scale: &Scale) -> Tally {
    let (_, record) = WORKLOADS.iter().find(|(n, _)| *n == name).unwrap();
    run_workload(name, scale, record)
}

/// The scale of the quick tests: one seed, one seeded subset per flush, a capped
/// number of distinct images per workload.
fn quick(points: usize) -> Scale {
    Scale {
        seeds: 1,
        seed_base: 1,
        subsets: 1,
        points,
        threads: std::env::var("UF2FS_CRASH_THREADS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2),
        workloads: None,
        length_pct: 100,
    }
}

fn assert_clean(t: &Tally, name: &str) {
    assert!(
        t.failures.is_empty() && t.panics == 0,
        "{name}: {} failures, {} panics; first: {}",
        t.failures.len(),
        t.panics,
        t.failures.first().map_or("", |s| s.as_str())
    );
}

#[test]
fn quick_fsx() {
    let t = run("fsx", &quick(150));
    assert_clean(&t, "fsx");
}

#[test]
fn quick_shrink() {
    let t = run("shrink", &quick(150));
    assert_clean(&t, "shrink");
}

#[test]
fn quick_tree() {
    let t = run("tree", &quick(150));
    assert_clean(&t, "tree");
}

#[test]
fn quick_small() {
    let t = run("small", &quick(150));
    assert_clean(&t, "small");
}

#[test]
fn quick_atomic() {
    let t = run("atomic", &quick(150));
    assert_clean(&t, "atomic");
}

#[test]
fn quick_compress() {
    let t = run("compress", &quick(150));
    assert_clean(&t, "compress");
}

/// Every torn SSA read-modify-write of the recording is checked (they are few); the
/// flush cuts are sampled.
#[test]
fn quick_packed_ssa() {
    let t = run("packed_ssa", &quick(40));
    assert_clean(&t, "packed_ssa");
}

#[test]
fn quick_move_range() {
    let t = run("move_range", &quick(60));
    assert_clean(&t, "move_range");
}

#[test]
fn quick_gc() {
    let t = run("gc", &quick(100));
    assert_clean(&t, "gc");
}

/// The judge is not blind: syncs recorded as done that never ran (an fsync of a
/// written file, a sync_fs after a rename) are reported as lost bytes and a missing
/// name at the cuts between them and the next real sync.
#[test]
fn the_judge_notices_syncs_that_never_ran() {
    let mut r = Recorder::new(fresh_image(64), 1 << 15);
    r.create("/a");
    r.mkdir("/d");
    r.create("/d/x");
    r.create("/c");
    r.write("/c", 0, &[1; 8192]);
    r.sync_fs();
    r.write("/a", 0, &[7; 10_000]);
    r.pretend_sync(Some("/a"));
    r.write("/c", 4096, &[2; 4096]);
    r.pretend_sync(Some("/c"));
    r.rename("/d/x", "/y", false);
    r.pretend_sync(None);
    r.create("/b");
    r.write("/b", 0, b"b");
    r.fsync("/b", false);
    let (a, c) = (r.ino("/a"), r.ino("/c"));
    let rec = r.finish();
    let mut tally = Tally::default();
    let scale = quick(0);
    check_recording(&rec, "control", 0, &scale, None, &mut Default::default(), &mut tally);
    println!("{}", tally.line("control"));
    let lost = |what: &str| tally.failures.iter().any(|f| f.contains(what));
    assert!(
        lost(&format!("/a (inode {a}): size 0, expected one of {{10000}}")),
        "{:#?}",
        tally.failures
    );
    assert!(
        lost(&format!("/c (inode {c}): block 1 (bytes 4096..8192) matches none")),
        "{:#?}",
        tally.failures
    );
    assert!(
        lost("/y is missing") && lost("/d/x names inode"),
        "{:#?}",
        tally.failures
    );
    assert!(
        tally.failures.iter().all(|f| !f.contains("fsck")),
        "{:#?}",
        tally.failures
    );
}

/// The judge holds each file to its own side of a move: with fsyncs of the target and
/// of the source after a move recorded as done but never run, the cuts before the
/// unmount lands show both files as before the move, which the judge reports (the
/// target's moved block and the source's hole are lost), with fsck clean.
#[test]
fn the_judge_notices_an_unsynced_move() {
    let mut r = Recorder::new(fresh_image(64), 1 << 15);
    r.create("/a");
    r.create("/b");
    r.write("/a", 0, &[3; 4 * B]);
    r.write("/b", 0, &[4; 4 * B]);
    r.fsync("/a", false);
    r.fsync("/b", false);
    r.move_range("/a", B as u64, "/b", 2 * B as u64, 2 * B as u64);
    r.pretend_sync(Some("/b"));
    r.pretend_sync(Some("/a"));
    let (a, b) = (r.ino("/a"), r.ino("/b"));
    let rec = r.finish();
    let mut tally = Tally::default();
    check_recording(&rec, "control", 0, &quick(0), None, &mut Default::default(), &mut tally);
    println!("{}", tally.line("control"));
    let lost = |what: &str| tally.failures.iter().any(|f| f.contains(what));
    assert!(
        lost(&format!("/b (inode {b}): block 2 (bytes 8192..12288) matches none"))
            && lost(&format!("/a (inode {a}): block 1 (bytes 4096..8192) matches none")),
        "{:#?}",
        tally.failures
    );
    assert!(
        tally.failures.iter().all(|f| !f.contains("fsck")),
        "{:#?}",
        tally.failures
    );
}

/// The full run: every distinct cut of `UF2FS_CRASH_SEEDS` seeds (default 6) per
/// workload with `UF2FS_CRASH_SUBSETS` seeded subsets per flush (default 4); see
/// docs/crash-consistency.md.
#[test]
#[ignore = "minutes: the full crash run (docs/crash-consistency.md)"]
fn full() {
    let scale = Scale::from_env(Scale {
        seeds: 6,
        seed_base: 1,
        subsets: 4,
        points: 0,
        threads: 0,
        workloads: None,
        length_pct: 100,
    });
    println!("crash scale: {scale:?}");
    let mut total = Tally::default();
    let mut lines = Vec::new();
    for (name, _) in WORKLOADS {
        if !scale.runs(name) {
            continue;
        }
        let t = run(name, &scale);
        lines.push(t.line(name));
        total.recordings += t.recordings;
        total.ops += t.ops;
        total.flushes += t.flushes;
        total.points += t.points;
        total.distinct += t.distinct;
        total.checked += t.checked;
        total.judged += t.judged;
        total.fsck_runs += t.fsck_runs;
        total.extra_checked += t.extra_checked;
        total.panics += t.panics;
        total.seconds += t.seconds;
        total.record_seconds += t.record_seconds;
        total.failures.extend(t.failures);
    }
    for l in &lines {
        println!("{l}");
    }
    println!("{}", total.line("total"));
    assert_clean(&total, "crash run");
}
