//! [`ZonedMemDevice`]: a [`ZonedDevice`] over the zero-skipping memory store
//! ([`super::zero_skip`]), for the lab (`uf2fs bench waf`) and tests. Its zones follow
//! the rules in [`super::zoned`]; its blocks cost memory only when they are not zeros.

use super::block_table::Block;
use super::zero_skip::{Kept, SparseMem};
use super::zoned::ZonedDevice;
use super::{BlockDevice, WriteKind};
use crate::{Error, Result};
use std::sync::{Arc, Mutex};

/// Shape of a [`ZonedMemDevice`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZonedMemOptions {
    /// Size in blocks.
    pub blocks: u64,
    /// First block of the sequential-write-required region (`blocks`: none).
    pub seq_start: u64,
    /// Blocks per zone of that region (ignored when there is none).
    pub zone_blocks: u64,
    /// Drop a block as soon as its owner moves it ([`BlockDevice::forget`]) instead of
    /// keeping it until its zone is reset. Saves copying node blocks that GC moves; only
    /// for a device whose older checkpoints are never read back (the WAF lab).
    pub forget_moved: bool,
}

/// A zoned device held in sparse memory (see the module notes).
pub struct ZonedMemDevice {
    dev: ZonedDevice,
    mem: Arc<SparseMem>,
}

/// Lets the memory store sit under a [`ZonedDevice`] while the outer type still sees it.
struct SharedMem(Arc<SparseMem>);

impl BlockDevice for SharedMem {
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> Result<()> {
        self.0.read_blocks(blkaddr, buf)
    }
    fn block_count(&self) -> u64 {
        self.0.block_count()
    }
    fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> Result<()> {
        self.0.write_blocks(blkaddr, buf)
    }
    fn write_blocks_from(&self, blkaddr: u64, blocks: &[&[u8]], kind: WriteKind) -> Result<()> {
        self.0.write_blocks_from(blkaddr, blocks, kind)
    }
    fn read_shared(&self, blkaddr: u64) -> Result<Block> {
        self.0.read_shared(blkaddr)
    }
    fn forget(&self, blkaddr: u64) {
        self.0.forget(blkaddr)
    }
    fn write_shared(&self, blkaddr: u64, blocks: &[Block], kind: WriteKind) -> Result<()> {
        self.0.write_shared(blkaddr, blocks, kind)
    }
    fn copy_blocks(&self, sources: &[u64], dst: u64, kind: WriteKind) -> Result<()> {
        self.0.copy_blocks(sources, dst, kind)
    }
    fn discard(&self, blkaddr: u64, blocks: u64) -> Result<()> {
        self.0.discard(blkaddr, blocks)
    }
}

impl ZonedMemDevice {
    /// An empty (all zeros, every zone reset) device.
    pub fn new(opts: ZonedMemOptions) -> Result<ZonedMemDevice> {
        let mem = Arc::new(SparseMem {
            blocks: opts.blocks,
            forget_moved: opts.forget_moved,
            kept: Mutex::new(Kept::default()),
        });
        let seq = opts.blocks.saturating_sub(opts.seq_start.min(opts.blocks));
        if seq > 0 && (opts.zone_blocks == 0 || seq % opts.zone_blocks != 0) {
            return Err(Error::Invalid(format!(
                "zoned region of {seq} blocks is not a whole number of {}-block zones",
                opts.zone_blocks
            )));
        }
        let zones = if seq > 0 { seq / opts.zone_blocks } else { 0 };
        let dev = ZonedDevice::new(
            Box::new(SharedMem(Arc::clone(&mem))),
            opts.seq_start,
            opts.zone_blocks.max(1),
            zones,
        )?;
        Ok(ZonedMemDevice { dev, mem })
    }

    /// Blocks held in memory (those not all zeros).
    pub fn kept_blocks(&self) -> usize {
        self.mem.lock().table.len()
    }

    /// Number of sequential zones.
    pub fn zones(&self) -> usize {
        self.dev.zones.count()
    }

    /// Write pointer of zone `z` (blocks from its start).
    pub fn write_pointer(&self, z: usize) -> Option<u64> {
        self.dev.zones.write_pointer(z)
    }
}

impl BlockDevice for ZonedMemDevice {
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> Result<()> {
        self.dev.read_blocks(blkaddr, buf)
    }

    fn block_count(&self) -> u64 {
        self.dev.block_count()
    }

    fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> Result<()> {
        self.dev.write_blocks(blkaddr, buf)
    }

    fn write_kind(&self, blkaddr: u64, buf: &[u8], kind: WriteKind) -> Result<()> {
        self.dev.write_kind(blkaddr, buf, kind)
    }

    fn write_blocks_from(&self, blkaddr: u64, blocks: &[&[u8]], kind: WriteKind) -> Result<()> {
        self.dev.write_blocks_from(blkaddr, blocks, kind)
    }

    fn read_shared(&self, blkaddr: u64) -> Result<Block> {
        self.dev.read_shared(blkaddr)
    }

    fn forget(&self, blkaddr: u64) {
        self.dev.forget(blkaddr)
    }

    fn write_shared(&self, blkaddr: u64, blocks: &[Block], kind: WriteKind) -> Result<()> {
        self.dev.write_shared(blkaddr, blocks, kind)
    }

    fn copy_blocks(&self, sources: &[u64], dst: u64, kind: WriteKind) -> Result<()> {
        self.dev.copy_blocks(sources, dst, kind)
    }

    fn discard(&self, blkaddr: u64, blocks: u64) -> Result<()> {
        self.dev.discard(blkaddr, blocks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::BLOCK;

    fn dev() -> ZonedMemDevice {
        ZonedMemDevice::new(ZonedMemOptions {
            blocks: 40,
            seq_start: 8,
            zone_blocks: 8,
            forget_moved: false,
        })
        .unwrap()
    }

    #[test]
    fn shared_blocks_are_kept_without_a_copy_and_never_changed_in_place() {
        let d = dev();
        let mine: Block = Arc::new(vec![5; BLOCK]);
        d.write_shared(8, &[Arc::clone(&mine)], WriteKind::UserNode).unwrap();
        assert_eq!(d.write_pointer(0), Some(1), "a shared write moves the write pointer");
        let back = d.read_shared(8).unwrap();
        assert!(Arc::ptr_eq(&back, &mine), "the device keeps the writer's block itself");
        // A device-side copy shares the block too; a later write over the source
        // replaces it and leaves the copy, and the writer's block, as they were.
        d.copy_blocks(&[8], 9, WriteKind::GcNode).unwrap();
        d.write_blocks(0, &[6; BLOCK]).unwrap();
        d.copy_blocks(&[0], 10, WriteKind::GcNode).unwrap();
        d.write_blocks(0, &[7; BLOCK]).unwrap();
        let mut b = vec![0u8; BLOCK];
        d.read_blocks(10, &mut b).unwrap();
        assert!(b.iter().all(|&x| x == 6), "the copy kept what the source held");
        d.read_blocks(9, &mut b).unwrap();
        assert!(b.iter().all(|&x| x == 5) && mine.iter().all(|&x| x == 5));
        // Off the write pointer, or not a block: refused.
        assert!(d.write_shared(12, &[Arc::clone(&mine)], WriteKind::UserNode).is_err());
        assert!(d
            .write_shared(11, &[Arc::new(vec![1; 10])], WriteKind::UserNode)
            .is_err());
        // A hole reads as a new zero block.
        assert!(d.read_shared(30).unwrap().iter().all(|&x| x == 0));
        // This device keeps moved blocks: `forget` is only a hint.
        d.forget(8);
        assert!(Arc::ptr_eq(&d.read_shared(8).unwrap(), &mine));
    }

    #[test]
    fn a_device_made_to_forget_moved_blocks_drops_them() {
        let d = ZonedMemDevice::new(ZonedMemOptions {
            blocks: 40,
            seq_start: 8,
            zone_blocks: 8,
            forget_moved: true,
        })
        .unwrap();
        let mut mine: Block = Arc::new(vec![5; BLOCK]);
        d.write_shared(8, &[Arc::clone(&mine)], WriteKind::UserNode).unwrap();
        assert_eq!(d.kept_blocks(), 1);
        d.forget(8);
        assert_eq!(d.kept_blocks(), 0);
        assert!(
            Arc::get_mut(&mut mine).is_some(),
            "the writer holds its block alone again"
        );
        assert!(d.read_shared(8).unwrap().iter().all(|&x| x == 0));
    }

    #[test]
    fn conventional_blocks_go_anywhere_and_zeros_cost_nothing() {
        let d = dev();
        d.write_blocks(5, &[7; BLOCK]).unwrap();
        d.write_blocks(2, &[0; 2 * BLOCK]).unwrap();
        assert_eq!(d.kept_blocks(), 1);
        let mut b = vec![1u8; 2 * BLOCK];
        d.read_blocks(4, &mut b).unwrap();
        assert!(b[..BLOCK].iter().all(|&x| x == 0) && b[BLOCK..].iter().all(|&x| x == 7));
    }

    #[test]
    fn zones_are_written_at_their_write_pointer_and_reset_by_discard() {
        let d = dev();
        assert_eq!(d.zones(), 4);
        d.write_blocks(8, &[1; 3 * BLOCK]).unwrap();
        assert_eq!(d.write_pointer(0), Some(3));
        let e = d.write_blocks(12, &[1; BLOCK]).unwrap_err().to_string();
        assert!(e.contains("zone 0") && e.contains("write pointer is at 3"), "{e}");
        // A write spanning two zones must start at the first one's pointer; the
        // second must be empty.
        d.write_blocks(11, &[2; 6 * BLOCK]).unwrap();
        assert_eq!((d.write_pointer(0), d.write_pointer(1)), (Some(8), Some(1)));
        assert!(d.write_blocks(16, &[1; BLOCK]).is_err());
        d.discard(8, 8).unwrap();
        assert_eq!(d.write_pointer(0), Some(0));
        let mut b = vec![9u8; BLOCK];
        d.read_blocks(9, &mut b).unwrap();
        assert!(b.iter().all(|&x| x == 0));
        d.write_blocks(8, &[3; BLOCK]).unwrap();
        // A partial discard drops contents but keeps the pointer.
        d.discard(16, 1).unwrap();
        assert_eq!(d.write_pointer(1), Some(1));
        assert!(ZonedMemDevice::new(ZonedMemOptions {
            blocks: 40,
            seq_start: 8,
            zone_blocks: 7,
            forget_moved: false,
        })
        .is_err());
    }

    /// Reads blocks `from..from + n` of `d`, the first byte of each.
    fn firsts(d: &dyn BlockDevice, from: u64, n: usize) -> Vec<u8> {
        let mut b = vec![0u8; n * BLOCK];
        d.read_blocks(from, &mut b).unwrap();
        b.chunks(BLOCK).map(|c| c[0]).collect()
    }

    #[test]
    fn copies_gather_blocks_at_the_write_pointer_without_host_buffers() {
        let d = dev();
        d.write_blocks(0, &[5; BLOCK]).unwrap();
        d.write_blocks(8, &[0; BLOCK]).unwrap();
        d.write_blocks(9, &[6; BLOCK]).unwrap();
        // Kept blocks are copied, zero ones stay absent; the pointer moves.
        d.copy_blocks(&[9, 0, 8], 16, WriteKind::GcData).unwrap();
        assert_eq!(firsts(&d, 16, 3), [6, 5, 0]);
        assert_eq!((d.write_pointer(1), d.kept_blocks()), (Some(3), 4));
        // Off the write pointer: refused, nothing written.
        let e = d.copy_blocks(&[0], 24 + 2, WriteKind::GcData).unwrap_err().to_string();
        assert!(e.contains("write pointer"), "{e}");
        assert!(d.copy_blocks(&[40], 19, WriteKind::GcData).is_err());
        assert_eq!(d.write_pointer(1), Some(3));
        // The host path gives the same result (the default of other devices).
        let m = dev();
        for (a, v) in [(0u64, 5u8), (8, 0), (9, 6)] {
            m.write_blocks(a, &[v; BLOCK]).unwrap();
        }
        crate::device::copy_through_host(&m, &[9, 0, 8], 16, WriteKind::GcData).unwrap();
        assert_eq!(firsts(&m, 16, 3), [6, 5, 0]);
    }

    #[test]
    fn vectored_writes_keep_the_zone_rules() {
        let d = dev();
        let (a, z, b) = ([1u8; BLOCK], [0u8; BLOCK], [2u8; BLOCK]);
        d.write_blocks_from(8, &[&a, &z, &b], WriteKind::UserNode).unwrap();
        assert_eq!(firsts(&d, 8, 3), [1, 0, 2]);
        assert_eq!((d.write_pointer(0), d.kept_blocks()), (Some(3), 2));
        assert!(d.write_blocks_from(12, &[&a], WriteKind::UserNode).is_err());
        let e = d.write_blocks_from(11, &[&a[..100]], WriteKind::UserNode).unwrap_err();
        assert!(e.to_string().contains("100 bytes"), "{e}");
        assert_eq!(d.write_pointer(0), Some(3));
        // The gathering default writes the same.
        let m = dev();
        crate::device::write_gathered(&m, 8, &[&a, &z, &b], WriteKind::UserNode).unwrap();
        assert_eq!((firsts(&m, 8, 3), m.write_pointer(0)), (vec![1, 0, 2], Some(3)));
    }
}
