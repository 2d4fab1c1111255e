//! File blocks through the node tree, a range at a time (F2FS's data.c and the truncate
//! half of file.c): planning what a range needs, reserving its holes (making the
//! direct and indirect nodes on the way), clearing it (punch) and trimming a file's
//! tree from a block on (truncate).
//!
//! Ranges are walked a direct node at a time; a missing node skips its whole span.
//! Every walk is iterative: the tree has at most three levels below the inode, and
//! each level has its own loop.
//!
//! Counting, as the kernel counts (and fsck checks): `i_blocks` holds the inode, every
//! node below it and every data address that is not `NULL_ADDR` (`NEW_ADDR` included).
//! A reserved address (`NEW_ADDR`) holds one block of the SegmentManager's
//! reservations until it is written or dropped.

use crate::inode::InodeMut;
use crate::node::{node_path, NodeBlock, NodePath, TreeShape};
use crate::segment::LogType;
use crate::tree::{node_log, set_slot, slot_of as slot, Tree};
use crate::{Error, Ino, Result};
use uf2fs_format::consts::{NEW_ADDR, NULL_ADDR};

/// The shape of `inode`'s node tree.
fn shape(inode: &InodeMut) -> TreeShape {
    inode.inode.tree_shape()
}

/// Addresses per direct node of `inode`.
pub fn addrs_per_dnode(inode: &InodeMut) -> u64 {
    shape(inode).per_dnode
}

/// Addresses per direct node and node ids per indirect node of `inode`.
fn fan(inode: &InodeMut) -> (u64, u64) {
    let s = shape(inode);
    (s.per_dnode, s.per_indirect)
}

/// File blocks an inode's node tree addresses (its own addresses, two direct, two
/// indirect and one double-indirect node).
pub fn max_blocks(inode: &InodeMut) -> u64 {
    shape(inode).max_blocks()
}

/// What a range of blocks needs before it can be reserved and written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RangePlan {
    /// Blocks without an address (to reserve).
    pub holes: u64,
    /// Direct nodes to make.
    pub new_direct: u64,
    /// Indirect and double-indirect nodes to make.
    pub new_indirect: u64,
    /// Existing direct nodes the range touches (each is rewritten).
    pub dnodes: u64,
    /// Existing indirect nodes above them (at most; each may be rewritten).
    pub indirect: u64,
}

/// Where a walk down to the direct node of one block ended.
enum Walk {
    /// The address is in the inode.
    Inode,
    /// The node at `level` of the path is missing; blocks up to `end` have none.
    Missing { level: usize, end: u64 },
    /// The direct node `nid`, holding blocks from `start`.
    Dnode { nid: u32, block: NodeBlock, start: u64 },
}

fn read_node(t: &Tree, nid: u32, ino: Ino) -> Result<NodeBlock> {
    t.nodes.read(t.dev, nid, ino)
}

/// Walks from the inode towards the direct node of block `index`.
fn walk(t: &Tree, inode: &InodeMut, index: u64) -> Result<(NodePath, Walk)> {
    let path = node_path(shape(inode), index)?;
    if path.depth == 0 {
        return Ok((path, Walk::Inode));
    }
    let mut nid = inode.inode.nids[path.slots[0]];
    for level in 1..=path.depth {
        if nid == 0 {
            let (start, len) = path.span(shape(inode), index, level);
            return Ok((
                path,
                Walk::Missing {
                    level,
                    end: start + len,
                },
            ));
        }
        let block = read_node(t, nid, inode.ino)?;
        if level == path.depth {
            let start = index - path.slots[level] as u64;
            return Ok((path, Walk::Dnode { nid, block, start }));
        }
        nid = slot(&block, path.slots[level])?;
    }
    Err(Error::Invalid(format!("node path of block {index} has no direct node")))
}

/// What blocks `first..end` of `inode` (not inline) need: holes, nodes to make,
/// nodes touched.
pub fn plan_range(t: &Tree, inode: &InodeMut, first: u64, end: u64) -> Result<RangePlan> {
    let mut plan = RangePlan::default();
    let in_inode = inode.inode.addrs_per_inode() as u64;
    let (d, _) = fan(inode);
    let mut index = first;
    while index < end {
        let (path, w) = walk(t, inode, index)?;
        match w {
            Walk::Inode => {
                let stop = end.min(in_inode);
                plan.holes += (index..stop).filter(|&s| inode.slot(s as usize) == NULL_ADDR).count() as u64;
                index = stop;
            }
            Walk::Missing { level, end: e } => {
                let stop = end.min(e);
                plan.holes += stop - index;
                // Every node at `level` and below inside [index, stop) is missing.
                for l in level..=path.depth {
                    let (start, len) = path.span(shape(inode), index, l);
                    let count = (stop - 1 - start) / len + 1;
                    if l == path.depth {
                        plan.new_direct += count;
                    } else {
                        plan.new_indirect += count;
                    }
                }
                plan.indirect += (level - 1) as u64;
                index = stop;
            }
            Walk::Dnode { block, start, .. } => {
                let stop = end.min(start + d);
                let from = (index - start) as usize;
                let to = (stop - start) as usize;
                for s in from..to {
                    if slot(&block, s)? == NULL_ADDR {
                        plan.holes += 1;
                    }
                }
                plan.dnodes += 1;
                plan.indirect += (path.depth - 1) as u64;
                index = stop;
            }
        }
    }
    Ok(plan)
}

/// Stores a changed node block, to the log its footer offset says.
fn store_node(t: &Tree, nid: u32, block: Vec<u8>, dir: bool) -> Result<()> {
    let offset = crate::tree::footer_of(&block, nid)?.offset();
    t.nodes.store_dirty(nid, block, node_log(t.sb.geometry(), offset, dir));
    Ok(())
}

/// The direct node on `path`, made (with the indirect nodes above it) when missing.
fn ensure_dnode(t: &mut Tree, inode: &mut InodeMut, path: &NodePath) -> Result<u32> {
    let dir = inode.is_dir();
    let mut nid = inode.inode.nids[path.slots[0]];
    if nid == 0 {
        nid = t.make_node(inode, path.offsets[1])?;
        inode.inode.nids[path.slots[0]] = nid;
    }
    for level in 1..path.depth {
        let parent = read_node(t, nid, inode.ino)?;
        let mut child = slot(&parent, path.slots[level])?;
        if child == 0 {
            child = t.make_node(inode, path.offsets[level + 1])?;
            let mut b = parent.to_vec();
            set_slot(&mut b, path.slots[level], child)?;
            store_node(t, nid, b, dir)?;
        }
        nid = child;
    }
    Ok(nid)
}

fn reserve(t: &mut Tree, n: u64) -> Result<()> {
    t.reserve_blocks(n)
}

/// Reserves every hole of blocks `first..end` (`NEW_ADDR`, one reserved block and one
/// `i_blocks` each), making the nodes on the way. Returns the blocks reserved.
pub fn reserve_range(t: &mut Tree, inode: &mut InodeMut, first: u64, end: u64) -> Result<u64> {
    let in_inode = inode.inode.addrs_per_inode() as u64;
    let (d, _) = fan(inode);
    let dir = inode.is_dir();
    let mut reserved = 0;
    let mut index = first;
    while index < end {
        let path = node_path(shape(inode), index)?;
        if path.depth == 0 {
            let stop = end.min(in_inode);
            let holes: Vec<usize> = (index as usize..stop as usize)
                .filter(|&s| inode.slot(s) == NULL_ADDR)
                .collect();
            reserve(t, holes.len() as u64)?;
            for s in &holes {
                inode.set_slot(*s, NEW_ADDR);
            }
            inode.inode.blocks += holes.len() as u64;
            reserved += holes.len() as u64;
            index = stop;
            continue;
        }
        let nid = ensure_dnode(t, inode, &path)?;
        let start = index - path.slots[path.depth] as u64;
        let stop = end.min(start + d);
        let node = read_node(t, nid, inode.ino)?;
        let mut holes = Vec::new();
        for s in (index - start) as usize..(stop - start) as usize {
            if slot(&node, s)? == NULL_ADDR {
                holes.push(s);
            }
        }
        if !holes.is_empty() {
            let mut b = node.to_vec();
            reserve(t, holes.len() as u64)?;
            for s in &holes {
                set_slot(&mut b, *s, NEW_ADDR)?;
            }
            store_node(t, nid, b, dir)?;
            inode.inode.blocks += holes.len() as u64;
            reserved += holes.len() as u64;
        }
        index = stop;
    }
    Ok(reserved)
}

/// Gives every reserved slot (`NEW_ADDR`) of blocks `first..end` a block of its own
/// from log `log`, written with zeros: what fallocate does for a pinned file, whose
/// blocks Linux allocates at once (`F2FS_GET_BLOCK_PRE_DIO`) so that they never move
/// again. The blocks of one node are consecutive in the log. Run after
/// [`reserve_range`] over the same blocks (the reservations pay for them). Returns the
/// blocks allocated.
pub fn allocate_range(t: &mut Tree, inode: &mut InodeMut, first: u64, end: u64, log: LogType) -> Result<u64> {
    let in_inode = inode.inode.addrs_per_inode() as u64;
    let (d, _) = fan(inode);
    let dir = inode.is_dir();
    let ino = inode.ino;
    let mut done = 0;
    let mut index = first;
    while index < end {
        let path = node_path(shape(inode), index)?;
        if path.depth == 0 {
            let stop = end.min(in_inode);
            let slots: Vec<usize> = (index as usize..stop as usize)
                .filter(|&s| inode.slot(s) == NEW_ADDR)
                .collect();
            for (s, a) in place_zeroed(t, ino, &slots, log)? {
                inode.set_slot(s, a);
            }
            done += slots.len() as u64;
            index = stop;
            continue;
        }
        let nid = ensure_dnode(t, inode, &path)?;
        let start = index - path.slots[path.depth] as u64;
        let stop = end.min(start + d);
        let node = read_node(t, nid, ino)?;
        let mut slots = Vec::new();
        for s in (index - start) as usize..(stop - start) as usize {
            if slot(&node, s)? == NEW_ADDR {
                slots.push(s);
            }
        }
        if !slots.is_empty() {
            let mut b = node.to_vec();
            for (s, a) in place_zeroed(t, nid, &slots, log)? {
                set_slot(&mut b, s, a)?;
            }
            store_node(t, nid, b, dir)?;
            done += slots.len() as u64;
        }
        index = stop;
    }
    Ok(done)
}

/// Takes a reserved block of `log` for each of `slots` of node `nid` (an inode's
/// own slots when `nid` is the inode) and writes zeros to them; returns each slot
/// with its address.
fn place_zeroed(t: &Tree, nid: u32, slots: &[usize], log: LogType) -> Result<Vec<(usize, u32)>> {
    if slots.is_empty() {
        return Ok(Vec::new());
    }
    let version = t.nodes.nat_entry(t.dev, nid)?.version;
    let mut placed = Vec::with_capacity(slots.len());
    {
        let mut segs = crate::lockrank::lock_segments(t.segs);
        for &s in slots {
            let sum = uf2fs_format::summary::Summary {
                nid,
                version,
                ofs_in_node: s as u16,
            };
            placed.push((s, segs.alloc_reserved_block(t.dev, log, sum)? as u32));
        }
    }
    let bsz = t.sb.geometry().block_size();
    let zeros = vec![0u8; bsz];
    // Consecutive addresses go out as one write.
    let mut i = 0;
    while i < placed.len() {
        let mut n = 1;
        while i + n < placed.len() && placed[i + n].1 == placed[i].1 + n as u32 {
            n += 1;
        }
        let run: Vec<&[u8]> = (0..n).map(|_| zeros.as_slice()).collect();
        t.dev
            .write_blocks_from(u64::from(placed[i].1), &run, crate::device::WriteKind::UserData)?;
        i += n;
    }
    Ok(placed)
}

/// Gives up a data address: a reservation back, or a block invalidated.
fn drop_addr(t: &Tree, addr: u32) -> Result<()> {
    let mut segs = crate::lockrank::lock_segments(t.segs);
    match addr {
        NULL_ADDR => Ok(()),
        NEW_ADDR => {
            segs.release_new_blocks(1);
            Ok(())
        }
        a => segs.invalidate(a as u64),
    }
}

/// Clears the inode's own address slots `from..to`; returns the addresses dropped.
fn clear_inode_slots(t: &Tree, inode: &mut InodeMut, from: u64, to: u64) -> Result<u64> {
    let mut n = 0;
    for s in from as usize..to as usize {
        let a = inode.slot(s);
        if a != NULL_ADDR {
            drop_addr(t, a)?;
            inode.set_slot(s, NULL_ADDR);
            n += 1;
        }
    }
    Ok(n)
}

/// Clears slots `from..to` of direct node `nid`; returns the addresses dropped.
fn clear_dnode(t: &Tree, ino: Ino, dir: bool, nid: u32, from: usize, to: usize) -> Result<u64> {
    let block = read_node(t, nid, ino)?;
    let mut b: Option<Vec<u8>> = None;
    let mut n = 0;
    for s in from..to {
        let a = slot(&block, s)?;
        if a != NULL_ADDR {
            drop_addr(t, a)?;
            set_slot(b.get_or_insert_with(|| block.to_vec()), s, NULL_ADDR)?;
            n += 1;
        }
    }
    if let Some(b) = b {
        store_node(t, nid, b, dir)?;
    }
    Ok(n)
}

/// Drops the addresses of blocks `first..end` (punching a hole); the nodes stay, as
/// the kernel keeps them. Returns the addresses dropped.
pub fn clear_range(t: &Tree, inode: &mut InodeMut, first: u64, end: u64) -> Result<u64> {
    let in_inode = inode.inode.addrs_per_inode() as u64;
    let end = end.min(max_blocks(inode));
    let (d, _) = fan(inode);
    let dir = inode.is_dir();
    let mut dropped = 0;
    let mut index = first;
    while index < end {
        let (_, w) = walk(t, inode, index)?;
        index = match w {
            Walk::Inode => {
                let stop = end.min(in_inode);
                dropped += clear_inode_slots(t, inode, index, stop)?;
                stop
            }
            Walk::Missing { end: e, .. } => end.min(e),
            Walk::Dnode { nid, start, .. } => {
                let stop = end.min(start + d);
                let (from, to) = ((index - start) as usize, (stop - start) as usize);
                dropped += clear_dnode(t, inode.ino, dir, nid, from, to)?;
                stop
            }
        };
    }
    Ok(dropped)
}

/// Kind of node a subtree starts with.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Direct,
    Indirect,
    Double,
}

/// Frees node `nid` (of kind `kind`) and everything below it; returns the blocks
/// (data addresses and nodes) it held. Iterative; the stack holds at most one
/// indirect node's children per level.
fn free_subtree(t: &Tree, ino: Ino, nid: u32, kind: Kind) -> Result<u64> {
    let mut freed = 0;
    let mut todo = vec![(nid, kind)];
    while let Some((nid, kind)) = todo.pop() {
        let b = read_node(t, nid, ino)?;
        for i in 0..t.sb.geometry().addrs_per_block() {
            let v = slot(&b, i)?;
            if v == NULL_ADDR {
                continue;
            }
            match kind {
                Kind::Direct => {
                    drop_addr(t, v)?;
                    freed += 1;
                }
                Kind::Indirect => todo.push((v, Kind::Direct)),
                Kind::Double => todo.push((v, Kind::Indirect)),
            }
        }
        if kind == Kind::Direct {
            t.nodes.note_freed_dnode(t.dev, ino, nid, &b)?;
        }
        t.nodes.free_node(t.dev, t.segs, nid)?;
        freed += 1;
    }
    Ok(freed)
}

/// Trims indirect node `nid`, which holds blocks from `start`, to end before block
/// `from`: direct nodes wholly past it are freed, the one across it cleared from it.
fn trim_indirect(t: &Tree, inode: &InodeMut, nid: u32, start: u64, from: u64) -> Result<u64> {
    let (ino, dir) = (inode.ino, inode.is_dir());
    let (d, n) = fan(inode);
    let block = read_node(t, nid, ino)?;
    let mut b: Option<Vec<u8>> = None;
    let mut freed = 0;
    for j in 0..n as usize {
        let child = slot(&block, j)?;
        let cs = start + j as u64 * d;
        if child == 0 || cs + d <= from {
            continue;
        }
        if cs >= from {
            freed += free_subtree(t, ino, child, Kind::Direct)?;
            set_slot(b.get_or_insert_with(|| block.to_vec()), j, 0)?;
        } else {
            freed += clear_dnode(t, ino, dir, child, (from - cs) as usize, d as usize)?;
        }
    }
    if let Some(b) = b {
        store_node(t, nid, b, dir)?;
    }
    Ok(freed)
}

/// [`trim_indirect`] one level up, for the double-indirect node.
fn trim_double(t: &Tree, inode: &InodeMut, nid: u32, start: u64, from: u64) -> Result<u64> {
    let ino = inode.ino;
    let (d, n) = fan(inode);
    let block = read_node(t, nid, ino)?;
    let mut b: Option<Vec<u8>> = None;
    let mut freed = 0;
    for j in 0..n as usize {
        let child = slot(&block, j)?;
        let cs = start + j as u64 * d * n;
        if child == 0 || cs + d * n <= from {
            continue;
        }
        if cs >= from {
            freed += free_subtree(t, ino, child, Kind::Indirect)?;
            set_slot(b.get_or_insert_with(|| block.to_vec()), j, 0)?;
        } else {
            freed += trim_indirect(t, inode, child, cs, from)?;
        }
    }
    if let Some(b) = b {
        store_node(t, nid, b, inode.is_dir())?;
    }
    Ok(freed)
}

/// Frees every block from `from` on, as the kernel's truncate does: addresses in the
/// inode and in the direct node across `from` are dropped, nodes wholly past `from`
/// are freed with everything below them (the nodes across it stay). `i_blocks`
/// shrinks by what was freed. Returns that count.
pub fn truncate_blocks(t: &Tree, inode: &mut InodeMut, from: u64) -> Result<u64> {
    let in_inode = inode.inode.addrs_per_inode() as u64;
    let (d, n) = fan(inode);
    let mut freed = 0;
    if from < in_inode {
        freed += clear_inode_slots(t, inode, from, in_inode)?;
    }
    let tops = [
        (in_inode, d, Kind::Direct),
        (in_inode + d, d, Kind::Direct),
        (in_inode + 2 * d, d * n, Kind::Indirect),
        (in_inode + 2 * d + d * n, d * n, Kind::Indirect),
        (in_inode + 2 * d + 2 * d * n, d * n * n, Kind::Double),
    ];
    for (k, &(start, len, kind)) in tops.iter().enumerate() {
        let nid = inode.inode.nids[k];
        if nid == 0 || start + len <= from {
            continue;
        }
        if start >= from {
            freed += free_subtree(t, inode.ino, nid, kind)?;
            inode.inode.nids[k] = 0;
            continue;
        }
        freed += match kind {
            Kind::Direct => clear_dnode(t, inode.ino, inode.is_dir(), nid, (from - start) as usize, d as usize)?,
            Kind::Indirect => trim_indirect(t, inode, nid, start, from)?,
            Kind::Double => trim_double(t, inode, nid, start, from)?,
        };
    }
    inode.inode.blocks = inode.inode.blocks.saturating_sub(freed);
    Ok(freed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: u64 = uf2fs_format::consts::ADDRS_PER_BLOCK as u64;
    const N: u64 = uf2fs_format::consts::NIDS_PER_BLOCK as u64;

    #[test]
    fn spans_cover_the_node_at_each_level() {
        let a = 873;
        let sh = TreeShape::plain(uf2fs_format::Geometry::DEFAULT, a);
        // A block in the second indirect node's 5th direct node.
        let index = a + 2 * D + D * N + 4 * D + 17;
        let p = node_path(sh, index).unwrap();
        assert_eq!(p.depth, 2);
        assert_eq!(p.span(sh, index, 2), (a + 2 * D + D * N + 4 * D, D));
        assert_eq!(p.span(sh, index, 1), (a + 2 * D + D * N, D * N));
        // Double indirect: indirect 3, direct 7, slot 9.
        let base = a + 2 * D + 2 * D * N;
        let index = base + 3 * D * N + 7 * D + 9;
        let p = node_path(sh, index).unwrap();
        assert_eq!(p.depth, 3);
        assert_eq!(p.span(sh, index, 1), (base, D * N * N));
        assert_eq!(p.span(sh, index, 2), (base + 3 * D * N, D * N));
        assert_eq!(p.span(sh, index, 3), (base + 3 * D * N + 7 * D, D));
        let p = node_path(sh, a + 5).unwrap();
        assert_eq!(p.span(sh, a + 5, 1), (a, D));
    }
}
