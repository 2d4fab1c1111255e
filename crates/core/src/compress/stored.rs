//! How a compressed file was written, read from its inode alone (no cluster is read):
//! what a repack of the image needs to write its files the same way
//! ([`Fs::stored_compression`]).

use crate::{Fs, Ino, Result};
use uf2fs_format::node::{compress_algorithm as alg, F2FS_COMPRESS_RELEASED};

/// The compression settings recorded in a compressed file's inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredCompression {
    /// `i_compress_algorithm`, one of [`uf2fs_format::node::compress_algorithm`].
    pub algorithm: u8,
    /// The level in `i_compress_flag` (0: the algorithm's default).
    pub level: u8,
    /// `i_log_cluster_size`: log2 of the blocks per cluster.
    pub log_cluster_size: u8,
    /// Whether clusters carry checksums (`COMPRESS_CHKSUM` in `i_compress_flag`).
    pub checksum: bool,
    /// Whether the file's reserved blocks were released (`F2FS_COMPRESS_RELEASED`,
    /// as sload's `-r` leaves read-only files).
    pub released: bool,
}

impl StoredCompression {
    /// The algorithm and level as [`super::ClusterCodec::parse`] reads them (and
    /// `uf2fs mkfs --compress` takes them): `lzo`, `lzo-rle`, `lz4`, `lz4hc:LEVEL`,
    /// `zstd` or `zstd:LEVEL`; an algorithm Linux does not know as `unknown(N)`.
    pub fn spec(&self) -> String {
        match (self.algorithm, self.level) {
            (alg::LZO, _) => "lzo".into(),
            (alg::LZORLE, _) => "lzo-rle".into(),
            (alg::LZ4, 0) => "lz4".into(),
            (alg::LZ4, l) => format!("lz4hc:{l}"),
            (alg::ZSTD, 0) => "zstd".into(),
            (alg::ZSTD, l) => format!("zstd:{l}"),
            (a, _) => format!("unknown({a})"),
        }
    }
}

impl Fs {
    /// The compression settings of inode `ino` when it is a compressed file
    /// (`F2FS_COMPR_FL` with settings in its extra attributes); `None` for any other
    /// inode. Reads the inode only.
    pub fn stored_compression(&self, ino: Ino) -> Result<Option<StoredCompression>> {
        let i = self.inode(ino)?;
        if !i.inode.is_compressed() {
            return Ok(None);
        }
        Ok(i.inode.compress.map(|c| StoredCompression {
            algorithm: c.algorithm,
            level: c.level(),
            log_cluster_size: c.log_cluster_size,
            checksum: c.has_checksum(),
            released: i.inode.has_inline(F2FS_COMPRESS_RELEASED),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_back_to_the_same_settings() {
        for (algorithm, level, want) in [
            (alg::LZ4, 0, "lz4"),
            (alg::LZ4, 9, "lz4hc:9"),
            (alg::ZSTD, 0, "zstd"),
            (alg::ZSTD, 3, "zstd:3"),
            (alg::LZO, 0, "lzo"),
            (alg::LZORLE, 0, "lzo-rle"),
        ] {
            let s = StoredCompression {
                algorithm,
                level,
                log_cluster_size: 3,
                checksum: true,
                released: false,
            };
            assert_eq!(s.spec(), want);
            let c = super::super::ClusterCodec::parse(&s.spec(), 3, true).unwrap();
            assert_eq!((c.algorithm(), c.level()), (algorithm, level), "{want}");
        }
    }
}
