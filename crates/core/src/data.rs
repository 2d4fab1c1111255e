//! File data: mapping file block indexes to device addresses through the node tree, and
//! reading byte ranges with one device read per contiguous run.

use crate::device::{BlockDevice, BLOCK};
use crate::inode::InodeRef;
use crate::node::{NodeBlock, NodeManager};
use crate::{Error, Result};
use uf2fs_format::consts::{ADDRS_PER_BLOCK, COMPRESS_ADDR, NEW_ADDR, NULL_ADDR};
use uf2fs_format::node::{node_slot, F2FS_INLINE_DATA};

const D: u64 = ADDRS_PER_BLOCK as u64;

/// A run of file blocks that share one node block.
pub enum Chunk {
    /// Blocks `first..first+len` have addresses in `node` starting at slot `slot`
    /// (for the inode block, slot is relative to its first data address).
    Mapped {
        /// First file block.
        first: u64,
        /// Node holding the addresses.
        node: NodeBlock,
        /// Whether `node` is the inode block.
        in_inode: bool,
        /// Slot of `first`.
        slot: usize,
        /// Blocks in the run.
        len: u64,
    },
    /// Blocks up to (not including) `end` have no node at all: a hole.
    Hole {
        /// First file block after the hole.
        end: u64,
    },
}

/// Maps file blocks to addresses for one inode.
pub struct Mapper<'a> {
    /// Dirty data blocks of a read-write file system, read before the device.
    pub pages: Option<&'a crate::pagecache::PageCache>,
    /// The inode.
    pub inode: &'a InodeRef,
    /// Node access.
    pub nodes: &'a NodeManager,
    /// The device.
    pub dev: &'a dyn BlockDevice,
    /// The superblock (a directory's name rules: [`crate::casefold`]).
    pub sb: &'a uf2fs_format::superblock::Superblock,
}

impl Mapper<'_> {
    fn node(&self, nid: u32) -> Result<NodeBlock> {
        self.nodes.read(self.dev, nid, self.inode.ino)
    }

    fn slot(&self, b: &NodeBlock, i: u64) -> Result<u32> {
        node_slot(b, i as usize)
            .map_err(|e| Error::corrupt(format!("node of inode {}", self.inode.ino), None, e.to_string()))
    }

    /// A direct node run starting at file block `fb`, whose node covers `base..base+D`.
    fn direct(&self, nid: u32, base: u64, fb: u64) -> Result<Chunk> {
        if nid == 0 {
            return Ok(Chunk::Hole { end: base + D });
        }
        let node = self.node(nid)?;
        Ok(Chunk::Mapped {
            first: fb,
            node,
            in_inode: false,
            slot: (fb - base) as usize,
            len: base + D - fb,
        })
    }

    /// The chunk containing file block `fb` (iterative walk of the node tree).
    pub fn chunk(&self, fb: u64) -> Result<Chunk> {
        let i = &self.inode.inode;
        let in_inode = i.addrs_per_inode() as u64;
        if fb < in_inode {
            return Ok(Chunk::Mapped {
                first: fb,
                node: self.inode.block.clone(),
                in_inode: true,
                slot: fb as usize,
                len: in_inode - fb,
            });
        }
        let mut rel = fb - in_inode;
        let mut base = in_inode;
        for &nid in &i.nids[..2] {
            if rel < D {
                return self.direct(nid, base, fb);
            }
            rel -= D;
            base += D;
        }
        for &nid in &i.nids[2..4] {
            if rel < D * D {
                if nid == 0 {
                    return Ok(Chunk::Hole { end: base + D * D });
                }
                let ind = self.node(nid)?;
                let k = rel / D;
                return self.direct(self.slot(&ind, k)?, base + k * D, fb);
            }
            rel -= D * D;
            base += D * D;
        }
        if rel >= D * D * D {
            return Ok(Chunk::Hole { end: u64::MAX });
        }
        let dind_nid = i.nids[4];
        if dind_nid == 0 {
            return Ok(Chunk::Hole { end: base + D * D * D });
        }
        let dind = self.node(dind_nid)?;
        let k1 = rel / (D * D);
        let ind_nid = self.slot(&dind, k1)?;
        let ind_base = base + k1 * D * D;
        if ind_nid == 0 {
            return Ok(Chunk::Hole { end: ind_base + D * D });
        }
        let ind = self.node(ind_nid)?;
        let k2 = (rel / D) % D;
        self.direct(self.slot(&ind, k2)?, ind_base + k2 * D, fb)
    }

    /// Address stored in a mapped chunk at offset `k` from its first block, validated:
    /// `None` for a hole (NULL_ADDR or NEW_ADDR).
    pub fn addr_in(&self, node: &NodeBlock, in_inode: bool, slot: usize) -> Result<Option<u64>> {
        let a = if in_inode {
            self.inode.inode.addr(node, slot)
        } else {
            self.slot(node, slot as u64)?
        };
        if a == NULL_ADDR || a == NEW_ADDR {
            return Ok(None);
        }
        let (lo, hi) = self.nodes.main_area();
        if a == COMPRESS_ADDR || (a as u64) < lo || (a as u64) >= hi {
            return Err(Error::corrupt(
                format!("inode {}", self.inode.ino),
                Some(a as u64),
                "data block address outside the main area",
            ));
        }
        Ok(Some(a as u64))
    }

    /// Calls `f(file_block, device_address)` for every allocated block below `end`, in
    /// order. Holes cost nothing: a missing node skips its whole range.
    pub fn for_each_block(&self, end: u64, mut f: impl FnMut(u64, u64) -> Result<()>) -> Result<()> {
        let mut fb = 0;
        while fb < end {
            match self.chunk(fb)? {
                Chunk::Hole { end: e } => fb = e,
                Chunk::Mapped {
                    first,
                    node,
                    in_inode,
                    slot,
                    len,
                } => {
                    let stop = (first + len).min(end);
                    for k in 0..stop - first {
                        if let Some(a) = self.addr_in(&node, in_inode, slot + k as usize)? {
                            f(first + k, a)?;
                        }
                    }
                    fb = stop;
                }
            }
        }
        Ok(())
    }

    /// Reads file bytes at `offset` into `buf`; returns the count (short only at EOF).
    pub fn read(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let size = self.inode.inode.size;
        if offset >= size || buf.is_empty() {
            return Ok(0);
        }
        let n = ((size - offset).min(buf.len() as u64)) as usize;
        let buf = &mut buf[..n];
        if self.inode.inode.has_inline(F2FS_INLINE_DATA) {
            let r = self.inode.inode.inline_data_range();
            if size > r.len() as u64 {
                return Err(Error::corrupt(
                    format!("inode {}", self.inode.ino),
                    None,
                    format!("inline file of {size} bytes"),
                ));
            }
            let src = &self.inode.block[r.start + offset as usize..r.start + offset as usize + n];
            buf.copy_from_slice(src);
            return Ok(n);
        }
        if self.pages.is_some_and(|p| p.has_inode(self.inode.ino)) {
            self.read_blocks_dirty(offset, buf)?;
        } else {
            self.read_blocks(offset, buf)?;
        }
        Ok(n)
    }

    /// [`Mapper::read_blocks`] for a file with dirty blocks: block by block, each from
    /// the page cache when dirty there, else from the device (holes read as zeros).
    fn read_blocks_dirty(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let mut pos = 0usize;
        while pos < buf.len() {
            let at = offset + pos as u64;
            let fb = at / BLOCK as u64;
            let within = (at % BLOCK as u64) as usize;
            let bytes = (BLOCK - within).min(buf.len() - pos);
            let out = &mut buf[pos..pos + bytes];
            let dirty = self.pages.and_then(|p| p.get(self.inode.ino, fb));
            match dirty {
                Some(b) => out.copy_from_slice(&b[within..within + bytes]),
                None => match self.chunk(fb)? {
                    Chunk::Hole { .. } => out.fill(0),
                    Chunk::Mapped {
                        first,
                        node,
                        in_inode,
                        slot,
                        ..
                    } => match self.addr_in(&node, in_inode, slot + (fb - first) as usize)? {
                        None => out.fill(0),
                        Some(a) => {
                            let b = crate::device::read_block(self.dev, a)?;
                            out.copy_from_slice(&b[within..within + bytes]);
                        }
                    },
                },
            }
            pos += bytes;
        }
        Ok(())
    }

    fn read_blocks(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let mut pos = 0usize; // bytes of buf filled
        let mut bounce = Vec::new();
        while pos < buf.len() {
            let at = offset + pos as u64;
            let fb = at / BLOCK as u64;
            let within = (at % BLOCK as u64) as usize;
            match self.chunk(fb)? {
                Chunk::Hole { end } => {
                    // `end` may be u64::MAX (past the double-indirect range): saturate.
                    let hole = (end - fb).saturating_mul(BLOCK as u64) - within as u64;
                    let bytes = hole.min((buf.len() - pos) as u64) as usize;
                    buf[pos..pos + bytes].fill(0);
                    pos += bytes;
                }
                Chunk::Mapped {
                    first,
                    node,
                    in_inode,
                    slot,
                    len,
                } => {
                    let base = slot + (fb - first) as usize;
                    let blocks_wanted = (within + buf.len() - pos).div_ceil(BLOCK) as u64;
                    let avail = (len - (fb - first)).min(blocks_wanted) as usize;
                    pos = self.read_run(&node, in_inode, base, avail, within, buf, pos, &mut bounce)?;
                }
            }
        }
        Ok(())
    }

    /// Reads `count` blocks whose addresses sit at `slot..` of `node`, starting `within`
    /// bytes into the first, into `buf[pos..]`, merging consecutive addresses into one
    /// device read. Returns the new fill position.
    #[allow(clippy::too_many_arguments)]
    fn read_run(
        &self,
        node: &NodeBlock,
        in_inode: bool,
        slot: usize,
        count: usize,
        mut within: usize,
        buf: &mut [u8],
        mut pos: usize,
        bounce: &mut Vec<u8>,
    ) -> Result<usize> {
        let mut k = 0;
        while k < count && pos < buf.len() {
            let addr = self.addr_in(node, in_inode, slot + k)?;
            // Extend the run while addresses stay consecutive (or stay holes).
            let mut run = 1;
            while k + run < count {
                let next = self.addr_in(node, in_inode, slot + k + run)?;
                let contiguous = match (addr, next) {
                    (Some(a), Some(b)) => b == a + run as u64,
                    (None, None) => true,
                    _ => false,
                };
                if !contiguous || (run * BLOCK - within) >= buf.len() - pos {
                    break;
                }
                run += 1;
            }
            let bytes = (run * BLOCK - within).min(buf.len() - pos);
            let out = &mut buf[pos..pos + bytes];
            match addr {
                None => out.fill(0),
                Some(a) if within == 0 && bytes % BLOCK == 0 => self.dev.read_blocks(a, out)?,
                Some(a) => {
                    bounce.resize(run * BLOCK, 0);
                    self.dev.read_blocks(a, &mut bounce[..run * BLOCK])?;
                    out.copy_from_slice(&bounce[within..within + bytes]);
                }
            }
            pos += bytes;
            within = 0;
            k += run;
        }
        Ok(pos)
    }
}
