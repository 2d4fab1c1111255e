//! Inline data (F2FS's inline.c, for regular files): a new file keeps its bytes in the
//! inode (`F2FS_INLINE_DATA`) while they fit `MAX_INLINE_DATA`; `F2FS_DATA_EXIST` says
//! the area holds data (when it is clear the area is all zeros, as fsck checks).
//!
//! | event                                   | what happens (as the kernel)                   |
//! |-----------------------------------------|------------------------------------------------|
//! | write ending within the inline area     | bytes copied in, `DATA_EXIST` set               |
//! | write past it, fallocate, punch, truncate up past it | converted: with data, block 0 reserved and dirty with the area's bytes; the area zeroed; `INLINE_DATA` and `DATA_EXIST` cleared (a file never goes back inline) |
//! | truncate down                           | the area zeroed from the new size; at size 0 `DATA_EXIST` cleared |
//!
//! The area's first address slot is reserved (always zero), so block 0 of a converted
//! file takes exactly that slot.

use super::blocks::reserve_range;
use crate::inode::InodeMut;
use crate::segment::LogType;
use crate::tree::Tree;
use crate::Result;
use uf2fs_format::consts::NULL_ADDR;
use uf2fs_format::node::{F2FS_DATA_EXIST, F2FS_INLINE_DATA};

/// Whether the file keeps its data inline.
pub fn is_inline(inode: &InodeMut) -> bool {
    inode.inode.has_inline(F2FS_INLINE_DATA)
}

/// Bytes the inline area holds (`MAX_INLINE_DATA`).
pub fn max_inline(inode: &InodeMut) -> u64 {
    inode.inode.max_inline_data() as u64
}

/// Whether converting `inode` makes a block (it has data).
pub fn conversion_makes_block(inode: &InodeMut) -> bool {
    is_inline(inode) && inode.inode.has_inline(F2FS_DATA_EXIST)
}

/// Copies `data` into the inline area at `pos` (which must fit) and marks it holding
/// data.
pub fn write(inode: &mut InodeMut, pos: u64, data: &[u8]) {
    let at = pos as usize;
    inode.inline_area()[at..at + data.len()].copy_from_slice(data);
    inode.inode.inline |= F2FS_DATA_EXIST;
}

/// Zeroes the inline area from byte `from` (truncating it); at 0 it holds no data.
pub fn truncate(inode: &mut InodeMut, from: u64) {
    let area = inode.inline_area();
    let from = (from as usize).min(area.len());
    area[from..].fill(0);
    if from == 0 {
        inode.inode.inline &= !F2FS_DATA_EXIST;
    }
}

/// The inode as it looks once converted, for planning the space an operation needs
/// before it changes anything: flags cleared, area zeroed, no block made.
pub fn converted_view(inode: &InodeMut) -> InodeMut {
    let mut v = inode.clone();
    if is_inline(&v) {
        v.inline_area().fill(0);
        v.set_slot(0, NULL_ADDR);
        v.inode.inline &= !(F2FS_INLINE_DATA | F2FS_DATA_EXIST);
    }
    v
}

/// Converts an inline file to block addressing (see the module table); block 0, when
/// made, is dirty in the page cache for `log`. Nothing happens to a file that is not
/// inline. The caller has checked the room (one data block) beforehand.
pub fn convert(t: &mut Tree, inode: &mut InodeMut, log: LogType) -> Result<()> {
    if !is_inline(inode) {
        return Ok(());
    }
    let had_data = inode.inode.has_inline(F2FS_DATA_EXIST);
    let mut block = vec![0u8; inode.inode.geometry.block_size()];
    {
        let area = inode.inline_area();
        block[..area.len()].copy_from_slice(area);
        area.fill(0);
    }
    inode.set_slot(0, NULL_ADDR);
    inode.inode.inline &= !(F2FS_INLINE_DATA | F2FS_DATA_EXIST);
    if had_data {
        reserve_range(t, inode, 0, 1)?;
        t.pages.put(inode.ino, 0, block, log);
    }
    Ok(())
}
