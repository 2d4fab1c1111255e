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
//!   checkpoint must open read-only and read back (the `image` target's walk).
//!
//! Errors from the operations are the expected outcome on a damaged image.
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

use crate::image::{apply_op, damaged_image_with, walk, Input, Patched, MAX_OPS};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use uf2fs_core::device::{BlockDevice, OverlayDevice, BLOCK};
use uf2fs_core::{Fs, GcKind, Ino, OpenOptions, Result, RENAME_EXCHANGE, RENAME_NOREPLACE};
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

/// Notes an operation's error (every error must say something).
fn note<T>(what: &str, r: Result<T>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.is_empty(), "{what}: an error without a message");
            if verbose() {
                eprintln!("{what}: {msg}");
            }
            None
        }
    }
}

/// Runs one op (tag and operands from `inp`).
fn run_op(fs: &Fs, known: &mut Known, inp: &mut Input, buf: &mut [u8]) {
    match inp.u8() % 11 {
        0 => {
            let (dir, n) = (known.dir(inp.u8()), name(inp.u8()));
            if let Some(st) = note("create", fs.create(dir, n, 0o644, 0, 0)) {
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
                if let Some(n) = note("write", fs.write(ino, off, &buf[..len])) {
                    assert!(n <= len, "wrote {n} of {len} bytes");
                }
            }
        }
        2 => {
            let (dir, n) = (known.dir(inp.u8()), name(inp.u8()));
            let (to_dir, to) = (known.dir(inp.u8()), name(inp.u8()));
            let flags = [0, RENAME_NOREPLACE, RENAME_EXCHANGE][inp.u8() as usize % 3];
            note("rename", fs.rename(dir, n, to_dir, to, flags));
        }
        3 => {
            let (dir, n) = (known.dir(inp.u8()), name(inp.u8()));
            note("unlink", fs.unlink(dir, n));
        }
        4 => {
            let (dir, n) = (known.dir(inp.u8()), name(inp.u8()));
            if let Some(st) = note("mkdir", fs.mkdir(dir, n, 0o755, 0, 0)) {
                known.dirs.push(st.ino);
            }
        }
        5 => {
            let (dir, n) = (known.dir(inp.u8()), name(inp.u8()));
            note("rmdir", fs.rmdir(dir, n));
        }
        6 => {
            let (file, datasync) = (inp.u8(), inp.u8() & 1 != 0);
            if let Some(ino) = known.file(file) {
                note("fsync", fs.fsync(ino, datasync));
            }
        }
        7 => {
            let (file, size) = (inp.u8(), inp.u16() as u64 * 256);
            if let Some(ino) = known.file(file) {
                note("truncate", fs.truncate(ino, size));
            }
        }
        8 => {
            let kind = if inp.u8() & 1 != 0 {
                GcKind::Background
            } else {
                GcKind::Foreground
            };
            note("gc", fs.gc(kind));
        }
        9 => {
            note("checkpoint", fs.write_checkpoint());
        }
        _ => {
            let file = inp.u8();
            let (dir, n) = (known.dir(inp.u8()), name(inp.u8()));
            if let Some(ino) = known.file(file) {
                note("link", fs.link(ino, dir, n));
            }
        }
    }
}

/// The fuzz target: damage a base image as `data` says, open it read-write, run the ops,
/// unmount, and reopen what is durable.
pub fn run(data: &[u8]) {
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
    let guard = Guard {
        inner: overlay.clone(),
        cp_start,
        main_start,
        blocks,
        writes: Arc::clone(&writes),
    };
    let Some(fs) = note(
        "read-write open",
        Fs::open_device_with(Box::new(guard), "fuzz.img", OpenOptions { read_write: true }),
    ) else {
        return;
    };
    let root = fs.root();
    let mut known = Known {
        dirs: vec![root],
        files: Vec::new(),
    };
    if let Ok(entries) = fs.read_dir(root) {
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
        run_op(&fs, &mut known, &mut inp, &mut buf);
    }
    let walked = walk(&fs);
    let unmounted = note("unmount", fs.unmount()).is_some();
    if verbose() {
        eprintln!(
            "{damages} damage(s), {} block(s) written, unmount {}: {walked:?}",
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
}
