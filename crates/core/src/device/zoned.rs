//! Host-managed zoned devices, emulated: [`ZonedDevice`] enforces zone write pointers
//! over any device (uf2fs opens images made with `uf2fs mkfs --zoned` through it); the
//! lab's [`ZonedMemDevice`](super::ZonedMemDevice) is one over a sparse memory store
//! (`zoned_mem.rs`, the store in `zero_skip.rs`).
//!
//! - Blocks before `seq_start` are conventional: written anywhere, any order (F2FS's
//!   metadata lives there).
//! - From `seq_start` on, the device is cut into zones of `zone_blocks` blocks, each
//!   with a write pointer: a write must start exactly at its zone's write pointer (and
//!   moves it on), else it fails with an error naming the zone; [`BlockDevice::discard`]
//!   of a whole zone resets its pointer (F2FS resets a zone when its section becomes
//!   free).

use super::block_table::Block;
use super::{check_range, BlockDevice, WriteKind, BLOCK};
use crate::{Error, Result};
use std::sync::{Arc, Mutex, PoisonError};

/// The zones of a [`ZonedDevice`]: geometry and write pointers, shared with whoever
/// needs to set them (an opened volume sets them from its segment table).
#[derive(Clone)]
pub struct Zones(Arc<ZonesInner>);

struct ZonesInner {
    seq_start: u64,
    zone_blocks: u64,
    /// Write pointer of each zone, in blocks from its start.
    wp: Mutex<Vec<u64>>,
}

impl Zones {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<u64>> {
        self.0.wp.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Number of sequential zones.
    pub fn count(&self) -> usize {
        self.lock().len()
    }

    /// Write pointer of zone `z` (blocks from its start).
    pub fn write_pointer(&self, z: usize) -> Option<u64> {
        self.lock().get(z).copied()
    }

    /// Sets every zone's write pointer (as a device reports them at mount); `wp` must
    /// have one entry per zone, each at most the zone size.
    pub fn set_write_pointers(&self, wp: Vec<u64>) -> Result<()> {
        let mut cur = self.lock();
        if wp.len() != cur.len() || wp.iter().any(|&w| w > self.0.zone_blocks) {
            return Err(Error::Invalid(format!(
                "{} write pointers for {} zones of {} blocks",
                wp.len(),
                cur.len(),
                self.0.zone_blocks
            )));
        }
        *cur = wp;
        Ok(())
    }

    /// First block of the zoned region and blocks per zone.
    pub fn geometry(&self) -> (u64, u64) {
        (self.0.seq_start, self.0.zone_blocks)
    }

    /// The zone holding `addr`, given the zone count (the lock is held by the caller).
    fn zone_of_locked(&self, addr: u64, zones: usize) -> Option<u64> {
        let z = addr.checked_sub(self.0.seq_start)? / self.0.zone_blocks;
        (z < zones as u64).then_some(z)
    }

    /// Checks a write of `n` blocks at `blkaddr` against the write pointers and moves
    /// them on; nothing changes when it is refused.
    fn write(&self, blkaddr: u64, n: u64) -> Result<()> {
        let mut wp = self.lock();
        let (seq, zb) = self.geometry();
        let end = blkaddr + n;
        let mut addr = blkaddr;
        while addr < end {
            let Some(z) = self.zone_of_locked(addr, wp.len()) else {
                addr = if addr < seq { seq.min(end) } else { end };
                continue;
            };
            let start = seq + z * zb;
            let at = wp[z as usize];
            if addr != start + at {
                return Err(Error::Invalid(format!(
                    "zoned device: write at block {addr:#x}, {} blocks into zone {z}, whose write pointer is at {at} \
                     (host-managed zones are written sequentially)",
                    addr - start
                )));
            }
            addr = (start + zb).min(end);
        }
        let mut addr = blkaddr;
        while addr < end {
            match self.zone_of_locked(addr, wp.len()) {
                Some(z) => {
                    let start = seq + z * zb;
                    let stop = (start + zb).min(end);
                    wp[z as usize] = stop - start;
                    addr = stop;
                }
                None => addr = if addr < seq { seq.min(end) } else { end },
            }
        }
        Ok(())
    }

    /// Resets the zones wholly inside `blkaddr..end`.
    fn reset(&self, blkaddr: u64, end: u64) {
        let mut wp = self.lock();
        let (_, zb) = self.geometry();
        let mut addr = blkaddr;
        while addr < end {
            let Some(z) = self.zone_of_locked(addr, wp.len()) else {
                addr = if addr < self.0.seq_start {
                    self.0.seq_start.min(end)
                } else {
                    end
                };
                continue;
            };
            let start = self.0.seq_start + z * zb;
            let stop = start + zb;
            if addr == start && stop <= end {
                wp[z as usize] = 0;
            }
            addr = stop.min(end).max(addr + 1);
        }
    }
}

/// A host-managed zoned device emulated over `inner` (see the module notes). Every
/// zone starts empty (write pointer 0) until [`Zones::set_write_pointers`].
pub struct ZonedDevice {
    inner: Box<dyn BlockDevice>,
    pub(super) zones: Zones,
}

impl ZonedDevice {
    /// `zones` zones of `zone_blocks` blocks from `seq_start` (they must fit `inner`);
    /// blocks before and after them are conventional.
    pub fn new(inner: Box<dyn BlockDevice>, seq_start: u64, zone_blocks: u64, zones: u64) -> Result<ZonedDevice> {
        let blocks = inner.block_count();
        let end = zone_blocks.checked_mul(zones).and_then(|z| z.checked_add(seq_start));
        if zone_blocks == 0 && zones > 0 || end.is_none_or(|e| e > blocks) {
            return Err(Error::Invalid(format!(
                "{zones} zones of {zone_blocks} blocks from block {seq_start} do not fit a {blocks}-block device"
            )));
        }
        let count = zones;
        Ok(ZonedDevice {
            inner,
            zones: Zones(Arc::new(ZonesInner {
                seq_start,
                zone_blocks: zone_blocks.max(1),
                wp: Mutex::new(vec![0; count as usize]),
            })),
        })
    }

    /// The zones (to read or set their write pointers).
    pub fn zones(&self) -> Zones {
        self.zones.clone()
    }

    /// Checks a vectored write from `blkaddr` of parts of lengths `lens` (whole
    /// blocks, inside the device, at the write pointer) and moves the pointer on.
    fn claim_run(&self, blkaddr: u64, lens: impl ExactSizeIterator<Item = usize>) -> Result<()> {
        let n = lens.len();
        check_whole_blocks(blkaddr, lens)?;
        check_range(blkaddr, n * BLOCK, self.block_count(), &|| "the zoned device".into())?;
        self.zones.write(blkaddr, n as u64)
    }
}

impl BlockDevice for ZonedDevice {
    fn block_size(&self) -> usize {
        self.inner.block_size()
    }

    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> Result<()> {
        self.inner.read_blocks(blkaddr, buf)
    }

    fn block_count(&self) -> u64 {
        self.inner.block_count()
    }

    fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> Result<()> {
        check_range(blkaddr, buf.len(), self.block_count(), &|| "the zoned device".into())?;
        self.zones.write(blkaddr, (buf.len() / BLOCK) as u64)?;
        self.inner.write_blocks(blkaddr, buf)
    }

    fn write_kind(&self, blkaddr: u64, buf: &[u8], kind: WriteKind) -> Result<()> {
        check_range(blkaddr, buf.len(), self.block_count(), &|| "the zoned device".into())?;
        self.zones.write(blkaddr, (buf.len() / BLOCK) as u64)?;
        self.inner.write_kind(blkaddr, buf, kind)
    }

    fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    fn write_blocks_from(&self, blkaddr: u64, blocks: &[&[u8]], kind: WriteKind) -> Result<()> {
        self.claim_run(blkaddr, blocks.iter().map(|b| b.len()))?;
        self.inner.write_blocks_from(blkaddr, blocks, kind)
    }

    fn read_shared(&self, blkaddr: u64) -> Result<Block> {
        self.inner.read_shared(blkaddr)
    }

    fn forget(&self, blkaddr: u64) {
        self.inner.forget(blkaddr)
    }

    fn write_shared(&self, blkaddr: u64, blocks: &[Block], kind: WriteKind) -> Result<()> {
        self.claim_run(blkaddr, blocks.iter().map(|b| b.len()))?;
        self.inner.write_shared(blkaddr, blocks, kind)
    }

    fn copy_blocks(&self, sources: &[u64], dst: u64, kind: WriteKind) -> Result<()> {
        check_range(dst, sources.len() * BLOCK, self.block_count(), &|| {
            "the zoned device".into()
        })?;
        // A bad source fails the copy before the write pointer moves.
        if let Some(&bad) = sources.iter().find(|&&a| a >= self.block_count()) {
            check_range(bad, BLOCK, self.block_count(), &|| "the zoned device".into())?;
        }
        self.zones.write(dst, sources.len() as u64)?;
        self.inner.copy_blocks(sources, dst, kind)
    }

    fn discard(&self, blkaddr: u64, blocks: u64) -> Result<()> {
        let end = blkaddr.saturating_add(blocks).min(self.block_count());
        self.zones.reset(blkaddr, end);
        self.inner.discard(blkaddr, blocks)
    }
}

/// Refuses a vectored write whose parts (of lengths `lens`) are not single blocks.
pub(super) fn check_whole_blocks(blkaddr: u64, mut lens: impl Iterator<Item = usize>) -> Result<()> {
    match lens.find(|&l| l != BLOCK) {
        Some(l) => Err(Error::Invalid(format!(
            "write of {l} bytes as one block at block {blkaddr:#x}"
        ))),
        None => Ok(()),
    }
}
