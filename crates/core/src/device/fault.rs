//! [`FaultDevice`]: a device that fails chosen operations, so tests can check what the
//! file system does when its device reports an error.
//!
//! A [`FaultPlan`] says which operation fails: the Nth write call, the write carrying
//! the Nth block written, a write that lands only its first blocks and then fails (a
//! short write), the Nth read or the Nth flush; counted only among the operations its
//! [`FaultFilter`] selects (an area of the volume, a [`WriteKind`]). The plan counts
//! those operations whether or not a fault is set, so a test first runs a workload
//! with a plan that never fails ([`FaultPlan::count_only`]) to learn how many points
//! there are, then runs it again failing at each one. Clones of a plan share their
//! state: the test keeps one while the device holds another.
//!
//! A fault fires once; the operations after it succeed (a transient error), unless the
//! plan is [`FaultPlan::sticky`]: then every later write and flush fails too (a device
//! that went bad for writing) while reads go on working. A failed operation returns
//! [`crate::Error::Io`] with `EIO`, as a block device's failed request does.

use super::{copy_through_host, Areas, BlockDevice, SharedBlock, WriteKind, BLOCK};
use crate::{Error, Result};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use uf2fs_format::consts::F2FS_SUPER_OFFSET;
use uf2fs_format::superblock::{Superblock, SUPERBLOCK_SIZE};

/// Part of the volume, by block address (from the superblock's layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultArea {
    /// Everything before the main area: superblocks, checkpoint packs, SIT, NAT, SSA.
    Metadata,
    /// The checkpoint packs.
    Checkpoint,
    /// The SIT.
    Sit,
    /// The NAT.
    Nat,
    /// The segment summary area.
    Ssa,
    /// The main area (data and node blocks).
    Main,
}

impl FaultArea {
    /// Whether block `blkaddr` of a volume laid out as `areas` lies in this area.
    pub fn holds(self, areas: &Areas, blkaddr: u64) -> bool {
        let within = |lo: u64, hi: u64| (lo..hi).contains(&blkaddr);
        match self {
            FaultArea::Metadata => blkaddr < areas.main,
            FaultArea::Checkpoint => within(areas.cp, areas.sit),
            FaultArea::Sit => within(areas.sit, areas.nat),
            FaultArea::Nat => within(areas.nat, areas.ssa),
            FaultArea::Ssa => within(areas.ssa, areas.main),
            FaultArea::Main => blkaddr >= areas.main,
        }
    }
}

/// Which operations a plan counts (and may fail): all by default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultFilter {
    /// Only operations starting in this area.
    pub area: Option<FaultArea>,
    /// Only writes of this kind (main-area writes that carry one); reads and flushes
    /// are never selected by a kind.
    pub kind: Option<WriteKind>,
}

/// The operation that fails, numbered from 0 among those the filter selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The Nth write call fails and writes nothing.
    WriteCall(u64),
    /// The write call carrying the Nth block written fails; the blocks it carries
    /// before that one land.
    WriteBlock(u64),
    /// The Nth write call lands its first `keep` blocks (all of them when it has no
    /// more), then fails.
    ShortWrite {
        /// The write call.
        call: u64,
        /// Blocks that land.
        keep: u64,
    },
    /// The Nth read call fails.
    Read(u64),
    /// The Nth flush fails (the writes before it may or may not be durable; on this
    /// in-memory model they stay).
    Flush(u64),
}

/// Operations a plan counted (those its filter selects).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Write calls.
    pub write_calls: u64,
    /// Blocks those calls carried.
    pub write_blocks: u64,
    /// Read calls.
    pub reads: u64,
    /// Flushes.
    pub flushes: u64,
}

#[derive(Debug, Default)]
struct PlanState {
    filter: FaultFilter,
    fault: Option<Fault>,
    sticky: bool,
    /// Operations pass through, neither counted nor failed.
    paused: bool,
    counts: FaultCounts,
    /// What the fault failed, once it fired.
    fired: Option<String>,
}

/// Which operation fails, shared by the device and the test (see the module notes).
#[derive(Debug, Clone, Default)]
pub struct FaultPlan(Arc<Mutex<PlanState>>);

impl FaultPlan {
    /// A plan that fails `fault` among the operations `filter` selects.
    pub fn new(filter: FaultFilter, fault: Fault) -> FaultPlan {
        FaultPlan(Arc::new(Mutex::new(PlanState {
            filter,
            fault: Some(fault),
            ..PlanState::default()
        })))
    }

    /// A plan that fails nothing and counts the operations `filter` selects.
    pub fn count_only(filter: FaultFilter) -> FaultPlan {
        FaultPlan(Arc::new(Mutex::new(PlanState {
            filter,
            ..PlanState::default()
        })))
    }

    /// After the fault fires, every write and flush fails too.
    pub fn sticky(self) -> FaultPlan {
        self.lock().sticky = true;
        self
    }

    fn lock(&self) -> MutexGuard<'_, PlanState> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` with the plan paused: the device's operations meanwhile are neither
    /// counted nor failed (a test reading what it needs to judge the run).
    pub fn paused<T>(&self, f: impl FnOnce() -> T) -> T {
        let was = std::mem::replace(&mut self.lock().paused, true);
        let r = f();
        self.lock().paused = was;
        r
    }

    /// The operations counted so far.
    pub fn counts(&self) -> FaultCounts {
        self.lock().counts
    }

    /// What the fault failed, once it has fired.
    pub fn fired(&self) -> Option<String> {
        self.lock().fired.clone()
    }

    /// Whether a write or flush fails because a sticky fault fired before it.
    fn dead(st: &PlanState) -> bool {
        st.sticky && st.fired.is_some()
    }

    /// A write of `blocks` blocks at `blkaddr`: how many of its first blocks land, and
    /// the error it returns, if any.
    fn on_write(&self, areas: &Areas, blkaddr: u64, blocks: u64, kind: Option<WriteKind>) -> (u64, Option<Error>) {
        let mut st = self.lock();
        if Self::dead(&st) {
            return (
                0,
                Some(eio(format!("write of block {blkaddr:#x}: the device failed earlier"))),
            );
        }
        if st.paused || !selects(&st.filter, areas, blkaddr, kind, true) {
            return (blocks, None);
        }
        let (call, first) = (st.counts.write_calls, st.counts.write_blocks);
        st.counts.write_calls += 1;
        st.counts.write_blocks += blocks;
        let land = match (st.fired.is_some(), st.fault) {
            (false, Some(Fault::WriteCall(n))) if n == call => 0,
            (false, Some(Fault::WriteBlock(n))) if (first..first + blocks).contains(&n) => n - first,
            (false, Some(Fault::ShortWrite { call: n, keep })) if n == call => keep.min(blocks),
            _ => return (blocks, None),
        };
        let what = format!("write call {call} ({blocks} blocks at {blkaddr:#x}, {land} landed)");
        let err = eio(format!("injected fault: {what}"));
        st.fired = Some(what);
        (land, Some(err))
    }

    /// A read of `blocks` blocks at `blkaddr`: the error it returns, if any.
    fn on_read(&self, areas: &Areas, blkaddr: u64, blocks: u64) -> Option<Error> {
        let mut st = self.lock();
        if st.paused || !selects(&st.filter, areas, blkaddr, None, false) {
            return None;
        }
        let n = st.counts.reads;
        st.counts.reads += 1;
        match (st.fired.is_some(), st.fault) {
            (false, Some(Fault::Read(k))) if k == n => {
                let what = format!("read call {n} ({blocks} blocks at {blkaddr:#x})");
                let err = eio(format!("injected fault: {what}"));
                st.fired = Some(what);
                Some(err)
            }
            _ => None,
        }
    }

    /// A flush: the error it returns, if any.
    fn on_flush(&self) -> Option<Error> {
        let mut st = self.lock();
        if Self::dead(&st) {
            return Some(eio("flush: the device failed earlier".into()));
        }
        if st.paused || st.filter.kind.is_some() || st.filter.area.is_some() {
            return None;
        }
        let n = st.counts.flushes;
        st.counts.flushes += 1;
        match (st.fired.is_some(), st.fault) {
            (false, Some(Fault::Flush(k))) if k == n => {
                let what = format!("flush {n}");
                st.fired = Some(what.clone());
                Some(eio(format!("injected fault: {what}")))
            }
            _ => None,
        }
    }
}

/// Whether `filter` selects an operation at `blkaddr` (a write of `kind` when
/// `write`).
fn selects(filter: &FaultFilter, areas: &Areas, blkaddr: u64, kind: Option<WriteKind>, write: bool) -> bool {
    if filter.area.is_some_and(|a| !a.holds(areas, blkaddr)) {
        return false;
    }
    match filter.kind {
        None => true,
        Some(k) => write && kind == Some(k),
    }
}

/// An `EIO` error saying `context`.
fn eio(context: String) -> Error {
    Error::eio(context)
}

/// A device that fails the operations its [`FaultPlan`] names (see the module notes).
/// Clones share the device below and the plan.
#[derive(Clone)]
pub struct FaultDevice {
    inner: Arc<dyn BlockDevice>,
    areas: Areas,
    plan: FaultPlan,
}

impl FaultDevice {
    /// Wraps `inner`, an F2FS volume whose areas are read from its first superblock,
    /// failing what `plan` names.
    pub fn new(inner: Box<dyn BlockDevice>, plan: FaultPlan) -> Result<FaultDevice> {
        let mut b0 = vec![0u8; BLOCK];
        inner.read_blocks(0, &mut b0)?;
        let sb = Superblock::decode(&b0[F2FS_SUPER_OFFSET..F2FS_SUPER_OFFSET + SUPERBLOCK_SIZE])
            .map_err(|e| Error::corrupt("superblock", Some(0), e.to_string()))?;
        Ok(FaultDevice::with_areas(inner, Areas::of(&sb), plan))
    }

    /// Wraps `inner`, whose areas are `areas`, failing what `plan` names.
    pub fn with_areas(inner: Box<dyn BlockDevice>, areas: Areas, plan: FaultPlan) -> FaultDevice {
        FaultDevice {
            inner: Arc::from(inner),
            areas,
            plan,
        }
    }

    /// The plan (shared with the device).
    pub fn plan(&self) -> &FaultPlan {
        &self.plan
    }

    /// Every block of the device below, read past the plan (what the medium holds).
    pub fn image(&self) -> Result<Vec<u8>> {
        let mut img = vec![0u8; self.inner.block_count() as usize * BLOCK];
        self.inner.read_blocks(0, &mut img)?;
        Ok(img)
    }

    /// Lands the first `land` of `blocks` blocks with `write`, then returns `err`.
    fn write_with(
        &self,
        blkaddr: u64,
        blocks: usize,
        kind: Option<WriteKind>,
        write: impl FnOnce(usize) -> Result<()>,
    ) -> Result<()> {
        let (land, err) = self.plan.on_write(&self.areas, blkaddr, blocks as u64, kind);
        if land > 0 {
            write(land as usize)?;
        }
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl BlockDevice for FaultDevice {
    fn block_size(&self) -> usize {
        self.inner.block_size()
    }

    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> Result<()> {
        if let Some(e) = self
            .plan
            .on_read(&self.areas, blkaddr, buf.len().div_ceil(BLOCK) as u64)
        {
            return Err(e);
        }
        self.inner.read_blocks(blkaddr, buf)
    }

    fn block_count(&self) -> u64 {
        self.inner.block_count()
    }

    fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> Result<()> {
        self.write_with(blkaddr, buf.len() / BLOCK, None, |n| {
            self.inner.write_blocks(blkaddr, &buf[..n * BLOCK])
        })
    }

    fn flush(&self) -> Result<()> {
        match self.plan.on_flush() {
            Some(e) => Err(e),
            None => self.inner.flush(),
        }
    }

    fn write_kind(&self, blkaddr: u64, buf: &[u8], kind: WriteKind) -> Result<()> {
        self.write_with(blkaddr, buf.len() / BLOCK, Some(kind), |n| {
            self.inner.write_kind(blkaddr, &buf[..n * BLOCK], kind)
        })
    }

    fn write_blocks_from(&self, blkaddr: u64, blocks: &[&[u8]], kind: WriteKind) -> Result<()> {
        self.write_with(blkaddr, blocks.len(), Some(kind), |n| {
            self.inner.write_blocks_from(blkaddr, &blocks[..n], kind)
        })
    }

    fn read_shared(&self, blkaddr: u64) -> Result<SharedBlock> {
        if let Some(e) = self.plan.on_read(&self.areas, blkaddr, 1) {
            return Err(e);
        }
        self.inner.read_shared(blkaddr)
    }

    fn write_shared(&self, blkaddr: u64, blocks: &[SharedBlock], kind: WriteKind) -> Result<()> {
        self.write_with(blkaddr, blocks.len(), Some(kind), |n| {
            self.inner.write_shared(blkaddr, &blocks[..n], kind)
        })
    }

    /// Copies through the host, so that the copy's reads and writes meet the plan.
    fn copy_blocks(&self, sources: &[u64], dst: u64, kind: WriteKind) -> Result<()> {
        copy_through_host(self, sources, dst, kind)
    }

    fn forget(&self, blkaddr: u64) {
        self.inner.forget(blkaddr)
    }

    fn discard(&self, blkaddr: u64, blocks: u64) -> Result<()> {
        self.inner.discard(blkaddr, blocks)
    }
}

#[cfg(test)]
mod tests {
    use crate::device::fault::{Fault, FaultArea, FaultDevice, FaultFilter, FaultPlan};
    use crate::device::{Areas, BlockDevice, MemDevice, WriteKind, BLOCK};

    const AREAS: Areas = Areas {
        cp: 2,
        sit: 4,
        nat: 6,
        ssa: 8,
        main: 10,
    };

    fn device(plan: &FaultPlan) -> FaultDevice {
        FaultDevice::with_areas(Box::new(MemDevice::new(vec![0; 20 * BLOCK])), AREAS, plan.clone())
    }

    fn first_bytes(dev: &FaultDevice) -> Vec<u8> {
        dev.image().unwrap().chunks(BLOCK).map(|b| b[0]).collect()
    }

    #[test]
    fn counts_the_selected_operations() {
        let main = FaultFilter {
            area: Some(FaultArea::Main),
            ..FaultFilter::default()
        };
        let plan = FaultPlan::count_only(main);
        let dev = device(&plan);
        dev.write_blocks(2, &[1; 2 * BLOCK]).unwrap();
        dev.write_kind(10, &[1; 3 * BLOCK], WriteKind::UserData).unwrap();
        dev.write_blocks_from(13, &[&[1; BLOCK], &[1; BLOCK]], WriteKind::UserNode)
            .unwrap();
        dev.copy_blocks(&[10, 11], 16, WriteKind::GcData).unwrap();
        dev.flush().unwrap();
        let mut b = [0u8; BLOCK];
        dev.read_blocks(3, &mut b).unwrap();
        let c = plan.counts();
        assert_eq!((c.write_calls, c.write_blocks, c.reads, c.flushes), (3, 7, 1, 0));
        assert!(plan.fired().is_none());
    }

    #[test]
    fn fails_the_chosen_write_read_or_flush_once() {
        // The block-numbered fault lands the blocks before the failing one.
        let plan = FaultPlan::new(FaultFilter::default(), Fault::WriteBlock(3));
        let dev = device(&plan);
        dev.write_blocks(0, &[7; 2 * BLOCK]).unwrap();
        let err = dev.write_blocks(4, &[8; 3 * BLOCK]).unwrap_err();
        assert_eq!(err.errno(), 5, "{err}");
        assert_eq!(&first_bytes(&dev)[..7], &[7, 7, 0, 0, 8, 0, 0]);
        assert!(plan.fired().unwrap().contains("1 landed"));
        dev.write_blocks(5, &[9; BLOCK]).unwrap();
        // A short write of a kind, in the main area.
        let only_nodes = FaultFilter {
            kind: Some(WriteKind::UserNode),
            ..FaultFilter::default()
        };
        let plan = FaultPlan::new(only_nodes, Fault::ShortWrite { call: 1, keep: 2 });
        let dev = device(&plan);
        dev.write_kind(10, &[1; 3 * BLOCK], WriteKind::UserData).unwrap();
        dev.write_kind(10, &[2; 3 * BLOCK], WriteKind::UserNode).unwrap();
        assert!(dev.write_kind(13, &[3; 3 * BLOCK], WriteKind::UserNode).is_err());
        assert_eq!(&first_bytes(&dev)[10..16], &[2, 2, 2, 3, 3, 0]);
        // Reads and flushes.
        let plan = FaultPlan::new(FaultFilter::default(), Fault::Read(1));
        let dev = device(&plan);
        let mut b = [0u8; BLOCK];
        dev.read_blocks(0, &mut b).unwrap();
        assert_eq!(dev.read_shared(1).unwrap_err().errno(), 5);
        dev.read_blocks(0, &mut b).unwrap();
        let plan = FaultPlan::new(FaultFilter::default(), Fault::Flush(0));
        let dev = device(&plan);
        assert!(dev.flush().is_err());
        dev.flush().unwrap();
    }

    #[test]
    fn a_sticky_fault_fails_every_later_write() {
        let plan = FaultPlan::new(FaultFilter::default(), Fault::WriteCall(0)).sticky();
        let dev = device(&plan);
        assert!(dev.write_blocks(0, &[1; BLOCK]).is_err());
        assert!(dev.write_blocks(1, &[1; BLOCK]).is_err());
        assert!(dev.flush().is_err());
        let mut b = [0u8; BLOCK];
        dev.read_blocks(0, &mut b).unwrap();
        assert_eq!(first_bytes(&dev)[..2], [0, 0]);
    }
}
