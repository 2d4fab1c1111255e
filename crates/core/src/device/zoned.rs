//! Host-managed zoned devices, emulated: [`ZonedDevice`] enforces zone write pointers
//! over any device (uf2fs opens images made with `uf2fs mkfs --zoned` through it), and
//! [`ZonedMemDevice`] is one over a sparse memory store, for the lab (`uf2fs bench
//! waf`) and tests.
//!
//! - Blocks before `seq_start` are conventional: written anywhere, any order (F2FS's
//!   metadata lives there).
//! - From `seq_start` on, the device is cut into zones of `zone_blocks` blocks, each
//!   with a write pointer: a write must start exactly at its zone's write pointer (and
//!   moves it on), else it fails with an error naming the zone; [`BlockDevice::discard`]
//!   of a whole zone resets its pointer (F2FS resets a zone when its section becomes
//!   free).
//! - The memory store is sparse: only blocks holding something other than zeros are
//!   kept, so a volume whose file data are zeros (the lab writes zeros, as null_blk
//!   without memory backing would discard them) costs memory only for metadata, nodes
//!   and directories, and a 32 GiB volume fits in a few hundred MiB. Reads of anything
//!   not kept give zeros.
//! - Blocks written or read as [`crate::device::SharedBlock`]s are kept as they are,
//!   shared with the caller, not copied (node blocks). A device made with
//!   `forget_moved` also drops a block when its owner moves it
//!   ([`BlockDevice::forget`]), so a node that GC moves is stamped in place and never
//!   copied: for the lab, which reads no older checkpoint back. Any other device keeps
//!   every block until its zone is reset, as a power cut may need it.

use super::block_table::{Block, BlockTable};
use super::{check_range, BlockDevice, WriteKind, BLOCK};
use crate::{Error, Result};
use std::sync::{Arc, Mutex, PoisonError};

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
    zones: Zones,
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
fn check_whole_blocks(blkaddr: u64, mut lens: impl Iterator<Item = usize>) -> Result<()> {
    match lens.find(|&l| l != BLOCK) {
        Some(l) => Err(Error::Invalid(format!(
            "write of {l} bytes as one block at block {blkaddr:#x}"
        ))),
        None => Ok(()),
    }
}

/// Sparse memory: only blocks that are not all zeros are kept.
struct SparseMem {
    blocks: u64,
    forget_moved: bool,
    kept: Mutex<Kept>,
}

/// The blocks kept, and buffers of blocks dropped, reused for blocks kept later
/// (fewer allocations).
#[derive(Default)]
struct Kept {
    table: BlockTable,
    spare: Vec<Block>,
}

/// Spare buffers kept at most.
const SPARE_MAX: usize = 4096;

impl Kept {
    /// Keeps `b` as block `a` (drops it when it is all zeros).
    fn store(&mut self, a: u64, b: &[u8]) {
        if is_zero(b) {
            if let Some(old) = self.table.remove(a) {
                self.recycle(old);
            }
            return;
        }
        // In place when nobody else holds the block kept there.
        if let Some(old) = self.table.get_mut(a).and_then(Arc::get_mut) {
            old.copy_from_slice(b);
            return;
        }
        let copy = self.copy_of(b);
        self.keep(a, copy);
    }

    /// Keeps `b` itself as block `a`, shared with the caller: no copy, no zero test.
    fn store_shared(&mut self, a: u64, b: &Block) {
        self.keep(a, Arc::clone(b));
    }

    fn keep(&mut self, a: u64, b: Block) {
        if let Some(old) = self.table.insert(a, b) {
            self.recycle(old);
        }
    }

    /// A kept copy of `b`, in a recycled buffer when there is one.
    fn copy_of(&mut self, b: &[u8]) -> Block {
        match self.spare.pop() {
            Some(mut s) => {
                // Spare buffers are never shared (see `recycle`).
                Arc::make_mut(&mut s).copy_from_slice(b);
                s
            }
            None => Arc::new(b.to_vec()),
        }
    }

    /// Keeps `b` for reuse, unless someone still holds it.
    fn recycle(&mut self, mut b: Block) {
        if self.spare.len() < SPARE_MAX && Arc::get_mut(&mut b).is_some() {
            self.spare.push(b);
        }
    }
}

impl SparseMem {
    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The store, locked for a vectored write from `blkaddr` of parts of lengths
    /// `lens`, once they are checked: whole blocks, inside the device.
    fn lock_for_run(
        &self,
        blkaddr: u64,
        lens: impl ExactSizeIterator<Item = usize>,
    ) -> Result<std::sync::MutexGuard<'_, Kept>> {
        let n = lens.len();
        check_whole_blocks(blkaddr, lens)?;
        check_range(blkaddr, n * BLOCK, self.blocks, &|| "the zoned memory device".into())?;
        Ok(self.lock())
    }
}

impl BlockDevice for SparseMem {
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> Result<()> {
        check_range(blkaddr, buf.len(), self.blocks, &|| "the zoned memory device".into())?;
        let kept = self.lock();
        for (a, out) in (blkaddr..).zip(buf.chunks_mut(BLOCK)) {
            match kept.table.get(a) {
                Some(b) => out.copy_from_slice(b),
                None => out.fill(0),
            }
        }
        Ok(())
    }

    fn block_count(&self) -> u64 {
        self.blocks
    }

    fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> Result<()> {
        check_range(blkaddr, buf.len(), self.blocks, &|| "the zoned memory device".into())?;
        let mut kept = self.lock();
        for (a, b) in (blkaddr..).zip(buf.chunks(BLOCK)) {
            kept.store(a, b);
        }
        Ok(())
    }

    /// Stores each block where it is (nothing is gathered).
    fn write_blocks_from(&self, blkaddr: u64, blocks: &[&[u8]], _kind: WriteKind) -> Result<()> {
        let mut kept = self.lock_for_run(blkaddr, blocks.iter().map(|b| b.len()))?;
        for (a, b) in (blkaddr..).zip(blocks) {
            kept.store(a, b);
        }
        Ok(())
    }

    fn forget(&self, blkaddr: u64) {
        if self.forget_moved {
            let mut kept = self.lock();
            if let Some(old) = kept.table.remove(blkaddr) {
                kept.recycle(old);
            }
        }
    }

    /// The block kept (shared, no copy), or a new zero block.
    fn read_shared(&self, blkaddr: u64) -> Result<Block> {
        check_range(blkaddr, BLOCK, self.blocks, &|| "the zoned memory device".into())?;
        Ok(match self.lock().table.get(blkaddr) {
            Some(b) => Arc::clone(b),
            None => Arc::new(vec![0; BLOCK]),
        })
    }

    /// Keeps the blocks themselves (shared, no copy).
    fn write_shared(&self, blkaddr: u64, blocks: &[Block], _kind: WriteKind) -> Result<()> {
        let mut kept = self.lock_for_run(blkaddr, blocks.iter().map(|b| b.len()))?;
        for (a, b) in (blkaddr..).zip(blocks) {
            kept.store_shared(a, b);
        }
        Ok(())
    }

    /// Copies in memory: a kept block is shared by source and destination (nobody
    /// changes a shared block in place), the zero ones cost a lookup.
    fn copy_blocks(&self, sources: &[u64], dst: u64, _kind: WriteKind) -> Result<()> {
        check_range(dst, sources.len() * BLOCK, self.blocks, &|| {
            "the zoned memory device".into()
        })?;
        if let Some(&bad) = sources.iter().find(|&&a| a >= self.blocks) {
            check_range(bad, BLOCK, self.blocks, &|| "the zoned memory device".into())?;
        }
        let mut kept = self.lock();
        let kept = &mut *kept;
        // Every source is read before any destination is written.
        let copies: Vec<Option<Block>> = sources.iter().map(|&a| kept.table.get(a).cloned()).collect();
        for (a, copy) in (dst..).zip(copies) {
            let old = match copy {
                Some(b) => kept.table.insert(a, b),
                None => kept.table.remove(a),
            };
            if let Some(old) = old {
                kept.recycle(old);
            }
        }
        Ok(())
    }

    fn discard(&self, blkaddr: u64, blocks: u64) -> Result<()> {
        let end = blkaddr.saturating_add(blocks).min(self.blocks);
        let mut kept = self.lock();
        let kept = &mut *kept;
        let spare = &mut kept.spare;
        kept.table.remove_range(blkaddr, end, &mut |mut b| {
            if spare.len() < SPARE_MAX && Arc::get_mut(&mut b).is_some() {
                spare.push(b);
            }
        });
        Ok(())
    }
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

/// A block of zeros, to compare blocks with.
static ZEROS: [u8; BLOCK] = [0; BLOCK];

/// Whether `b` holds only zeros: one comparison with a zero block per block's worth
/// (`memcmp`, vectorized, and it stops at the first difference, which node and
/// metadata blocks mostly have in their first bytes).
fn is_zero(b: &[u8]) -> bool {
    b.chunks(BLOCK).all(|c| c == &ZEROS[..c.len()])
}

#[cfg(test)]
mod tests {
    use super::*;

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
