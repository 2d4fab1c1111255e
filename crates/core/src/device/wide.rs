//! [`WideDevice`]: a device of 4 KiB blocks seen in blocks of 16 KiB, for volumes made
//! with a larger block size (`mkfs.f2fs -b 16384`, Android's 16 KiB-page devices).
//!
//! Every device below it (files, sparse images, memory) keeps addressing 4 KiB units;
//! everything above it (the F2FS layer and the wrappers the open puts on top) sees
//! block `n` of the volume as units `n * k .. (n + 1) * k`, and buffers of whole
//! volume blocks.

use super::{BlockDevice, SharedBlock, WriteKind, BLOCK};
use crate::{Error, Result};

/// A device whose blocks are `2^shift` blocks of the device it wraps (see the module
/// documentation).
pub struct WideDevice {
    inner: Box<dyn BlockDevice>,
    shift: u32,
    blocks: u64,
}

impl WideDevice {
    /// `inner` seen in blocks of `block_size` bytes (a power of two, a multiple of
    /// the 4 KiB unit).
    pub fn new(inner: Box<dyn BlockDevice>, block_size: usize) -> Result<WideDevice> {
        if !block_size.is_power_of_two() || block_size < BLOCK {
            return Err(Error::Invalid(format!(
                "block size {block_size} is not a power of two ≥ {BLOCK}"
            )));
        }
        let shift = (block_size / BLOCK).trailing_zeros();
        let blocks = inner.block_count() >> shift;
        Ok(WideDevice { inner, shift, blocks })
    }

    /// The inner address of volume block `blkaddr`, with the range `n` bytes from it
    /// checked against the volume's size (so errors name the volume's block addresses).
    fn unit(&self, blkaddr: u64, bytes: usize) -> Result<u64> {
        let size = self.block_size();
        if bytes % size != 0 {
            return Err(Error::Invalid(format!(
                "I/O of {bytes} bytes at block {blkaddr:#x} is not a whole number of {size}-byte blocks"
            )));
        }
        let n = (bytes / size) as u64;
        if blkaddr.checked_add(n).is_none_or(|end| end > self.blocks) {
            return Err(Error::corrupt(
                "block address",
                Some(blkaddr),
                format!(
                    "beyond the end of the device ({} blocks of {size} bytes); is the image truncated?",
                    self.blocks
                ),
            ));
        }
        Ok(blkaddr << self.shift)
    }
}

impl BlockDevice for WideDevice {
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> Result<()> {
        let at = self.unit(blkaddr, buf.len())?;
        self.inner.read_blocks(at, buf)
    }

    fn block_count(&self) -> u64 {
        self.blocks
    }

    fn block_size(&self) -> usize {
        BLOCK << self.shift
    }

    fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> Result<()> {
        let at = self.unit(blkaddr, buf.len())?;
        self.inner.write_blocks(at, buf)
    }

    fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    fn write_kind(&self, blkaddr: u64, buf: &[u8], kind: WriteKind) -> Result<()> {
        let at = self.unit(blkaddr, buf.len())?;
        self.inner.write_kind(at, buf, kind)
    }

    fn read_shared(&self, blkaddr: u64) -> Result<SharedBlock> {
        let mut b = vec![0u8; self.block_size()];
        self.read_blocks(blkaddr, &mut b)?;
        Ok(std::sync::Arc::new(b))
    }

    fn forget(&self, blkaddr: u64) {
        for u in 0..1u64 << self.shift {
            self.inner.forget((blkaddr << self.shift) + u);
        }
    }

    fn discard(&self, blkaddr: u64, blocks: u64) -> Result<()> {
        self.inner.discard(blkaddr << self.shift, blocks << self.shift)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{read_block, MemDevice};

    #[test]
    fn blocks_are_four_units_and_the_end_is_the_volume_s() {
        let mut bytes = vec![0u8; 9 * BLOCK];
        bytes[4 * BLOCK] = 7;
        bytes[8 * BLOCK - 1] = 9;
        let dev = WideDevice::new(Box::new(MemDevice::new(bytes)), 4 * BLOCK).unwrap();
        assert_eq!((dev.block_count(), dev.block_size()), (2, 16384));
        let b = read_block(&dev, 1).unwrap();
        assert_eq!((b.len(), b[0], b[4 * BLOCK - 1]), (16384, 7, 9));
        assert_eq!(dev.read_shared(1).unwrap().as_slice(), b.as_slice());
        let err = read_block(&dev, 2).unwrap_err().to_string();
        assert!(err.contains("block address") && err.contains("0x2"), "{err}");
        assert!(
            dev.read_blocks(0, &mut [0u8; BLOCK]).is_err(),
            "a 4 KiB read is not a block"
        );
        assert!(WideDevice::new(Box::new(MemDevice::new(vec![])), 3 * BLOCK).is_err());
    }
}
