//! Concurrent stress on the core API, as fstests' fsstress drives a mount: several
//! threads create, link, rename, unlink and remove names in one small shared tree,
//! while others look names up, stat, list directories, write and truncate files, and a
//! checkpoint thread cuts in. No operation may see a damaged structure
//! ([`Error::Corrupt`]); after an unmount `fsck.f2fs -f` must find the image clean and a
//! read-only reopen must walk the whole tree.
//!
//! `UF2FS_STRESS_OPS` (operations per thread, default 3000) and `UF2FS_STRESS_SEEDS`
//! (comma-separated seeds) make longer runs.

#[path = "namespace/model.rs"]
#[allow(dead_code, unused_imports)]
mod model;
#[path = "namespace/world.rs"]
#[allow(dead_code, unused_imports)]
mod world;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use uf2fs_core::{Error, FileKind, Fs, Ino, RENAME_EXCHANGE, RENAME_NOREPLACE};
use world::{fsck_clean, image, Variant, EXTRA, MIB};

/// SplitMix64: each thread's operations replay from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Directories of the shared tree (below the root), some nested.
const DIRS: &[&str] = &["", "a", "b", "a/c", "a/c/d", "b/e"];
/// Names per directory: few, so that threads keep meeting on the same names.
const NAMES: u64 = 24;

/// A name of the pool: short ones (inline dentries) and long ones (as generic/013's
/// deep, long names), so that directories grow past their inline area.
fn name(r: &mut Rng) -> Vec<u8> {
    let i = r.below(NAMES);
    let len = if i % 3 == 0 {
        120 + (i as usize * 7) % 120
    } else {
        4 + i as usize % 8
    };
    let mut s = format!("n{i:02}-").into_bytes();
    while s.len() < len {
        s.push(b'a' + (s.len() % 26) as u8);
    }
    s
}

/// A directory of the pool (which may have been removed or replaced by a file).
fn dir(fs: &Fs, r: &mut Rng) -> Option<Ino> {
    let d = DIRS[r.below(DIRS.len() as u64) as usize];
    let ino = fs.resolve(format!("/{d}").as_bytes(), true).ok()?;
    (fs.stat(ino).ok()?.kind == FileKind::Dir).then_some(ino)
}

/// Whether `e` is an answer a racing namespace may give (a name gone or taken, a
/// directory not empty, a type that changed...); a damaged structure is not.
fn expected(e: &Error) -> bool {
    !matches!(
        e,
        Error::Corrupt { .. } | Error::Io { .. } | Error::Unsupported { .. } | Error::ReadOnly(_)
    )
}

/// One thread's operations.
fn worker(fs: &Fs, seed: u64, ops: u64, failures: &AtomicU64, stop: &AtomicBool) {
    let mut r = Rng(seed);
    let check = |what: &str, res: Result<(), Error>| {
        if let Err(e) = res {
            if !expected(&e) {
                eprintln!("seed {seed}: {what}: {e}");
                failures.fetch_add(1, Ordering::Relaxed);
                stop.store(true, Ordering::Relaxed);
            }
        }
    };
    for _ in 0..ops {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let Some(d) = dir(fs, &mut r) else { continue };
        let n = name(&mut r);
        match r.below(16) {
            0 | 1 => check("create", fs.create(d, &n, 0o644, 0, 0).map(drop)),
            2 => check("mkdir", fs.mkdir(d, &n, 0o755, 0, 0).map(drop)),
            3 => {
                // Short targets stay inline in the inode, long ones take a block.
                let target = if r.below(2) == 0 {
                    b"t".to_vec()
                } else {
                    vec![b'x'; 3000]
                };
                check("symlink", fs.symlink(d, &n, &target, 0, 0).map(drop))
            }
            4 => {
                let res = fs.lookup(d, &n).and_then(|ino| {
                    let d2 = dir(fs, &mut r).unwrap_or(d);
                    fs.link(ino, d2, &name(&mut r)).map(drop)
                });
                check("link", res)
            }
            5 | 6 => {
                let d2 = dir(fs, &mut r).unwrap_or(d);
                let flags = [0, 0, RENAME_NOREPLACE, RENAME_EXCHANGE][r.below(4) as usize];
                check("rename", fs.rename(d, &n, d2, &name(&mut r), flags))
            }
            7 | 8 => check("unlink", fs.unlink(d, &n)),
            9 => check("rmdir", fs.rmdir(d, &n)),
            10 | 11 => {
                let res = fs.lookup(d, &n).and_then(|ino| {
                    let st = fs.stat(ino)?;
                    if st.kind == FileKind::Symlink {
                        fs.read_link(ino)?;
                    }
                    Ok(())
                });
                check("lookup/stat", res)
            }
            12 => check("read_dir", fs.read_dir(d).map(drop)),
            13 => {
                let res = fs.lookup(d, &n).and_then(|ino| {
                    if fs.stat(ino)?.kind != FileKind::File {
                        return Ok(());
                    }
                    let data = vec![seed as u8; 1 + r.below(20000) as usize];
                    fs.write(ino, r.below(40000), &data).map(drop)
                });
                check("write", res)
            }
            14 => {
                let res = fs.lookup(d, &n).and_then(|ino| {
                    if fs.stat(ino)?.kind != FileKind::File {
                        return Ok(());
                    }
                    fs.truncate(ino, r.below(30000))
                });
                check("truncate", res)
            }
            _ => {
                let res = fs.lookup(d, &n).and_then(|ino| {
                    let st = fs.stat(ino)?;
                    if st.kind != FileKind::File {
                        return Ok(());
                    }
                    let mut buf = vec![0u8; 8192];
                    fs.read(ino, 0, &mut buf).map(drop)
                });
                check("read", res)
            }
        }
    }
}

/// Every name below the root, walked read-only; fails on a damaged structure.
fn walk_all(fs: &Fs, ino: Ino, depth: usize) -> Result<usize, Error> {
    let mut n = 0;
    for e in fs.read_dir(ino)? {
        let st = fs.stat(e.ino)?;
        n += 1;
        match st.kind {
            FileKind::Dir if depth < 64 => n += walk_all(fs, e.ino, depth + 1)?,
            FileKind::Symlink => {
                fs.read_link(e.ino)?;
            }
            _ => {}
        }
    }
    Ok(n)
}

fn stress(seed: u64, threads: u64, ops: u64) {
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), "stress.img", Variant::Uf2fs(EXTRA), 128 * MIB);
    let fs = Fs::open_rw(&img, &[]).unwrap();
    for d in &DIRS[1..] {
        let (parent, leaf) = d.rsplit_once('/').unwrap_or(("", d));
        let p = fs.resolve(format!("/{parent}").as_bytes(), true).unwrap();
        fs.mkdir(p, leaf.as_bytes(), 0o755, 0, 0).unwrap();
    }
    let failures = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (fs, failures, stop, done) = (&fs, &failures, &stop, &done);
            s.spawn(move || {
                worker(fs, seed.wrapping_mul(1000) + t, ops, failures, stop);
                done.fetch_add(1, Ordering::Relaxed);
            });
        }
        let (fs, failures, stop, done) = (&fs, &failures, &stop, &done);
        s.spawn(move || {
            while done.load(Ordering::Relaxed) < threads && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(15));
                if let Err(e) = fs.write_checkpoint() {
                    eprintln!("seed {seed}: checkpoint: {e}");
                    failures.fetch_add(1, Ordering::Relaxed);
                    stop.store(true, Ordering::Relaxed);
                }
            }
        });
    });
    assert_eq!(
        failures.load(Ordering::Relaxed),
        0,
        "seed {seed}: damaged structures seen"
    );
    let live = walk_all(&fs, fs.root(), 0).unwrap_or_else(|e| panic!("seed {seed}: walk before unmount: {e}"));
    fs.unmount().unwrap();
    fsck_clean(&img, &format!("concurrent stress, seed {seed}"));
    let ro = Fs::open(&img, &[]).unwrap();
    let back = walk_all(&ro, ro.root(), 0).unwrap_or_else(|e| panic!("seed {seed}: walk after reopen: {e}"));
    assert_eq!(live, back, "seed {seed}: names before unmount and after reopen");
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
fn concurrent_namespace_stress_leaves_a_clean_image() {
    let ops = env_u64("UF2FS_STRESS_OPS", 3000);
    let seeds: Vec<u64> = std::env::var("UF2FS_STRESS_SEEDS")
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 2, 3]);
    for seed in seeds {
        stress(seed, 6, ops);
    }
}

/// A memory device that can hold one read of one block until the test lets it go:
/// the reader stops between its NAT lookup and its device read of a node.
struct GatedDevice {
    inner: uf2fs_core::device::MemDevice,
    gate: std::sync::Mutex<Option<Gate>>,
}

/// The block whose next read waits, and the two signals: "a reader is waiting" and
/// "go on".
struct Gate {
    addr: u64,
    waiting: std::sync::mpsc::Sender<()>,
    go: std::sync::mpsc::Receiver<()>,
}

struct SharedGated(std::sync::Arc<GatedDevice>);

impl uf2fs_core::device::BlockDevice for SharedGated {
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> uf2fs_core::Result<()> {
        let gate = {
            let mut g = self.0.gate.lock().unwrap();
            if g.as_ref().is_some_and(|g| g.addr == blkaddr) {
                g.take()
            } else {
                None
            }
        };
        if let Some(g) = gate {
            g.waiting.send(()).unwrap();
            g.go.recv().unwrap();
        }
        self.0.inner.read_blocks(blkaddr, buf)
    }
    fn block_count(&self) -> u64 {
        self.0.inner.block_count()
    }
    fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> uf2fs_core::Result<()> {
        self.0.inner.write_blocks(blkaddr, buf)
    }
}

/// The race generic/013 and fsstress hit: a reader (stat, lookup: no operation lock)
/// looks a node's address up, a writer changes the node and a checkpoint writes it
/// elsewhere, then the reader reads the old block. That old copy must not become the
/// node's cached copy: the next change would start from it (here, an inode losing the
/// link just added, so that unlinking its other name frees it under a live entry).
#[test]
fn a_reader_racing_a_checkpoint_does_not_cache_an_old_node() {
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), "gate.img", Variant::Uf2fs(EXTRA), 64 * MIB);
    let (ino, root) = {
        let fs = Fs::open_rw(&img, &[]).unwrap();
        let root = fs.root();
        let ino = fs.mknod(root, b"a", 0o20644, (1, 3), 0, 0).unwrap().ino;
        fs.unmount().unwrap();
        (ino, root)
    };
    let dev = std::sync::Arc::new(GatedDevice {
        inner: uf2fs_core::device::MemDevice::new(std::fs::read(&img).unwrap()),
        gate: std::sync::Mutex::new(None),
    });
    let fs = Fs::open_device_with(
        Box::new(SharedGated(dev.clone())),
        "gate",
        uf2fs_core::OpenOptions { read_write: true },
    )
    .unwrap();
    let old = fs.node_blkaddr(ino).unwrap();
    let (waiting_tx, waiting) = std::sync::mpsc::channel();
    let (go, go_rx) = std::sync::mpsc::channel();
    *dev.gate.lock().unwrap() = Some(Gate {
        addr: old,
        waiting: waiting_tx,
        go: go_rx,
    });
    std::thread::scope(|s| {
        let reader = s.spawn(|| fs.stat(ino).map(|st| st.nlink));
        waiting.recv().unwrap();
        // The reader holds the old address; the inode gains a link and moves.
        fs.link(ino, root, b"b").unwrap();
        fs.write_checkpoint().unwrap();
        assert_ne!(fs.node_blkaddr(ino).unwrap(), old);
        go.send(()).unwrap();
        // Whatever the reader saw, it saw one whole version of the inode.
        let seen = reader.join().unwrap().unwrap();
        assert!(seen == 1 || seen == 2, "{seen} links");
    });
    assert_eq!(fs.stat(ino).unwrap().nlink, 2, "the cached inode lost the new link");
    fs.unlink(root, b"a").unwrap();
    let st = fs.stat(fs.lookup(root, b"b").unwrap()).unwrap();
    assert_eq!(st.nlink, 1);
    fs.unmount().unwrap();
    let bytes = match std::sync::Arc::try_unwrap(dev) {
        Ok(d) => d.inner.into_bytes(),
        Err(_) => panic!("device still shared"),
    };
    std::fs::write(&img, bytes).unwrap();
    fsck_clean(&img, "a reader racing a checkpoint");
}

/// Writers filling the volume at once: each operation checks its room before its first
/// change, and must hold the new blocks it counted on until it has made them, or a
/// writer racing it takes them and the first one runs short halfway (which fails the
/// whole file system: fsstress on a full mount turned it read-only). Every writer must
/// see only short writes and `NoSpace`, and the volume must stay writable.
#[test]
fn writers_filling_the_volume_together_get_enospc_not_a_failed_file_system() {
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), "full.img", Variant::Uf2fs(EXTRA), 64 * MIB);
    let fs = Fs::open_rw(&img, &[]).unwrap();
    let root = fs.root();
    let failures = AtomicU64::new(0);
    let full = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..12u64 {
            let (fs, failures, full) = (&fs, &failures, &full);
            s.spawn(move || {
                let mut r = Rng(t + 77);
                for i in 0..600 {
                    let name = format!("w{t}-{i}");
                    let ino = match fs.create(root, name.as_bytes(), 0o644, 0, 0) {
                        Ok(st) => st.ino,
                        Err(e) if e.is_no_space() => {
                            full.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        Err(e) => {
                            eprintln!("create {name}: {e}");
                            failures.fetch_add(1, Ordering::Relaxed);
                            return;
                        }
                    };
                    let data = vec![t as u8 + 1; 1 + r.below(400_000) as usize];
                    match fs.write(ino, r.below(40_000), &data) {
                        Ok(_) => {}
                        Err(e) if e.is_no_space() => {
                            full.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => {
                            eprintln!("write {name}: {e}");
                            failures.fetch_add(1, Ordering::Relaxed);
                            return;
                        }
                    }
                    if r.below(3) == 0 {
                        let _ = fs.unlink(root, format!("w{t}-{}", r.below(i + 1)).as_bytes());
                    }
                }
            });
        }
    });
    assert_eq!(failures.load(Ordering::Relaxed), 0, "errors other than NoSpace");
    assert!(full.load(Ordering::Relaxed) > 0, "the volume never filled up");
    // Still writable: a checkpoint, unlinks of half the files, a new file written.
    fs.write_checkpoint().unwrap();
    for (i, e) in fs.read_dir(root).unwrap().into_iter().enumerate() {
        if i % 2 == 0 {
            fs.unlink(root, &e.name).unwrap();
        }
    }
    fs.write_checkpoint().unwrap();
    let ino = fs.create(root, b"after", 0o644, 0, 0).unwrap().ino;
    assert_eq!(fs.write(ino, 0, &[9u8; 65536]).unwrap(), 65536);
    fs.unmount().unwrap();
    fsck_clean(&img, "writers filling the volume");
}
