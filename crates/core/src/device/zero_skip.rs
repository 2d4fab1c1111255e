//! The zero-skipping block store under the lab's [`ZonedMemDevice`](super::ZonedMemDevice):
//! sparse memory, keeping only blocks that hold something other than zeros, so a
//! volume whose file data are zeros (the lab writes zeros, as null_blk without memory
//! backing would discard them) costs memory only for metadata, nodes and directories,
//! and a 32 GiB volume fits in a few hundred MiB. Reads of anything not kept give
//! zeros.
//!
//! Blocks written or read as [`crate::device::SharedBlock`]s are kept as they are,
//! shared with the caller, not copied (node blocks). A store made with `forget_moved`
//! also drops a block when its owner moves it ([`BlockDevice::forget`]), so a node that
//! GC moves is stamped in place and never copied: for the lab, which reads no older
//! checkpoint back. Any other store keeps every block until its zone is reset, as a
//! power cut may need it.

use super::block_table::{Block, BlockTable};
use super::zoned::check_whole_blocks;
use super::{check_range, BlockDevice, WriteKind, BLOCK};
use crate::Result;
use std::sync::{Arc, Mutex, PoisonError};

/// Sparse memory: only blocks that are not all zeros are kept.
pub(super) struct SparseMem {
    pub(super) blocks: u64,
    pub(super) forget_moved: bool,
    pub(super) kept: Mutex<Kept>,
}

/// The blocks kept, and buffers of blocks dropped, reused for blocks kept later
/// (fewer allocations).
#[derive(Default)]
pub(super) struct Kept {
    pub(super) table: BlockTable,
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
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
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

/// A block of zeros, to compare blocks with.
static ZEROS: [u8; BLOCK] = [0; BLOCK];

/// Whether `b` holds only zeros: one comparison with a zero block per block's worth
/// (`memcmp`, vectorized, and it stops at the first difference, which node and
/// metadata blocks mostly have in their first bytes).
fn is_zero(b: &[u8]) -> bool {
    b.chunks(BLOCK).all(|c| c == &ZEROS[..c.len()])
}
