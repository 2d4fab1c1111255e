//! The table of open handles and the orphan list (checkpoint.c's orphan inode list):
//! state only, under its own mutex; the operations that use it are in [`super`].

use crate::{Error, Ino, Result};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};
use uf2fs_format::consts::{NR_CURSEG_DATA_TYPE, NR_CURSEG_NODE_TYPE};
use uf2fs_format::superblock::Superblock;

/// Checkpoint packs per volume (both live in the checkpoint area).
const CP_PACKS: u64 = 2;

/// Most orphans a checkpoint can record, as the kernel's `max_orphans`: the blocks of
/// a pack segment left after the two checkpoint blocks, the six logs' summary blocks
/// and the payload, 1020 inode numbers each.
pub fn max_orphans(sb: &Superblock) -> usize {
    orphan_capacity(sb.blocks_per_seg(), sb.cp_payload, sb.geometry().orphans_per_block())
}

/// [`max_orphans`] for segments of `blocks_per_seg` blocks, `cp_payload` payload
/// blocks and `per_block` orphans to a block (1020, 4092 with 16 KiB blocks).
fn orphan_capacity(blocks_per_seg: u32, cp_payload: u32, per_block: usize) -> usize {
    let logs = (NR_CURSEG_DATA_TYPE + NR_CURSEG_NODE_TYPE) as u64;
    let blocks = (blocks_per_seg as u64).saturating_sub(CP_PACKS + logs + cp_payload as u64);
    blocks as usize * per_block
}

/// Open handles per inode and the orphan list of a read-write file system.
pub(crate) struct OpenInodes {
    state: Mutex<State>,
}

/// What [`OpenInodes`] guards.
#[derive(Default)]
struct State {
    /// Open handles per inode (inodes without handles are absent).
    handles: HashMap<Ino, u64>,
    /// Inodes without links kept for their handles.
    orphans: BTreeSet<Ino>,
    /// Orphan slots taken by running operations (the kernel's acquire step).
    reserved: usize,
    /// Most orphans the list may hold.
    max_orphans: usize,
}

/// An orphan slot taken before an operation changes anything; given back when dropped
/// unless [`OrphanSlot::fill`]ed.
pub(crate) struct OrphanSlot<'a> {
    table: &'a OpenInodes,
}

impl OrphanSlot<'_> {
    /// Puts `ino` on the orphan list in this slot.
    pub(crate) fn fill(self, ino: Ino) {
        let mut s = self.table.lock();
        s.reserved -= 1;
        s.orphans.insert(ino);
        drop(s);
        std::mem::forget(self);
    }
}

impl Drop for OrphanSlot<'_> {
    fn drop(&mut self) {
        self.table.lock().reserved -= 1;
    }
}

impl OpenInodes {
    /// An empty table whose orphan list holds at most `max_orphans` inodes.
    pub(crate) fn new(max_orphans: usize) -> OpenInodes {
        OpenInodes {
            state: Mutex::new(State {
                max_orphans,
                ..State::default()
            }),
        }
    }

    /// Lowers the bound (tests reach a full list without half a million files).
    #[cfg(test)]
    pub(crate) fn set_max_orphans(&self, max_orphans: usize) {
        self.lock().max_orphans = max_orphans;
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `ino` has open handles.
    pub(crate) fn is_open(&self, ino: Ino) -> bool {
        self.lock().handles.contains_key(&ino)
    }

    /// One handle more on `ino`.
    pub(crate) fn opened(&self, ino: Ino) {
        *self.lock().handles.entry(ino).or_insert(0) += 1;
    }

    /// One handle fewer on `ino`; true when it was the last one of an orphan (which the
    /// caller then frees). [`Error::Invalid`] when `ino` has no handles.
    pub(crate) fn closed(&self, ino: Ino) -> Result<bool> {
        let mut s = self.lock();
        let n = s
            .handles
            .get_mut(&ino)
            .ok_or_else(|| Error::Invalid(format!("release of inode {ino}, which is not open")))?;
        *n -= 1;
        if *n > 0 {
            return Ok(false);
        }
        s.handles.remove(&ino);
        Ok(s.orphans.contains(&ino))
    }

    /// Whether the one handle left on `ino` is the last of an orphan (whose release
    /// frees it). [`Error::Invalid`] when `ino` has no handles.
    pub(crate) fn is_last_of_orphan(&self, ino: Ino) -> Result<bool> {
        let s = self.lock();
        let n = s
            .handles
            .get(&ino)
            .ok_or_else(|| Error::Invalid(format!("release of inode {ino}, which is not open")))?;
        Ok(*n == 1 && s.orphans.contains(&ino))
    }

    /// Takes an orphan slot ([`Error::NoSpace`] when the list is full).
    pub(crate) fn reserve(&self) -> Result<OrphanSlot<'_>> {
        let mut s = self.lock();
        if s.orphans.len() + s.reserved >= s.max_orphans {
            return Err(Error::NoSpace(format!(
                "the orphan list is full ({} unlinked inodes still open)",
                s.max_orphans
            )));
        }
        s.reserved += 1;
        Ok(OrphanSlot { table: self })
    }

    /// Takes `ino` off the orphan list.
    pub(crate) fn forget_orphan(&self, ino: Ino) {
        self.lock().orphans.remove(&ino);
    }

    /// The orphan list, in inode order.
    pub(crate) fn orphans(&self) -> Vec<Ino> {
        self.lock().orphans.iter().copied().collect()
    }

    /// Forgets every handle; returns the orphans, which no handle keeps any more.
    pub(crate) fn close_all(&self) -> Vec<Ino> {
        let mut s = self.lock();
        s.handles.clear();
        s.orphans.iter().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::orphan::table::{orphan_capacity, OpenInodes};
    use crate::Error;

    #[test]
    fn handles_count_and_the_last_close_of_an_orphan_says_so() {
        let t = OpenInodes::new(2);
        t.opened(7);
        t.opened(7);
        assert!(t.is_open(7));
        let slot = t.reserve().unwrap();
        slot.fill(7);
        assert_eq!(t.orphans(), vec![7]);
        assert!(!t.is_last_of_orphan(7).unwrap());
        assert!(!t.closed(7).unwrap());
        assert!(t.is_last_of_orphan(7).unwrap());
        assert!(t.closed(7).unwrap(), "the last handle of an orphan");
        assert!(matches!(t.is_last_of_orphan(7), Err(Error::Invalid(_))));
        assert!(!t.is_open(7));
        assert!(matches!(t.closed(7), Err(Error::Invalid(_))));
        t.forget_orphan(7);
        assert!(t.orphans().is_empty());
        t.opened(8);
        assert!(!t.closed(8).unwrap(), "not an orphan");
    }

    #[test]
    fn slots_are_bounded_and_come_back_when_unused() {
        let t = OpenInodes::new(2);
        let a = t.reserve().unwrap();
        let b = t.reserve().unwrap();
        assert!(matches!(t.reserve(), Err(Error::NoSpace(_))));
        drop(b);
        a.fill(3);
        let c = t.reserve().unwrap();
        assert!(matches!(t.reserve(), Err(Error::NoSpace(_))));
        drop(c);
        t.opened(3);
        assert_eq!(t.close_all(), vec![3]);
        assert!(!t.is_open(3));
    }

    #[test]
    fn the_bound_is_the_kernels() {
        assert_eq!(orphan_capacity(512, 0, 1020), (512 - 2 - 6) * 1020);
        assert_eq!(orphan_capacity(512, 3, 1020), (512 - 2 - 6 - 3) * 1020);
        assert_eq!(orphan_capacity(512, 0, 4092), (512 - 2 - 6) * 4092);
        assert_eq!(orphan_capacity(4, 0, 1020), 0);
    }
}
