//! The write target: open a damaged image read-write (the `image` target's damage model,
//! on an in-memory overlay) and run a mix of creates, writes, renames, removals, fsyncs,
//! truncates, GC passes and checkpoints, then unmount and reopen what was made durable.
//!
//! A panic, a hang (libFuzzer's -timeout) or a huge allocation (-malloc_limit_mb) is a
//! bug, and so is
//!
//! * a write outside the volume's areas: below the checkpoint area (but the two superblock
//!   blocks) or past the end of the image, or a discard outside the main area;
//! * an image that no longer opens after the read-write open succeeded: whether the
//!   unmount wrote its checkpoint or the core stopped after an error, the last durable
//!   checkpoint must open read-only and read back (the `image` target's walk);
//! * an error that is not clear: [`uf2fs_core::Error::Bug`] (uf2fs's own bug, never the
//!   right answer to damage), or `EIO` while the volume has reported no damage (the
//!   device here never fails, so `EIO` can only be the stopped volume's answer);
//! * a volume that goes on writing after it reported damage: from the first
//!   [`uf2fs_core::Error::Corrupt`] (`EUCLEAN`) any operation returns (the read-write
//!   open's, the ops', the walk's), the volume must stop as Linux's
//!   `f2fs_stop_checkpoint`: every later change, fsync, GC pass and checkpoint is
//!   refused, and nothing more reaches the device, the unmount included (the device
//!   wrapper panics at the first write or discard after it).
//!
//! Other errors from the operations (not found, exists, no space, ...) are the expected
//! outcome of random ops on a damaged image.
//!
//! ```text
//! byte 0          as the image target (base image, fix checksums)
//! byte 1          number of image damage ops (% (MAX_OPS + 1))
//! then            that many image ops (see `uf2fs_fuzz::image`)
//! then ops        tag byte, operands (missing bytes read as 0), tag % 11, at most
//!                 MAX_FS_OPS; `dir`, `file` index (modulo their length) the directories
//!                 and files known (the root's entries, then what the ops made);
//!                 `name` is one of NAMES:
//!   0 create      dir:u8 name:u8
//!   1 write       file:u8 offset:u16 (x 512) len:u16 (% 64 KiB) byte:u8
//!   2 rename      dir:u8 name:u8 to_dir:u8 to_name:u8 flags:u8 (% 3: 0, NOREPLACE, EXCHANGE)
//!   3 unlink      dir:u8 name:u8
//!   4 mkdir       dir:u8 name:u8
//!   5 rmdir       dir:u8 name:u8
//!   6 fsync       file:u8 datasync:u8
//!   7 truncate    file:u8 size:u16 (x 256)
//!   8 gc          background:u8 (bit 0)
//!   9 checkpoint
//!  10 link        file:u8 dir:u8 name:u8
//! ```

use crate::image::{apply_op, damaged_image_with, walk, walk_noting, Input, Patched, MAX_OPS};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use uf2fs_core::device::{BlockDevice, OverlayDevice, BLOCK};
use uf2fs_core::{Error, Fs, GcKind, Ino, OpenOptions, Result, RENAME_EXCHANGE, RENAME_NOREPLACE};
use uf2fs_format::le::u32_at;

/// Most file system operations run from one input.
pub const MAX_FS_OPS: usize = 48;
/// The names ops create, rename and remove (two are the base tree's own top-level
/// names, so ops reach what sload wrote).
const NAMES: &[&[u8]] = &[
    b"a",
    b"b",
    b"dir",
    b"long-name-of-a-file-0123456789",
    b"inline",
    b"files",
];

/// An overlay that checks every write against the volume's areas.
struct Guard {
    inner: OverlayDevice,
    /// First block of the checkpoint area and of the main area.
    cp_start: u64,
    main_start: u64,
    blocks: u64,
    writes: Arc<AtomicU64>,
    /// Set once an operation reported damage: no write or discard may follow.
    damaged: Arc<AtomicBool>,
}

impl Guard {
    fn check_stopped(&self, what: &str, blkaddr: u64, n: u64) {
        assert!(
            !self.damaged.load(Ordering::Relaxed),
            "{what} of blocks {blkaddr:#x}..{:#x} after the volume reported damage (it must stop writing)",
            blkaddr.saturating_add(n)
        );
    }
}

impl BlockDevice for Guard {
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> Result<()> {
        self.inner.read_blocks(blkaddr, buf)
    }

    fn block_count(&self) -> u64 {
        self.inner.block_count()
    }

    fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> Result<()> {
        let n = (buf.len() / BLOCK) as u64;
        self.check_stopped("write", blkaddr, n);
        let end = blkaddr.checked_add(n).expect("write range overflows");
        assert!(
            end <= self.blocks,
            "write of blocks {blkaddr:#x}..{end:#x} past the image's {:#x}",
            self.blocks
        );
        assert!(
            end <= 2 || blkaddr >= self.cp_start,
            "write of blocks {blkaddr:#x}..{end:#x} between the superblocks and the checkpoint area ({:#x})",
            self.cp_start
        );
        self.writes.fetch_add(n, Ordering::Relaxed);
        self.inner.write_blocks(blkaddr, buf)
    }

    fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    fn discard(&self, blkaddr: u64, blocks: u64) -> Result<()> {
        self.check_stopped("discard", blkaddr, blocks);
        let end = blkaddr.checked_add(blocks).expect("discard range overflows");
        assert!(
            blkaddr >= self.main_start && end <= self.blocks,
            "discard of blocks {blkaddr:#x}..{end:#x} outside the main area ({:#x}..{:#x})",
            self.main_start,
            self.blocks
        );
        self.inner.discard(blkaddr, blocks)
    }
}

/// What the ops know of the tree.
struct Known {
    dirs: Vec<Ino>,
    files: Vec<Ino>,
}

impl Known {
    fn dir(&self, i: u8) -> Ino {
        self.dirs[i as usize % self.dirs.len()]
    }
    fn file(&self, i: u8) -> Option<Ino> {
        (!self.files.is_empty()).then(|| self.files[i as usize % self.files.len()])
    }
}

fn name(i: u8) -> &'static [u8] {
    NAMES[i as usize % NAMES.len()]
}

fn verbose() -> bool {
    static V: OnceLock<bool> = OnceLock::new();
    *V.get_or_init(|| std::env::var_os("UF2FS_FUZZ_VERBOSE").is_some())
}

/// What the session has seen: whether the volume reported damage (shared with the
/// device wrapper, which refuses every write from then on).
struct Session {
    damaged: Arc<AtomicBool>,
    /// Changes refused after the volume reported damage.
    refused: std::cell::Cell<usize>,
    /// The call that first reported damage.
    first_damage: std::cell::Cell<Option<&'static str>>,
}

impl Session {
    /// Notes an operation's result; every error must say something, none may be uf2fs's
    /// own bug, and `EIO` only comes from a volume stopped after reporting damage.
    fn note<T>(&self, what: &'static str, r: Result<T>) -> Option<T> {
        let e = match r {
            Ok(v) => return Some(v),
            Err(e) => e,
        };
        let msg = e.to_string();
        assert!(!msg.is_empty(), "{what}: an error without a message");
        if verbose() {
            eprintln!("{what}: {msg}");
        }
        assert!(!e.is_bug(), "{what}: {msg}");
        match e {
            Error::Corrupt { .. } => {
                let first = !self.damaged.swap(true, Ordering::Relaxed);
                if first {
                    self.first_damage.set(Some(what));
                }
            }
            Error::Io { .. } => assert!(
                self.damaged.load(Ordering::Relaxed),
                "{what}: {msg} (EIO from a device that never fails, before any damage was reported)"
            ),
            _ => {}
        }
        None
    }

    /// [`Session::note`] for a change: once the volume reported damage it must refuse it.
    fn change<T>(&self, what: &'static str, r: Result<T>) -> Option<T> {
        let stopped = self.damaged.load(Ordering::Relaxed);
        let ok = r.is_ok();
        let v = self.note(what, r);
        assert!(
            !(stopped && ok),
            "{what} succeeded after the volume reported damage (it must refuse every change)"
        );
        if stopped {
            self.refused.set(self.refused.get() + 1);
        }
        v
    }
}

/// Runs one op (tag and operands from `inp`).
fn run_op(s: &Session, fs: &Fs, known: &mut Known, inp: &mut Input, buf: &mut [u8]) {
    match inp.u8() % 11 {
        0 => {
            let (dir, n) = (known.dir(inp.u8()), name(inp.u8()));
            if let Some(st) = s.change("create", fs.create(dir, n, 0o644, 0, 0)) {
                known.files.push(st.ino);
            }
        }
        1 => {
            let (file, off, len, byte) = (
                inp.u8(),
                inp.u16() as u64 * 512,
                inp.u16() as usize % buf.len(),
                inp.u8(),
            );
            if let Some(ino) = known.file(file) {
                buf[..len].fill(byte);
                if let Some(n) = s.change("write", fs.write(ino, off, &buf[..len])) {
                    assert!(n <= len, "wrote {n} of {len} bytes");
                }
            }
        }
        2 => {
            let (dir, n) = (known.dir(inp.u8()), name(inp.u8()));
            let (to_dir, to) = (known.dir(inp.u8()), name(inp.u8()));
            let flags = [0, RENAME_NOREPLACE, RENAME_EXCHANGE][inp.u8() as usize % 3];
            s.change("rename", fs.rename(dir, n, to_dir, to, flags));
        }
        3 => {
            let (dir, n) = (known.dir(inp.u8()), name(inp.u8()));
            s.change("unlink", fs.unlink(dir, n));
        }
        4 => {
            let (dir, n) = (known.dir(inp.u8()), name(inp.u8()));
            if let Some(st) = s.change("mkdir", fs.mkdir(dir, n, 0o755, 0, 0)) {
                known.dirs.push(st.ino);
            }
        }
        5 => {
            let (dir, n) = (known.dir(inp.u8()), name(inp.u8()));
            s.change("rmdir", fs.rmdir(dir, n));
        }
        6 => {
            let (file, datasync) = (inp.u8(), inp.u8() & 1 != 0);
            if let Some(ino) = known.file(file) {
                s.change("fsync", fs.fsync(ino, datasync));
            }
        }
        7 => {
            let (file, size) = (inp.u8(), inp.u16() as u64 * 256);
            if let Some(ino) = known.file(file) {
                s.change("truncate", fs.truncate(ino, size));
            }
        }
        8 => {
            let kind = if inp.u8() & 1 != 0 {
                GcKind::Background
            } else {
                GcKind::Foreground
            };
            s.change("gc", fs.gc(kind));
        }
        9 => {
            s.change("checkpoint", fs.write_checkpoint());
        }
        _ => {
            let file = inp.u8();
            let (dir, n) = (known.dir(inp.u8()), name(inp.u8()));
            if let Some(ino) = known.file(file) {
                s.change("link", fs.link(ino, dir, n));
            }
        }
    }
}

/// How a session went (for the replay test: the seeds must reach the stopped volume).
#[derive(Debug, Default)]
pub struct Outcome {
    /// The read-write open succeeded.
    pub opened: bool,
    /// Some call reported damage ([`Error::Corrupt`]).
    pub damage_reported: bool,
    /// Changes refused after that.
    pub refused: usize,
    /// The call that first reported damage (`read-write open`, `read_dir /`, an op's
    /// name such as `gc`, or `walk` for the walk after the ops).
    pub first_damage: Option<&'static str>,
}

/// The fuzz target: damage a base image as `data` says, open it read-write, run the ops,
/// unmount, and reopen what is durable.
pub fn run(data: &[u8]) -> Outcome {
    let damages = data.get(1).copied().unwrap_or(0) as usize % (MAX_OPS + 1);
    let mut inp = Input { data, pos: 2 };
    let img: Patched = damaged_image_with(data.first().copied().unwrap_or(0), |img| {
        for _ in 0..damages {
            if inp.done() {
                break;
            }
            let op = inp.u8() % 6;
            apply_op(img, &mut inp, op);
        }
    });
    let sb = &img.base.sb;
    let (cp_start, main_start) = (u32_at(sb, 76) as u64, u32_at(sb, 92) as u64);
    let blocks = img.blocks;
    let overlay = OverlayDevice::new(Arc::new(img));
    let writes = Arc::new(AtomicU64::new(0));
    let damaged = Arc::new(AtomicBool::new(false));
    let guard = Guard {
        inner: overlay.clone(),
        cp_start,
        main_start,
        blocks,
        writes: Arc::clone(&writes),
        damaged: Arc::clone(&damaged),
    };
    let s = Session {
        damaged: Arc::clone(&damaged),
        refused: std::cell::Cell::new(0),
        first_damage: std::cell::Cell::new(None),
    };
    let Some(fs) = s.note(
        "read-write open",
        Fs::open_device_with(Box::new(guard), "fuzz.img", OpenOptions { read_write: true }),
    ) else {
        return Outcome {
            damage_reported: damaged.load(Ordering::Relaxed),
            first_damage: s.first_damage.get(),
            ..Outcome::default()
        };
    };
    let root = fs.root();
    let mut known = Known {
        dirs: vec![root],
        files: Vec::new(),
    };
    if let Some(entries) = s.note("read_dir /", fs.read_dir(root)) {
        for e in entries.iter().take(16) {
            match e.kind {
                uf2fs_core::FileKind::Dir => known.dirs.push(e.ino),
                uf2fs_core::FileKind::File => known.files.push(e.ino),
                _ => {}
            }
        }
    }
    let mut buf = vec![0u8; 64 * 1024];
    for _ in 0..MAX_FS_OPS {
        if inp.done() {
            break;
        }
        run_op(&s, &fs, &mut known, &mut inp, &mut buf);
    }
    let walked = walk_noting(&fs, Some(&damaged));
    let stopped = damaged.load(Ordering::Relaxed);
    if stopped && s.first_damage.get().is_none() {
        s.first_damage.set(Some("walk"));
    }
    let unmounted = s.note("unmount", fs.unmount()).is_some();
    if verbose() {
        eprintln!(
            "{damages} damage(s), {} block(s) written, damage reported: {stopped}, unmount {}: {walked:?}",
            writes.load(Ordering::Relaxed),
            if unmounted { "ok" } else { "failed" }
        );
    }
    // What was durable opens again and reads back.
    let again = Fs::open_device(Box::new(overlay), "fuzz.img");
    let again = match again {
        Ok(fs) => fs,
        Err(e) => panic!("the image no longer opens after a read-write session (unmount ok: {unmounted}): {e}"),
    };
    let w = walk(&again);
    if verbose() {
        eprintln!("reopened: {w:?}");
    }
    Outcome {
        opened: true,
        damage_reported: stopped,
        refused: s.refused.get(),
        first_damage: s.first_damage.get(),
    }
}
