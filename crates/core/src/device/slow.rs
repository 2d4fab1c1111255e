//! [`SlowFlushDevice`]: a device whose flushes, and writes, take a set time, so that
//! tests can show what waits on a slow device (a file's fsync waits for its flushes and
//! writes; nothing else of the mount should).

use super::{BlockDevice, SharedBlock, WriteKind};
use crate::Result;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Passes everything to the device it wraps; each flush first sleeps for the delay
/// its [`FlushDelay`] holds, each write for its delay per block (none at first).
pub struct SlowFlushDevice {
    inner: Box<dyn BlockDevice>,
    delay: FlushDelay,
}

/// The delays of a [`SlowFlushDevice`]'s flushes and writes, changeable while the
/// device is in use, and the count of flushes so far.
#[derive(Clone, Default)]
pub struct FlushDelay(Arc<Delays>);

#[derive(Default)]
struct Delays {
    /// Microseconds each flush takes.
    flush_us: AtomicU64,
    /// Flushes started.
    flushes: AtomicU64,
    /// Microseconds each block written takes.
    write_us: AtomicU64,
}

impl FlushDelay {
    /// Makes every later flush take `d` more.
    pub fn set(&self, d: Duration) {
        self.0.flush_us.store(d.as_micros() as u64, Ordering::Relaxed);
    }

    /// Makes every later write take `d` more per block written.
    pub fn set_write(&self, d: Duration) {
        self.0.write_us.store(d.as_micros() as u64, Ordering::Relaxed);
    }

    /// Flushes started so far.
    pub fn flushes(&self) -> u64 {
        self.0.flushes.load(Ordering::Relaxed)
    }

    /// Sleeps for the write delay of `blocks` blocks.
    fn write(&self, blocks: usize) {
        let us = self.0.write_us.load(Ordering::Relaxed);
        if us > 0 {
            std::thread::sleep(Duration::from_micros(us * blocks as u64));
        }
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
        self.delay.write(buf.len().div_ceil(self.block_size()));
        self.inner.write_blocks(blkaddr, buf)
    }
    fn flush(&self) -> Result<()> {
        self.delay.0.flushes.fetch_add(1, Ordering::Relaxed);
        let us = self.delay.0.flush_us.load(Ordering::Relaxed);
        if us > 0 {
            std::thread::sleep(Duration::from_micros(us));
        }
        self.inner.flush()
    }
    fn write_kind(&self, blkaddr: u64, buf: &[u8], kind: WriteKind) -> Result<()> {
        self.delay.write(buf.len().div_ceil(self.block_size()));
        self.inner.write_kind(blkaddr, buf, kind)
    }
    fn write_blocks_from(&self, blkaddr: u64, blocks: &[&[u8]], kind: WriteKind) -> Result<()> {
        self.delay.write(blocks.len());
        self.inner.write_blocks_from(blkaddr, blocks, kind)
    }
    fn read_shared(&self, blkaddr: u64) -> Result<SharedBlock> {
        self.inner.read_shared(blkaddr)
    }
    fn write_shared(&self, blkaddr: u64, blocks: &[SharedBlock], kind: WriteKind) -> Result<()> {
        self.delay.write(blocks.len());
        self.inner.write_shared(blkaddr, blocks, kind)
    }
    fn copy_blocks(&self, sources: &[u64], dst: u64, kind: WriteKind) -> Result<()> {
        self.delay.write(sources.len());
        self.inner.copy_blocks(sources, dst, kind)
    }
    fn forget(&self, blkaddr: u64) {
        self.inner.forget(blkaddr)
    }
    fn discard(&self, blkaddr: u64, blocks: u64) -> Result<()> {
        self.inner.discard(blkaddr, blocks)
    }
}
