//! One file's slow fsync stalls nothing else of the mount: while an fsync waits on a
//! device whose flushes take 400 ms, and a LOOKUP of that file waits for its inode,
//! LOOKUPs, CREATEs and READs in another directory, served by the adapter's own
//! request functions, each finish within a bound; likewise while an fsync (or, for
//! LOOKUPs, a checkpoint) writes hundreds of node blocks to a device where each block
//! written takes 1 ms. The figures of docs/lock-stalls.md come from here
//! (`--nocapture` prints them).

use std::ffi::OsStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use uf2fs_core::device::{MemDevice, SlowFlushDevice};
use uf2fs_core::mkfs::{mkfs_blocks, MkfsOptions};
use uf2fs_core::{Fs, Ino};

use super::F2fsFuse;

/// How long each flush of the slow device takes.
const FLUSH_DELAY: Duration = Duration::from_millis(400);

/// The longest any other request may take meanwhile (a quarter of one flush).
const BOUND: Duration = Duration::from_millis(100);

fn median(v: &mut [Duration]) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

#[test]
fn a_slow_fsync_stalls_no_request_in_another_directory() {
    let (fs, delay) = slow_volume();
    let root = fs.root();
    let a = fs.mkdir(root, b"a", 0o755, 0, 0).unwrap().ino;
    let b = fs.mkdir(root, b"b", 0o755, 0, 0).unwrap().ino;
    let f = fs.create(a, b"f", 0o644, 0, 0).unwrap().ino;
    let g = fs.create(b, b"g", 0o644, 0, 0).unwrap().ino;
    fs.write(f, 0, &[7u8; 65536]).unwrap();
    fs.write(g, 0, &[9u8; 16384]).unwrap();
    fs.sync_fs().unwrap();
    fs.write(f, 65536, &[8u8; 65536]).unwrap();

    let fuse = Arc::new(F2fsFuse::new(Arc::clone(&fs), true));
    let node = |ino| fuse.inos.to_fuse(ino);
    delay.set(FLUSH_DELAY);
    let flushes = delay.flushes();

    let syncer = {
        let (fuse, f) = (Arc::clone(&fuse), node(f));
        std::thread::spawn(move || {
            let t = Instant::now();
            fuse.sync(f, false).unwrap();
            t.elapsed()
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    // A LOOKUP of the file being fsync'd: the first count takes a core handle, which
    // waits for the file's inode lock while the fsync holds it.
    let looker = {
        let (fuse, a) = (Arc::clone(&fuse), node(a));
        std::thread::spawn(move || {
            let t = Instant::now();
            fuse.lookup_entry(a, OsStr::new("f")).unwrap().unwrap();
            t.elapsed()
        })
    };
    std::thread::sleep(Duration::from_millis(50));

    let (mut lookups, mut creates, mut reads) = (Vec::new(), Vec::new(), Vec::new());
    let start = Instant::now();
    let mut i = 0;
    let mut buf = vec![0u8; 16384];
    while !syncer.is_finished() || i < 3 {
        let t = Instant::now();
        fuse.lookup_entry(node(b), OsStr::new("g")).unwrap().unwrap();
        lookups.push(t.elapsed());
        let t = Instant::now();
        let name = format!("n{i}");
        fuse.make(node(b), |fs, dir| fs.create(dir, name.as_bytes(), 0o644, 0, 0))
            .unwrap();
        creates.push(t.elapsed());
        let t = Instant::now();
        assert_eq!(fs.read(g, 0, &mut buf).unwrap(), buf.len());
        reads.push(t.elapsed());
        i += 1;
        if start.elapsed() > Duration::from_secs(30) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let fsync = syncer.join().unwrap();
    let lookup_f = looker.join().unwrap();
    let max = |v: &[Duration]| v.iter().copied().max().unwrap();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (lmax, cmax, rmax) = (max(&lookups), max(&creates), max(&reads));
    println!(
        "stalls: flush {:.0} ms, {} flushes; fsync {:.0} ms; lookup of the fsync'd file {:.0} ms; \
         other directory, {} rounds: lookup median {:.2} max {:.1} ms, create median {:.2} max {:.1} ms, \
         read median {:.2} max {:.1} ms",
        ms(FLUSH_DELAY),
        delay.flushes() - flushes,
        ms(fsync),
        ms(lookup_f),
        lookups.len(),
        ms(median(&mut lookups)),
        ms(lmax),
        ms(median(&mut creates)),
        ms(cmax),
        ms(median(&mut reads)),
        ms(rmax),
    );
    assert!(fsync >= FLUSH_DELAY, "the fsync waited for its flush");
    for (what, worst) in [("lookup", lmax), ("create", cmax), ("read", rmax)] {
        assert!(
            worst < BOUND,
            "a {what} in another directory took {worst:?} behind a slow fsync"
        );
    }
    delay.set(Duration::ZERO);
    drop(fuse);
    Arc::try_unwrap(fs).ok().unwrap().unmount().unwrap();
}

/// Time each block written takes on the slow-write device.
const WRITE_DELAY: Duration = Duration::from_millis(1);

/// Direct nodes of the file whose fsync (or whose checkpoint) writes them: one block
/// every 4 MiB, so each in a direct node of its own.
const DNODES: u64 = 400;

/// Times LOOKUPs, CREATEs, READs and WRITEs of files other than the one being
/// written out (`g` and `h` in directory `b`), each kind in a thread of its own, 5 ms
/// apart, until `busy` says stop (and at least three of each).
struct Others {
    lookups: Vec<Duration>,
    creates: Vec<Duration>,
    reads: Vec<Duration>,
    writes: Vec<Duration>,
}

impl Others {
    fn measure(
        fuse: &F2fsFuse,
        fs: &Fs,
        b: Ino,
        g: Ino,
        h: Ino,
        tag: &str,
        busy: &(dyn Fn() -> bool + Sync),
    ) -> Others {
        let node = |ino| fuse.inos.to_fuse(ino);
        let start = Instant::now();
        let times = |op: &(dyn Fn(u64) + Sync)| {
            let mut v = Vec::new();
            let mut i = 0;
            while (busy() || i < 3) && start.elapsed() < Duration::from_secs(60) {
                let t = Instant::now();
                op(i);
                v.push(t.elapsed());
                i += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
            v
        };
        let lookup = |_| {
            fuse.lookup_entry(node(b), OsStr::new("g")).unwrap().unwrap();
        };
        let create = |i| {
            let name = format!("{tag}{i}");
            fuse.make(node(b), |fs, dir| fs.create(dir, name.as_bytes(), 0o644, 0, 0))
                .unwrap();
        };
        let read = |_| {
            let mut buf = vec![0u8; 16384];
            assert_eq!(fs.read(g, 0, &mut buf).unwrap(), buf.len());
        };
        let write = |i: u64| {
            fs.write(h, (i % 64) * 4096, &[i as u8; 4096]).unwrap();
        };
        std::thread::scope(|s| {
            let l = s.spawn(|| times(&lookup));
            let c = s.spawn(|| times(&create));
            let r = s.spawn(|| times(&read));
            let w = times(&write);
            Others {
                lookups: l.join().unwrap(),
                creates: c.join().unwrap(),
                reads: r.join().unwrap(),
                writes: w,
            }
        })
    }

    /// The figures as one line: median and max of each, in ms.
    fn line(&mut self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let mut parts = Vec::new();
        for (what, v) in [
            ("lookup", &mut self.lookups),
            ("create", &mut self.creates),
            ("read", &mut self.reads),
            ("write", &mut self.writes),
        ] {
            let max = v.iter().copied().max().unwrap();
            parts.push(format!(
                "{} {what}s median {:.2} max {:.1} ms",
                v.len(),
                ms(median(v)),
                ms(max)
            ));
        }
        parts.join(", ")
    }
}

/// A volume on a slow device (delays off until set): directories `a` (file `f`, with a
/// block every 4 MiB for [`DNODES`] direct nodes, checkpointed, then written again so
/// its pages are dirty) and `b` (files `g`, 16 KiB, and `h`). Returns the file system,
/// the delays, and `a`, `b`, `f`, `g`, `h`.
fn spread_file_volume() -> (Arc<Fs>, uf2fs_core::device::FlushDelay, [Ino; 5]) {
    let (fs, delay) = slow_volume();
    let root = fs.root();
    let a = fs.mkdir(root, b"a", 0o755, 0, 0).unwrap().ino;
    let b = fs.mkdir(root, b"b", 0o755, 0, 0).unwrap().ino;
    let f = fs.create(a, b"f", 0o644, 0, 0).unwrap().ino;
    let g = fs.create(b, b"g", 0o644, 0, 0).unwrap().ino;
    let h = fs.create(b, b"h", 0o644, 0, 0).unwrap().ino;
    fs.write(g, 0, &[9u8; 16384]).unwrap();
    for i in 0..DNODES {
        fs.write(f, i << 22, &[1u8; 4096]).unwrap();
    }
    fs.sync_fs().unwrap();
    for i in 0..DNODES {
        fs.write(f, i << 22, &[2u8; 4096]).unwrap();
    }
    (fs, delay, [a, b, f, g, h])
}

/// While one file's fsync writes its [`DNODES`] data blocks and then as many direct
/// nodes (one write-out) to a device where each block written takes 1 ms, LOOKUPs,
/// CREATEs, READs and WRITEs of other files each finish within [`BOUND`].
#[test]
fn a_slow_node_write_out_stalls_no_request_on_other_files() {
    let (fs, delay, [_, b, f, g, h]) = spread_file_volume();
    let fuse = Arc::new(F2fsFuse::new(Arc::clone(&fs), true));
    delay.set_write(WRITE_DELAY);
    let syncer = {
        let (fuse, f) = (Arc::clone(&fuse), fuse.inos.to_fuse(f));
        std::thread::spawn(move || {
            let t = Instant::now();
            fuse.sync(f, false).unwrap();
            t.elapsed()
        })
    };
    std::thread::sleep(Duration::from_millis(20));
    let mut o = Others::measure(&fuse, &fs, b, g, h, "w", &|| !syncer.is_finished());
    let fsync = syncer.join().unwrap();
    println!(
        "stalls (slow writes, fsync): write {:.0} ms per block; fsync {:.0} ms; other files: {}",
        WRITE_DELAY.as_secs_f64() * 1e3,
        fsync.as_secs_f64() * 1e3,
        o.line()
    );
    assert!(
        fsync >= WRITE_DELAY * 2 * DNODES as u32,
        "the fsync wrote its data and nodes"
    );
    for (what, v) in [
        ("lookup", &o.lookups),
        ("create", &o.creates),
        ("read", &o.reads),
        ("write", &o.writes),
    ] {
        let worst = v.iter().copied().max().unwrap();
        assert!(
            worst < BOUND,
            "a {what} of another file took {worst:?} behind a slow fsync"
        );
    }
    delay.set_write(Duration::ZERO);
    drop(fuse);
    Arc::try_unwrap(fs).ok().unwrap().unmount().unwrap();
}

/// While a checkpoint writes [`DNODES`] data blocks and more node blocks to a device
/// where each block written takes 1 ms, LOOKUPs of other files finish within
/// [`BOUND`] (they take no lock the checkpoint holds). CREATEs, READs and WRITEs wait
/// for the checkpoint by design (`cp_lock`, as Linux F2FS's cp_rwsem): measured, not
/// bounded.
#[test]
fn a_slow_checkpoint_write_out_stalls_no_lookup() {
    let (fs, delay, [_, b, _, g, h]) = spread_file_volume();
    let fuse = Arc::new(F2fsFuse::new(Arc::clone(&fs), true));
    delay.set_write(WRITE_DELAY);
    let syncer = {
        let fs = Arc::clone(&fs);
        std::thread::spawn(move || {
            let t = Instant::now();
            fs.sync_fs().unwrap();
            t.elapsed()
        })
    };
    std::thread::sleep(Duration::from_millis(20));
    // Lookups alone while the checkpoint runs, then the rest (which wait for it).
    let node = |ino| fuse.inos.to_fuse(ino);
    let mut lookups = Vec::new();
    let start = Instant::now();
    while !syncer.is_finished() && start.elapsed() < Duration::from_secs(60) {
        let t = Instant::now();
        fuse.lookup_entry(node(b), OsStr::new("g")).unwrap().unwrap();
        lookups.push(t.elapsed());
        std::thread::sleep(Duration::from_millis(5));
    }
    let checkpoint = syncer.join().unwrap();
    let worst = lookups.iter().copied().max().unwrap_or_default();
    println!(
        "stalls (slow writes, checkpoint): write {:.0} ms per block; checkpoint {:.0} ms; \
         other directory: {} lookups, median {:.2} max {:.1} ms",
        WRITE_DELAY.as_secs_f64() * 1e3,
        checkpoint.as_secs_f64() * 1e3,
        lookups.len(),
        median(&mut lookups.clone()).as_secs_f64() * 1e3,
        worst.as_secs_f64() * 1e3,
    );
    assert!(
        lookups.len() >= 3,
        "the checkpoint took {checkpoint:?}: too short to measure"
    );
    assert!(
        worst < BOUND,
        "a lookup in another directory took {worst:?} behind a slow checkpoint"
    );
    // The others still work afterwards.
    let mut o = Others::measure(&fuse, &fs, b, g, h, "c", &|| false);
    assert_eq!(o.lookups.len(), 3, "{}", o.line());
    delay.set_write(Duration::ZERO);
    drop(fuse);
    Arc::try_unwrap(fs).ok().unwrap().unmount().unwrap();
}

/// A fresh 64 MiB volume in memory, opened read-write over a [`SlowFlushDevice`]
/// (no delay until the test sets one), and the handle that sets the delays.
fn slow_volume() -> (Arc<Fs>, uf2fs_core::device::FlushDelay) {
    let (fs, delay) = slow_fs();
    (Arc::new(fs), delay)
}

/// A 64 MiB read-write volume in memory behind a [`SlowFlushDevice`] (no delay yet).
fn slow_fs() -> (Fs, uf2fs_core::device::FlushDelay) {
    let bytes = 64u64 << 20;
    let (_, writes) = mkfs_blocks(&MkfsOptions::default(), bytes).unwrap();
    let mut image = vec![0u8; bytes as usize];
    for (addr, data) in writes {
        let at = addr as usize * 4096;
        image[at..at + data.len()].copy_from_slice(&data);
    }
    let (dev, delay) = SlowFlushDevice::new(Box::new(MemDevice::new(image)));
    let opts = uf2fs_core::OpenOptions { read_write: true };
    let fs = Fs::open_device_with(Box::new(dev), "slow", opts).unwrap();
    (fs, delay)
}

/// The same through a real FUSE mount (the kernel's requests, `crate::mount`'s worker
/// threads and background work): while `fsync(2)` of a file waits on flushes that take
/// 2 s each, `stat(2)` of files in another directory, each a LOOKUP the kernel has not
/// cached, finishes in under half a flush. Bounds generous for a loaded 2-core machine.
/// Needs /dev/fuse and fusermount3; without them it passes with a note, unless
/// UF2FS_REQUIRE_FUSE is set (CI sets it).
#[test]
fn a_slow_fsync_stalls_no_lookup_through_a_fuse_mount() {
    const SLOW_FLUSH: Duration = Duration::from_secs(2);
    const STAT_BOUND: Duration = Duration::from_secs(1);
    let fusermount = std::process::Command::new("fusermount3").arg("-V").output();
    if !std::path::Path::new("/dev/fuse").exists() || fusermount.is_err() {
        assert!(
            std::env::var_os("UF2FS_REQUIRE_FUSE").is_none(),
            "UF2FS_REQUIRE_FUSE is set but /dev/fuse or fusermount3 is missing"
        );
        eprintln!("skipped: no /dev/fuse or fusermount3");
        return;
    }
    let (fs, delay) = slow_fs();
    let root = fs.root();
    let a = fs.mkdir(root, b"a", 0o755, 0, 0).unwrap().ino;
    let b = fs.mkdir(root, b"b", 0o755, 0, 0).unwrap().ino;
    let f = fs.create(a, b"f", 0o644, 0, 0).unwrap().ino;
    fs.write(f, 0, &[7u8; 65536]).unwrap();
    const NAMES: usize = 200;
    for i in 0..NAMES {
        fs.create(b, format!("g{i}").as_bytes(), 0o644, 0, 0).unwrap();
    }
    fs.sync_fs().unwrap();

    let mnt = std::env::temp_dir().join(format!("uf2fs-stall-mount.{}", std::process::id()));
    std::fs::create_dir_all(&mnt).unwrap();
    let opts = crate::MountOptions {
        read_only: false,
        checkpoint_interval: None,
        ..crate::MountOptions::default()
    };
    let server = {
        let mnt = mnt.clone();
        std::thread::spawn(move || crate::mount(fs, &mnt, &opts))
    };
    let mounted = Instant::now();
    while !mnt.join("a").exists() {
        assert!(!server.is_finished(), "the mount ended before serving");
        assert!(mounted.elapsed() < Duration::from_secs(30), "not mounted after 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let unmount = || {
        let _ = std::process::Command::new("fusermount3").arg("-u").arg(&mnt).status();
    };

    // Dirty data in a/f, then its fsync on a device whose flushes take 2 s.
    let mut file = std::fs::OpenOptions::new().write(true).open(mnt.join("a/f")).unwrap();
    std::io::Write::write_all(&mut file, &[8u8; 65536]).unwrap();
    delay.set(SLOW_FLUSH);
    let flushes = delay.flushes();
    let syncer = std::thread::spawn(move || {
        let t = Instant::now();
        let r = file.sync_all();
        (r, t.elapsed())
    });
    std::thread::sleep(Duration::from_millis(200));
    let mut during = Vec::new();
    let mut i = 0;
    while !syncer.is_finished() && i < NAMES {
        let t = Instant::now();
        let m = std::fs::metadata(mnt.join(format!("b/g{i}")));
        let took = t.elapsed();
        if m.is_err() {
            unmount();
        }
        assert!(m.unwrap().is_file());
        if !syncer.is_finished() {
            during.push(took);
        }
        i += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    let (synced, fsync) = syncer.join().unwrap();
    delay.set(Duration::ZERO);
    let flushed = delay.flushes() - flushes;
    unmount();
    server.join().unwrap().unwrap();
    let _ = std::fs::remove_dir(&mnt);
    synced.unwrap();
    assert!(during.len() >= 5, "stats while the fsync waited: {}", during.len());
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let worst = during.iter().copied().max().unwrap_or_default();
    println!(
        "stalls through FUSE: flush {:.0} ms, {flushed} flushes; fsync {:.0} ms; {} stats of \
         uncached names in another directory meanwhile: median {:.2} max {:.1} ms",
        ms(SLOW_FLUSH),
        ms(fsync),
        during.len(),
        ms(median(&mut during.clone())),
        ms(worst),
    );
    assert!(fsync >= SLOW_FLUSH, "the fsync waited for a slow flush ({fsync:?})");
    assert!(worst < STAT_BOUND, "a stat took {worst:?} behind a slow fsync");
}
