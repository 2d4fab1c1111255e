//! [`ZonedMemDevice`]: an emulated host-managed zoned device held in memory, for the
//! lab (`uf2fs bench waf`) and tests.
//!
//! - Blocks before `seq_start` are conventional: written anywhere, any order.
//! - From `seq_start` on, the device is cut into zones of `zone_blocks` blocks, each
//!   with a write pointer: a write must start exactly at its zone's write pointer (and
//!   moves it on), else it fails with an error naming the zone; [`BlockDevice::discard`]
//!   of a whole zone resets its pointer (F2FS resets a zone when its section becomes
//!   free).
//! - Storage is sparse: only blocks holding something other than zeros are kept, so a
//!   volume whose file data are zeros (the lab writes zeros, as null_blk without memory
//!   backing would discard them) costs memory only for metadata, nodes and
//!   directories, and a 32 GiB volume fits in a few hundred MiB. Reads of anything not
//!   kept give zeros.

use super::{check_range, BlockDevice, BLOCK};
use crate::{Error, Result};
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// Shape of a [`ZonedMemDevice`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZonedMemOptions {
    /// Size in blocks.
    pub blocks: u64,
    /// First block of the sequential-write-required region (`blocks`: none).
    pub seq_start: u64,
    /// Blocks per zone of that region (ignored when there is none).
    pub zone_blocks: u64,
}

struct State {
    kept: HashMap<u64, Box<[u8]>>,
    /// Write pointer of each zone, in blocks from its start.
    wp: Vec<u64>,
}

/// See the module notes.
pub struct ZonedMemDevice {
    opts: ZonedMemOptions,
    state: Mutex<State>,
}

impl ZonedMemDevice {
    /// An empty (all zeros, every zone reset) device.
    pub fn new(opts: ZonedMemOptions) -> Result<ZonedMemDevice> {
        let seq = opts.blocks.saturating_sub(opts.seq_start.min(opts.blocks));
        if seq > 0 && (opts.zone_blocks == 0 || seq % opts.zone_blocks != 0) {
            return Err(Error::Invalid(format!(
                "zoned region of {seq} blocks is not a whole number of {}-block zones",
                opts.zone_blocks
            )));
        }
        let zones = if seq > 0 { seq / opts.zone_blocks } else { 0 };
        Ok(ZonedMemDevice {
            opts,
            state: Mutex::new(State {
                kept: HashMap::new(),
                wp: vec![0; zones as usize],
            }),
        })
    }

    /// Blocks held in memory (those not all zeros).
    pub fn kept_blocks(&self) -> usize {
        self.lock().kept.len()
    }

    /// Number of sequential zones.
    pub fn zones(&self) -> usize {
        self.lock().wp.len()
    }

    /// Write pointer of zone `z` (blocks from its start).
    pub fn write_pointer(&self, z: usize) -> Option<u64> {
        self.lock().wp.get(z).copied()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn zone_of(&self, addr: u64) -> Option<u64> {
        (addr >= self.opts.seq_start).then(|| (addr - self.opts.seq_start) / self.opts.zone_blocks)
    }
}

impl BlockDevice for ZonedMemDevice {
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> Result<()> {
        check_range(blkaddr, buf.len(), self.opts.blocks, &|| {
            "the zoned memory device".into()
        })?;
        let s = self.lock();
        for (i, out) in buf.chunks_mut(BLOCK).enumerate() {
            match s.kept.get(&(blkaddr + i as u64)) {
                Some(b) => out.copy_from_slice(b),
                None => out.fill(0),
            }
        }
        Ok(())
    }

    fn block_count(&self) -> u64 {
        self.opts.blocks
    }

    fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> Result<()> {
        check_range(blkaddr, buf.len(), self.opts.blocks, &|| {
            "the zoned memory device".into()
        })?;
        let mut s = self.lock();
        let n = (buf.len() / BLOCK) as u64;
        // Check every zone touched before changing anything.
        let mut addr = blkaddr;
        while addr < blkaddr + n {
            let Some(z) = self.zone_of(addr) else {
                addr = self.opts.seq_start.min(blkaddr + n);
                continue;
            };
            let start = self.opts.seq_start + z * self.opts.zone_blocks;
            let wp = s.wp[z as usize];
            if addr != start + wp {
                return Err(Error::Invalid(format!(
                    "zoned device: write at block {addr:#x}, {} blocks into zone {z}, whose write pointer is at {wp} \
                     (host-managed zones are written sequentially)",
                    addr - start
                )));
            }
            addr = (start + self.opts.zone_blocks).min(blkaddr + n);
        }
        let mut addr = blkaddr;
        while addr < blkaddr + n {
            if let Some(z) = self.zone_of(addr) {
                let start = self.opts.seq_start + z * self.opts.zone_blocks;
                let stop = (start + self.opts.zone_blocks).min(blkaddr + n);
                s.wp[z as usize] = stop - start;
                addr = stop;
            } else {
                addr = self.opts.seq_start.min(blkaddr + n);
            }
        }
        for (i, b) in buf.chunks(BLOCK).enumerate() {
            let a = blkaddr + i as u64;
            if is_zero(b) {
                s.kept.remove(&a);
            } else {
                s.kept.insert(a, b.into());
            }
        }
        Ok(())
    }

    fn discard(&self, blkaddr: u64, blocks: u64) -> Result<()> {
        let end = blkaddr.saturating_add(blocks).min(self.opts.blocks);
        let mut s = self.lock();
        if (end - blkaddr.min(end)) as usize > s.kept.len() {
            s.kept.retain(|&a, _| a < blkaddr || a >= end);
        } else {
            for a in blkaddr..end {
                s.kept.remove(&a);
            }
        }
        // Zones wholly inside are reset.
        let mut addr = blkaddr;
        while addr < end {
            let Some(z) = self.zone_of(addr) else {
                addr = self.opts.seq_start.min(end);
                continue;
            };
            let start = self.opts.seq_start + z * self.opts.zone_blocks;
            let stop = start + self.opts.zone_blocks;
            if addr == start && stop <= end {
                s.wp[z as usize] = 0;
            }
            addr = stop.min(end).max(addr + 1);
        }
        Ok(())
    }
}

/// Whether `b` holds only zeros (64 bytes at a time, so that it vectorizes).
fn is_zero(b: &[u8]) -> bool {
    let mut chunks = b.chunks_exact(64);
    let body = chunks.by_ref().all(|c| c.iter().fold(0u8, |acc, &x| acc | x) == 0);
    body && chunks.remainder().iter().all(|&x| x == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev() -> ZonedMemDevice {
        ZonedMemDevice::new(ZonedMemOptions {
            blocks: 40,
            seq_start: 8,
            zone_blocks: 8,
        })
        .unwrap()
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
            zone_blocks: 7
        })
        .is_err());
    }
}
