//! Concurrent stress through the kernel, as fstests' fsstress (generic/013) drives a
//! mount: several processes' worth of threads create files, directories, device nodes
//! and symlinks under long padded names, link, rename (inside one directory, across
//! directories, over names), unlink, remove directories, write, fsync, truncate, stat
//! and list, in one shared tree. No call may fail with a damaged structure (`EUCLEAN`),
//! an I/O error or a read-only file system; a final `rm -rf` must empty the tree; the
//! unmount must succeed and `fsck.f2fs -f` find the image clean. A second run fills a
//! small volume with many writers at once: `ENOSPC` only, and the volume stays
//! writable.
//!
//! `UF2FS_MOUNT_STRESS_OPS` (per thread, default 1500) and `UF2FS_MOUNT_STRESS_SEEDS`
//! make longer runs. Needs /dev/fuse and fusermount3 (see `common::mount`).

mod common;

use common::fsck;
use common::mount::{fresh_volume, fuse_available, Mounted};
use std::fs;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use uf2fs_testkit::rng::Rng;

/// Names per kind: few, so that threads keep meeting on them.
const NAMES: u64 = 12;
/// Directory levels a path goes down at most.
const DEPTH: u64 = 3;

/// Name `i` of `kind` ('f' file, 'd' directory, 'c' device, 'l' symlink): most are
/// padded to long names (fsstress -r), so that directories leave their inline area
/// while renames and links run in them.
fn name_of(kind: char, i: u64) -> String {
    let pad = [0, 30, 120, 200][(i % 4) as usize];
    format!("{kind}{i:02}{}", "X".repeat(pad))
}

fn name(r: &mut Rng) -> String {
    let kind = ['f', 'd', 'c', 'l'][r.below(4) as usize];
    name_of(kind, r.below(NAMES))
}

/// A path down 0 to [`DEPTH`] directories of the pool (which may not exist) to a name
/// of the pool: directories are made and removed all the time, so fresh inline ones
/// keep filling up.
fn path(mnt: &Path, r: &mut Rng) -> PathBuf {
    let mut p = mnt.to_path_buf();
    for _ in 0..r.below(DEPTH + 1) {
        p.push(name_of('d', r.below(NAMES)));
    }
    p.join(name(r))
}

/// Errors a racing namespace, or a request the kernel refuses, may give; the others
/// (EUCLEAN, EIO, EROFS...) mean damage.
fn expected(e: &std::io::Error) -> bool {
    let code = e.raw_os_error().unwrap_or(0);
    [
        libc::ENOENT,
        libc::EEXIST,
        libc::ENOTEMPTY,
        libc::ENOTDIR,
        libc::EISDIR,
        libc::EINVAL,
        libc::ENOSPC,
        libc::EMLINK,
        libc::EXDEV,
        libc::ENAMETOOLONG,
        // Hard links to directories, device nodes opened on a nodev mount.
        libc::EPERM,
        libc::EACCES,
        libc::ENXIO,
        libc::ENODEV,
        libc::ELOOP,
    ]
    .contains(&code)
}

fn mknod(p: &Path) -> std::io::Result<()> {
    use nix::sys::stat::{makedev, mknod, Mode, SFlag};
    // A character device 1:3, as fsstress makes them.
    mknod(p, SFlag::S_IFCHR, Mode::from_bits_truncate(0o644), makedev(1, 3)).map_err(std::io::Error::from)
}

/// One thread's operations; returns the unexpected errors it saw.
fn worker(mnt: &Path, seed: u64, ops: u64) -> Vec<String> {
    let mut r = Rng::new(seed);
    let mut bad = Vec::new();
    for _ in 0..ops {
        let p = path(mnt, &mut r);
        let res: std::io::Result<()> = match r.below(20) {
            0..=2 => fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o644)
                .open(&p)
                .and_then(|mut f| {
                    let data = vec![seed as u8; 1 + r.below(70_000) as usize];
                    f.write_all(&data)?;
                    if r.below(4) == 0 {
                        f.sync_all()?;
                    }
                    Ok(())
                }),
            3 => fs::create_dir(&p),
            4 => mknod(&p),
            5 => {
                let target = if r.below(2) == 0 {
                    "t".repeat(10)
                } else {
                    "u".repeat(600)
                };
                std::os::unix::fs::symlink(target, &p)
            }
            6 | 7 => fs::hard_link(&p, path(mnt, &mut r)),
            8..=10 => {
                // Half of the renames stay in one directory.
                let to = if r.below(2) == 0 {
                    p.with_file_name(name(&mut r))
                } else {
                    path(mnt, &mut r)
                };
                fs::rename(&p, to)
            }
            11 | 12 => fs::remove_file(&p),
            13 => fs::remove_dir(&p),
            14 => fs::OpenOptions::new()
                .write(true)
                .open(&p)
                .and_then(|f| f.set_len(r.below(100_000))),
            15 | 16 => fs::symlink_metadata(&p).map(drop),
            17 => fs::read_dir(p.parent().unwrap()).and_then(|mut d| d.try_for_each(|e| e.map(drop))),
            18 => fs::read_link(&p).map(drop),
            _ => fs::read(&p).map(drop),
        };
        if let Err(e) = res {
            if !expected(&e) {
                bad.push(format!("seed {seed}: {}: {e}", p.display()));
                if bad.len() > 20 {
                    break;
                }
            }
        }
    }
    bad
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn stress(seed: u64, threads: u64, ops: u64) {
    let v = fresh_volume("stress", "512M");
    let log = v.tmp.path().join("mount.log");
    let mut m = Mounted::start(&v.img, &v.mnt, &log, &["-o", "cp_interval=1"]);
    let bad: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let mnt = &v.mnt;
                s.spawn(move || worker(mnt, seed * 1000 + t, ops))
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let mut rm_errors = Vec::new();
    for e in fs::read_dir(&v.mnt).unwrap() {
        let p = e.unwrap().path();
        let r = if p.is_dir() && !p.is_symlink() {
            fs::remove_dir_all(&p)
        } else {
            fs::remove_file(&p)
        };
        if let Err(e) = r {
            rm_errors.push(format!("{}: {e}", p.display()));
        }
    }
    let (ok, text) = m.unmount();
    assert!(
        bad.is_empty(),
        "seed {seed}: unexpected errors:\n{}\n{text}",
        bad[..bad.len().min(20)].join("\n")
    );
    assert!(rm_errors.is_empty(), "seed {seed}: rm -rf: {rm_errors:?}\n{text}");
    assert!(ok, "seed {seed}: unmount failed: {text}");
    fsck::clean(&v.img, v.tmp.path());
}

#[test]
fn concurrent_namespace_and_data_stress_on_the_mount() {
    if !fuse_available(&[]) {
        return;
    }
    let ops = env_u64("UF2FS_MOUNT_STRESS_OPS", 1500);
    let seeds: Vec<u64> = std::env::var("UF2FS_MOUNT_STRESS_SEEDS")
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 2]);
    for seed in seeds {
        stress(seed, 8, ops);
    }
}

#[test]
fn many_writers_filling_a_mount_get_enospc_and_it_stays_writable() {
    if !fuse_available(&[]) {
        return;
    }
    let v = fresh_volume("fill", "96M");
    let log = v.tmp.path().join("mount.log");
    let mut m = Mounted::start(&v.img, &v.mnt, &log, &[]);
    let full = AtomicU64::new(0);
    let bad: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..12u64)
            .map(|t| {
                let (mnt, full) = (&v.mnt, &full);
                s.spawn(move || {
                    let mut r = Rng::new(t + 5);
                    let mut bad = Vec::new();
                    for i in 0..150 {
                        let p = mnt.join(format!("w{t}-{i}"));
                        let res = fs::File::create(&p).and_then(|mut f| {
                            let data = vec![t as u8; 1 + r.below(1_500_000) as usize];
                            f.write_all(&data)
                        });
                        match res {
                            Err(e) if e.kind() == ErrorKind::StorageFull => {
                                full.fetch_add(1, Ordering::Relaxed);
                                let _ = fs::remove_file(mnt.join(format!("w{t}-{}", r.below(i + 1))));
                            }
                            Err(e) => bad.push(format!("{}: {e}", p.display())),
                            Ok(()) => {}
                        }
                    }
                    bad
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let after = fs::write(v.mnt.join("after"), b"still writable");
    for e in fs::read_dir(&v.mnt).unwrap() {
        let _ = fs::remove_file(e.unwrap().path());
    }
    let again = fs::write(v.mnt.join("again"), vec![1u8; 1 << 20]);
    let (ok, text) = m.unmount();
    assert!(
        bad.is_empty(),
        "unexpected errors: {:?}\n{text}",
        &bad[..bad.len().min(10)]
    );
    assert!(full.load(Ordering::Relaxed) > 0, "the volume never filled up");
    assert!(
        after.is_ok() || after.as_ref().is_err_and(|e| e.kind() == ErrorKind::StorageFull),
        "{after:?}"
    );
    again.unwrap();
    assert!(ok, "unmount failed: {text}");
    fsck::clean(&v.img, v.tmp.path());
}
