//! The whole-image target: open a damaged copy of a real image with [`Fs::open_device`]
//! and walk all of it (read_dir, lookup, stat, read, read_link, xattrs, resolve, info,
//! statfs). Errors are the expected outcome; a panic, a hang (libFuzzer's -timeout) or a
//! huge allocation (-malloc_limit_mb) is a bug.
//!
//! The base images (`fuzz/base/*.sparse.gz`, made by `fuzz/seed.sh`) are mkfs.f2fs +
//! sload.f2fs images of 80 MiB, kept in memory once as their non-zero blocks. The fuzz
//! input is not an image but a list of damages applied to a base image, so every mutation
//! lands somewhere that matters:
//!
//! ```text
//! byte 0          bit 0: base image (0 default features, 1 extra_attr + inode_checksum
//!                 + flexible_inline_xattr + inode_crtime); bit 1: after patching,
//!                 recompute the checksums of patched checkpoint, superblock and inode
//!                 blocks so the damage gets past them
//! then ops        tag byte, operands (little-endian; missing bytes read as 0), tag % 6:
//!   0 write       hot:u16 off:u16 len:u8 bytes[len]   (clamped to the block)
//!   1 flip bit    hot:u16 bit:u16                     (bit % 32768)
//!   2 fill        hot:u16 off:u16 len:u16 value:u8    (clamped to the block)
//!   3 truncate    blocks:u32                          (% (image blocks + 1))
//!   4 write any   blkaddr:u32 off:u16 len:u8 bytes[len] (blkaddr % image blocks)
//!   5 copy block  from_hot:u16 to_hot:u16
//! ```
//!
//! `hot` indexes (modulo its length) the base image's metadata blocks: every non-zero
//! block except file data (blocks of printable text, which is all sload was given).
//! At most [`MAX_OPS`] ops are applied.

use flate2::read::GzDecoder;
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use uf2fs_core::device::{BlockDevice, BLOCK};
use uf2fs_core::{Error, FileKind, Fs, Ino, Result};
use uf2fs_format::checkpoint::{checkpoint_crc, CP_CHKSUM_OFFSET, CP_MIN_CHKSUM_OFFSET};
use uf2fs_format::consts::{F2FS_SUPER_OFFSET, I_ADDR_OFFSET, NODE_FOOTER_OFFSET};
use uf2fs_format::crc::f2fs_crc32;
use uf2fs_format::le::{put_u32, u16_at, u32_at};
use uf2fs_format::node::{checksum_seed, inode_checksum};
use uf2fs_format::superblock::{SB_CRC_OFFSET, SUPERBLOCK_SIZE};

/// Most ops applied from one input.
pub const MAX_OPS: usize = 64;
/// Most inodes the walk visits.
const MAX_VISITS: usize = 1000;
/// Most inodes waiting on the walk's stack.
const MAX_STACK: usize = 4096;
/// Largest read the walk issues.
const READ_BUF: usize = 64 * 1024;
/// Paths of the base images' tree (see seed.sh) that go through symlinks and depth.
const PATHS: &[&[u8]] = &[
    b"/links/relative",
    b"/links/absolute",
    b"/links/long",
    b"/links/dangling",
    b"/deep/a/b/c/d/e/f/g/h/file",
    b"/bigdir/no-such-entry",
    b"/inline/small.txt/not-a-dir",
    b"/files/../inline/./small.txt",
];

static ZERO: [u8; BLOCK] = [0; BLOCK];

/// A base image: its non-zero blocks, and the metadata blocks ops address.
pub struct Base {
    pub(crate) blocks: u64,
    pub(crate) map: HashMap<u64, Box<[u8]>>,
    pub(crate) hot: Vec<u64>,
    pub(crate) sb: Vec<u8>,
}

impl Base {
    /// Inflates a `seed_cut.py --sparse` file: gzip of "uf2fsSPR", block count (u64),
    /// then (block address u64, 4096 bytes) for each non-zero block.
    fn load(gz: &[u8]) -> Base {
        let mut base = Base::inflate(gz);
        let is_text = |b: &[u8]| b.iter().all(|&c| c == b'\n' || (0x20..0x7f).contains(&c));
        let mut hot: Vec<u64> = base.map.iter().filter(|(_, b)| !is_text(b)).map(|(&a, _)| a).collect();
        hot.sort_unstable();
        base.hot = hot;
        base
    }

    /// Inflates a `seed_cut.py --sparse` file (see [`Base::load`]) with no hot blocks:
    /// the caller picks them.
    pub(crate) fn inflate(gz: &[u8]) -> Base {
        let mut raw = Vec::new();
        GzDecoder::new(gz).read_to_end(&mut raw).expect("base image inflates");
        assert_eq!(&raw[..8], b"uf2fsSPR", "base image magic");
        let blocks = u64::from_le_bytes(raw[8..16].try_into().unwrap());
        let mut map = HashMap::new();
        for rec in raw[16..].chunks_exact(8 + BLOCK) {
            let addr = u64::from_le_bytes(rec[..8].try_into().unwrap());
            map.insert(addr, rec[8..].to_vec().into_boxed_slice());
        }
        let sb = map.get(&0).expect("base image has block 0")[F2FS_SUPER_OFFSET..][..SUPERBLOCK_SIZE].to_vec();
        Base {
            blocks,
            map,
            hot: Vec::new(),
            sb,
        }
    }

    pub(crate) fn block(&self, addr: u64) -> &[u8] {
        self.map.get(&addr).map_or(&ZERO[..], |b| &b[..])
    }
}

/// The two base images, inflated on first use.
pub fn bases() -> &'static [Base; 2] {
    static BASES: OnceLock<[Base; 2]> = OnceLock::new();
    BASES.get_or_init(|| {
        [
            Base::load(include_bytes!("../base/default.sparse.gz")),
            Base::load(include_bytes!("../base/extra.sparse.gz")),
        ]
    })
}

/// A base image with patched blocks and possibly a shorter length.
#[derive(Clone)]
pub struct Patched {
    pub(crate) base: &'static Base,
    pub(crate) blocks: u64,
    pub(crate) patches: HashMap<u64, Box<[u8]>>,
}

impl Patched {
    /// The base image, unchanged.
    pub(crate) fn new(base: &'static Base) -> Patched {
        Patched {
            base,
            blocks: base.blocks,
            patches: HashMap::new(),
        }
    }

    /// Block `addr` as it reads now.
    pub(crate) fn block(&self, addr: u64) -> &[u8] {
        self.patches
            .get(&addr)
            .map_or_else(|| self.base.block(addr), |b| &b[..])
    }

    pub(crate) fn block_mut(&mut self, addr: u64) -> &mut [u8] {
        let base = self.base;
        self.patches
            .entry(addr)
            .or_insert_with(|| base.block(addr).to_vec().into_boxed_slice())
    }
}

impl BlockDevice for Patched {
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> Result<()> {
        let n = buf.len().div_ceil(BLOCK) as u64;
        if blkaddr.checked_add(n).is_none_or(|end| end > self.blocks) {
            return Err(Error::corrupt(
                "block address",
                Some(blkaddr),
                format!("beyond the end of the image ({} blocks)", self.blocks),
            ));
        }
        for (i, dst) in buf.chunks_mut(BLOCK).enumerate() {
            let addr = blkaddr + i as u64;
            let src = self
                .patches
                .get(&addr)
                .map_or_else(|| self.base.block(addr), |b| &b[..]);
            dst.copy_from_slice(&src[..dst.len()]);
        }
        Ok(())
    }

    fn block_count(&self) -> u64 {
        self.blocks
    }
}

/// Reads the input's operands; bytes past the end read as zero.
pub(crate) struct Input<'a> {
    pub(crate) data: &'a [u8],
    pub(crate) pos: usize,
}

impl Input<'_> {
    pub(crate) fn bytes(&mut self, n: usize) -> &[u8] {
        let start = self.pos.min(self.data.len());
        let end = (start + n).min(self.data.len());
        self.pos = self.pos.saturating_add(n);
        &self.data[start..end]
    }
    pub(crate) fn u8(&mut self) -> u8 {
        self.bytes(1).first().copied().unwrap_or(0)
    }
    pub(crate) fn u16(&mut self) -> u16 {
        let b = self.bytes(2);
        u16::from_le_bytes([b.first().copied().unwrap_or(0), b.get(1).copied().unwrap_or(0)])
    }
    pub(crate) fn u32(&mut self) -> u32 {
        let (lo, hi) = (self.u16() as u32, self.u16() as u32);
        lo | hi << 16
    }
    pub(crate) fn done(&self) -> bool {
        self.pos >= self.data.len()
    }
}

/// Builds the damaged image an input describes.
pub fn damaged_image(data: &[u8]) -> Patched {
    let mut inp = Input { data, pos: 1 };
    damaged_image_with(data.first().copied().unwrap_or(0), |img| {
        for _ in 0..MAX_OPS {
            if inp.done() {
                break;
            }
            let op = inp.u8() % 6;
            apply_op(img, &mut inp, op);
        }
    })
}

/// The base image `flags` picks (bit 0), damaged by `damage`, then with the checksums of
/// what it patched made valid again when bit 1 says so.
pub fn damaged_image_with(flags: u8, damage: impl FnOnce(&mut Patched)) -> Patched {
    let base = &bases()[(flags & 1) as usize];
    let mut img = Patched::new(base);
    damage(&mut img);
    if flags & 2 != 0 {
        fix_checksums(&mut img);
    }
    img
}

/// Applies image op `op` (0..6, see the module notes), reading its operands from `inp`.
pub(crate) fn apply_op(img: &mut Patched, inp: &mut Input, op: u8) {
    let base = img.base;
    let hot = |i: u16| base.hot[i as usize % base.hot.len()];
    match op {
        0 => {
            let (addr, off, len) = (hot(inp.u16()), inp.u16() as usize % BLOCK, inp.u8() as usize);
            write(img, addr, off, inp.bytes(len));
        }
        1 => {
            let (addr, bit) = (hot(inp.u16()), inp.u16() as usize % (BLOCK * 8));
            img.block_mut(addr)[bit / 8] ^= 1 << (bit % 8);
        }
        2 => {
            let (addr, off, len, value) = (hot(inp.u16()), inp.u16() as usize % BLOCK, inp.u16(), inp.u8());
            let b = img.block_mut(addr);
            let end = (off + len as usize).min(BLOCK);
            b[off..end].fill(value);
        }
        3 => img.blocks = inp.u32() as u64 % (base.blocks + 1),
        4 => {
            let addr = inp.u32() as u64 % base.blocks;
            let (off, len) = (inp.u16() as usize % BLOCK, inp.u8() as usize);
            write(img, addr, off, inp.bytes(len));
        }
        _ => {
            let (from, to) = (hot(inp.u16()), hot(inp.u16()));
            let src = img
                .patches
                .get(&from)
                .map_or_else(|| base.block(from).to_vec(), |b| b.to_vec());
            img.block_mut(to).copy_from_slice(&src);
        }
    }
}

pub(crate) fn write(img: &mut Patched, addr: u64, off: usize, bytes: &[u8]) {
    let b = img.block_mut(addr);
    let n = bytes.len().min(BLOCK - off);
    b[off..off + n].copy_from_slice(&bytes[..n]);
}

/// Recomputes the checksums of patched blocks that carry one, by where they sit: the
/// superblock copies, checkpoint blocks (CP area), inode blocks (main area, footer says
/// inode, extra attributes hold a checksum). Geometry comes from the base superblock.
pub(crate) fn fix_checksums(img: &mut Patched) {
    let sb = &img.base.sb;
    let cp_start = u32_at(sb, 76) as u64;
    let cp_end = cp_start + ((u32_at(sb, 52) as u64) << 9);
    let main_start = u32_at(sb, 92) as u64;
    let mut uuid = [0u8; 16];
    uuid.copy_from_slice(&sb[108..124]);
    let seed = checksum_seed(&uuid);
    for (&addr, b) in img.patches.iter_mut() {
        if addr < 2 {
            let s = &mut b[F2FS_SUPER_OFFSET..F2FS_SUPER_OFFSET + SUPERBLOCK_SIZE];
            let crc = f2fs_crc32(&s[..SB_CRC_OFFSET]);
            put_u32(s, SB_CRC_OFFSET, crc);
        } else if (cp_start..cp_end).contains(&addr) {
            let ofs = u32_at(b, 164) as usize;
            if (CP_MIN_CHKSUM_OFFSET..=CP_CHKSUM_OFFSET).contains(&ofs) {
                let crc = checkpoint_crc(b, ofs);
                put_u32(b, ofs, crc);
            }
        } else if addr >= main_start {
            let (nid, ino, flag) = (
                u32_at(b, NODE_FOOTER_OFFSET),
                u32_at(b, NODE_FOOTER_OFFSET + 4),
                u32_at(b, NODE_FOOTER_OFFSET + 8),
            );
            let extra = b[3] & 0x20 != 0 && u16_at(b, I_ADDR_OFFSET) >= 12;
            if nid == ino && flag >> 3 == 0 && extra {
                if let Ok(crc) = inode_checksum(seed, b) {
                    put_u32(b, I_ADDR_OFFSET + 8, crc);
                }
            }
        }
    }
}

/// What a walk saw, for `UF2FS_FUZZ_VERBOSE` (and the `recovery` target's comparisons).
#[derive(Default, Debug, PartialEq, Eq)]
pub struct Walk {
    /// Inodes visited.
    pub visited: usize,
    /// Calls that returned an error.
    pub errors: usize,
    /// Directory entries listed.
    pub entries: usize,
    /// Bytes read from files and symlinks.
    pub bytes: u64,
    /// Of the errors, those reporting damage ([`Error::Corrupt`]).
    pub corrupt: usize,
}

/// A walk in progress: what it saw, and the flag to set at the first damage reported.
struct Walker<'a> {
    w: Walk,
    damaged: Option<&'a AtomicBool>,
}

impl Walker<'_> {
    fn err(&mut self, e: Error) {
        self.w.errors += 1;
        let msg = e.to_string();
        assert!(!msg.is_empty());
        if verbose() {
            eprintln!("  {msg}");
        }
        // Damage is reported as damage (Corrupt, Unsupported, ...), never as uf2fs's bug.
        assert!(!e.is_bug(), "{msg}");
        if matches!(e, Error::Corrupt { .. }) {
            self.w.corrupt += 1;
            if let Some(flag) = self.damaged {
                flag.store(true, Ordering::Relaxed);
            }
        }
    }
    fn check<T>(&mut self, r: Result<T>) -> Option<T> {
        r.map_err(|e| self.err(e)).ok()
    }
}

fn verbose() -> bool {
    static V: OnceLock<bool> = OnceLock::new();
    *V.get_or_init(|| std::env::var_os("UF2FS_FUZZ_VERBOSE").is_some())
}

/// Byte offsets the walk reads a file at: the start, the middle, the end, the step from
/// the inode's own addresses to its first direct node, and offsets far past any file
/// (only the first and the last for files of one block).
fn read_offsets(size: u64) -> Vec<u64> {
    if size <= BLOCK as u64 {
        return vec![0, u64::MAX - 100];
    }
    vec![
        0,
        size / 2,
        size.saturating_sub(READ_BUF as u64 + 1),
        size.saturating_sub(1),
        923 * BLOCK as u64 - 100,
        1 << 42,
        u64::MAX - 100,
    ]
}

/// Walks everything reachable from the root, depth first with an explicit stack.
pub fn walk(fs: &Fs) -> Walk {
    walk_noting(fs, None)
}

/// [`walk`], setting `damaged` at the first [`Error::Corrupt`] (before the next call).
pub fn walk_noting(fs: &Fs, damaged: Option<&AtomicBool>) -> Walk {
    let mut w = Walker {
        w: Walk::default(),
        damaged,
    };
    if let Some(info) = w.check(fs.info()) {
        assert!(!info.to_string().is_empty());
    }
    let _ = w.check(fs.statfs());
    let mut buf = vec![0u8; READ_BUF];
    let mut stack: Vec<Ino> = vec![fs.root()];
    let mut seen = HashSet::new();
    while let Some(ino) = stack.pop() {
        if !seen.insert(ino) {
            continue;
        }
        w.w.visited += 1;
        if w.w.visited > MAX_VISITS {
            break;
        }
        let _ = w.check(fs.list_xattrs(ino));
        let Some(st) = w.check(fs.stat(ino)) else { continue };
        match st.kind {
            FileKind::Dir => {
                let Some(entries) = w.check(fs.read_dir(ino)) else {
                    continue;
                };
                w.w.entries += entries.len();
                for (i, e) in entries.iter().enumerate() {
                    if i < 4 || i + 1 == entries.len() {
                        let _ = w.check(fs.lookup(ino, &e.name));
                    }
                    if stack.len() < MAX_STACK {
                        stack.push(e.ino);
                    }
                }
                let _ = w.check(fs.lookup(ino, b".."));
                let _ = w.check(fs.lookup(ino, b"no-such-name"));
                let _ = w.check(fs.read(ino, 0, &mut buf[..16]));
            }
            FileKind::File | FileKind::Symlink => {
                for off in read_offsets(st.size) {
                    if let Some(n) = w.check(fs.read(ino, off, &mut buf)) {
                        assert!(n <= buf.len());
                        w.w.bytes += n as u64;
                    }
                }
                if st.kind == FileKind::Symlink {
                    if let Some(t) = w.check(fs.read_link(ino)) {
                        assert!(t.len() < BLOCK);
                    }
                }
            }
            _ => {
                let _ = w.check(fs.read(ino, 0, &mut buf[..16]));
                let _ = w.check(fs.read_link(ino));
            }
        }
    }
    for p in PATHS {
        let _ = w.check(fs.resolve(p, true));
        let _ = w.check(fs.resolve(p, false));
    }
    w.w
}

/// The fuzz target: damage a base image as `data` says, open it, walk it.
pub fn run(data: &[u8]) {
    let img = damaged_image(data);
    let patched = img.patches.len();
    match Fs::open_device(Box::new(img), "fuzz.img") {
        Ok(fs) => {
            let w = walk(&fs);
            if verbose() {
                eprintln!("{patched} block(s) patched: {w:?}");
            }
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.is_empty());
            if verbose() {
                eprintln!("{patched} block(s) patched: open failed: {msg}");
            }
        }
    }
}
