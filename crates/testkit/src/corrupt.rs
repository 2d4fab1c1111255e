//! Where an image keeps its metadata, so tests can damage exactly one structure, and the
//! damage itself (zeroing, truncating, flipping bits) with undo.

use crate::image::tool;
use std::fs;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// Bytes per block.
pub const BLOCK: u64 = 4096;
/// Byte offset of the superblock inside each of the first two blocks.
pub const SB_OFFSET: u64 = 1024;

/// The on-disk layout as the (first) superblock states it, read independently of the
/// code under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Blocks per segment.
    pub blocks_per_seg: u64,
    /// Total blocks.
    pub block_count: u64,
    /// First block of the checkpoint area (two packs, one segment each).
    pub cp_blkaddr: u64,
    /// First block of the SIT.
    pub sit_blkaddr: u64,
    /// First block of the NAT.
    pub nat_blkaddr: u64,
    /// First block of the SSA.
    pub ssa_blkaddr: u64,
    /// First block of the main area.
    pub main_blkaddr: u64,
    /// Segments in the checkpoint area.
    pub segment_count_ckpt: u64,
    /// Segments in the SIT.
    pub segment_count_sit: u64,
    /// Segments in the NAT.
    pub segment_count_nat: u64,
}

fn le32(b: &[u8], off: usize) -> u64 {
    u64::from(u32::from_le_bytes(b[off..off + 4].try_into().expect("4 bytes")))
}

impl Layout {
    /// Reads the layout from the first superblock of `img`.
    pub fn read(img: &Path) -> io::Result<Layout> {
        let mut f = fs::File::open(img)?;
        let mut sb = [0u8; 1024];
        f.seek(SeekFrom::Start(SB_OFFSET))?;
        f.read_exact(&mut sb)?;
        if le32(&sb, 0) != 0xf2f5_2010 {
            return Err(io::Error::other("no F2FS superblock magic"));
        }
        Ok(Layout {
            blocks_per_seg: 1 << le32(&sb, 20),
            block_count: u64::from_le_bytes(sb[36..44].try_into().expect("8 bytes")),
            segment_count_ckpt: le32(&sb, 52),
            segment_count_sit: le32(&sb, 56),
            segment_count_nat: le32(&sb, 60),
            cp_blkaddr: le32(&sb, 76),
            sit_blkaddr: le32(&sb, 80),
            nat_blkaddr: le32(&sb, 84),
            ssa_blkaddr: le32(&sb, 88),
            main_blkaddr: le32(&sb, 92),
        })
    }

    /// Block range `[start, end)` of the checkpoint pack `pack` (0 or 1).
    pub fn cp_pack(&self, pack: u64) -> (u64, u64) {
        let start = self.cp_blkaddr + pack * self.blocks_per_seg;
        (start, start + self.blocks_per_seg)
    }

    /// Block range of the whole NAT (both copies).
    pub fn nat(&self) -> (u64, u64) {
        (
            self.nat_blkaddr,
            self.nat_blkaddr + self.segment_count_nat * self.blocks_per_seg,
        )
    }

    /// Block range of the whole SIT (both copies).
    pub fn sit(&self) -> (u64, u64) {
        (
            self.sit_blkaddr,
            self.sit_blkaddr + self.segment_count_sit * self.blocks_per_seg,
        )
    }
}

/// A node block in use, as dump.f2fs reads the NAT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeRef {
    /// Node id.
    pub nid: u64,
    /// Inode it belongs to.
    pub ino: u64,
    /// Block address.
    pub blkaddr: u64,
}

/// Every node block in use, from `dump.f2fs -n 0~-1` (which writes `dump_nat` into its
/// working directory `work`).
pub fn node_blocks(img: &Path, work: &Path) -> io::Result<Vec<NodeRef>> {
    let out = Command::new(tool("dump.f2fs"))
        .arg("-n")
        .arg("0~-1")
        .arg(img)
        .current_dir(work)
        .stdin(Stdio::null())
        .output()?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "dump.f2fs -n failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let text = fs::read_to_string(work.join("dump_nat"))?;
    let mut nodes = Vec::new();
    for line in text.lines() {
        // nid:    4	ino:    4	offset:    0	blkaddr:      6144	pack:1
        let mut words = line.split_whitespace();
        let mut field = |name: &str| -> Option<u64> {
            words.find(|w| *w == name)?;
            words.next()?.parse().ok()
        };
        let (Some(nid), Some(ino), Some(_), Some(blkaddr)) =
            (field("nid:"), field("ino:"), field("offset:"), field("blkaddr:"))
        else {
            continue;
        };
        if blkaddr != 0 {
            nodes.push(NodeRef { nid, ino, blkaddr });
        }
    }
    Ok(nodes)
}

/// Overwrites blocks `[start, end)` of `img` with zeros.
pub fn zero_blocks(img: &Path, start: u64, end: u64) -> io::Result<()> {
    zero_bytes(img, start * BLOCK, (end - start) * BLOCK)
}

/// Overwrites `len` bytes at `offset` with zeros.
pub fn zero_bytes(img: &Path, offset: u64, len: u64) -> io::Result<()> {
    let mut f = fs::OpenOptions::new().write(true).open(img)?;
    f.seek(SeekFrom::Start(offset))?;
    let zeros = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let n = left.min(zeros.len() as u64) as usize;
        f.write_all(&zeros[..n])?;
        left -= n as u64;
    }
    Ok(())
}

/// Copies `src` to `dst`, keeping holes where `src` has whole zero blocks (images are
/// mostly empty).
pub fn sparse_copy(src: &Path, dst: &Path) -> io::Result<()> {
    let mut r = fs::File::open(src)?;
    let mut w = fs::File::create(dst)?;
    let len = r.metadata()?.len();
    let mut buf = vec![0u8; 1 << 20];
    let mut pos = 0u64;
    while pos < len {
        let n = ((len - pos) as usize).min(buf.len());
        r.read_exact(&mut buf[..n])?;
        for (i, chunk) in buf[..n].chunks(BLOCK as usize).enumerate() {
            if chunk.iter().any(|&b| b != 0) {
                w.seek(SeekFrom::Start(pos + (i as u64) * BLOCK))?;
                w.write_all(chunk)?;
            }
        }
        pos += n as u64;
    }
    w.set_len(len)?;
    Ok(())
}

/// Bit flips applied to an image file that can be undone.
pub struct Flipper {
    file: fs::File,
    /// (byte offset, original byte), in the order applied.
    undo: Vec<(u64, u8)>,
}

impl Flipper {
    /// Opens `img` for flipping.
    pub fn open(img: &Path) -> io::Result<Flipper> {
        Ok(Flipper {
            file: fs::OpenOptions::new().read(true).write(true).open(img)?,
            undo: Vec::new(),
        })
    }

    /// Flips bit `bit` (0..8) of the byte at `offset`.
    pub fn flip(&mut self, offset: u64, bit: u8) -> io::Result<()> {
        let mut b = [0u8];
        self.file.seek(SeekFrom::Start(offset))?;
        self.file.read_exact(&mut b)?;
        self.undo.push((offset, b[0]));
        self.file.seek(SeekFrom::Start(offset))?;
        self.file.write_all(&[b[0] ^ (1 << bit)])?;
        Ok(())
    }

    /// Puts every flipped byte back.
    pub fn undo(&mut self) -> io::Result<()> {
        while let Some((offset, byte)) = self.undo.pop() {
            self.file.seek(SeekFrom::Start(offset))?;
            self.file.write_all(&[byte])?;
        }
        self.file.flush()
    }
}
