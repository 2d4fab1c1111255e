//! [`SlowFlushDevice`]: a device whose flushes take a set time, so that tests can show
//! what waits on a slow device (a file's fsync waits for its flushes; nothing else of
//! the mount should).

use super::{BlockDevice, SharedBlock, WriteKind};
use crate::Result;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Passes everything to the device it wraps; each flush first sleeps for the delay
/// its [`FlushDelay`] holds (none at first).
pub struct SlowFlushDevice {
    inner: Box<dyn BlockDevice>,
    delay: FlushDelay,
}

/// The delay of a [`SlowFlushDevice`]'s flushes, changeable while the device is in use,
/// and the count of flushes so far.
#[derive(Clone, Default)]
pub struct FlushDelay(Arc<(AtomicU64, AtomicU64)>);

impl FlushDelay {
    /// Makes every later flush take `d` more.
    pub fn set(&self, d: Duration) {
        self.0 .0.store(d.as_micros() as u64, Ordering::Relaxed);
    }

    /// Flushes started so far.
    pub fn flushes(&self) -> u64 {
        self.0 .1.load(Ordering::Relaxed)
    }
}

impl SlowFlushDevice {
    /// Wraps `inner`; returns the device and the handle on its delay.
    pub fn new(inner: Box<dyn BlockDevice>) -> (SlowFlushDevice, FlushDelay) {
        let delay = FlushDelay::default();
        (
            SlowFlushDevice {
                inner,
                delay: delay.clone(),
            },
            delay,
        )
    }
}

impl BlockDevice for SlowFlushDevice {
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> Result<()> {
        self.inner.read_blocks(blkaddr, buf)
    }
    fn block_count(&self) -> u64 {
        self.inner.block_count()
    }
    fn block_size(&self) -> usize {
        self.inner.block_size()
    }
    fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> Result<()> {
        self.inner.write_blocks(blkaddr, buf)
    }
    fn flush(&self) -> Result<()> {
        self.delay.0 .1.fetch_add(1, Ordering::Relaxed);
        let us = self.delay.0 .0.load(Ordering::Relaxed);
        if us > 0 {
            std::thread::sleep(Duration::from_micros(us));
        }
        self.inner.flush()
    }
    fn write_kind(&self, blkaddr: u64, buf: &[u8], kind: WriteKind) -> Result<()> {
        self.inner.write_kind(blkaddr, buf, kind)
    }
    fn write_blocks_from(&self, blkaddr: u64, blocks: &[&[u8]], kind: WriteKind) -> Result<()> {
        self.inner.write_blocks_from(blkaddr, blocks, kind)
    }
    fn read_shared(&self, blkaddr: u64) -> Result<SharedBlock> {
        self.inner.read_shared(blkaddr)
    }
    fn write_shared(&self, blkaddr: u64, blocks: &[SharedBlock], kind: WriteKind) -> Result<()> {
        self.inner.write_shared(blkaddr, blocks, kind)
    }
    fn copy_blocks(&self, sources: &[u64], dst: u64, kind: WriteKind) -> Result<()> {
        self.inner.copy_blocks(sources, dst, kind)
    }
    fn forget(&self, blkaddr: u64) {
        self.inner.forget(blkaddr)
    }
    fn discard(&self, blkaddr: u64, blocks: u64) -> Result<()> {
        self.inner.discard(blkaddr, blocks)
    }
}
