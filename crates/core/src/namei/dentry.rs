//! Directory entries, for writing: find, add (inline while there is room, then the
//! inline area moved into dentry block 0, then F2FS's hash levels grown as
//! `f2fs_add_regular_entry` grows them), remove, retarget, and the emptiness test.
//!
//! Adding to a regular directory, as the kernel does: from level 0 up, look at the
//! blocks of the name's bucket in order; a missing block is made (and always has
//! room); the first block with a free run of slots for the name takes it. Reaching
//! level `i_current_depth` grows the depth by one. The directory's size grows to cover
//! the block used.

use crate::inode::InodeMut;
use crate::segment::LogType;
use crate::tree::Tree;
use crate::{Error, Ino, Result};
use uf2fs_format::casefold::DirName;
use uf2fs_format::consts::{F2FS_SLOT_LEN, MAX_DIR_HASH_DEPTH};
use uf2fs_format::dentry::{bucket_blocks, dir_block_index, dir_buckets, DentryArea, DentryAreaMut};
use uf2fs_format::node::{F2FS_DATA_EXIST, F2FS_INLINE_DENTRY};

/// Where an entry lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// In the inode's inline dentry area.
    Inline,
    /// In dentry block `index` of the directory.
    Block(u64),
}

/// A directory entry found by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Where it lives.
    pub place: Place,
    /// Its first slot.
    pub slot: usize,
    /// The inode it names.
    pub ino: Ino,
    /// Its file type (`ft::*`).
    pub file_type: u8,
    /// Its name length.
    pub name_len: usize,
}

/// Damage in the inline dentries of directory `dir`, named with the inode's block.
fn corrupt_inline(t: &Tree, dir: Ino, e: impl ToString) -> Error {
    Error::corrupt(
        format!("inline dentries of directory inode {dir}"),
        t.nodes.blkaddr_of(t.dev, dir),
        e.to_string(),
    )
}

/// Damage in dentry block `index` of `dir`, named with the block's address (none while
/// only its dirty copy exists).
fn corrupt_block(t: &Tree, dir: &InodeMut, index: u64, e: impl ToString) -> Error {
    let at = t.locate(dir, index).ok().flatten().map(|l| l.addr as u64);
    let (lo, hi) = t.nodes.main_area();
    Error::corrupt(
        format!("dentry block {index} of directory inode {}", dir.ino),
        at.filter(|a| (lo..hi).contains(a)),
        e.to_string(),
    )
}

/// An entry found under the directory's lock whose dentry block is gone: uf2fs's bug.
fn vanished(dir: Ino, index: u64) -> Error {
    Error::bug(format!(
        "dentry block {index} of directory inode {dir} vanished under its lock"
    ))
}

fn slots_for(name: &[u8]) -> usize {
    name.len().div_ceil(F2FS_SLOT_LEN).max(1)
}

fn is_inline(dir: &InodeMut) -> bool {
    dir.inode.has_inline(F2FS_INLINE_DENTRY)
}

/// Looks `name` up in `dir`, through its hash levels (or its inline area); in a
/// casefolded directory by folded name, then by a linear search of every entry when
/// that misses ([`crate::casefold`]).
pub fn find(t: &Tree, dir: &mut InodeMut, name: &[u8]) -> Result<Option<Entry>> {
    let name = crate::casefold::dir_name(t.sb, &dir.inode, dir.ino, name)?;
    if let Some(e) = find_in(t, dir, &name, true)? {
        return Ok(Some(e));
    }
    if crate::casefold::linear_fallback(t.sb, &dir.inode) {
        return find_in(t, dir, &name, false);
    }
    Ok(None)
}

/// [`find`] through the hash levels (`use_hash`) or through every block.
fn find_in(t: &Tree, dir: &mut InodeMut, name: &DirName<'_>, use_hash: bool) -> Result<Option<Entry>> {
    let hash = name.hash();
    let to_entry = |d: uf2fs_format::dentry::RawDentry<'_>, place| Entry {
        place,
        slot: d.slot,
        ino: d.ino,
        file_type: d.file_type,
        name_len: d.name.len(),
    };
    if is_inline(dir) {
        let ino = dir.ino;
        let area = DentryArea::inline(dir.inline_area());
        return Ok(area
            .find_name(name, use_hash)
            .map_err(|e| corrupt_inline(t, ino, e))?
            .map(|d| to_entry(d, Place::Inline)));
    }
    let size_blocks = dir.inode.size.div_ceil(dir.inode.geometry.block_size() as u64);
    let search = |index: u64| -> Result<Option<Entry>> {
        let Some(b) = t.read_block(dir, index)? else {
            return Ok(None);
        };
        let area = DentryArea::block(&b).map_err(|e| corrupt_block(t, dir, index, e))?;
        Ok(area
            .find_name(name, use_hash)
            .map_err(|e| corrupt_block(t, dir, index, e))?
            .map(|d| to_entry(d, Place::Block(index))))
    };
    if !use_hash {
        for index in 0..size_blocks {
            if let Some(e) = search(index)? {
                return Ok(Some(e));
            }
        }
        return Ok(None);
    }
    let depth = dir.inode.current_depth.clamp(1, MAX_DIR_HASH_DEPTH);
    let dir_level = dir.inode.dir_level as u32;
    for level in 0..depth {
        let bucket = hash as u64 % dir_buckets(level, dir_level);
        let first = dir_block_index(level, dir_level, bucket);
        for index in first..(first + bucket_blocks(level)).min(size_blocks) {
            if let Some(e) = search(index)? {
                return Ok(Some(e));
            }
        }
    }
    Ok(None)
}

/// Adds entry `name` -> `ino` (`file_type`) to `dir`, which must not hold `name`
/// ([`find`] finds nothing). The entry keeps `name` as given; in a casefolded
/// directory its hash is that of the folded name. Sets the directory's depth and size
/// as the kernel does; times and link counts are the caller's.
pub fn add(t: &mut Tree, dir: &mut InodeMut, name: &[u8], ino: Ino, file_type: u8) -> Result<()> {
    let hash = crate::casefold::dir_name(t.sb, &dir.inode, dir.ino, name)?.hash();
    if is_inline(dir) {
        let dir_ino = dir.ino;
        let mut area = DentryAreaMut::inline(dir.inline_area());
        if let Some(slot) = area.find_free(slots_for(name)) {
            area.insert_at(slot, hash, name, ino, file_type)
                .map_err(|e| corrupt_inline(t, dir_ino, e))?;
            // An inline directory's depth is 0 once it holds an entry.
            dir.inode.current_depth = 0;
            return Ok(());
        }
        convert_inline(t, dir)?;
    }
    add_regular(t, dir, name, hash, ino, file_type)
}

/// The regular-directory half of [`add`].
fn add_regular(t: &mut Tree, dir: &mut InodeMut, name: &[u8], hash: u32, ino: Ino, file_type: u8) -> Result<()> {
    let dir_level = dir.inode.dir_level as u32;
    let mut depth = dir.inode.current_depth;
    let mut level = 0;
    loop {
        if depth >= MAX_DIR_HASH_DEPTH {
            return Err(Error::NoSpace(format!(
                "directory inode {} has all {MAX_DIR_HASH_DEPTH} hash levels full",
                dir.ino
            )));
        }
        if level == depth {
            depth += 1;
        }
        let bucket = hash as u64 % dir_buckets(level, dir_level);
        let first = dir_block_index(level, dir_level, bucket);
        for index in first..first + bucket_blocks(level) {
            let mut b = t
                .read_block(dir, index)?
                .unwrap_or_else(|| vec![0u8; dir.inode.geometry.block_size()]);
            let mut area = DentryAreaMut::block(&mut b).map_err(|e| corrupt_block(t, dir, index, e))?;
            let Some(slot) = area.find_free(slots_for(name)) else {
                continue;
            };
            area.insert_at(slot, hash, name, ino, file_type)
                .map_err(|e| corrupt_block(t, dir, index, e))?;
            t.put_block(dir, index, b, LogType::HotData)?;
            let end = (index + 1) * dir.inode.geometry.block_size() as u64;
            dir.inode.size = dir.inode.size.max(end);
            dir.inode.current_depth = depth;
            return Ok(());
        }
        level += 1;
    }
}

/// Moves a full inline directory into dentry blocks: with no extra hash levels the
/// inline slots become block 0's slots as they are; otherwise every entry is added
/// again by its hash (the kernel's two ways).
fn convert_inline(t: &mut Tree, dir: &mut InodeMut) -> Result<()> {
    let dir_ino = dir.ino;
    let mut block = vec![0u8; dir.inode.geometry.block_size()];
    let mut entries = Vec::new();
    {
        let area = DentryArea::inline(dir.inline_area());
        area.copy_into_block(&mut block)
            .map_err(|e| corrupt_inline(t, dir_ino, e))?;
        for d in area.entries().map_err(|e| corrupt_inline(t, dir_ino, e))? {
            entries.push((d.name.to_vec(), d.hash, d.ino, d.file_type));
        }
    }
    dir.inline_area().fill(0);
    dir.inode.inline &= !(F2FS_INLINE_DENTRY | F2FS_DATA_EXIST);
    if dir.inode.dir_level == 0 {
        t.put_block(dir, 0, block, LogType::HotData)?;
        dir.inode.current_depth = 1;
        dir.inode.size = dir.inode.size.max(dir.inode.geometry.block_size() as u64);
        return Ok(());
    }
    for (name, hash, ino, file_type) in entries {
        add_regular(t, dir, &name, hash, ino, file_type)?;
    }
    Ok(())
}

/// Removes entry `e` from `dir`. A dentry block left without entries is freed, as
/// the kernel frees it.
pub fn remove(t: &mut Tree, dir: &mut InodeMut, e: &Entry) -> Result<()> {
    let dir_ino = dir.ino;
    match e.place {
        Place::Inline => DentryAreaMut::inline(dir.inline_area())
            .remove(e.slot, e.name_len)
            .map_err(|x| corrupt_inline(t, dir_ino, x)),
        Place::Block(index) => {
            let mut b = t.read_block(dir, index)?.ok_or_else(|| vanished(dir_ino, index))?;
            let mut area = DentryAreaMut::block(&mut b).map_err(|x| corrupt_block(t, dir, index, x))?;
            area.remove(e.slot, e.name_len)
                .map_err(|x| corrupt_block(t, dir, index, x))?;
            if area.is_empty_from(0) {
                t.free_block(dir, index)?;
                return Ok(());
            }
            t.put_block(dir, index, b, LogType::HotData)
        }
    }
}

/// Points entry `e` of `dir` at `ino` with `file_type` (F2FS's `f2fs_set_link`).
pub fn retarget(t: &mut Tree, dir: &mut InodeMut, e: &Entry, ino: Ino, file_type: u8) -> Result<()> {
    let dir_ino = dir.ino;
    match e.place {
        Place::Inline => DentryAreaMut::inline(dir.inline_area())
            .set_target(e.slot, ino, file_type)
            .map_err(|x| corrupt_inline(t, dir_ino, x)),
        Place::Block(index) => {
            let mut b = t.read_block(dir, index)?.ok_or_else(|| vanished(dir_ino, index))?;
            DentryAreaMut::block(&mut b)
                .map_err(|x| corrupt_block(t, dir, index, x))?
                .set_target(e.slot, ino, file_type)
                .map_err(|x| corrupt_block(t, dir, index, x))?;
            t.put_block(dir, index, b, LogType::HotData)
        }
    }
}

/// Whether `dir` holds nothing but "." and ".." (in slots 0 and 1 of its first area).
pub fn is_empty(t: &Tree, dir: &mut InodeMut) -> Result<bool> {
    if is_inline(dir) {
        return Ok(DentryAreaMut::inline(dir.inline_area()).is_empty_from(2));
    }
    let blocks = dir.inode.size.div_ceil(dir.inode.geometry.block_size() as u64);
    for index in 0..blocks {
        let Some(mut b) = t.read_block(dir, index)? else {
            continue;
        };
        let area = DentryAreaMut::block(&mut b).map_err(|e| corrupt_block(t, dir, index, e))?;
        if !area.is_empty_from(if index == 0 { 2 } else { 0 }) {
            return Ok(false);
        }
    }
    Ok(true)
}
