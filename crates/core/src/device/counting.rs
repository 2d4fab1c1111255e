//! [`CountingDevice`]: counts every block written, by what it holds: the metadata
//! areas by address (superblock, checkpoint, SIT, NAT, SSA), the main area by the
//! [`WriteKind`] the writer gives (user or GC-moved data and nodes); and per device of
//! a multi-device volume. The write-amplification figures come from here.

use super::{BlockDevice, WriteKind, BLOCK};
use crate::Result;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use uf2fs_format::superblock::Superblock;

/// Where the metadata areas are (block addresses, from the superblock).
#[derive(Debug, Clone, Copy, Default)]
pub struct Areas {
    /// First block of the checkpoint area (everything before it is superblock).
    pub cp: u64,
    /// First block of the SIT area.
    pub sit: u64,
    /// First block of the NAT area.
    pub nat: u64,
    /// First block of the SSA area.
    pub ssa: u64,
    /// First block of the main area.
    pub main: u64,
}

/// Blocks written, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteCounts {
    /// Superblock blocks.
    pub superblock: u64,
    /// Checkpoint packs (checkpoint blocks, payload, orphans, summaries, NAT bits).
    pub checkpoint: u64,
    /// SIT blocks.
    pub sit: u64,
    /// NAT blocks.
    pub nat: u64,
    /// SSA (segment summary) blocks.
    pub ssa: u64,
    /// Data written back from the page cache.
    pub user_data: u64,
    /// Data moved by GC.
    pub gc_data: u64,
    /// Nodes written by the write path and checkpoints.
    pub user_node: u64,
    /// Nodes moved by GC.
    pub gc_node: u64,
    /// Main-area blocks written without a kind (none from the write path).
    pub main_other: u64,
    /// Blocks written to each device of a multi-device volume (one entry otherwise).
    pub per_device: Vec<u64>,
}

impl WriteCounts {
    /// Every block written.
    pub fn total(&self) -> u64 {
        self.superblock
            + self.checkpoint
            + self.sit
            + self.nat
            + self.ssa
            + self.user_data
            + self.gc_data
            + self.user_node
            + self.gc_node
            + self.main_other
    }
}

const KINDS: usize = 10;

/// A device that counts the blocks written through it (see the module notes).
pub struct CountingDevice {
    inner: Box<dyn BlockDevice>,
    areas: Areas,
    /// First block of each device after the first.
    device_starts: Vec<u64>,
    counters: WriteCounter,
}

/// A handle on a [`CountingDevice`]'s counters, readable while the device is in use.
#[derive(Clone)]
pub struct WriteCounter(Arc<Counters>);

struct Counters {
    counts: [AtomicU64; KINDS],
    per_device: Vec<AtomicU64>,
}

impl WriteCounter {
    /// The counts so far.
    pub fn counts(&self) -> WriteCounts {
        let c = |i: usize| self.0.counts[i].load(Ordering::Relaxed);
        WriteCounts {
            superblock: c(0),
            checkpoint: c(1),
            sit: c(2),
            nat: c(3),
            ssa: c(4),
            user_data: c(5),
            gc_data: c(6),
            user_node: c(7),
            gc_node: c(8),
            main_other: c(9),
            per_device: self.0.per_device.iter().map(|a| a.load(Ordering::Relaxed)).collect(),
        }
    }
}

impl Areas {
    /// The areas `sb` describes.
    pub fn of(sb: &Superblock) -> Areas {
        Areas {
            cp: sb.cp_blkaddr as u64,
            sit: sb.sit_blkaddr as u64,
            nat: sb.nat_blkaddr as u64,
            ssa: sb.ssa_blkaddr as u64,
            main: sb.main_blkaddr as u64,
        }
    }
}

/// Wraps `dev` (the volume `sb` describes) in a [`CountingDevice`]; returns it and its
/// counters.
pub fn counting(dev: Box<dyn BlockDevice>, sb: &Superblock) -> (Box<dyn BlockDevice>, WriteCounter) {
    let bps = sb.blocks_per_seg() as u64;
    let mut starts = Vec::new();
    let mut at = 0u64;
    for (i, d) in sb.devices.iter().enumerate() {
        at += d.total_segments as u64 * bps + if i == 0 { sb.segment0_blkaddr as u64 } else { 0 };
        if i + 1 < sb.devices.len() {
            starts.push(at);
        }
    }
    let c = CountingDevice::new(dev, Areas::of(sb), starts);
    let handle = c.counter();
    (Box::new(c), handle)
}

impl CountingDevice {
    /// Counts writes to `inner`, whose metadata areas are `areas`; `device_starts`
    /// gives the first block of every device after the first (empty for one device).
    pub fn new(inner: Box<dyn BlockDevice>, areas: Areas, device_starts: Vec<u64>) -> CountingDevice {
        let per_device = (0..=device_starts.len()).map(|_| AtomicU64::new(0)).collect();
        CountingDevice {
            inner,
            areas,
            device_starts,
            counters: WriteCounter(Arc::new(Counters {
                counts: Default::default(),
                per_device,
            })),
        }
    }

    /// A handle on the counters.
    pub fn counter(&self) -> WriteCounter {
        self.counters.clone()
    }

    /// The counts so far.
    pub fn counts(&self) -> WriteCounts {
        self.counters.counts()
    }

    fn count(&self, blkaddr: u64, blocks: u64, kind: Option<WriteKind>) {
        let a = &self.areas;
        // Split the run by area (a run never mixes main-area kinds).
        let bounds = [(0, 0usize), (a.cp, 1), (a.sit, 2), (a.nat, 3), (a.ssa, 4), (a.main, 9)];
        let end = blkaddr + blocks;
        for (i, &(start, slot)) in bounds.iter().enumerate() {
            let stop = bounds.get(i + 1).map_or(u64::MAX, |b| b.0);
            let (lo, hi) = (blkaddr.max(start), end.min(stop));
            if lo >= hi {
                continue;
            }
            let slot = match (slot, kind) {
                (9, Some(WriteKind::UserData)) => 5,
                (9, Some(WriteKind::GcData)) => 6,
                (9, Some(WriteKind::UserNode)) => 7,
                (9, Some(WriteKind::GcNode)) => 8,
                (s, _) => s,
            };
            self.counters.0.counts[slot].fetch_add(hi - lo, Ordering::Relaxed);
        }
        let mut addr = blkaddr;
        while addr < end {
            let dev = self.device_starts.partition_point(|&s| s <= addr);
            let stop = self.device_starts.get(dev).copied().unwrap_or(u64::MAX).min(end);
            self.counters.0.per_device[dev].fetch_add(stop - addr, Ordering::Relaxed);
            addr = stop;
        }
    }
}

impl BlockDevice for CountingDevice {
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
        self.inner.write_blocks(blkaddr, buf)?;
        self.count(blkaddr, (buf.len() / BLOCK) as u64, None);
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    fn write_kind(&self, blkaddr: u64, buf: &[u8], kind: WriteKind) -> Result<()> {
        self.inner.write_kind(blkaddr, buf, kind)?;
        self.count(blkaddr, (buf.len() / BLOCK) as u64, Some(kind));
        Ok(())
    }

    fn write_blocks_from(&self, blkaddr: u64, blocks: &[&[u8]], kind: WriteKind) -> Result<()> {
        self.inner.write_blocks_from(blkaddr, blocks, kind)?;
        self.count(blkaddr, blocks.len() as u64, Some(kind));
        Ok(())
    }

    fn forget(&self, blkaddr: u64) {
        self.inner.forget(blkaddr)
    }

    fn read_shared(&self, blkaddr: u64) -> Result<super::SharedBlock> {
        self.inner.read_shared(blkaddr)
    }

    fn write_shared(&self, blkaddr: u64, blocks: &[super::SharedBlock], kind: WriteKind) -> Result<()> {
        self.inner.write_shared(blkaddr, blocks, kind)?;
        self.count(blkaddr, blocks.len() as u64, Some(kind));
        Ok(())
    }

    fn copy_blocks(&self, sources: &[u64], dst: u64, kind: WriteKind) -> Result<()> {
        self.inner.copy_blocks(sources, dst, kind)?;
        self.count(dst, sources.len() as u64, Some(kind));
        Ok(())
    }

    fn discard(&self, blkaddr: u64, blocks: u64) -> Result<()> {
        self.inner.discard(blkaddr, blocks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::MemDevice;

    #[test]
    fn counts_by_area_kind_and_device() {
        let areas = Areas {
            cp: 2,
            sit: 4,
            nat: 6,
            ssa: 8,
            main: 10,
        };
        let d = CountingDevice::new(Box::new(MemDevice::new(vec![0; 20 * BLOCK])), areas, vec![12]);
        d.write_blocks(0, &[0; 3 * BLOCK]).unwrap(); // 2 superblock, 1 checkpoint
        d.write_blocks(5, &[0; 4 * BLOCK]).unwrap(); // 1 SIT, 2 NAT, 1 SSA
        d.write_kind(10, &[0; 4 * BLOCK], WriteKind::GcData).unwrap();
        d.write_kind(14, &[0; BLOCK], WriteKind::UserNode).unwrap();
        let c = d.counts();
        assert_eq!((c.superblock, c.checkpoint, c.sit, c.nat, c.ssa), (2, 1, 1, 2, 1));
        assert_eq!(
            (c.gc_data, c.user_node, c.user_data, c.gc_node, c.main_other),
            (4, 1, 0, 0, 0)
        );
        assert_eq!(c.total(), 12);
        assert_eq!(c.per_device, vec![9, 3]);
        // A device-side copy counts as writes of its kind at the destination.
        d.copy_blocks(&[14, 10], 16, WriteKind::GcNode).unwrap();
        let c = d.counts();
        assert_eq!((c.gc_node, c.total(), c.per_device.clone()), (2, 14, vec![9, 5]));
    }
}
