//! Parallel writeback contexts ([`uf2fs_core::writeback`]): flusher threads, one per
//! context, each with its own warm data log, while writers write and a checkpoint
//! thread cuts in. Every byte must read back, `fsck.f2fs -f` must find the image
//! clean (stream logs are closed, their summaries written, before every checkpoint),
//! and with one context per writer each file must stay in few extents.

#[path = "namespace/model.rs"]
#[allow(dead_code, unused_imports)]
mod model;
#[path = "namespace/world.rs"]
#[allow(dead_code, unused_imports)]
mod world;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use uf2fs_core::background::{Background, BackgroundOptions};
use uf2fs_core::writeback::policy_by_name;
use uf2fs_core::Fs;
use world::{fsck_clean, image, Variant, MIB};

fn block_of(w: u64, f: u64, off: u64) -> Vec<u8> {
    let mut b = vec![0u8; 64 * 1024];
    for (k, c) in b.chunks_mut(8).enumerate() {
        c.copy_from_slice(&((w << 56) ^ (f << 40) ^ (off + 8 * k as u64)).to_le_bytes());
    }
    b
}

/// Writers `writers` write `files` files of `size` bytes each (64 KiB writes) through
/// `contexts` contexts under `policy`, a thread checkpointing meanwhile; returns the
/// extents of every file after an unmount, fsck and reopen, having checked every byte,
/// and the contexts' counters.
///
/// The files are created and their first 64 KiB written before the writers start,
/// one after another: a policy that looks at the contexts' loads then gives each file
/// its context by the same loads in every run, not by how the writer threads happen
/// to interleave with the flusher threads (under least-loaded, two writers' first
/// pages arriving while both contexts were momentarily clean once put both big files
/// in one context).
fn run(
    tag: &str,
    contexts: usize,
    policy: &str,
    writers: u64,
    files: u64,
    size: u64,
    checkpoints: bool,
) -> (Vec<usize>, Vec<uf2fs_core::writeback::WritebackStats>) {
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), tag, Variant::Uf2fs(""), 512 * MIB);
    let fs = Arc::new(Fs::open_rw(&img, &[]).unwrap());
    fs.set_writeback(contexts, policy_by_name(policy).unwrap()).unwrap();
    let bg = Background::start(
        &fs,
        BackgroundOptions {
            checkpoint_interval: None,
            gc: None,
            writeback_threads: true,
            paced_gc: false,
        },
    )
    .unwrap();
    let first = block_of(0, 0, 0).len() as u64;
    let mut inos = Vec::new();
    for w in 0..writers {
        for f in 0..files {
            let name = format!("w{w}f{f}");
            let ino = fs.create(fs.root(), name.as_bytes(), 0o100644, 0, 0).unwrap().ino;
            let b = block_of(w, f, 0);
            assert_eq!(fs.write(ino, 0, &b).unwrap(), b.len());
            inos.push(ino);
        }
    }
    let inos = Arc::new(inos);
    let done = Arc::new(AtomicBool::new(false));
    let cp = {
        let (fs, done) = (Arc::clone(&fs), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut n = 0;
            while checkpoints && !done.load(Ordering::Relaxed) {
                fs.write_checkpoint().unwrap();
                n += 1;
                std::thread::sleep(std::time::Duration::from_millis(15));
            }
            n
        })
    };
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let (fs, inos) = (Arc::clone(&fs), Arc::clone(&inos));
            std::thread::spawn(move || {
                for f in 0..files {
                    let ino = inos[(w * files + f) as usize];
                    let mut off = first;
                    while off < size {
                        let b = block_of(w, f, off);
                        assert_eq!(fs.write(ino, off, &b).unwrap(), b.len());
                        off += b.len() as u64;
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    done.store(true, Ordering::Relaxed);
    assert!(
        cp.join().unwrap() > 0 || !checkpoints,
        "the checkpoint thread never ran"
    );
    bg.stop();
    let stats = fs.writeback_stats();
    assert_eq!(stats.len(), contexts);
    if contexts > 1 {
        assert!(
            stats.iter().filter(|s| s.pages > 0).count() > 1,
            "one context did all: {stats:?}"
        );
    }
    Arc::try_unwrap(fs).ok().unwrap().unmount().unwrap();
    fsck_clean(&img, tag);
    let fs = Fs::open(&img, &[]).unwrap();
    let mut extents = Vec::new();
    for w in 0..writers {
        for f in 0..files {
            let ino = fs.lookup(fs.root(), format!("w{w}f{f}").as_bytes()).unwrap();
            let mut got = vec![0u8; 64 * 1024];
            let mut off = 0;
            while off < size {
                fs.read(ino, off, &mut got).unwrap();
                assert!(got == block_of(w, f, off), "{tag}: w{w}f{f} differs at {off}");
                off += got.len() as u64;
            }
            extents.push(fs.extents(ino).unwrap().len());
        }
    }
    (extents, stats)
}

#[test]
fn contexts_write_back_in_parallel_beside_checkpoints_and_images_stay_clean() {
    for (contexts, policy) in [(1, "single"), (2, "ino-hash"), (3, "least-loaded")] {
        let (ext, _) = run(&format!("wb{contexts}"), contexts, policy, 3, 2, 12 * MIB, true);
        assert_eq!(ext.len(), 6);
    }
}

#[test]
fn a_context_per_writer_keeps_each_file_in_few_extents() {
    // Two writers, one big file each, no checkpoint until the end: with one context
    // the two files interleave in the warm data log at every writeback round; with a
    // context (and a log) each they do not. (Checkpoints beside them are the other
    // test's business: their timing moves extents either way.)
    let (one, _) = run("one", 1, "single", 2, 1, 48 * MIB, false);
    let (two, stats) = run("two", 2, "least-loaded", 2, 1, 48 * MIB, false);
    // Each context wrote most of a file (the rest goes out with the unmount's
    // checkpoint): the writers' files went to two contexts.
    for (c, s) in stats.iter().enumerate() {
        assert!(
            s.pages > 48 * MIB / 4096 / 2,
            "context {c} wrote {} pages: {stats:?}",
            s.pages
        );
    }
    let sum = |v: &[usize]| v.iter().sum::<usize>();
    assert!(sum(&two) < sum(&one), "one context: {one:?} extents, two: {two:?}");
}
