//! The header of a compressed cluster (`struct compress_data`): the first bytes of the
//! first block after a cluster's `COMPRESS_ADDR` slot.
//!
//! A compressed file is cut into clusters of 2^`i_log_cluster_size` blocks. A cluster
//! the writer compressed has `COMPRESS_ADDR` in its first address slot, the addresses
//! of the blocks holding the compressed bytes in the next slots, and `NEW_ADDR`
//! (blocks kept reserved) or `NULL_ADDR` (reservation released) in the rest. Those
//! blocks hold this header, then `clen` bytes of the algorithm's output, then zeros.

use crate::le::u32_at;
use crate::{FormatError, Result};

/// Bytes of the header before the compressed data: `clen`, `chksum`, 4 reserved words.
pub const COMPRESS_HEADER_SIZE: usize = 24;

/// A compressed cluster's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterHeader {
    /// Bytes of compressed data after the header.
    pub clen: u32,
    /// CRC of the compressed data (`f2fs_crc32`), when the file keeps checksums.
    pub chksum: u32,
}

impl ClusterHeader {
    /// Decodes the header at the start of `b` and checks that `clen` fits the `b.len()`
    /// bytes of the cluster's compressed blocks.
    pub fn decode(b: &[u8]) -> Result<ClusterHeader> {
        const S: &str = "compressed cluster header";
        FormatError::need(S, b, COMPRESS_HEADER_SIZE)?;
        let h = ClusterHeader {
            clen: u32_at(b, 0),
            chksum: u32_at(b, 4),
        };
        if h.clen as usize > b.len() - COMPRESS_HEADER_SIZE {
            return Err(FormatError::invalid(
                S,
                format!("{} bytes of compressed data in {} bytes of blocks", h.clen, b.len()),
            ));
        }
        Ok(h)
    }

    /// The compressed data that follows the header in `b` (as checked by
    /// [`ClusterHeader::decode`]).
    pub fn data<'a>(&self, b: &'a [u8]) -> &'a [u8] {
        &b[COMPRESS_HEADER_SIZE..COMPRESS_HEADER_SIZE + self.clen as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_and_bounds_clen() {
        let mut b = vec![0u8; 4096];
        b[0..4].copy_from_slice(&100u32.to_le_bytes());
        b[4..8].copy_from_slice(&0xdead_beefu32.to_le_bytes());
        let h = ClusterHeader::decode(&b).unwrap();
        assert_eq!((h.clen, h.chksum), (100, 0xdead_beef));
        assert_eq!(h.data(&b).len(), 100);
        b[0..4].copy_from_slice(&(4096u32 - 24).to_le_bytes());
        assert!(ClusterHeader::decode(&b).is_ok());
        b[0..4].copy_from_slice(&(4096u32 - 23).to_le_bytes());
        assert!(ClusterHeader::decode(&b).is_err());
        assert!(ClusterHeader::decode(&b[..10]).is_err());
    }
}
