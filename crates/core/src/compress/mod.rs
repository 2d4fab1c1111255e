//! Compressed files: decoding F2FS's compressed clusters (LZO, LZO-RLE, LZ4, LZ4HC and
//! Zstandard), a small cache of decoded clusters, and the writer of compressed
//! clusters ([`encode`]: a cluster's bytes to its compressed blocks; [`place`]: those
//! blocks into a file's node tree; `Fs::set_compression`, `Fs::write_cluster` and
//! `Fs::write_cluster_data` on a read-write file system).
//!
//! Owns no on-disk state. The data layer (`Mapper` in `data.rs`) finds a cluster's blocks through the
//! node tree, reads them and hands them here; this module checks the cluster header
//! (`uf2fs_format::cluster`), the checksum when the file keeps one, and that the
//! cluster decodes to exactly its size, as the kernel's `f2fs_decompress_cluster`
//! insists. A cluster that fails any of these is an error naming the inode and the
//! cluster, never partly decoded data.
//!
//! Codecs: LZ4 (LZ4HC writes the same format) through `lz4_flex`'s bounds-checked
//! decoder, Zstandard through `zstd` (libzstd), LZO and LZO-RLE through [`lzo`], the
//! decoder of this crate (no crate reads LZO-RLE).

pub mod encode;
mod ioctl;
pub mod lzo;
pub mod place;
pub mod policy;
pub mod ro;
mod stored;
mod write;
pub(crate) mod writeback;

pub use encode::{encode_cluster, ClusterCodec, CompressedCluster};
pub use place::{ClusterData, Placed};
pub use policy::{CompressMode, CompressOptions};
pub use ro::{linux_ro_cluster_extent, ro_cluster_misread, LinuxClusterExtent, RoMisread};
pub use stored::StoredCompression;
pub use write::ClusterWrite;

use crate::{Error, Ino, Result};
use std::cell::RefCell;
use std::sync::{Arc, Mutex, PoisonError};
use uf2fs_format::cluster::ClusterHeader;
use uf2fs_format::crc::f2fs_crc32;
use uf2fs_format::node::{compress_algorithm as alg, Compression};

/// Name of an `i_compress_algorithm` value, as the kernel's mount option spells it.
pub fn algorithm_name(c: &Compression) -> &'static str {
    match (c.algorithm, c.level()) {
        (alg::LZO, _) => "lzo",
        (alg::LZ4, 0) => "lz4",
        (alg::LZ4, _) => "lz4hc",
        (alg::ZSTD, _) => "zstd",
        (alg::LZORLE, _) => "lzo-rle",
        _ => "unknown",
    }
}

/// Fails unless uf2fs can decode clusters of `c` (a known algorithm).
pub fn check_supported(ino: Ino, c: &Compression) -> Result<()> {
    if c.algorithm > alg::LZORLE {
        return Err(Error::Unsupported {
            feature: "compression",
            detail: format!(
                "inode {ino} is compressed with algorithm {}, which F2FS does not define",
                c.algorithm
            ),
        });
    }
    Ok(())
}

/// How a compressed file is stored: its settings and what its clusters hold
/// ([`crate::Fs::compression`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileCompression {
    /// Algorithm as the kernel's mount option spells it (`lzo`, `lzo-rle`, `lz4`,
    /// `lz4hc`, `zstd`).
    pub algorithm: &'static str,
    /// Level the writer used (0: the algorithm's default).
    pub level: u8,
    /// Blocks per cluster.
    pub cluster_blocks: u32,
    /// Whether clusters carry checksums (`compress_chksum`).
    pub checksums: bool,
    /// Clusters stored compressed.
    pub compressed_clusters: u64,
    /// Clusters stored as plain blocks (some data, not compressed).
    pub plain_clusters: u64,
    /// Blocks holding compressed data.
    pub compressed_blocks: u64,
    /// Blocks compression saved, as the inode records it (`i_compr_blocks`).
    pub saved_blocks: u64,
}

thread_local! {
    /// One Zstandard decompression context per thread, reused for every cluster.
    static ZSTD: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

fn zstd_decompress(src: &[u8], out: &mut [u8]) -> std::result::Result<usize, String> {
    ZSTD.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = Some(zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?);
        }
        let d = cell.as_mut().expect("just set");
        d.decompress_to_buffer(src, out).map_err(|e| e.to_string())
    })
}

/// Decodes one compressed cluster of inode `ino`: `blocks` are the cluster's
/// compressed blocks in order (the first at device block `blkaddr`), `out` receives
/// the cluster's `2^log_cluster_size` blocks of file data.
pub fn decompress_cluster(
    ino: Ino,
    cluster: u64,
    blkaddr: u64,
    c: &Compression,
    blocks: &[u8],
    out: &mut [u8],
) -> Result<()> {
    let bad = |why: String| {
        Error::corrupt(
            format!("inode {ino}"),
            Some(blkaddr),
            format!("compressed cluster {cluster} ({}): {why}", algorithm_name(c)),
        )
    };
    check_supported(ino, c)?;
    let h = ClusterHeader::decode(blocks).map_err(|e| bad(e.to_string()))?;
    let data = h.data(blocks);
    if c.has_checksum() {
        let sum = f2fs_crc32(data);
        if sum != h.chksum {
            return Err(bad(format!("checksum {:#010x}, header says {:#010x}", sum, h.chksum)));
        }
    }
    let n = match c.algorithm {
        alg::LZO | alg::LZORLE => lzo::decompress(data, out).map_err(|e| bad(e.to_string()))?,
        alg::LZ4 => lz4_flex::block::decompress_into(data, out).map_err(|e| bad(format!("LZ4: {e}")))?,
        _ => zstd_decompress(data, out).map_err(|e| bad(format!("Zstandard: {e}")))?,
    };
    if n != out.len() {
        return Err(bad(format!("decodes to {n} bytes, the cluster holds {}", out.len())));
    }
    Ok(())
}

/// Identity of a decoded cluster: inode, cluster index and the address of its first
/// compressed block (a cluster rewritten elsewhere is a different entry).
type ClusterKey = (Ino, u64, u64);

/// The last few clusters decoded, so that reads smaller than a cluster (FUSE reads
/// 128 KiB at most; clusters reach 1 MiB) decode each cluster once.
#[derive(Default)]
pub struct ClusterCache {
    entries: Mutex<Vec<(ClusterKey, Arc<Vec<u8>>)>>,
}

/// Clusters kept: one per reader of a few concurrent sequential readers.
const CACHED_CLUSTERS: usize = 8;

impl ClusterCache {
    /// The decoded cluster `key`, if kept.
    pub fn get(&self, key: ClusterKey) -> Option<Arc<Vec<u8>>> {
        let mut e = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let i = e.iter().position(|(k, _)| *k == key)?;
        let hit = e.remove(i);
        let data = hit.1.clone();
        e.push(hit);
        Some(data)
    }

    /// Keeps a decoded cluster, dropping the least recently used one when full.
    pub fn put(&self, key: ClusterKey, data: Arc<Vec<u8>>) {
        let mut e = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        e.retain(|(k, _)| *k != key);
        if e.len() >= CACHED_CLUSTERS {
            e.remove(0);
        }
        e.push((key, data));
    }

    /// Forgets every cluster of inode `ino` (its blocks were freed).
    pub fn forget_inode(&self, ino: Ino) {
        let mut e = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        e.retain(|(k, _)| k.0 != ino);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uf2fs_format::cluster::COMPRESS_HEADER_SIZE;

    fn settings(algorithm: u8, checksum: bool) -> Compression {
        Compression {
            compr_blocks: 0,
            algorithm,
            log_cluster_size: 2,
            flag: checksum as u16,
        }
    }

    /// The compressed blocks of a cluster holding `data` compressed as `cdata`.
    fn blocks(cdata: &[u8], checksum: bool) -> Vec<u8> {
        let mut b = vec![0u8; (COMPRESS_HEADER_SIZE + cdata.len()).div_ceil(4096) * 4096];
        b[0..4].copy_from_slice(&(cdata.len() as u32).to_le_bytes());
        if checksum {
            b[4..8].copy_from_slice(&f2fs_crc32(cdata).to_le_bytes());
        }
        b[COMPRESS_HEADER_SIZE..COMPRESS_HEADER_SIZE + cdata.len()].copy_from_slice(cdata);
        b
    }

    fn cluster_data() -> Vec<u8> {
        (0..4 * 4096u32).map(|i| (i / 100) as u8).collect()
    }

    #[test]
    fn lz4_and_zstd_clusters_decode_and_checksums_are_checked() {
        let data = cluster_data();
        for (algorithm, cdata) in [
            (alg::LZ4, lz4_flex::block::compress(&data)),
            (alg::ZSTD, zstd::bulk::compress(&data, 3).unwrap()),
        ] {
            for checksum in [false, true] {
                let c = settings(algorithm, checksum);
                let b = blocks(&cdata, checksum);
                let mut out = vec![0u8; data.len()];
                decompress_cluster(7, 3, 0x1000, &c, &b, &mut out).unwrap();
                assert_eq!(out, data);
                // With checksums, one flipped bit of compressed data is an error
                // naming the inode and the cluster.
                if checksum {
                    let mut bad = b.clone();
                    bad[COMPRESS_HEADER_SIZE + cdata.len() / 2] ^= 0x10;
                    let e = decompress_cluster(7, 3, 0x1000, &c, &bad, &mut out)
                        .unwrap_err()
                        .to_string();
                    assert!(
                        e.contains("inode 7") && e.contains("cluster 3") && e.contains("checksum"),
                        "{e}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_cluster_must_decode_to_its_whole_size() {
        let data = cluster_data();
        let short = lz4_flex::block::compress(&data[..4096 * 3]);
        let c = settings(alg::LZ4, false);
        let mut out = vec![0u8; data.len()];
        let e = decompress_cluster(9, 0, 0x2000, &c, &blocks(&short, false), &mut out).unwrap_err();
        assert!(e.to_string().contains("decodes to 12288 bytes"), "{e}");
        // clen beyond the blocks read.
        let mut b = blocks(&short, false);
        let len = b.len() as u32;
        b[0..4].copy_from_slice(&len.to_le_bytes());
        assert!(decompress_cluster(9, 0, 0x2000, &c, &b, &mut out).is_err());
        // An algorithm F2FS does not define.
        let e = decompress_cluster(9, 0, 0x2000, &settings(9, false), &b, &mut out).unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }), "{e}");
    }

    #[test]
    fn the_cache_keeps_the_most_recent_clusters() {
        let cache = ClusterCache::default();
        for i in 0..CACHED_CLUSTERS as u64 + 1 {
            cache.put((1, i, 100 + i), Arc::new(vec![i as u8]));
        }
        assert!(cache.get((1, 0, 100)).is_none());
        assert_eq!(cache.get((1, 1, 101)).unwrap()[0], 1);
        assert!(cache.get((1, 1, 999)).is_none());
        cache.forget_inode(1);
        assert!(cache.get((1, 2, 102)).is_none());
    }
}
