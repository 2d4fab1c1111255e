//! File data: mapping file block indexes to device addresses through the node tree, and
//! reading byte ranges with one device read per contiguous run.

use crate::compress::ClusterCache;
use crate::device::BlockDevice;
use crate::inode::InodeRef;
use crate::node::{node_path, NodeBlock, NodeManager};
use crate::{Error, FileKind, Fs, Ino, Result};
use std::sync::Arc;
use uf2fs_format::consts::{COMPRESS_ADDR, NEW_ADDR, NULL_ADDR};
use uf2fs_format::node::{node_slot, Compression, F2FS_INLINE_DATA};

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

/// What `lseek(2)` looks for from an offset: `SEEK_DATA` or `SEEK_HOLE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seek {
    /// The next offset holding data.
    Data,
    /// The next offset in a hole (the end of the file counts as one).
    Hole,
}

/// Zeroes `buf[pos..]` up to the end of a hole: file blocks `fb..end`, `within` bytes
/// into block `fb` (`end` may be `u64::MAX`, past the double-indirect range: the size
/// saturates), in blocks of `block` bytes. Returns the new fill position.
fn zero_hole(buf: &mut [u8], pos: usize, fb: u64, end: u64, within: u64, block: u64) -> usize {
    let hole = (end - fb).saturating_mul(block) - within;
    let bytes = hole.min((buf.len() - pos) as u64) as usize;
    buf[pos..pos + bytes].fill(0);
    pos + bytes
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
    /// Recently decoded clusters of compressed files.
    pub clusters: &'a ClusterCache,
    /// The superblock (a directory's name rules: [`crate::casefold`]).
    pub sb: &'a uf2fs_format::superblock::Superblock,
}

impl Mapper<'_> {
    fn node(&self, nid: u32) -> Result<NodeBlock> {
        self.nodes.read(self.dev, nid, self.inode.ino)
    }

    /// Address slot `i` of node block `b`: `i` is uf2fs's own arithmetic over a block
    /// whose footer was checked when read, so a slot outside it is uf2fs's bug.
    fn slot(&self, b: &NodeBlock, i: u64) -> Result<u32> {
        node_slot(b, i as usize)
            .map_err(|e| Error::bug(format!("address slot {i} of a node of inode {}: {e}", self.inode.ino)))
    }

    /// Bytes of a block.
    fn bs(&self) -> usize {
        self.inode.inode.geometry.block_size()
    }

    /// The chunk containing file block `fb`: the run of it and the following blocks
    /// whose addresses one node holds (the inode, or a direct node found by walking
    /// [`node_path`] down the tree), or the hole up to the end of the first node
    /// missing on the way ([`NodePath::span`]). The tree's numbers are the inode's
    /// [`TreeShape`](crate::node::TreeShape): a direct node holds
    /// [`Inode::addrs_per_block`] addresses (1018, 4090 with 16 KiB blocks, fewer for
    /// compressed files), an indirect node [`Geometry::nids_per_block`] node ids.
    ///
    /// [`Inode::addrs_per_block`]: uf2fs_format::node::Inode::addrs_per_block
    /// [`Geometry::nids_per_block`]: uf2fs_format::Geometry::nids_per_block
    /// [`NodePath::span`]: crate::node::NodePath::span
    pub fn chunk(&self, fb: u64) -> Result<Chunk> {
        let i = &self.inode.inode;
        let shape = i.tree_shape();
        if fb < shape.in_inode {
            return Ok(Chunk::Mapped {
                first: fb,
                node: self.inode.block.clone(),
                in_inode: true,
                slot: fb as usize,
                len: shape.in_inode - fb,
            });
        }
        if fb >= shape.max_blocks() {
            return Ok(Chunk::Hole { end: u64::MAX });
        }
        let path = node_path(shape, fb)?;
        let mut nid = i.nids[path.slots[0]];
        for level in 1..=path.depth {
            if nid == 0 {
                let (start, len) = path.span(shape, fb, level);
                return Ok(Chunk::Hole { end: start + len });
            }
            let node = self.node(nid)?;
            if level == path.depth {
                let slot = path.slots[level];
                return Ok(Chunk::Mapped {
                    first: fb,
                    node,
                    in_inode: false,
                    slot,
                    len: shape.per_dnode - slot as u64,
                });
            }
            nid = self.slot(&node, path.slots[level] as u64)?;
        }
        Err(Error::Invalid(format!("node path of block {fb} has no direct node")))
    }

    /// Address slot `slot` of `node` as stored (`NULL_ADDR`, `NEW_ADDR` and
    /// `COMPRESS_ADDR` included); for the inode block, slot 0 is its first data slot.
    pub(crate) fn raw_addr(&self, node: &NodeBlock, in_inode: bool, slot: usize) -> Result<u32> {
        if in_inode {
            Ok(self.inode.inode.addr(node, slot))
        } else {
            self.slot(node, slot as u64)
        }
    }

    /// Address stored in a mapped chunk at offset `k` from its first block, validated:
    /// `None` for a hole (NULL_ADDR or NEW_ADDR).
    pub fn addr_in(&self, node: &NodeBlock, in_inode: bool, slot: usize) -> Result<Option<u64>> {
        let a = self.raw_addr(node, in_inode, slot)?;
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

    /// Whether file block `fb` has a dirty page waiting to be written.
    fn dirty(&self, fb: u64) -> bool {
        self.pages.is_some_and(|p| p.get(self.inode.ino, fb).is_some())
    }

    /// `lseek(2)` with `SEEK_DATA` or `SEEK_HOLE` from `offset`, as F2FS's
    /// `f2fs_seek_block` answers it: a block with an address is data, and so is a
    /// reserved one (`NEW_ADDR`) with a dirty page; only a block without an address
    /// (`NULL_ADDR`, or no node) is a hole, so a preallocated block never written is
    /// neither. The answer is at least `offset`; `None` (`ENXIO`) at or past the end of
    /// the file, or when no data follows. Inline files are all data, and so (here, for
    /// now) are compressed ones, as a file system without `SEEK_DATA` answers.
    pub fn seek(&self, offset: u64, whence: Seek) -> Result<Option<u64>> {
        let i = &self.inode.inode;
        let size = i.size;
        if offset >= size {
            return Ok(None);
        }
        if i.has_inline(F2FS_INLINE_DATA) || i.is_compressed() {
            return Ok(Some(match whence {
                Seek::Data => offset,
                Seek::Hole => size,
            }));
        }
        let block = self.bs() as u64;
        let found = |fb: u64| Some((fb * block).max(offset).min(size));
        let end = size.div_ceil(block);
        let mut fb = offset / block;
        while fb < end {
            match self.chunk(fb)? {
                Chunk::Hole { end: e } => {
                    if whence == Seek::Hole {
                        return Ok(found(fb));
                    }
                    fb = e;
                }
                Chunk::Mapped {
                    first,
                    node,
                    in_inode,
                    slot,
                    len,
                } => {
                    let stop = (first + len).min(end);
                    for b in first..stop {
                        let s = slot + (b - first) as usize;
                        let a = self.raw_addr(&node, in_inode, s)?;
                        let hit = match whence {
                            Seek::Data if a == NEW_ADDR => self.dirty(b),
                            // Checked as a read would check it.
                            Seek::Data => self.addr_in(&node, in_inode, s)?.is_some(),
                            Seek::Hole => a == NULL_ADDR,
                        };
                        if hit {
                            return Ok(found(b));
                        }
                    }
                    fb = stop;
                }
            }
        }
        Ok(match whence {
            Seek::Data => None,
            Seek::Hole => Some(size),
        })
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
                    self.inode.blkaddr,
                    format!("inline file of {size} bytes"),
                ));
            }
            let src = &self.inode.block[r.start + offset as usize..r.start + offset as usize + n];
            buf.copy_from_slice(src);
            return Ok(n);
        }
        if let (Some(c), Some(cluster)) = (self.inode.inode.compress, self.inode.inode.cluster_blocks()) {
            self.read_compressed(&c, cluster as u64, offset, buf)?;
            self.overlay_dirty(offset, buf);
            return Ok(n);
        }
        if self.pages.is_some_and(|p| p.has_inode(self.inode.ino)) {
            self.read_blocks_dirty(offset, buf)?;
        } else {
            self.read_blocks(offset, buf)?;
        }
        Ok(n)
    }

    /// [`Mapper::read`] of a compressed file with clusters of `cluster` blocks. A
    /// cluster whose first slot is `COMPRESS_ADDR` is read whole and decoded (or taken
    /// from the cache of decoded clusters); runs of clusters stored as plain blocks
    /// are read as any file's blocks, one device read per contiguous run.
    fn read_compressed(&self, c: &Compression, cluster: u64, offset: u64, buf: &mut [u8]) -> Result<()> {
        let block = self.bs() as u64;
        let cluster_bytes = cluster * block;
        let wanted_end = (offset + buf.len() as u64).div_ceil(block);
        let mut pos = 0usize;
        let mut bounce = Vec::new();
        while pos < buf.len() {
            let at = offset + pos as u64;
            let fb = at / block;
            let index = at / cluster_bytes;
            // Node blocks of a compressed file hold whole clusters, so the chunk
            // starting at the cluster's first block holds all of it.
            match self.chunk(index * cluster)? {
                Chunk::Hole { end } => pos = zero_hole(buf, pos, fb, end, at % block, block),
                Chunk::Mapped {
                    first,
                    node,
                    in_inode,
                    slot,
                    len,
                } => {
                    if self.raw_addr(&node, in_inode, slot)? == COMPRESS_ADDR {
                        let data = self.cluster_data(c, index, cluster as usize, &node, in_inode, slot)?;
                        let within = (at - index * cluster_bytes) as usize;
                        let bytes = (cluster_bytes as usize - within).min(buf.len() - pos);
                        buf[pos..pos + bytes].copy_from_slice(&data[within..within + bytes]);
                        pos += bytes;
                        continue;
                    }
                    // Plain clusters: extend over the next ones while they are plain too.
                    let mut end = first + cluster;
                    while end < first + len
                        && end < wanted_end
                        && self.raw_addr(&node, in_inode, slot + (end - first) as usize)? != COMPRESS_ADDR
                    {
                        end += cluster;
                    }
                    let end = end.min(first + len);
                    let from = slot + (fb - first) as usize;
                    let within = (at % block) as usize;
                    pos = self.read_run(
                        &node,
                        in_inode,
                        from,
                        (end - fb) as usize,
                        within,
                        buf,
                        pos,
                        &mut bounce,
                    )?;
                }
            }
        }
        Ok(())
    }

    /// Counts the clusters of a compressed file below `end` (a block index): stored
    /// compressed (with the blocks they use) and stored plain. `None` for a file that
    /// is not compressed.
    pub fn cluster_census(&self, end: u64) -> Result<Option<crate::compress::FileCompression>> {
        let (Some(c), Some(cluster)) = (self.inode.inode.compress, self.inode.inode.cluster_blocks()) else {
            return Ok(None);
        };
        let mut out = crate::compress::FileCompression {
            algorithm: crate::compress::algorithm_name(&c),
            level: c.level(),
            cluster_blocks: cluster as u32,
            checksums: c.has_checksum(),
            compressed_clusters: 0,
            plain_clusters: 0,
            compressed_blocks: 0,
            saved_blocks: c.compr_blocks,
        };
        let cluster = cluster as u64;
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
                    let stop = (first + len).min(end.div_ceil(cluster) * cluster);
                    while fb < stop {
                        let s = slot + (fb - first) as usize;
                        let addrs = (0..cluster as usize)
                            .map(|k| self.raw_addr(&node, in_inode, s + k))
                            .collect::<Result<Vec<u32>>>()?;
                        let valid = addrs[1..].iter().filter(|&&a| a != NULL_ADDR && a != NEW_ADDR).count() as u64;
                        if addrs[0] == COMPRESS_ADDR {
                            out.compressed_clusters += 1;
                            out.compressed_blocks += valid;
                        } else if valid > 0 || (addrs[0] != NULL_ADDR && addrs[0] != NEW_ADDR) {
                            out.plain_clusters += 1;
                        }
                        fb += cluster;
                    }
                    fb = fb.max(first + len);
                }
            }
        }
        Ok(Some(out))
    }

    /// The decoded data of compressed cluster `index`, whose `COMPRESS_ADDR` sits at
    /// `slot` of `node`: its compressed blocks' addresses follow in the next slots and
    /// end at the first `NULL_ADDR` or `NEW_ADDR` (the kernel's layout; anything else
    /// is corrupt).
    fn cluster_data(
        &self,
        c: &Compression,
        index: u64,
        cluster: usize,
        node: &NodeBlock,
        in_inode: bool,
        slot: usize,
    ) -> Result<Arc<Vec<u8>>> {
        let ino = self.inode.ino;
        let (lo, hi) = self.nodes.main_area();
        let bad = |why: String| {
            // The cluster's addresses are in `node` (the inode itself when `in_inode`).
            let at = if in_inode {
                self.inode.blkaddr
            } else {
                let nid = uf2fs_format::node::NodeFooter::decode(node).map_or(0, |f| f.nid);
                self.nodes.blkaddr_of(self.dev, nid)
            };
            Error::corrupt(format!("inode {ino}"), at, format!("compressed cluster {index}: {why}"))
        };
        let mut addrs: Vec<u64> = Vec::with_capacity(cluster);
        let mut ended = false;
        for k in 1..cluster {
            match self.raw_addr(node, in_inode, slot + k)? {
                NULL_ADDR | NEW_ADDR => ended = true,
                COMPRESS_ADDR => return Err(bad(format!("a second COMPRESS_ADDR in slot {k}"))),
                _ if ended => return Err(bad(format!("a block address after the end of its blocks, slot {k}"))),
                a if (a as u64) < lo || (a as u64) >= hi => {
                    return Err(bad(format!("block address {a:#x} outside the main area")))
                }
                a => addrs.push(a as u64),
            }
        }
        if addrs.is_empty() {
            return Err(bad("no compressed blocks".into()));
        }
        let key = (ino, index, addrs[0]);
        if let Some(data) = self.clusters.get(key) {
            return Ok(data);
        }
        let bs = self.bs();
        let mut raw = vec![0u8; addrs.len() * bs];
        let mut i = 0;
        while i < addrs.len() {
            let mut run = 1;
            while i + run < addrs.len() && addrs[i + run] == addrs[i] + run as u64 {
                run += 1;
            }
            self.dev.read_blocks(addrs[i], &mut raw[i * bs..(i + run) * bs])?;
            i += run;
        }
        let mut out = vec![0u8; cluster * bs];
        crate::compress::decompress_cluster(ino, index, addrs[0], c, &raw, &mut out)?;
        let out = Arc::new(out);
        self.clusters.put(key, out.clone());
        Ok(out)
    }

    /// Lays the dirty pages of the file over `buf`, read from the device at `offset`
    /// (a compressed file's writes wait there until writeback stores their clusters).
    fn overlay_dirty(&self, offset: u64, buf: &mut [u8]) {
        let Some(p) = self.pages.filter(|p| p.has_inode(self.inode.ino)) else {
            return;
        };
        let bs = self.bs() as u64;
        let end = offset + buf.len() as u64;
        for fb in offset / bs..end.div_ceil(bs) {
            if let Some(b) = p.get(self.inode.ino, fb) {
                let (lo, hi) = (offset.max(fb * bs), end.min(fb * bs + bs));
                buf[(lo - offset) as usize..(hi - offset) as usize]
                    .copy_from_slice(&b[(lo - fb * bs) as usize..(hi - fb * bs) as usize]);
            }
        }
    }

    /// [`Mapper::read_blocks`] for a file with dirty blocks: block by block, each from
    /// the page cache when dirty there, else from the device (holes read as zeros).
    fn read_blocks_dirty(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let mut pos = 0usize;
        while pos < buf.len() {
            let at = offset + pos as u64;
            let bs = self.bs();
            let fb = at / bs as u64;
            let within = (at % bs as u64) as usize;
            let bytes = (bs - within).min(buf.len() - pos);
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
        let bs = self.bs();
        while pos < buf.len() {
            let at = offset + pos as u64;
            let fb = at / bs as u64;
            let within = (at % bs as u64) as usize;
            match self.chunk(fb)? {
                Chunk::Hole { end } => pos = zero_hole(buf, pos, fb, end, within as u64, self.bs() as u64),
                Chunk::Mapped {
                    first,
                    node,
                    in_inode,
                    slot,
                    len,
                } => {
                    let base = slot + (fb - first) as usize;
                    let blocks_wanted = (within + buf.len() - pos).div_ceil(bs) as u64;
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
        let bs = self.bs();
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
                if !contiguous || (run * bs - within) >= buf.len() - pos {
                    break;
                }
                run += 1;
            }
            let bytes = (run * bs - within).min(buf.len() - pos);
            let out = &mut buf[pos..pos + bytes];
            match addr {
                None => out.fill(0),
                Some(a) if within == 0 && bytes % bs == 0 => self.dev.read_blocks(a, out)?,
                Some(a) => {
                    bounce.resize(run * bs, 0);
                    self.dev.read_blocks(a, &mut bounce[..run * bs])?;
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

impl Fs {
    /// Read file data at `offset` into `buf`; returns bytes read, short only at end of file.
    /// Read-write, a read holds `cp_lock` shared and the inode's lock (writes wait for
    /// it): no writeback moves a block from the page cache to the device under it.
    pub fn read(&self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize> {
        self.stop_on_damage(self.read_inner(ino, offset, buf))
    }

    /// [`Fs::read`], before damage it reports stops the volume.
    fn read_inner(&self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let _held = self.rw.as_ref().map(|rw| (rw.cp_shared(), rw.lock_inodes(&[ino])));
        let i = self.inode(ino)?;
        match i.kind()? {
            FileKind::Dir => return Err(Error::IsDir(format!("inode {ino}"))),
            FileKind::File | FileKind::Symlink => {}
            _ => return Ok(0),
        }
        i.check_decodable()?;
        self.mapper(&i).read(offset, buf)
    }

    /// `lseek(2)` with `SEEK_DATA` or `SEEK_HOLE` (`whence`) from `offset` in regular
    /// file `ino`, as Linux F2FS's `f2fs_seek_block` answers it: a block with an address
    /// is data, and so is a reserved one (`NEW_ADDR`) with a dirty page; only a block
    /// without an address is a hole, so a preallocated block never written is neither.
    /// Inline files are all data, and so (for now) are compressed ones. Returns the
    /// offset found (at least `offset`), or `None` for `ENXIO` (at or past the end of the
    /// file, or no data after `offset`). Other kinds of inode are [`Error::Invalid`].
    pub fn seek(&self, ino: Ino, offset: u64, whence: Seek) -> Result<Option<u64>> {
        self.stop_on_damage(self.seek_inner(ino, offset, whence))
    }

    /// [`Fs::seek`], before damage it reports stops the volume.
    fn seek_inner(&self, ino: Ino, offset: u64, whence: Seek) -> Result<Option<u64>> {
        let _held = self.rw.as_ref().map(|rw| (rw.cp_shared(), rw.lock_inodes(&[ino])));
        let i = self.inode(ino)?;
        if i.kind()? != FileKind::File {
            return Err(Error::Invalid(format!(
                "SEEK_DATA/SEEK_HOLE on inode {ino}: not a regular file"
            )));
        }
        i.check_decodable()?;
        self.mapper(&i).seek(offset, whence)
    }

    /// How a compressed file is stored (its algorithm, cluster size, and how many of
    /// its clusters are compressed); `None` for any other inode.
    pub fn compression(&self, ino: Ino) -> Result<Option<crate::compress::FileCompression>> {
        self.stop_on_damage(self.compression_inner(ino))
    }

    /// [`Fs::compression`], before damage it reports stops the volume.
    fn compression_inner(&self, ino: Ino) -> Result<Option<crate::compress::FileCompression>> {
        let i = self.inode(ino)?;
        if !i.inode.is_compressed() {
            return Ok(None);
        }
        i.check_decodable()?;
        let end = i.inode.size.div_ceil(i.inode.geometry.block_size() as u64);
        self.mapper(&i).cluster_census(end)
    }

    /// Where a file's blocks lie: runs of consecutive file blocks at consecutive
    /// device blocks, as `(first file block, first device block, blocks)`, in file
    /// order (FIEMAP's view; holes and `NEW_ADDR` reservations are not listed). Empty
    /// for an inline or a compressed file (whose clusters are not runs of file blocks:
    /// [`Fs::compression`] counts them). Blocks still in the page cache are listed
    /// where the device holds them (if anywhere).
    pub fn extents(&self, ino: Ino) -> Result<Vec<(u64, u64, u64)>> {
        self.stop_on_damage(self.extents_inner(ino))
    }

    /// [`Fs::extents`], before damage it reports stops the volume.
    fn extents_inner(&self, ino: Ino) -> Result<Vec<(u64, u64, u64)>> {
        let i = self.inode(ino)?;
        if i.inode.has_inline(uf2fs_format::node::F2FS_INLINE_DATA) || i.inode.is_compressed() {
            return Ok(Vec::new());
        }
        let end = i.inode.size.div_ceil(i.inode.geometry.block_size() as u64);
        let mut out: Vec<(u64, u64, u64)> = Vec::new();
        self.mapper(&i).for_each_block(end, |fb, addr| {
            match out.last_mut() {
                Some((f, a, n)) if *f + *n == fb && *a + *n == addr => *n += 1,
                _ => out.push((fb, addr, 1)),
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Target of a symbolic link.
    pub fn read_link(&self, ino: Ino) -> Result<Vec<u8>> {
        self.stop_on_damage(self.read_link_inner(ino))
    }

    /// [`Fs::read_link`], before damage it reports stops the volume.
    fn read_link_inner(&self, ino: Ino) -> Result<Vec<u8>> {
        let i = self.inode(ino)?;
        if i.kind()? != FileKind::Symlink {
            return Err(Error::NotSymlink(format!("inode {ino}")));
        }
        i.check_decodable()?;
        let size = i.inode.size;
        if size == 0 || size >= i.inode.geometry.block_size() as u64 {
            return Err(Error::corrupt(
                format!("symlink inode {ino}"),
                i.blkaddr,
                format!("target length {size}"),
            ));
        }
        let mut buf = vec![0u8; size as usize];
        let n = self.mapper(&i).read(0, &mut buf)?;
        buf.truncate(n);
        Ok(buf)
    }
}
