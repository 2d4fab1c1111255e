//! Directory entries: dentry blocks, inline dentries and the multi-level hash layout.

use crate::casefold::DirName;
use crate::consts::*;
use crate::hash::dentry_hash;
use crate::le::{put_u16, put_u32, test_bit_le, u16_at, u32_at};
use crate::{FormatError, Geometry, Result};

/// Dentry file types (`F2FS_FT_*`).
pub mod ft {
    /// Unknown.
    pub const UNKNOWN: u8 = 0;
    /// Regular file.
    pub const REG_FILE: u8 = 1;
    /// Directory.
    pub const DIR: u8 = 2;
    /// Character device.
    pub const CHRDEV: u8 = 3;
    /// Block device.
    pub const BLKDEV: u8 = 4;
    /// FIFO.
    pub const FIFO: u8 = 5;
    /// Socket.
    pub const SOCK: u8 = 6;
    /// Symbolic link.
    pub const SYMLINK: u8 = 7;
}

/// One live directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawDentry<'a> {
    /// Stored name hash.
    pub hash: u32,
    /// Target inode.
    pub ino: u32,
    /// File type (`ft::*`).
    pub file_type: u8,
    /// Name bytes.
    pub name: &'a [u8],
    /// First slot of the entry.
    pub slot: usize,
}

/// A view of a dentry area: a block, or the inline dentry area of an inode.
#[derive(Debug, Clone, Copy)]
pub struct DentryArea<'a> {
    bitmap: &'a [u8],
    dentries: &'a [u8],
    names: &'a [u8],
    nr: usize,
}

/// Slots of an inline dentry area of `bytes` bytes (`NR_INLINE_DENTRY`).
pub fn nr_inline_dentry(bytes: usize) -> usize {
    bytes * 8 / ((SIZE_OF_DIR_ENTRY + F2FS_SLOT_LEN) * 8 + 1)
}

/// Where the parts of a dentry area lie: (slots, bitmap bytes, first dentry byte,
/// first name byte). A block has a fixed layout; an inline area of `len` bytes fits as
/// many slots as it can, with reserved bytes between the bitmap and the dentries.
fn area_layout(len: usize, block: Option<Geometry>) -> (usize, usize, usize, usize) {
    if let Some(g) = block {
        let d0 = g.dentry_bitmap_size() + g.dentry_reserved_size();
        return (
            g.dentries_per_block(),
            g.dentry_bitmap_size(),
            d0,
            d0 + SIZE_OF_DIR_ENTRY * g.dentries_per_block(),
        );
    }
    let nr = nr_inline_dentry(len);
    let bitmap_len = nr.div_ceil(8);
    let reserved = len - (nr * (SIZE_OF_DIR_ENTRY + F2FS_SLOT_LEN) + bitmap_len);
    let d0 = bitmap_len + reserved;
    (nr, bitmap_len, d0, d0 + SIZE_OF_DIR_ENTRY * nr)
}

impl<'a> DentryArea<'a> {
    /// A dentry block (`b` is the whole block: 214 slots in 4 KiB, 856 in 16 KiB).
    pub fn block(b: &'a [u8]) -> Result<DentryArea<'a>> {
        let g = Geometry::of_block("dentry block", b.len())?;
        Ok(Self::with_layout(b, area_layout(b.len(), Some(g))))
    }

    /// The inline dentry area of an inode (the whole inline data range).
    pub fn inline(area: &'a [u8]) -> DentryArea<'a> {
        Self::with_layout(area, area_layout(area.len(), None))
    }

    fn with_layout(area: &'a [u8], (nr, bitmap_len, d0, n0): (usize, usize, usize, usize)) -> DentryArea<'a> {
        DentryArea {
            bitmap: &area[..bitmap_len],
            dentries: &area[d0..n0],
            names: &area[n0..n0 + nr * F2FS_SLOT_LEN],
            nr,
        }
    }

    /// Number of slots.
    pub fn slots(&self) -> usize {
        self.nr
    }

    /// The entry starting at `slot` if its bit is set, with the slot after it.
    /// Entries are validated: a zero name length or a name running past the area is an
    /// error.
    pub fn entry_at(&self, slot: usize) -> Result<Option<(RawDentry<'a>, usize)>> {
        if slot >= self.nr || !test_bit_le(self.bitmap, slot) {
            return Ok(None);
        }
        let d = &self.dentries[slot * SIZE_OF_DIR_ENTRY..(slot + 1) * SIZE_OF_DIR_ENTRY];
        let name_len = u16_at(d, 8) as usize;
        let used = name_len.div_ceil(F2FS_SLOT_LEN);
        if name_len == 0 || name_len > F2FS_NAME_LEN || slot + used > self.nr {
            return Err(FormatError::invalid(
                "dentry",
                format!("slot {slot}: name length {name_len}"),
            ));
        }
        let name = &self.names[slot * F2FS_SLOT_LEN..slot * F2FS_SLOT_LEN + name_len];
        Ok(Some((
            RawDentry {
                hash: u32_at(d, 0),
                ino: u32_at(d, 4),
                file_type: d[10],
                name,
                slot,
            },
            slot + used,
        )))
    }

    /// All live entries in slot order.
    pub fn entries(&self) -> Result<Vec<RawDentry<'a>>> {
        let mut out = Vec::new();
        let mut slot = 0;
        while slot < self.nr {
            match self.entry_at(slot)? {
                Some((e, next)) => {
                    out.push(e);
                    slot = next;
                }
                None => slot += 1,
            }
        }
        Ok(out)
    }

    /// Finds `name` with hash `hash`.
    pub fn find(&self, name: &[u8], hash: u32) -> Result<Option<RawDentry<'a>>> {
        Ok(self.entries()?.into_iter().find(|e| e.hash == hash && e.name == name))
    }

    /// Finds the entry `name` stands for ([`DirName::matches`]): with its hash, or
    /// whatever its hash when `use_hash` is false (the linear search of a casefolded
    /// directory).
    pub fn find_name(&self, name: &DirName<'_>, use_hash: bool) -> Result<Option<RawDentry<'a>>> {
        let hash = name.hash();
        Ok(self
            .entries()?
            .into_iter()
            .find(|e| (!use_hash || e.hash == hash) && name.matches(e.name)))
    }
}

/// A writable dentry area (a dentry block or an inode's inline dentry area) to insert
/// entries into, laid out exactly as [`DentryArea`] reads it.
#[derive(Debug)]
pub struct DentryAreaMut<'a> {
    area: &'a mut [u8],
    layout: (usize, usize, usize, usize),
}

impl<'a> DentryAreaMut<'a> {
    /// A dentry block (`b` is the whole block, see [`DentryArea::block`]).
    pub fn block(b: &'a mut [u8]) -> Result<DentryAreaMut<'a>> {
        let g = Geometry::of_block("dentry block", b.len())?;
        let layout = area_layout(b.len(), Some(g));
        Ok(DentryAreaMut { area: b, layout })
    }

    /// The inline dentry area of an inode (the whole inline data range).
    pub fn inline(area: &'a mut [u8]) -> DentryAreaMut<'a> {
        let layout = area_layout(area.len(), None);
        DentryAreaMut { area, layout }
    }

    /// A read-only view of the area.
    pub fn view(&self) -> DentryArea<'_> {
        DentryArea::with_layout(self.area, self.layout)
    }

    /// First run of `slots` free slots, if any.
    pub fn find_free(&self, slots: usize) -> Option<usize> {
        let (nr, ..) = self.layout;
        let mut run = 0;
        for slot in 0..nr {
            run = if test_bit_le(self.area, slot) { 0 } else { run + 1 };
            if run == slots {
                return Some(slot + 1 - slots);
            }
        }
        None
    }

    /// Inserts `name` (hashed with [`dentry_hash`]) in the first free run of slots and
    /// returns its first slot. Fails when the name is empty or too long, or the area is
    /// full.
    pub fn insert(&mut self, name: &[u8], ino: u32, file_type: u8) -> Result<usize> {
        let slots = name.len().div_ceil(F2FS_SLOT_LEN).max(1);
        let slot = self
            .find_free(slots)
            .ok_or_else(|| FormatError::invalid("dentry", format!("no room for a name of {} bytes", name.len())))?;
        self.insert_at(slot, dentry_hash(name), name, ino, file_type)?;
        Ok(slot)
    }

    /// Writes an entry at `slot` with a given hash, marking its slots used.
    pub fn insert_at(&mut self, slot: usize, hash: u32, name: &[u8], ino: u32, file_type: u8) -> Result<()> {
        let (nr, _, d0, n0) = self.layout;
        let used = name.len().div_ceil(F2FS_SLOT_LEN);
        if name.is_empty() || name.len() > F2FS_NAME_LEN || slot + used > nr {
            return Err(FormatError::invalid(
                "dentry",
                format!("slot {slot}: name of {} bytes in {nr} slots", name.len()),
            ));
        }
        let d = d0 + slot * SIZE_OF_DIR_ENTRY;
        put_u32(self.area, d, hash);
        put_u32(self.area, d + 4, ino);
        put_u16(self.area, d + 8, name.len() as u16);
        self.area[d + 10] = file_type;
        let at = n0 + slot * F2FS_SLOT_LEN;
        self.area[at..at + used * F2FS_SLOT_LEN].fill(0);
        self.area[at..at + name.len()].copy_from_slice(name);
        for s in slot..slot + used {
            self.area[s / 8] |= 1 << (s % 8);
            if s > slot {
                // Follow-on slots carry no entry: a zero name length says so to readers
                // that look at records without the bitmap (as the kernel writes them).
                put_u16(self.area, d0 + s * SIZE_OF_DIR_ENTRY + 8, 0);
            }
        }
        Ok(())
    }

    /// Clears the bitmap bits of the entry at `slot` whose name is `name_len` bytes
    /// long (the record and name stay, as F2FS leaves them).
    pub fn remove(&mut self, slot: usize, name_len: usize) -> Result<()> {
        let (nr, ..) = self.layout;
        let used = name_len.div_ceil(F2FS_SLOT_LEN).max(1);
        if slot + used > nr {
            return Err(FormatError::invalid(
                "dentry",
                format!("slot {slot}: {used} slots past the {nr} of the area"),
            ));
        }
        for s in slot..slot + used {
            self.area[s / 8] &= !(1 << (s % 8));
        }
        Ok(())
    }

    /// Points the entry at `slot` at another inode and file type (name unchanged).
    pub fn set_target(&mut self, slot: usize, ino: u32, file_type: u8) -> Result<()> {
        let (nr, _, d0, _) = self.layout;
        if slot >= nr || !test_bit_le(self.area, slot) {
            return Err(FormatError::invalid("dentry", format!("slot {slot} holds no entry")));
        }
        let d = d0 + slot * SIZE_OF_DIR_ENTRY;
        put_u32(self.area, d + 4, ino);
        self.area[d + 10] = file_type;
        Ok(())
    }

    /// Whether no slot at or after `first` is in use.
    pub fn is_empty_from(&self, first: usize) -> bool {
        let (nr, ..) = self.layout;
        (first..nr).all(|s| !test_bit_le(self.area, s))
    }
}

impl DentryArea<'_> {
    /// Copies this (inline) area into an empty dentry block `block`, every slot at the
    /// same index: bitmap, records and names, as F2FS moves an inline directory into
    /// its first dentry block. Fails if the area has more slots than a block.
    pub fn copy_into_block(&self, block: &mut [u8]) -> Result<()> {
        let g = Geometry::of_block("dentry block", block.len())?;
        if self.nr > g.dentries_per_block() {
            return Err(FormatError::invalid(
                "dentry",
                format!("{} slots do not fit a block", self.nr),
            ));
        }
        let (_, bitmap_len, d0, n0) = area_layout(block.len(), Some(g));
        block[..bitmap_len].fill(0);
        block[..self.bitmap.len()].copy_from_slice(self.bitmap);
        block[d0..d0 + self.dentries.len()].copy_from_slice(self.dentries);
        block[n0..n0 + self.names.len()].copy_from_slice(self.names);
        Ok(())
    }
}

/// Buckets at hash level `level` of a directory with `dir_level` extra levels.
pub fn dir_buckets(level: u32, dir_level: u32) -> u64 {
    let l = level + dir_level;
    if l < MAX_DIR_HASH_DEPTH / 2 {
        1u64 << l
    } else {
        1u64 << (MAX_DIR_HASH_DEPTH / 2 - 1)
    }
}

/// Blocks per bucket at hash level `level`.
pub fn bucket_blocks(level: u32) -> u64 {
    if level < MAX_DIR_HASH_DEPTH / 2 {
        2
    } else {
        4
    }
}

/// File block index of the first block of bucket `bucket` at `level`.
pub fn dir_block_index(level: u32, dir_level: u32, bucket: u64) -> u64 {
    let before: u64 = (0..level).map(|i| dir_buckets(i, dir_level) * bucket_blocks(i)).sum();
    before + bucket * bucket_blocks(level)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_remove_retarget_and_move_to_a_block() {
        let mut inline = vec![0u8; 3452];
        let mut area = DentryAreaMut::inline(&mut inline);
        area.insert_at(0, 0, b".", 5, ft::DIR).unwrap();
        area.insert_at(1, 0, b"..", 3, ft::DIR).unwrap();
        let long = [b'x'; 20];
        let at = area.insert(&long, 9, ft::REG_FILE).unwrap();
        assert_eq!(at, 2);
        let at2 = area.insert(b"y", 10, ft::FIFO).unwrap();
        assert_eq!(at2, 5, "three slots for a 20-byte name");
        area.set_target(at2, 11, ft::SOCK).unwrap();
        assert!(area.set_target(40, 1, ft::DIR).is_err(), "a free slot is no entry");
        assert!(!area.is_empty_from(2));
        let mut block = vec![0u8; BLOCK_SIZE];
        area.view().copy_into_block(&mut block).unwrap();
        let moved = DentryArea::block(&block).unwrap();
        let e: Vec<_> = moved
            .entries()
            .unwrap()
            .iter()
            .map(|d| (d.slot, d.ino, d.file_type))
            .collect();
        assert_eq!(
            e,
            vec![
                (0, 5, ft::DIR),
                (1, 3, ft::DIR),
                (2, 9, ft::REG_FILE),
                (5, 11, ft::SOCK)
            ]
        );
        area.remove(at, long.len()).unwrap();
        area.remove(at2, 1).unwrap();
        assert!(area.is_empty_from(2) && !area.is_empty_from(1));
        assert_eq!(area.find_free(3), Some(2));
        assert!(area.remove(area.view().slots(), 1).is_err());
    }
}
