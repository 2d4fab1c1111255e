//! [`SparseDevice`]: an Android sparse image (the format of `img2simg`, fastboot and
//! AOSP's build output), read in place.
//!
//! This module owns the sparse format: recognising it ([`is_sparse`]), checking the
//! file header and the whole chunk table once at open, and answering block reads
//! through the resulting index. Nothing is unpacked: a read binary-searches the index
//! (extents sorted by output offset) and takes raw data from the file, a fill pattern
//! from memory, and zeros for "don't care" chunks.
//!
//! The format, little-endian throughout: a file header (magic `0xED26FF3A`, major
//! version 1, any minor version, header size, chunk header size, `blk_sz`, the output
//! size in blocks, the chunk count, an image checksum), then the chunks, each a header
//! (type `u16`, reserved `u16`, size in output blocks `u32`, size in the file `u32`
//! counting the header) and its payload: `blk_sz` bytes per block for raw chunks, a
//! 4-byte pattern for fill chunks, nothing for don't-care chunks, and a 4-byte CRC32
//! for CRC chunks (which cover no output blocks). Headers longer than the first
//! revision's 28 and 12 bytes are accepted; the extra bytes are skipped.
//!
//! Decisions:
//! - `blk_sz` may be any non-zero multiple of 4 (the format's own rule); reads are
//!   byte-addressed, so it need not be 4096. The device is the output's whole 4 KiB
//!   blocks, as [`FileDevice`](super::FileDevice) ignores a trailing partial block.
//! - CRC32 chunks and the header's image checksum are checked for shape but not
//!   verified (that would read the whole image at every open; `simg2img` does not
//!   verify them either).
//! - The table must be exact: the chunks must cover `total_blks` blocks, there must be
//!   `total_chunks` of them, and the file must end with the last one. Anything else is
//!   [`Error::Corrupt`], found before any block is read.
//! - The device is read-only: writing in place would have to reshape the chunk table.
//!   [`refuse_writing`] is the error a caller gives when asked to write one.

use super::{BlockDevice, BLOCK};
use crate::{Error, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Magic number at offset 0 of an Android sparse image (little-endian).
pub const SPARSE_MAGIC: u32 = 0xED26_FF3A;
/// The only major version of the format.
const MAJOR_VERSION: u16 = 1;
/// Size of the first revision's file header.
const FILE_HEADER_MIN: u64 = 28;
/// Size of the first revision's chunk header.
const CHUNK_HEADER_MIN: u64 = 12;
/// Chunk types.
const CHUNK_RAW: u16 = 0xCAC1;
const CHUNK_FILL: u16 = 0xCAC2;
const CHUNK_DONT_CARE: u16 = 0xCAC3;
const CHUNK_CRC32: u16 = 0xCAC4;

/// Where the bytes of a sparse image are.
enum Backing {
    File(File),
    Memory(Vec<u8>),
}

impl Backing {
    fn len(&self) -> Result<u64> {
        match self {
            Backing::File(f) => f.metadata().map(|m| m.len()).map_err(|source| Error::Io {
                context: "cannot stat the sparse image".to_string(),
                source,
            }),
            Backing::Memory(v) => Ok(v.len() as u64),
        }
    }

    /// Reads `buf.len()` bytes at `offset`, which the chunk table check placed inside
    /// the file.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        match self {
            Backing::File(f) => f.read_exact_at(buf, offset),
            Backing::Memory(v) => {
                let start = usize::try_from(offset).ok();
                let src = start.and_then(|s| v.get(s..s.checked_add(buf.len())?));
                let src = src.ok_or_else(|| std::io::Error::from(std::io::ErrorKind::UnexpectedEof))?;
                buf.copy_from_slice(src);
                Ok(())
            }
        }
    }
}

/// What an extent of the output holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Content {
    /// The bytes of the file from this offset.
    Raw { file_offset: u64 },
    /// This 4-byte pattern, repeated (output offsets are multiples of 4 at its start).
    Fill([u8; 4]),
    /// Zeros (a don't-care chunk, as `simg2img` leaves it).
    Zero,
}

/// One chunk covering output bytes `start..start + len`.
#[derive(Debug, Clone, Copy)]
struct Extent {
    start: u64,
    len: u64,
    content: Content,
}

/// The header fields the reader needs.
#[derive(Debug, Clone, Copy)]
struct Header {
    file_hdr_sz: u64,
    chunk_hdr_sz: u64,
    blk_sz: u64,
    total_blks: u64,
    total_chunks: u64,
}

/// An Android sparse image seen as the raw image it stands for. Read-only.
pub struct SparseDevice {
    backing: Backing,
    name: String,
    /// Extents covering the output without gaps, in output order.
    extents: Vec<Extent>,
    /// Output size in bytes.
    bytes: u64,
}

/// Whether the file at `path` starts with the sparse magic. A file too short to hold
/// it is not sparse.
pub fn is_sparse(path: &Path) -> Result<bool> {
    let file = File::open(path).map_err(|source| Error::Io {
        context: format!("cannot open {}", path.display()),
        source,
    })?;
    let mut magic = [0u8; 4];
    match file.read_exact_at(&mut magic, 0) {
        Ok(()) => Ok(u32::from_le_bytes(magic) == SPARSE_MAGIC),
        Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        // A directory fails here; let the caller's open say so.
        Err(_) => Ok(false),
    }
}

/// The error for an attempt to open the sparse image at `path` for writing.
pub fn refuse_writing(path: &Path) -> Error {
    Error::ReadOnly(format!(
        "{} is an Android sparse image: uf2fs reads it in place but cannot write into it; \
         unpack it first (simg2img {} RAW.img) and use the raw image",
        path.display(),
        path.display()
    ))
}

fn corrupt(name: &str, detail: String) -> Error {
    Error::corrupt(format!("Android sparse image {name}"), None, detail)
}

impl SparseDevice {
    /// Opens the sparse image at `path` and checks its chunk table.
    pub fn open(path: &Path) -> Result<SparseDevice> {
        let file = File::open(path).map_err(|source| Error::Io {
            context: format!("cannot open {}", path.display()),
            source,
        })?;
        SparseDevice::parse(Backing::File(file), path.display().to_string())
    }

    /// A sparse image held in memory (tests and fuzzing); `name` stands for its path in
    /// messages.
    pub fn from_bytes(bytes: Vec<u8>, name: &str) -> Result<SparseDevice> {
        SparseDevice::parse(Backing::Memory(bytes), name.to_string())
    }

    /// Size of the raw image it stands for, in bytes.
    pub fn raw_size(&self) -> u64 {
        self.bytes
    }

    /// Number of chunks covering output blocks (CRC chunks are not counted).
    pub fn chunk_count(&self) -> usize {
        self.extents.len()
    }

    fn read_header(backing: &Backing, name: &str, file_len: u64) -> Result<Header> {
        let mut h = [0u8; FILE_HEADER_MIN as usize];
        if file_len < FILE_HEADER_MIN {
            return Err(corrupt(
                name,
                format!("{file_len} bytes, too short for the {FILE_HEADER_MIN}-byte file header"),
            ));
        }
        backing.read_at(0, &mut h).map_err(|source| Error::Io {
            context: format!("read of the sparse header of {name}"),
            source,
        })?;
        let u16_at = |o: usize| u16::from_le_bytes([h[o], h[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]]);
        if u32_at(0) != SPARSE_MAGIC {
            return Err(corrupt(name, format!("bad magic {:#010x}", u32_at(0))));
        }
        if u16_at(4) != MAJOR_VERSION {
            return Err(Error::Unsupported {
                feature: "android-sparse",
                detail: format!("{name}: sparse format major version {} (only 1 is known)", u16_at(4)),
            });
        }
        let header = Header {
            file_hdr_sz: u64::from(u16_at(8)),
            chunk_hdr_sz: u64::from(u16_at(10)),
            blk_sz: u64::from(u32_at(12)),
            total_blks: u64::from(u32_at(16)),
            total_chunks: u64::from(u32_at(20)),
        };
        if header.file_hdr_sz < FILE_HEADER_MIN || header.file_hdr_sz > file_len {
            return Err(corrupt(
                name,
                format!(
                    "file header size {} (at least {FILE_HEADER_MIN}, within the {file_len}-byte file)",
                    header.file_hdr_sz
                ),
            ));
        }
        if header.chunk_hdr_sz < CHUNK_HEADER_MIN {
            return Err(corrupt(
                name,
                format!(
                    "chunk header size {} (at least {CHUNK_HEADER_MIN})",
                    header.chunk_hdr_sz
                ),
            ));
        }
        if header.blk_sz == 0 || header.blk_sz % 4 != 0 {
            return Err(corrupt(
                name,
                format!("block size {} is not a non-zero multiple of 4", header.blk_sz),
            ));
        }
        // Every chunk has a header in the file: a count the file cannot hold is found
        // before anything is allocated for it.
        let room = (file_len - header.file_hdr_sz) / header.chunk_hdr_sz;
        if header.total_chunks > room {
            return Err(corrupt(
                name,
                format!(
                    "{} chunks announced, the {file_len}-byte file has room for at most {room}",
                    header.total_chunks
                ),
            ));
        }
        Ok(header)
    }

    fn parse(backing: Backing, name: String) -> Result<SparseDevice> {
        let file_len = backing.len()?;
        let h = SparseDevice::read_header(&backing, &name, file_len)?;
        let mut extents: Vec<Extent> = Vec::new();
        let mut pos = h.file_hdr_sz;
        let mut out_blocks = 0u64;
        for i in 0..h.total_chunks {
            let what = |detail: String| corrupt(&name, format!("chunk {i} at byte {pos}: {detail}"));
            if file_len - pos < h.chunk_hdr_sz {
                return Err(what(format!(
                    "the file ends {} bytes into its header (truncated?)",
                    file_len - pos
                )));
            }
            let mut c = [0u8; CHUNK_HEADER_MIN as usize];
            backing.read_at(pos, &mut c).map_err(|source| Error::Io {
                context: format!("read of chunk {i} of {name}"),
                source,
            })?;
            let kind = u16::from_le_bytes([c[0], c[1]]);
            let blocks = u64::from(u32::from_le_bytes([c[4], c[5], c[6], c[7]]));
            let total_sz = u64::from(u32::from_le_bytes([c[8], c[9], c[10], c[11]]));
            if total_sz < h.chunk_hdr_sz {
                return Err(what(format!(
                    "size {total_sz} is smaller than its {}-byte header",
                    h.chunk_hdr_sz
                )));
            }
            if total_sz > file_len - pos {
                return Err(what(format!(
                    "size {total_sz} runs past the end of the file ({} bytes left; truncated?)",
                    file_len - pos
                )));
            }
            let payload_at = pos + h.chunk_hdr_sz;
            let payload = total_sz - h.chunk_hdr_sz;
            // u32 blocks times a u32 block size fit a u64.
            let out_len = blocks * h.blk_sz;
            let expect = |want: u64| -> Result<()> {
                if payload == want {
                    Ok(())
                } else {
                    Err(what(format!("{payload} payload bytes, its type needs {want}")))
                }
            };
            let content = match kind {
                CHUNK_RAW => {
                    expect(out_len)?;
                    Some(Content::Raw {
                        file_offset: payload_at,
                    })
                }
                CHUNK_FILL => {
                    expect(4)?;
                    let mut pattern = [0u8; 4];
                    backing.read_at(payload_at, &mut pattern).map_err(|source| Error::Io {
                        context: format!("read of chunk {i} of {name}"),
                        source,
                    })?;
                    Some(Content::Fill(pattern))
                }
                CHUNK_DONT_CARE => {
                    expect(0)?;
                    Some(Content::Zero)
                }
                CHUNK_CRC32 => {
                    expect(4)?;
                    None
                }
                other => return Err(what(format!("unknown chunk type {other:#06x}"))),
            };
            if let Some(content) = content {
                if out_blocks + blocks > h.total_blks {
                    return Err(what(format!(
                        "its {blocks} blocks end past the {} blocks the header announces",
                        h.total_blks
                    )));
                }
                if blocks > 0 {
                    extents.push(Extent {
                        start: out_blocks * h.blk_sz,
                        len: out_len,
                        content,
                    });
                }
                out_blocks += blocks;
            }
            pos += total_sz;
        }
        if out_blocks != h.total_blks {
            return Err(corrupt(
                &name,
                format!(
                    "the chunks cover {out_blocks} blocks, the header announces {}",
                    h.total_blks
                ),
            ));
        }
        if pos != file_len {
            return Err(corrupt(
                &name,
                format!(
                    "{} bytes follow the last of the {} chunks the header announces",
                    file_len - pos,
                    h.total_chunks
                ),
            ));
        }
        Ok(SparseDevice {
            backing,
            name,
            extents,
            bytes: h.total_blks * h.blk_sz,
        })
    }

    /// Fills `buf` with the output bytes from `offset` (inside the output).
    fn read_bytes(&self, mut offset: u64, mut buf: &mut [u8]) -> Result<()> {
        // The extent holding `offset`: the last one starting at or before it.
        let mut i = self.extents.partition_point(|e| e.start <= offset).saturating_sub(1);
        while !buf.is_empty() {
            let Some(e) = self.extents.get(i) else {
                return Err(corrupt(&self.name, format!("no chunk holds byte {offset}")));
            };
            let inside = offset - e.start;
            let n = usize::try_from(e.len - inside).map_or(buf.len(), |left| left.min(buf.len()));
            let (now, later) = buf.split_at_mut(n);
            match e.content {
                Content::Raw { file_offset } => {
                    self.backing
                        .read_at(file_offset + inside, now)
                        .map_err(|source| Error::Io {
                            context: format!("read of byte {offset} of {}", self.name),
                            source,
                        })?
                }
                Content::Fill(pattern) => {
                    for (k, b) in now.iter_mut().enumerate() {
                        *b = pattern[(offset as usize).wrapping_add(k) % 4];
                    }
                }
                Content::Zero => now.fill(0),
            }
            offset += n as u64;
            buf = later;
            i += 1;
        }
        Ok(())
    }
}

impl BlockDevice for SparseDevice {
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> Result<()> {
        let n = buf.len().div_ceil(BLOCK) as u64;
        let blocks = self.block_count();
        if blkaddr.checked_add(n).is_none_or(|end| end > blocks) {
            return Err(Error::corrupt(
                "block address",
                Some(blkaddr),
                format!(
                    "beyond the end of {} ({blocks} blocks); is the image truncated?",
                    self.name
                ),
            ));
        }
        self.read_bytes(blkaddr * BLOCK as u64, buf)
    }

    fn block_count(&self) -> u64 {
        self.bytes / BLOCK as u64
    }

    fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> Result<()> {
        let _ = buf;
        Err(Error::ReadOnly(format!(
            "write of block {blkaddr:#x}: {} is an Android sparse image, read-only",
            self.name
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds sparse images by hand.
    struct Builder {
        blk_sz: u32,
        chunks: Vec<u8>,
        count: u32,
        blocks: u32,
    }

    impl Builder {
        fn new(blk_sz: u32) -> Builder {
            Builder {
                blk_sz,
                chunks: Vec::new(),
                count: 0,
                blocks: 0,
            }
        }

        fn chunk(mut self, kind: u16, blocks: u32, payload: &[u8]) -> Builder {
            self.chunks.extend_from_slice(&kind.to_le_bytes());
            self.chunks.extend_from_slice(&0u16.to_le_bytes());
            self.chunks.extend_from_slice(&blocks.to_le_bytes());
            self.chunks
                .extend_from_slice(&(12 + payload.len() as u32).to_le_bytes());
            self.chunks.extend_from_slice(payload);
            self.count += 1;
            if kind != CHUNK_CRC32 {
                self.blocks += blocks;
            }
            self
        }

        fn raw(self, data: &[u8]) -> Builder {
            let blocks = data.len() as u32 / self.blk_sz;
            self.chunk(CHUNK_RAW, blocks, data)
        }

        fn bytes(&self) -> Vec<u8> {
            let mut v = Vec::new();
            v.extend_from_slice(&SPARSE_MAGIC.to_le_bytes());
            v.extend_from_slice(&1u16.to_le_bytes());
            v.extend_from_slice(&0u16.to_le_bytes());
            v.extend_from_slice(&28u16.to_le_bytes());
            v.extend_from_slice(&12u16.to_le_bytes());
            v.extend_from_slice(&self.blk_sz.to_le_bytes());
            v.extend_from_slice(&self.blocks.to_le_bytes());
            v.extend_from_slice(&self.count.to_le_bytes());
            v.extend_from_slice(&0u32.to_le_bytes());
            v.extend_from_slice(&self.chunks);
            v
        }
    }

    fn pattern_block(seed: u8, len: usize) -> Vec<u8> {
        (0..len).map(|i| seed.wrapping_add((i * 7 % 251) as u8)).collect()
    }

    fn read_all(dev: &SparseDevice) -> Vec<u8> {
        let mut out = vec![0u8; dev.block_count() as usize * BLOCK];
        dev.read_blocks(0, &mut out).unwrap();
        out
    }

    #[test]
    fn every_chunk_type_reads_back_as_the_raw_image() {
        let a = pattern_block(1, 2 * BLOCK);
        let b = pattern_block(9, BLOCK);
        let img = Builder::new(4096)
            .raw(&a)
            .chunk(CHUNK_FILL, 3, &[0xde, 0xad, 0xbe, 0xef])
            .chunk(CHUNK_CRC32, 0, &[1, 2, 3, 4])
            .chunk(CHUNK_DONT_CARE, 2, &[])
            .raw(&b)
            .chunk(CHUNK_CRC32, 0, &[5, 6, 7, 8])
            .bytes();
        let dev = SparseDevice::from_bytes(img, "test").unwrap();
        assert_eq!(dev.block_count(), 8);
        assert_eq!(dev.chunk_count(), 4);
        let mut want = a.clone();
        want.extend([0xde, 0xad, 0xbe, 0xef].repeat(3 * BLOCK / 4));
        want.extend(vec![0u8; 2 * BLOCK]);
        want.extend(&b);
        assert_eq!(read_all(&dev), want);
        // Reads starting inside chunks and crossing several.
        for start in 0..8u64 {
            for n in 1..=(8 - start) as usize {
                let mut buf = vec![0u8; n * BLOCK];
                dev.read_blocks(start, &mut buf).unwrap();
                assert_eq!(buf, want[start as usize * BLOCK..][..n * BLOCK], "{start}+{n}");
            }
        }
        assert!(dev.read_blocks(8, &mut [0u8; BLOCK]).is_err());
        assert!(dev.read_blocks(u64::MAX, &mut [0u8; BLOCK]).is_err());
        assert!(matches!(dev.write_blocks(0, &[0u8; BLOCK]), Err(Error::ReadOnly(_))));
    }

    #[test]
    fn small_block_sizes_are_read_byte_by_byte() {
        // blk_sz 1024: a 4 KiB block spans four chunks; a trailing 1 KiB is dropped.
        let a = pattern_block(3, 1024 * 3);
        let img = Builder::new(1024)
            .chunk(CHUNK_FILL, 2, &[1, 2, 3, 4])
            .raw(&a)
            .chunk(CHUNK_DONT_CARE, 3, &[])
            .bytes();
        let dev = SparseDevice::from_bytes(img, "test").unwrap();
        assert_eq!(dev.raw_size(), 8 * 1024);
        assert_eq!(dev.block_count(), 2);
        let mut want = [1u8, 2, 3, 4].repeat(512);
        want.extend(&a);
        want.extend(vec![0u8; 3 * 1024]);
        assert_eq!(read_all(&dev), want[..2 * BLOCK]);
    }

    /// Every corruption is an [`Error::Corrupt`] (or `Unsupported` for a version),
    /// never a panic.
    #[test]
    fn a_damaged_table_is_refused_with_its_reason() {
        let good = Builder::new(4096)
            .raw(&pattern_block(5, BLOCK))
            .chunk(CHUNK_FILL, 2, &[0; 4])
            .chunk(CHUNK_DONT_CARE, 1, &[])
            .chunk(CHUNK_CRC32, 0, &[0; 4]);
        let bytes = good.bytes();
        SparseDevice::from_bytes(bytes.clone(), "good").unwrap();
        let set = |at: usize, v: &[u8]| {
            let mut b = bytes.clone();
            b[at..at + v.len()].copy_from_slice(v);
            b
        };
        let fill_hdr = 28 + 12 + BLOCK;
        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            ("empty", Vec::new(), "too short"),
            ("header only half", bytes[..20].to_vec(), "too short"),
            ("bad magic", set(0, &[0, 0, 0, 0]), "bad magic"),
            ("file header size 27", set(8, &27u16.to_le_bytes()), "file header size"),
            (
                "file header past the end",
                set(8, &u16::MAX.to_le_bytes()),
                "file header size",
            ),
            (
                "chunk header size 11",
                set(10, &11u16.to_le_bytes()),
                "chunk header size",
            ),
            ("block size 0", set(12, &0u32.to_le_bytes()), "block size"),
            ("block size 4097", set(12, &4097u32.to_le_bytes()), "block size"),
            ("huge chunk count", set(20, &u32::MAX.to_le_bytes()), "room for at most"),
            ("one chunk too many", set(20, &5u32.to_le_bytes()), "chunk 4"),
            (
                "one chunk too few",
                set(20, &3u32.to_le_bytes()),
                "bytes follow the last",
            ),
            (
                "total_blks too small",
                set(16, &3u32.to_le_bytes()),
                "end past the 3 blocks",
            ),
            ("total_blks too large", set(16, &5u32.to_le_bytes()), "cover 4 blocks"),
            ("raw size vs blocks", set(28 + 4, &2u32.to_le_bytes()), "payload bytes"),
            ("raw past the end", set(28 + 8, &u32::MAX.to_le_bytes()), "past the end"),
            ("size below header", set(28 + 8, &11u32.to_le_bytes()), "smaller than"),
            (
                "fill payload 8",
                set(fill_hdr + 8, &20u32.to_le_bytes()),
                "payload bytes",
            ),
            (
                "unknown type",
                set(fill_hdr, &0xCAC5u16.to_le_bytes()),
                "unknown chunk type",
            ),
            ("truncated in data", bytes[..bytes.len() - 30].to_vec(), "past the end"),
            ("truncated in a header", bytes[..fill_hdr + 5].to_vec(), "truncated"),
            ("trailing bytes", [bytes.clone(), vec![0; 3]].concat(), "bytes follow"),
        ];
        for (what, img, needle) in cases {
            match SparseDevice::from_bytes(img, "t") {
                Ok(_) => panic!("{what}: accepted"),
                Err(err @ Error::Corrupt { .. }) => {
                    let msg = err.to_string();
                    assert!(msg.contains(needle) && msg.contains("sparse image"), "{what}: {msg}");
                }
                Err(err) => panic!("{what}: not a corruption error: {err}"),
            }
        }
        let v2 = set(4, &2u16.to_le_bytes());
        assert!(matches!(
            SparseDevice::from_bytes(v2, "t"),
            Err(Error::Unsupported { .. })
        ));
    }

    #[test]
    fn longer_headers_are_skipped_and_later_minor_versions_accepted() {
        // File header of 32 bytes, chunk headers of 16.
        let data = pattern_block(7, BLOCK);
        let mut v = Vec::new();
        for (x, n) in [
            (SPARSE_MAGIC, 4),
            (1, 2),
            (3, 2),
            (32, 2),
            (16, 2),
            (4096, 4),
            (2, 4),
            (2, 4),
            (0, 4),
            (0, 4),
        ] {
            v.extend_from_slice(&x.to_le_bytes()[..n]);
        }
        for (kind, payload) in [(CHUNK_RAW, &data[..]), (CHUNK_FILL, &[9u8, 9, 9, 9][..])] {
            v.extend_from_slice(&kind.to_le_bytes());
            v.extend_from_slice(&[0, 0, 1, 0, 0, 0]);
            v.extend_from_slice(&(16 + payload.len() as u32).to_le_bytes());
            v.extend_from_slice(&[0xee; 4]);
            v.extend_from_slice(payload);
        }
        let dev = SparseDevice::from_bytes(v, "long").unwrap();
        assert_eq!(read_all(&dev), [data, vec![9u8; BLOCK]].concat());
    }

    #[test]
    fn sparse_files_are_recognised_by_their_magic() {
        let tmp = tempfile::tempdir().unwrap();
        let sparse = tmp.path().join("s");
        std::fs::write(&sparse, Builder::new(4096).chunk(CHUNK_DONT_CARE, 1, &[]).bytes()).unwrap();
        let raw = tmp.path().join("r");
        std::fs::write(&raw, [0u8; 3]).unwrap();
        assert!(is_sparse(&sparse).unwrap());
        assert!(!is_sparse(&raw).unwrap());
        let dev = SparseDevice::open(&sparse).unwrap();
        assert_eq!(read_all(&dev), vec![0u8; BLOCK]);
        let msg = refuse_writing(&sparse).to_string();
        assert!(msg.contains("simg2img") && msg.contains("sparse"), "{msg}");
    }
}
