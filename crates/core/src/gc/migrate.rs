//! Emptying a victim section: every valid block moves out of place, as F2FS's
//! `do_garbage_collect` moves them.
//!
//! - Node blocks: the summary names the node; its NAT entry must point at the block.
//!   The node is marked dirty (if it is not already) and written at once to its node
//!   log; the old block is invalidated by that write.
//! - Data blocks: the summary names the direct node (or inode) and the slot; its NAT
//!   version must match and the slot must hold the block. The block goes to the cold
//!   data log (F2FS's destination for moved data), the old block is invalidated and
//!   the slot repointed; the changed node is stored dirty and written out at the next
//!   node write-out (a checkpoint's at the latest). An inode whose extent hint covers
//!   a moved block loses the hint. What the new block holds:
//!   - the block's dirty page, when the page cache has one (the file was written
//!     since the block was): the page's current contents, and the page leaves the
//!     cache once its node points at the new block, so writeback does not write it
//!     again. This is how F2FS moves a block through the page cache
//!     (`move_data_page`): the user's new data is written once, by GC, where copying
//!     the old block would write it twice (the copy, then the page). Like a page
//!     written back, the new contents are durable only at the next checkpoint or an
//!     fsync of the file (which writes the node);
//!   - else the block as on the device, by device-side copies
//!     ([`crate::device::BlockDevice::copy_blocks`]).
//!
//!   Compressed files' blocks are always copied: their pages are not one per block.
//!
//! A block the SIT calls valid that no owner points at is corruption: the move stops
//! with an error naming the block. Blocks are moved with `cp_lock` held exclusively,
//! so no operation runs meanwhile.

pub use super::cursor::{Migration, Moved};
use crate::device::WriteKind;
use crate::inode::InodeMut;
use crate::node::NodeBlock;
use crate::segment::LogType;
use crate::tree::{node_log, Tree};
use crate::{Error, Result};
use std::collections::HashMap;
use std::sync::Arc;
use uf2fs_format::node::NodeFooter;
use uf2fs_format::summary::Summary;
use uf2fs_format::Geometry;

/// A node changed by data moves, waiting to be stored dirty.
enum Owner {
    Inode(Box<InodeMut>),
    /// A direct node as read, its footer offset, and its slots' new addresses.
    Node {
        block: NodeBlock,
        log: LogType,
        offset: u32,
        slots: Vec<(usize, u32)>,
    },
}

/// Moves every valid block of section `secno` (see the module notes); `cp_ver` is the
/// footer version of node blocks written now (the last checkpoint's node version). All of
/// [`Migration`]'s steps, one after another, each a whole segment. Blocks of pinned
/// files stay; a `foreground` collection counts a GC failure for each such file.
pub fn migrate_section(t: &Tree, secno: u32, cp_ver: u64, foreground: bool) -> Result<Moved> {
    let mut m = Migration::new(t, secno);
    m.foreground = foreground;
    while !m.step(t, cp_ver)? {}
    Ok(m.finish(t))
}

impl Migration {
    /// A migration of section `secno`, nothing moved yet. Between steps the section is
    /// half moved: its remaining valid blocks are where the SIT says, and its
    /// summaries still name their owners, so a step re-reads both and never trusts
    /// what an earlier one saw (a paced collector lets front I/O in between steps).
    pub fn new(t: &Tree, secno: u32) -> Migration {
        let (spsec, opens) = {
            let s = crate::lockrank::lock_segments(t.segs);
            (s.segs_per_sec(), s.section_opens(secno))
        };
        let first = secno * spsec;
        Migration {
            secno,
            first,
            next: first,
            end: first + spsec,
            off: 0,
            moved: Moved::default(),
            sums: None,
            opens,
            foreground: false,
        }
    }

    /// Moves the valid blocks of the next segment that has any; true when no segment
    /// is left (then nothing was moved by this call).
    pub fn step(&mut self, t: &Tree, cp_ver: u64) -> Result<bool> {
        Ok(self.step_at_most(t, cp_ver, u32::MAX)?.is_none())
    }

    /// Moves at most `budget` (at least 1) valid blocks of the segment being emptied,
    /// going on to the next segment that has any; `None` when no segment is left
    /// (nothing moved), else the blocks moved.
    pub fn step_at_most(&mut self, t: &Tree, cp_ver: u64, budget: u32) -> Result<Option<u32>> {
        let budget = budget.max(1) as usize;
        while self.next < self.end {
            let segno = self.next;
            let (entry, sums, base) = {
                let s = crate::lockrank::lock_segments(t.segs);
                // Freed and written again since it was picked (a paced victim lets
                // front I/O in between steps, and its last blocks may be overwritten
                // and the section freed by a checkpoint): nothing left to move.
                if s.section_opens(self.secno) != self.opens {
                    self.next = self.end;
                    break;
                }
                let Some(e) = s.segment(segno) else {
                    self.next = self.end;
                    break;
                };
                if e.valid_blocks == 0 {
                    self.next += 1;
                    self.off = 0;
                    continue;
                }
                let sums = match &self.sums {
                    Some((n, v, b)) if *n == segno && *v == cp_ver => b.clone(),
                    _ => {
                        let b = Arc::new(s.read_summary_block(t.dev, segno)?);
                        self.sums = Some((segno, cp_ver, b.clone()));
                        b
                    }
                };
                (e.clone(), sums, s.block_addr(segno, 0))
            };
            let mut valid: Vec<u32> = (self.off..sums.entries.len() as u32)
                .filter(|&o| entry.is_valid(o))
                .collect();
            if valid.len() > budget {
                valid.truncate(budget);
                self.off = valid[budget - 1] + 1;
            } else {
                self.next += 1;
                self.off = 0;
            }
            if valid.is_empty() {
                continue;
            }
            if entry.seg_type >= LogType::HotNode as u8 {
                self.moved.node += move_nodes(t, base, &valid, &sums.entries, cp_ver)?;
            } else {
                let m = move_data(t, base, &valid, &sums.entries, self.foreground)?;
                self.moved.data += m.moved;
                self.moved.pinned += m.pinned;
                self.moved.data_owners += m.owners;
                self.moved.data_from_pages += m.from_pages;
            }
            return Ok(Some(valid.len() as u32));
        }
        Ok(None)
    }

    /// What the migration moved, and whether it left the section empty.
    pub fn finish(mut self, t: &Tree) -> Moved {
        let s = crate::lockrank::lock_segments(t.segs);
        self.moved.emptied = (self.first..self.end).all(|segno| s.segment(segno).is_none_or(|e| e.valid_blocks == 0));
        self.moved
    }
}

/// What a moved data block's new block takes: the old block (a device-side copy) or
/// the block's dirty page.
enum Source {
    Copy(u64),
    Page(Arc<Vec<u8>>),
}

/// Writes `run`, the sources of the consecutive blocks from `start`: copies and pages
/// in runs of their own kind.
fn write_run(t: &Tree, start: u64, run: &[Source]) -> Result<()> {
    let mut i = 0;
    while i < run.len() {
        let at = start + i as u64;
        match &run[i] {
            Source::Copy(_) => {
                let addrs: Vec<u64> = run[i..]
                    .iter()
                    .map_while(|s| match s {
                        Source::Copy(a) => Some(*a),
                        Source::Page(_) => None,
                    })
                    .collect();
                t.dev.copy_blocks(&addrs, at, WriteKind::GcData)?;
                i += addrs.len();
            }
            Source::Page(_) => {
                let pages: Vec<&[u8]> = run[i..]
                    .iter()
                    .map_while(|s| match s {
                        Source::Page(p) => Some(p.as_slice()),
                        Source::Copy(_) => None,
                    })
                    .collect();
                t.dev.write_blocks_from(at, &pages, WriteKind::GcData)?;
                i += pages.len();
            }
        }
    }
    Ok(())
}

/// What a data move needs of an owning inode.
#[derive(Clone, Copy)]
struct InodeFacts {
    pinned: bool,
    /// Whether its blocks' dirty pages are one per block (not a compressed file), so
    /// that a move can take the page.
    pages_per_block: bool,
    /// Addresses the inode holds itself, and each direct node.
    per_inode: u64,
    per_block: u64,
}

fn corrupt(addr: u64, detail: String) -> Error {
    Error::corrupt("SIT/SSA", Some(addr), format!("{detail}; run fsck.f2fs"))
}

/// The log a node goes to, given its footer, on a volume of geometry `geo`.
fn log_of_footer(geo: Geometry, f: &NodeFooter) -> LogType {
    node_log(geo, f.offset(), !f.is_cold())
}

fn move_nodes(t: &Tree, base: u64, valid: &[u32], sums: &[Summary], cp_ver: u64) -> Result<u64> {
    let mut nodes = Vec::with_capacity(valid.len());
    for &off in valid {
        let addr = base + off as u64;
        let nid = sums[off as usize].nid;
        let e = t.nodes.nat_entry(t.dev, nid)?;
        if e.block_addr as u64 != addr {
            return Err(corrupt(
                addr,
                format!("valid node block whose summary names node {nid}, which lives elsewhere"),
            ));
        }
        nodes.push((nid, e));
    }
    let moved = t.nodes.move_blocks(t.dev, t.sb, t.segs, cp_ver, &nodes, &|f| {
        log_of_footer(t.sb.geometry(), f)
    })?;
    Ok(moved as u64)
}

/// The owners of a segment's data blocks by node id (a fast hash: node ids are not
/// chosen by anyone hostile, and the map lives for one segment).
type Owners = HashMap<u32, Owner, foldhash::fast::RandomState>;

impl Owner {
    /// Loads the owner of a data block: inode `ino` itself, or its direct node `nid`.
    fn load(t: &Tree, nid: u32, ino: u32) -> Result<Owner> {
        if nid == ino {
            return Ok(Owner::Inode(Box::new(t.load_inode(ino)?)));
        }
        let block = t.nodes.read(t.dev, nid, ino)?;
        let f = crate::tree::footer_of(&block, nid)?;
        Ok(Owner::Node {
            log: log_of_footer(t.sb.geometry(), &f),
            offset: f.offset(),
            block,
            slots: Vec::new(),
        })
    }

    /// The file block whose address data slot `slot` holds, for an inode of `facts`
    /// (`None` for a node that is not a direct node's offset).
    fn file_index(&self, t: &Tree, slot: usize, facts: &InodeFacts) -> Option<u64> {
        match self {
            Owner::Inode(_) => Some(slot as u64),
            Owner::Node { offset, .. } => crate::recovery::first_index_of(
                *offset,
                facts.per_inode,
                facts.per_block,
                t.sb.geometry().nids_per_block() as u64,
            )
            .map(|first| first + slot as u64),
        }
    }

    /// The address data slot `slot` holds (`None` past the node's slots); a direct
    /// node's slots read as loaded, before this segment's moves.
    fn slot(&self, slot: usize) -> Option<u32> {
        match self {
            Owner::Inode(i) => (slot < i.inode.addrs_per_inode()).then(|| i.slot(slot)),
            Owner::Node { block, .. } => uf2fs_format::node::node_slot(block, slot).ok(),
        }
    }

    /// Points data slot `slot` at `addr`.
    fn set_slot(&mut self, slot: usize, addr: u32) {
        match self {
            Owner::Inode(i) => i.set_slot(slot, addr),
            Owner::Node { slots, .. } => slots.push((slot, addr)),
        }
    }
}

/// What [`move_data`] did to a segment's valid data blocks.
struct DataMoves {
    moved: u64,
    /// Blocks of pinned files left in place.
    pinned: u64,
    /// Owner nodes the moves dirtied.
    owners: u64,
    /// Blocks whose dirty page was written (and cleaned) instead of the old block.
    from_pages: u64,
}

/// Moves the valid data blocks `valid` of the segment at `base` (see the module
/// notes).
fn move_data(t: &Tree, base: u64, valid: &[u32], sums: &[Summary], foreground: bool) -> Result<DataMoves> {
    let mut owners = Owners::with_capacity_and_hasher(valid.len(), Default::default());
    // What each owning inode is (pinned ones included).
    let mut facts_of: HashMap<u32, InodeFacts, foldhash::fast::RandomState> = HashMap::default();
    let mut pinned_left = 0u64;
    // (inode, old address) of every moved block, for the extent hints.
    let mut hint_addrs: Vec<(u32, u64)> = Vec::with_capacity(valid.len());
    // The run of destination blocks being filled, and where its blocks come from.
    let mut run_start = 0u64;
    let mut run: Vec<Source> = Vec::with_capacity(valid.len());
    // (inode, file block, contents) of each dirty page written in its block's move:
    // out of the cache once the node points at its new block.
    let mut cleaned: Vec<(u32, u64, Arc<Vec<u8>>)> = Vec::new();
    let mut last_nat = None;
    for &off in valid {
        let addr = base + off as u64;
        let sum = sums[off as usize];
        // Consecutive blocks mostly share their node: one NAT lookup for a run of them.
        let e = match last_nat {
            Some((nid, e)) if nid == sum.nid => e,
            _ => {
                let e = t.nodes.nat_entry(t.dev, sum.nid)?;
                last_nat = Some((sum.nid, e));
                e
            }
        };
        if e.block_addr == uf2fs_format::consts::NULL_ADDR || e.version != sum.version {
            return Err(corrupt(
                addr,
                format!(
                    "valid data block owned by node {} (version {}), which is gone",
                    sum.nid, sum.version
                ),
            ));
        }
        let facts = match facts_of.get(&e.ino) {
            Some(&f) => f,
            None => {
                let i = t.load_inode(e.ino)?.inode;
                let f = InodeFacts {
                    pinned: i.is_pinned(),
                    pages_per_block: !i.is_compressed(),
                    per_inode: i.addrs_per_inode() as u64,
                    per_block: i.addrs_per_block() as u64,
                };
                facts_of.insert(e.ino, f);
                f
            }
        };
        if facts.pinned {
            // Linux's GC gives up on a pinned file's blocks (`-EAGAIN`): they stay.
            pinned_left += 1;
            continue;
        }
        let owner = match owners.entry(sum.nid) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => v.insert(Owner::load(t, sum.nid, e.ino)?),
        };
        let slot = sum.ofs_in_node as usize;
        if owner.slot(slot) != Some(addr as u32) {
            return Err(corrupt(
                addr,
                format!("valid data block not held by slot {slot} of node {}", sum.nid),
            ));
        }
        let new = {
            let mut s = crate::lockrank::lock_segments(t.segs);
            let new = s.alloc_block(t.dev, LogType::ColdData, sum)?;
            s.invalidate(addr)?;
            new
        };
        if !run.is_empty() && run_start + run.len() as u64 != new {
            write_run(t, run_start, &run)?;
            run.clear();
        }
        if run.is_empty() {
            run_start = new;
        }
        // The block's dirty page, if the file has one for it: a dirty page keeps its
        // block's address in the slot until written back, so this is its block.
        let page = if facts.pages_per_block {
            owner
                .file_index(t, slot, &facts)
                .and_then(|index| Some((index, t.pages.get(e.ino, index)?)))
        } else {
            None
        };
        match page {
            Some((index, data)) => {
                run.push(Source::Page(data.clone()));
                cleaned.push((e.ino, index, data));
            }
            None => run.push(Source::Copy(addr)),
        }
        owner.set_slot(slot, new as u32);
        hint_addrs.push((e.ino, addr));
    }
    // The moved blocks are on the device before any node points at them.
    if !run.is_empty() {
        write_run(t, run_start, &run)?;
    }
    let moved = hint_addrs.len() as u64;
    drop_stale_hints(t, &mut owners, &hint_addrs)?;
    if foreground {
        for (&ino, _) in facts_of.iter().filter(|(_, f)| f.pinned) {
            count_pin_failure(t, ino)?;
        }
    }
    // The changed nodes are written with the other dirty nodes (at the checkpoint that
    // frees the section, as the kernel's moved data pages dirty their nodes).
    let dirtied = owners.len() as u64;
    for (nid, owner) in owners {
        match owner {
            Owner::Inode(i) => t.store_inode(*i)?,
            Owner::Node { block, log, slots, .. } => t.nodes.update_dirty(t.dev, nid, block, log, |b| {
                for (slot, addr) in slots {
                    // Slots read back through `Owner::slot`: in range.
                    let _ = uf2fs_format::node::set_node_slot(b, slot, addr);
                }
            }),
        }
    }
    // The nodes point at the pages' new blocks: the pages are clean. Until here a
    // reader found them in the cache, so it never read the old contents.
    let from_pages = cleaned.len() as u64;
    for (ino, index, data) in cleaned {
        t.pages.remove_written(ino, index, &data);
    }
    Ok(DataMoves {
        moved,
        pinned: pinned_left,
        owners: dirtied,
        from_pages,
    })
}

/// Linux's `gc_pin_file_threshold` default (`DEF_GC_FAILED_PINNED_FILES`): a pinned
/// file whose blocks foreground GC failed to move more often than this is unpinned.
pub const GC_PIN_FILE_THRESHOLD: u16 = 2048;

/// One more GC failure for pinned inode `ino` (`f2fs_pin_file_control`): its
/// `i_gc_failures` grows, and past [`GC_PIN_FILE_THRESHOLD`] the pin is dropped, so
/// that the next collection moves its blocks.
fn count_pin_failure(t: &Tree, ino: u32) -> Result<()> {
    let mut i = t.load_inode(ino)?;
    let n = i.inode.gc_failures().saturating_add(1);
    i.inode.set_gc_failures(n);
    if n > GC_PIN_FILE_THRESHOLD {
        i.inode.inline &= !uf2fs_format::node::F2FS_PIN_FILE;
    }
    t.store_inode(i)
}

/// Clears the extent hint of every inode whose hint covers a moved block address.
fn drop_stale_hints(t: &Tree, owners: &mut Owners, moved: &[(u32, u64)]) -> Result<()> {
    let mut inos: Vec<u32> = moved.iter().map(|(ino, _)| *ino).collect();
    inos.sort_unstable();
    inos.dedup();
    for ino in inos {
        let covers = |ext: (u32, u32, u32)| {
            let (_, blk, len) = ext;
            len != 0
                && moved
                    .iter()
                    .any(|&(i, a)| i == ino && a >= blk as u64 && a < blk as u64 + len as u64)
        };
        match owners.get_mut(&ino) {
            Some(Owner::Inode(i)) => {
                if covers(i.inode.ext) {
                    i.inode.ext = (0, 0, 0);
                }
            }
            _ => {
                let mut i = t.load_inode(ino)?;
                if covers(i.inode.ext) {
                    i.inode.ext = (0, 0, 0);
                    t.store_inode(i)?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::gc::migrate::Migration;
    use crate::mkfs::{mem_fs, MkfsOptions};
    use crate::segment::SectionInfo;
    use crate::Fs;

    /// A section of four segments migrated one step at a time: each step moves one
    /// segment's valid blocks, the section ends empty, and the file reads back the
    /// same, before and after the next checkpoint.
    #[test]
    fn a_section_moves_one_segment_per_step() {
        let opts = MkfsOptions {
            segs_per_sec: 4,
            ..MkfsOptions::default()
        };
        let bytes = 256u64 << 20;
        let fs = mem_fs(&opts, bytes);
        let ino = fs.create(fs.root(), b"f", 0o644, 0, 0).unwrap().ino;
        // Six segments of data, then every third block rewritten: partly valid sections.
        let blocks = 6 * 512u64;
        for i in 0..blocks {
            fs.write(ino, i * 4096, &(i as u32).to_le_bytes().repeat(1024)).unwrap();
        }
        fs.write_checkpoint().unwrap();
        for i in (0..blocks).step_by(3) {
            fs.write(ino, i * 4096, &(i as u32 + 7).to_le_bytes().repeat(1024))
                .unwrap();
        }
        fs.write_checkpoint().unwrap();
        let check = |fs: &Fs| {
            let mut buf = vec![0u8; 4096];
            for i in 0..blocks {
                fs.read(ino, i * 4096, &mut buf).unwrap();
                let want = if i % 3 == 0 { i as u32 + 7 } else { i as u32 };
                assert_eq!(buf[..4], want.to_le_bytes(), "block {i}");
            }
        };
        let rws = fs.rw().unwrap();
        {
            let writer = rws.cp_exclusive();
            let t = fs.tree(rws);
            // The data section with the most partly valid segments.
            let mut best: Option<(u32, SectionInfo)> = None;
            {
                let segs = rws.segs();
                segs.visit_victim_candidates(|s| {
                    let used = (s.secno * 4..s.secno * 4 + 4)
                        .filter(|&n| segs.segment(n).is_some_and(|e| e.valid_blocks > 0))
                        .count() as u32;
                    if !s.is_node && best.is_none_or(|(u, _)| used > u) {
                        best = Some((used, s));
                    }
                });
            }
            let (used, victim) = best.unwrap();
            assert!(used >= 2, "a section with several segments to move");
            let cp_ver = writer.last().node_version();
            let mut m = Migration::new(&t, victim.secno);
            let mut steps = 0;
            while !m.step(&t, cp_ver).unwrap() {
                steps += 1;
            }
            assert_eq!(steps, used, "one step per segment holding valid blocks");
            let moved = m.finish(&t);
            assert!(moved.emptied);
            assert_eq!(moved.data, victim.valid_blocks as u64);
        }
        check(&fs);
        fs.write_checkpoint().unwrap();
        check(&fs);
    }

    /// A victim whose blocks are all overwritten while its emptying waits between
    /// steps, and whose section a checkpoint frees and a log then enters again, has
    /// nothing left to move: the next step ends the migration (it used to fail, reading
    /// the summary of a segment an active log owns).
    #[test]
    fn a_victim_freed_and_reused_between_steps_ends_without_moving() {
        let bytes = 256u64 << 20;
        let fs = mem_fs(&MkfsOptions::default(), bytes);
        let ino = fs.create(fs.root(), b"f", 0o644, 0, 0).unwrap().ino;
        let block = |v: u32| v.to_le_bytes().repeat(1024);
        let blocks = 3 * 512u64;
        for i in 0..blocks {
            fs.write(ino, i * 4096, &block(i as u32)).unwrap();
        }
        fs.write_checkpoint().unwrap();
        for i in (0..blocks).step_by(2) {
            fs.write(ino, i * 4096, &block(i as u32 + 1_000_000)).unwrap();
        }
        fs.write_checkpoint().unwrap();
        let rws = fs.rw().unwrap();
        // The data section with the fewest valid blocks becomes the victim.
        let victim = {
            let mut best: Option<SectionInfo> = None;
            rws.segs().visit_victim_candidates(|s| {
                if !s.is_node && best.is_none_or(|b| s.valid_blocks < b.valid_blocks) {
                    best = Some(s);
                }
            });
            best.unwrap()
        };
        let mut m = {
            let _writer = rws.cp_exclusive();
            Migration::new(&fs.tree(rws), victim.secno)
        };
        // Front I/O between steps: every block of the file rewritten (the victim's
        // too), a checkpoint that frees the victim, then writes until a log enters it.
        for i in 0..blocks {
            fs.write(ino, i * 4096, &block(i as u32 + 2_000_000)).unwrap();
        }
        fs.write_checkpoint().unwrap();
        assert_eq!(rws.segs().segment(victim.secno).unwrap().valid_blocks, 0);
        let opens = rws.segs().section_opens(victim.secno);
        let other = fs.create(fs.root(), b"g", 0o644, 0, 0).unwrap().ino;
        let mut n = 0u64;
        while rws.segs().section_opens(victim.secno) == opens {
            assert!(n < 200_000, "no log entered the freed section");
            fs.write(other, (n % 2048) * 4096, &block(n as u32)).unwrap();
            fs.fsync(other, false).unwrap();
            n += 1;
        }
        {
            let writer = rws.cp_exclusive();
            let t = fs.tree(rws);
            let cp_ver = writer.last().node_version();
            assert!(m.step(&t, cp_ver).unwrap(), "nothing of the victim is left");
            let moved = m.finish(&t);
            assert_eq!((moved.data, moved.node), (0, 0));
        }
        let mut buf = vec![0u8; 4096];
        for i in 0..blocks {
            fs.read(ino, i * 4096, &mut buf).unwrap();
            assert_eq!(buf[..4], (i as u32 + 2_000_000).to_le_bytes(), "block {i}");
        }
        fs.write_checkpoint().unwrap();
    }
}
