//! Encoding F2FS's compressed clusters: the codec settings of a compressed file
//! ([`ClusterCodec`]) and one cluster's data turned into its compressed blocks
//! ([`encode_cluster`]), as the kernel's `f2fs_compress_pages` lays them out.
//!
//! What a compressed cluster is on disk: its first block starts with the 24-byte
//! header (`clen`, the checksum of the compressed bytes when the file keeps checksums,
//! four reserved zero words), then `clen` bytes of the algorithm's output, then zeros
//! to the end of the last block. A cluster is stored compressed only when that saves
//! at least one block (`clen <= (cluster_size - 1) * 4096 - 24`, the kernel's check);
//! otherwise it stays plain ([`encode_cluster`] answers `None`).
//!
//! Codecs, each producing what Linux's decompressor reads:
//! - LZ4 and LZ4HC: liblz4 through the `lz4` crate (`LZ4_compress_default`, or
//!   `LZ4_compress_HC` with the level, as the kernel calls them).
//! - Zstandard: libzstd through `zstd`, one frame per cluster (level 0 means the
//!   kernel's default, 1); the frame's window never exceeds the cluster, which is all
//!   the kernel's decoder allows.
//! - LZO: `lzokay-native`, a standard LZO1X stream (bitstream version 0).
//! - LZO-RLE: the same LZO1X instructions behind the version-1 prefix (bytes 17, 1).
//!   Linux's `lzo1x_decompress_safe` reads a version-1 stream exactly as a version-0
//!   one except for one reinterpreted instruction: a far copy whose distance is
//!   49151 (0xbfff, the largest LZO1X distance) means a run of zeros there, which is
//!   why Linux's LZO-RLE encoder never makes such copies. No encoder crate writes runs,
//!   so every LZO-RLE cluster is decoded back with this crate's decoder (which reads
//!   version 1 as the kernel does) and stored plain in the rare case it does not give
//!   the cluster back. LZO clusters get the same check, since that encoder is young.
//!
//! Everything here is pure: no device, no inode. The placing of a cluster's blocks
//! in a file is [`super::place`].

use super::lzo;
use crate::{Error, Result};
use std::cell::RefCell;
use uf2fs_format::cluster::COMPRESS_HEADER_SIZE;
use uf2fs_format::consts::BLOCK_SIZE;
use uf2fs_format::crc::f2fs_crc32;
use uf2fs_format::node::{
    compress_algorithm as alg, Compression, COMPRESS_CHKSUM, COMPRESS_LEVEL_OFFSET, MAX_COMPRESS_LOG_SIZE,
    MIN_COMPRESS_LOG_SIZE,
};

/// Levels Linux accepts for LZ4HC (`compress_algorithm=lz4:LEVEL`).
pub const LZ4HC_LEVELS: std::ops::RangeInclusive<u8> = 3..=12;
/// Levels Linux accepts for Zstandard (`compress_algorithm=zstd:LEVEL`).
pub const ZSTD_LEVELS: std::ops::RangeInclusive<u8> = 1..=22;
/// The Zstandard level Linux uses when the inode names none.
const ZSTD_DEFAULT_LEVEL: i32 = 1;

/// How a compressed file's clusters are encoded: what its inode's compression fields
/// say (`i_compress_algorithm`, `i_log_cluster_size`, `i_compress_flag`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClusterCodec {
    algorithm: u8,
    level: u8,
    log_cluster_size: u8,
    checksum: bool,
    /// The volume's block size (Linux's page size there): 4096 unless
    /// [`ClusterCodec::with_block_size`] says otherwise.
    block: usize,
}

impl ClusterCodec {
    /// Settings for `algorithm` (one of [`alg`]) at `level` (0: the algorithm's
    /// default; LZ4 with a level is LZ4HC), clusters of `2^log_cluster_size` blocks,
    /// with or without cluster checksums. Values Linux would refuse are
    /// [`Error::Invalid`].
    pub fn new(algorithm: u8, level: u8, log_cluster_size: u8, checksum: bool) -> Result<ClusterCodec> {
        if !(MIN_COMPRESS_LOG_SIZE..=MAX_COMPRESS_LOG_SIZE).contains(&log_cluster_size) {
            return Err(Error::Invalid(format!(
                "compress_log_size {log_cluster_size}: F2FS clusters are 2^{MIN_COMPRESS_LOG_SIZE} to \
                 2^{MAX_COMPRESS_LOG_SIZE} blocks"
            )));
        }
        let ok = match algorithm {
            alg::LZO | alg::LZORLE => level == 0,
            alg::LZ4 => level == 0 || LZ4HC_LEVELS.contains(&level),
            alg::ZSTD => level == 0 || ZSTD_LEVELS.contains(&level),
            _ => {
                return Err(Error::Invalid(format!(
                    "compression algorithm {algorithm} is not F2FS's"
                )))
            }
        };
        if !ok {
            let c = ClusterCodec {
                algorithm,
                level,
                log_cluster_size,
                checksum,
                block: BLOCK_SIZE,
            };
            return Err(Error::Invalid(format!(
                "{}: level {level} is not one Linux accepts (lz4hc 3-12, zstd 1-22, none for lzo and lzo-rle)",
                c.name()
            )));
        }
        Ok(ClusterCodec {
            algorithm,
            level,
            log_cluster_size,
            checksum,
            block: BLOCK_SIZE,
        })
    }

    /// Parses an algorithm as the mount option `compress_algorithm=` spells it:
    /// `lzo`, `lz4`, `lz4hc[:LEVEL]` (default 9, LZ4HC's), `lz4:LEVEL`, `zstd[:LEVEL]`,
    /// `lzo-rle`. The other settings are given.
    pub fn parse(text: &str, log_cluster_size: u8, checksum: bool) -> Result<ClusterCodec> {
        let (name, level) = match text.split_once(':') {
            Some((n, l)) => {
                let l: u8 = l
                    .parse()
                    .map_err(|_| Error::Invalid(format!("compression level '{l}' in '{text}' is not a number")))?;
                (n, Some(l))
            }
            None => (text, None),
        };
        let (algorithm, level) = match (name, level) {
            ("lzo", None) => (alg::LZO, 0),
            ("lzo-rle", None) => (alg::LZORLE, 0),
            ("lz4", l) => (alg::LZ4, l.unwrap_or(0)),
            ("lz4hc", l) => (alg::LZ4, l.unwrap_or(9)),
            ("zstd", l) => (alg::ZSTD, l.unwrap_or(0)),
            ("lzo" | "lzo-rle", Some(_)) => {
                return Err(Error::Invalid(format!("{name} takes no level ('{text}')")));
            }
            _ => {
                return Err(Error::Invalid(format!(
                    "unknown compression algorithm '{name}' (lzo, lz4, lz4hc[:LEVEL], zstd[:LEVEL], lzo-rle)"
                )));
            }
        };
        ClusterCodec::new(algorithm, level, log_cluster_size, checksum)
    }

    /// The settings of a compressed file's inode.
    pub fn from_compression(c: &Compression) -> Result<ClusterCodec> {
        ClusterCodec::new(c.algorithm, c.level(), c.log_cluster_size, c.has_checksum())
    }

    /// The inode's compression fields for these settings (`i_compr_blocks` 0).
    pub fn compression(&self) -> Compression {
        Compression {
            compr_blocks: 0,
            algorithm: self.algorithm,
            log_cluster_size: self.log_cluster_size,
            flag: (self.level as u16) << COMPRESS_LEVEL_OFFSET | if self.checksum { COMPRESS_CHKSUM } else { 0 },
        }
    }

    /// The algorithm (one of [`alg`]).
    pub fn algorithm(&self) -> u8 {
        self.algorithm
    }

    /// The level (0: the algorithm's default).
    pub fn level(&self) -> u8 {
        self.level
    }

    /// log2 of the blocks per cluster.
    pub fn log_cluster_size(&self) -> u8 {
        self.log_cluster_size
    }

    /// Whether clusters carry checksums.
    pub fn checksum(&self) -> bool {
        self.checksum
    }

    /// Blocks per cluster.
    pub fn cluster_blocks(&self) -> usize {
        1 << self.log_cluster_size
    }

    /// These settings for a volume of `block_size`-byte blocks (4096 or 16384): a
    /// cluster is `2^log_cluster_size` of them, and its compressed data must save one
    /// of them, as Linux on pages of that size.
    pub fn with_block_size(mut self, block_size: usize) -> ClusterCodec {
        self.block = block_size;
        self
    }

    /// The block size clusters are encoded in.
    pub fn block_size(&self) -> usize {
        self.block
    }

    /// Bytes per cluster.
    pub fn cluster_bytes(&self) -> usize {
        self.block << self.log_cluster_size
    }

    /// The name the mount option uses (`lz4hc:9`, `zstd:3`, `lzo-rle`, ...).
    pub fn name(&self) -> String {
        let base = super::algorithm_name(&self.compression());
        match (self.algorithm, self.level) {
            (_, 0) => base.to_string(),
            (alg::LZ4, l) => format!("lz4hc:{l}"),
            (_, l) => format!("{base}:{l}"),
        }
    }
}

/// A cluster stored compressed: its blocks, header first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompressedCluster {
    /// The compressed blocks' bytes (a whole number of blocks: header, data, zeros).
    pub bytes: Vec<u8>,
    /// Bytes of compressed data after the header (`clen`).
    pub clen: u32,
    /// The size of its blocks (the volume's).
    pub block_size: usize,
}

impl CompressedCluster {
    /// Blocks the compressed cluster takes (fewer than the cluster's).
    pub fn blocks(&self) -> usize {
        self.bytes.len() / self.block_size
    }

    /// Block `i` of the compressed cluster.
    pub fn block(&self, i: usize) -> &[u8] {
        &self.bytes[i * self.block_size..(i + 1) * self.block_size]
    }
}

thread_local! {
    /// One Zstandard compression context per (thread, level), reused for every cluster.
    static ZSTD: RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> = const { RefCell::new(None) };
}

fn zstd_compress(level: i32, src: &[u8], dst: &mut [u8]) -> std::result::Result<usize, String> {
    ZSTD.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.as_ref().is_none_or(|(l, _)| *l != level) {
            let c = zstd::bulk::Compressor::new(level).map_err(|e| e.to_string())?;
            *cell = Some((level, c));
        }
        let (_, c) = cell.as_mut().expect("just set");
        c.compress_to_buffer(src, dst).map_err(|e| e.to_string())
    })
}

/// Compresses `data` into `dst` (the room compression may use); `None` when the output
/// does not fit there. Errors are the codec's own failures.
fn compress_into(codec: &ClusterCodec, data: &[u8], dst: &mut [u8]) -> Result<Option<usize>> {
    let failed = |why: String| Error::Invalid(format!("{} compression failed: {why}", codec.name()));
    match codec.algorithm {
        alg::LZ4 => {
            let mode = match codec.level {
                0 => lz4::block::CompressionMode::DEFAULT,
                l => lz4::block::CompressionMode::HIGHCOMPRESSION(l as i32),
            };
            // liblz4 answers 0 (an error here) when the output does not fit `dst`, as
            // it does the kernel, which then writes the cluster plain.
            Ok(lz4::block::compress_to_buffer(data, Some(mode), false, dst).ok())
        }
        alg::ZSTD => {
            let level = if codec.level == 0 {
                ZSTD_DEFAULT_LEVEL
            } else {
                codec.level as i32
            };
            // Too small a destination is an error from libzstd: the cluster stays plain.
            Ok(zstd_compress(level, data, dst).ok())
        }
        alg::LZO | alg::LZORLE => {
            let stream = lzokay_native::compress(data).map_err(|e| failed(e.to_string()))?;
            let prefix: &[u8] = if codec.algorithm == alg::LZORLE { &[17, 1] } else { &[] };
            let n = prefix.len() + stream.len();
            if n > dst.len() {
                return Ok(None);
            }
            dst[..prefix.len()].copy_from_slice(prefix);
            dst[prefix.len()..n].copy_from_slice(&stream);
            // The check of the module notes: the stream must give the cluster back as
            // Linux's decoder reads it.
            let mut back = vec![0u8; data.len()];
            let same = lzo::decompress(&dst[..n], &mut back).is_ok_and(|m| m == data.len()) && back == data;
            Ok(same.then_some(n))
        }
        other => Err(Error::Invalid(format!("compression algorithm {other} is not F2FS's"))),
    }
}

/// Encodes one whole cluster (`data`: exactly [`ClusterCodec::cluster_bytes`] bytes)
/// as the kernel would store it compressed, or `None` when compression does not save
/// at least one block (the cluster is then written plain). The header carries `clen`
/// and, when the codec keeps checksums, `f2fs_crc32` of the compressed bytes.
pub fn encode_cluster(codec: &ClusterCodec, data: &[u8]) -> Result<Option<CompressedCluster>> {
    if data.len() != codec.cluster_bytes() {
        return Err(Error::Invalid(format!(
            "a cluster of {} bytes for clusters of {}",
            data.len(),
            codec.cluster_bytes()
        )));
    }
    // The most compressed bytes that still save a block.
    let max_clen = (codec.cluster_blocks() - 1) * codec.block - COMPRESS_HEADER_SIZE;
    let mut bytes = vec![0u8; COMPRESS_HEADER_SIZE + max_clen];
    let Some(clen) = compress_into(codec, data, &mut bytes[COMPRESS_HEADER_SIZE..])? else {
        return Ok(None);
    };
    if clen > max_clen {
        return Ok(None);
    }
    let chksum = if codec.checksum {
        f2fs_crc32(&bytes[COMPRESS_HEADER_SIZE..COMPRESS_HEADER_SIZE + clen])
    } else {
        0
    };
    bytes[0..4].copy_from_slice(&(clen as u32).to_le_bytes());
    bytes[4..8].copy_from_slice(&chksum.to_le_bytes());
    let blocks = (COMPRESS_HEADER_SIZE + clen).div_ceil(codec.block);
    bytes.truncate(blocks * codec.block);
    // Whatever the codec left past its output is zeroed, as the kernel zeroes it.
    bytes[COMPRESS_HEADER_SIZE + clen..].fill(0);
    Ok(Some(CompressedCluster {
        bytes,
        clen: clen as u32,
        block_size: codec.block,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Text-like data: compresses well with every codec.
    fn text(n: usize, seed: u32) -> Vec<u8> {
        uf2fs_testkit::data::text(&uf2fs_testkit::data::CLUSTER_WORDS, n, seed)
    }

    use uf2fs_testkit::data::noise;

    fn all_codecs(log: u8, checksum: bool) -> Vec<ClusterCodec> {
        [
            (alg::LZO, 0),
            (alg::LZ4, 0),
            (alg::LZ4, 9),
            (alg::LZ4, 12),
            (alg::ZSTD, 0),
            (alg::ZSTD, 19),
            (alg::LZORLE, 0),
        ]
        .into_iter()
        .map(|(a, l)| ClusterCodec::new(a, l, log, checksum).unwrap())
        .collect()
    }

    #[test]
    fn every_codec_and_cluster_size_round_trips_through_the_reader() {
        for log in MIN_COMPRESS_LOG_SIZE..=MAX_COMPRESS_LOG_SIZE {
            for checksum in [false, true] {
                for codec in all_codecs(log, checksum) {
                    let data = text(codec.cluster_bytes(), log as u32 + 7);
                    let c = encode_cluster(&codec, &data)
                        .unwrap()
                        .unwrap_or_else(|| panic!("{} did not compress text", codec.name()));
                    assert!(c.blocks() < codec.cluster_blocks());
                    assert_eq!(c.bytes.len() % BLOCK_SIZE, 0);
                    let mut out = vec![0u8; data.len()];
                    super::super::decompress_cluster(5, 1, 0x100, &codec.compression(), &c.bytes, &mut out)
                        .unwrap_or_else(|e| panic!("{} log {log}: {e}", codec.name()));
                    assert_eq!(out, data, "{} log {log}", codec.name());
                    // The reserved words and the tail are zeros.
                    assert_eq!(&c.bytes[8..COMPRESS_HEADER_SIZE], &[0u8; 16]);
                    assert!(c.bytes[COMPRESS_HEADER_SIZE + c.clen as usize..]
                        .iter()
                        .all(|&b| b == 0));
                    let sum = u32::from_le_bytes(c.bytes[4..8].try_into().unwrap());
                    if checksum {
                        assert_eq!(
                            sum,
                            f2fs_crc32(&c.bytes[COMPRESS_HEADER_SIZE..COMPRESS_HEADER_SIZE + c.clen as usize])
                        );
                    } else {
                        assert_eq!(sum, 0);
                    }
                }
            }
        }
    }

    #[test]
    fn a_cluster_that_saves_no_block_stays_plain() {
        for log in [2u8, 4, 8] {
            for codec in all_codecs(log, true) {
                let data = noise(codec.cluster_bytes(), log as u64);
                assert_eq!(encode_cluster(&codec, &data).unwrap(), None, "{}", codec.name());
            }
        }
        // Three blocks of noise and one of zeros in a 4-block cluster: compression saves
        // less than a block (the header alone takes 24 bytes), so it stays plain too.
        let codec = ClusterCodec::new(alg::LZ4, 0, 2, false).unwrap();
        let mut data = noise(3 * BLOCK_SIZE, 3);
        data.resize(4 * BLOCK_SIZE, 0);
        let saved_block = encode_cluster(&codec, &data).unwrap();
        // The zero block compresses to a few bytes, so exactly one block is saved
        // unless the noise grows by more than the block's last 24 bytes: either way
        // the result obeys the kernel's rule.
        if let Some(c) = saved_block {
            assert!(COMPRESS_HEADER_SIZE + c.clen as usize <= 3 * BLOCK_SIZE);
        }
        // A cluster of zeros takes one block.
        let zeros = vec![0u8; 4 * BLOCK_SIZE];
        assert_eq!(encode_cluster(&codec, &zeros).unwrap().unwrap().blocks(), 1);
    }

    #[test]
    fn a_cluster_of_the_wrong_size_is_refused() {
        let codec = ClusterCodec::new(alg::ZSTD, 3, 3, false).unwrap();
        assert!(encode_cluster(&codec, &[0u8; 4096]).is_err());
    }

    #[test]
    fn settings_are_checked_and_named_as_linux_names_them() {
        assert!(
            ClusterCodec::new(alg::LZ4, 0, 1, false).is_err(),
            "clusters of 2 blocks"
        );
        assert!(
            ClusterCodec::new(alg::LZ4, 0, 9, false).is_err(),
            "clusters of 512 blocks"
        );
        assert!(ClusterCodec::new(alg::LZ4, 2, 2, false).is_err(), "lz4hc level 2");
        assert!(ClusterCodec::new(alg::ZSTD, 23, 2, false).is_err());
        assert!(ClusterCodec::new(alg::LZO, 1, 2, false).is_err());
        assert!(ClusterCodec::new(7, 0, 2, false).is_err());
        let p = |s: &str| ClusterCodec::parse(s, 2, false).map(|c| c.name());
        assert_eq!(p("lz4").unwrap(), "lz4");
        assert_eq!(p("lz4hc").unwrap(), "lz4hc:9");
        assert_eq!(p("lz4:12").unwrap(), "lz4hc:12");
        assert_eq!(p("zstd").unwrap(), "zstd");
        assert_eq!(p("zstd:19").unwrap(), "zstd:19");
        assert_eq!(p("lzo").unwrap(), "lzo");
        assert_eq!(p("lzo-rle").unwrap(), "lzo-rle");
        assert!(p("lzo:3").is_err());
        assert!(p("gzip").is_err());
        assert!(p("zstd:x").is_err());
        let c = ClusterCodec::parse("zstd:5", 4, true).unwrap().compression();
        assert_eq!(
            (c.algorithm, c.level(), c.log_cluster_size, c.has_checksum()),
            (alg::ZSTD, 5, 4, true)
        );
        assert_eq!(ClusterCodec::from_compression(&c).unwrap().name(), "zstd:5");
    }

    #[test]
    fn lzo_rle_streams_carry_version_1() {
        let codec = ClusterCodec::new(alg::LZORLE, 0, 2, false).unwrap();
        let c = encode_cluster(&codec, &text(4 * BLOCK_SIZE, 3)).unwrap().unwrap();
        assert_eq!(&c.bytes[COMPRESS_HEADER_SIZE..COMPRESS_HEADER_SIZE + 2], &[17, 1]);
        let codec = ClusterCodec::new(alg::LZO, 0, 2, false).unwrap();
        let c = encode_cluster(&codec, &text(4 * BLOCK_SIZE, 3)).unwrap().unwrap();
        assert_ne!(c.bytes[COMPRESS_HEADER_SIZE], 17);
    }
}
