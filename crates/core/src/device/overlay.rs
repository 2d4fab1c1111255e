//! [`OverlayDevice`]: writes kept in memory over a device that is only read, so that a
//! read-only open can replay what fsync left after the last checkpoint without
//! changing the image.

use super::{check_range, BlockDevice};
use crate::Result;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// A device whose writes stay in memory, over `base`, which is only read. Clones share
/// the written blocks.
#[derive(Clone)]
pub struct OverlayDevice {
    base: Arc<dyn BlockDevice>,
    written: Arc<Mutex<HashMap<u64, Box<[u8]>>>>,
}

impl OverlayDevice {
    /// An overlay over `base`, with nothing written yet.
    pub fn new(base: Arc<dyn BlockDevice>) -> OverlayDevice {
        OverlayDevice {
            base,
            written: Default::default(),
        }
    }

    /// Blocks written so far (held in memory).
    pub fn written_blocks(&self) -> usize {
        self.written.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

impl BlockDevice for OverlayDevice {
    fn block_size(&self) -> usize {
        self.base.block_size()
    }

    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> Result<()> {
        self.base.read_blocks(blkaddr, buf)?;
        let written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        if written.is_empty() {
            return Ok(());
        }
        for (i, block) in buf.chunks_mut(self.block_size()).enumerate() {
            if let Some(w) = written.get(&(blkaddr + i as u64)) {
                block.copy_from_slice(w);
            }
        }
        Ok(())
    }

    fn block_count(&self) -> u64 {
        self.base.block_count()
    }

    fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> Result<()> {
        check_range(blkaddr, buf.len(), self.block_count(), &|| "the overlay".to_string())?;
        let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        for (i, block) in buf.chunks(self.block_size()).enumerate() {
            written.insert(blkaddr + i as u64, block.into());
        }
        Ok(())
    }
}

/// A shared device as a boxed one (reads and writes go to the shared one).
pub(crate) struct SharedDevice(pub(crate) Arc<dyn BlockDevice>);

impl BlockDevice for SharedDevice {
    fn block_size(&self) -> usize {
        self.0.block_size()
    }

    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> Result<()> {
        self.0.read_blocks(blkaddr, buf)
    }

    fn block_count(&self) -> u64 {
        self.0.block_count()
    }
}

#[cfg(test)]
mod tests {
    use super::OverlayDevice;
    use crate::device::{BlockDevice, MemDevice, BLOCK};
    use std::sync::Arc;

    #[test]
    fn writes_stay_in_the_overlay() {
        let base = Arc::new(MemDevice::new(vec![1u8; 4 * BLOCK]));
        let o = OverlayDevice::new(base.clone());
        o.write_blocks(1, &[7u8; 2 * BLOCK]).unwrap();
        let mut buf = vec![0u8; 4 * BLOCK];
        o.read_blocks(0, &mut buf).unwrap();
        assert!(buf[..BLOCK].iter().all(|&b| b == 1));
        assert!(buf[BLOCK..3 * BLOCK].iter().all(|&b| b == 7));
        assert!(buf[3 * BLOCK..].iter().all(|&b| b == 1));
        base.read_blocks(0, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == 1), "the base is never written");
        assert!(o.write_blocks(3, &[0u8; 2 * BLOCK]).is_err(), "past the end");
        assert_eq!(o.written_blocks(), 2);
    }
}
