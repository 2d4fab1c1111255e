//! One file's slow fsync stalls nothing else of the mount: while an fsync waits on a
//! device whose flushes take 400 ms, and a LOOKUP of that file waits for its inode,
//! LOOKUPs, CREATEs and READs in another directory, served by the adapter's own
//! request functions, each finish within a bound. The figures of docs/lock-stalls.md
//! come from here (`--nocapture` prints them).

use std::ffi::OsStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use uf2fs_core::device::{MemDevice, SlowFlushDevice};
use uf2fs_core::mkfs::{mkfs_blocks, MkfsOptions};
use uf2fs_core::Fs;

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
    let bytes = 64u64 << 20;
    let (_, writes) = mkfs_blocks(&MkfsOptions::default(), bytes).unwrap();
    let mut image = vec![0u8; bytes as usize];
    for (addr, data) in writes {
        let at = addr as usize * 4096;
        image[at..at + data.len()].copy_from_slice(&data);
    }
    let (dev, delay) = SlowFlushDevice::new(Box::new(MemDevice::new(image)));
    let opts = uf2fs_core::OpenOptions { read_write: true };
    let fs = Arc::new(Fs::open_device_with(Box::new(dev), "slow", opts).unwrap());
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
