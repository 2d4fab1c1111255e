//! [`MemDevice`]: an image held in memory.

use super::{check_range, BlockDevice, BLOCK};
use crate::{Error, Result};
use std::sync::{PoisonError, RwLock};

/// An image held in memory, for tests and fuzzing. A trailing partial block is ignored,
/// as [`FileDevice`](super::FileDevice) ignores it. Writes land at once; `flush` has
/// nothing to do.
pub struct MemDevice {
    bytes: RwLock<Vec<u8>>,
    blocks: u64,
}

impl MemDevice {
    /// Wraps the bytes of an image.
    pub fn new(bytes: Vec<u8>) -> MemDevice {
        let blocks = (bytes.len() / BLOCK) as u64;
        MemDevice {
            bytes: RwLock::new(bytes),
            blocks,
        }
    }

    /// A copy of the image as it is now.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.bytes.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The image, giving up the device.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes.into_inner().unwrap_or_else(PoisonError::into_inner)
    }
}

impl BlockDevice for MemDevice {
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> Result<()> {
        let n = buf.len().div_ceil(BLOCK) as u64;
        let start = blkaddr.checked_mul(BLOCK as u64);
        if start.is_none() || blkaddr.checked_add(n).is_none_or(|end| end > self.blocks) {
            return Err(Error::corrupt(
                "block address",
                Some(blkaddr),
                format!(
                    "beyond the end of the in-memory image ({} blocks); is the image truncated?",
                    self.blocks
                ),
            ));
        }
        let start = start.unwrap_or(0) as usize;
        let bytes = self.bytes.read().unwrap_or_else(PoisonError::into_inner);
        buf.copy_from_slice(&bytes[start..start + buf.len()]);
        Ok(())
    }

    fn block_count(&self) -> u64 {
        self.blocks
    }

    fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> Result<()> {
        check_range(blkaddr, buf.len(), self.blocks, &|| "the in-memory image".to_string())?;
        let start = blkaddr as usize * BLOCK;
        let mut bytes = self.bytes.write().unwrap_or_else(PoisonError::into_inner);
        bytes[start..start + buf.len()].copy_from_slice(buf);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::read_block;

    #[test]
    fn writes_whole_blocks_inside_the_image() {
        let dev = MemDevice::new(vec![0; 4 * BLOCK]);
        dev.write_blocks(1, &vec![7u8; 2 * BLOCK]).unwrap();
        assert_eq!(read_block(&dev, 2).unwrap(), vec![7u8; BLOCK]);
        assert_eq!(read_block(&dev, 3).unwrap(), vec![0u8; BLOCK]);
        assert!(dev.write_blocks(3, &vec![1u8; 2 * BLOCK]).is_err());
        assert!(dev.write_blocks(0, &[1u8; 100]).is_err());
        assert!(dev.write_blocks(u64::MAX, &vec![1u8; BLOCK]).is_err());
        dev.flush().unwrap();
        assert_eq!(dev.into_bytes()[BLOCK], 7);
    }
}
