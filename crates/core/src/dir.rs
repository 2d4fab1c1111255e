//! Directories: inline dentries, dentry blocks and the multi-level hash lookup.

use crate::data::Mapper;
use crate::device::read_block;
use crate::inode::InodeRef;
use crate::{DirEntry, Error, FileKind, Fs, Ino, Result};
use uf2fs_format::casefold::DirName;
use uf2fs_format::consts::{F2FS_NAME_LEN, MAX_DIR_HASH_DEPTH};
use uf2fs_format::dentry::{bucket_blocks, dir_block_index, dir_buckets, ft, DentryArea, RawDentry};
use uf2fs_format::node::F2FS_INLINE_DENTRY;

fn kind_of(file_type: u8) -> Option<FileKind> {
    Some(match file_type {
        ft::REG_FILE => FileKind::File,
        ft::DIR => FileKind::Dir,
        ft::CHRDEV => FileKind::CharDev,
        ft::BLKDEV => FileKind::BlockDev,
        ft::FIFO => FileKind::Fifo,
        ft::SOCK => FileKind::Socket,
        ft::SYMLINK => FileKind::Symlink,
        _ => return None,
    })
}

impl Mapper<'_> {
    fn dir_err(&self, blk: Option<u64>, e: impl ToString) -> Error {
        Error::corrupt(format!("directory inode {}", self.inode.ino), blk, e.to_string())
    }

    fn to_entry(&self, d: &RawDentry<'_>, blk: Option<u64>) -> Result<DirEntry> {
        let kind = kind_of(d.file_type).ok_or_else(|| {
            self.dir_err(
                blk,
                format!(
                    "entry {:?} has file type {}",
                    crate::error::show_name(d.name),
                    d.file_type
                ),
            )
        })?;
        // A name with '/' or NUL can never be created through the VFS: only a damaged or
        // hostile image holds one, and handing it on would let a path escape.
        if d.name.iter().any(|&c| c == b'/' || c == 0) {
            let shown = crate::error::show_name(d.name);
            return Err(self.dir_err(blk, format!("entry name {shown:?} contains '/' or NUL")));
        }
        Ok(DirEntry {
            name: d.name.to_vec(),
            ino: d.ino,
            kind,
        })
    }

    /// Calls `f` on every dentry area of the directory, with its block address (None for
    /// inline dentries). `f` returns true to stop.
    fn for_each_area(&self, mut f: impl FnMut(&DentryArea<'_>, Option<u64>) -> Result<bool>) -> Result<()> {
        let i = &self.inode.inode;
        if i.has_inline(F2FS_INLINE_DENTRY) {
            let area = DentryArea::inline(&self.inode.block[i.inline_data_range()]);
            f(&area, None)?;
            return Ok(());
        }
        let blocks = i.size.div_ceil(i.geometry.block_size() as u64);
        if self.pages.is_some_and(|p| p.has_inode(self.inode.ino)) {
            return self.for_each_area_dirty(blocks, f);
        }
        let mut stop = false;
        self.for_each_block(blocks, |_, addr| {
            if stop {
                return Ok(());
            }
            let b = read_block(self.dev, addr)?;
            let area = DentryArea::block(&b).map_err(|e| self.dir_err(Some(addr), e))?;
            stop = f(&area, Some(addr))?;
            Ok(())
        })
    }

    /// [`Mapper::for_each_area`] over a directory with dirty blocks: each block from
    /// the page cache when dirty there, else from the device.
    fn for_each_area_dirty(
        &self,
        blocks: u64,
        mut f: impl FnMut(&DentryArea<'_>, Option<u64>) -> Result<bool>,
    ) -> Result<()> {
        let mut fb = 0;
        while fb < blocks {
            if let Some(b) = self.pages.and_then(|p| p.get(self.inode.ino, fb)) {
                let area = DentryArea::block(&b).map_err(|e| self.dir_err(None, e))?;
                if f(&area, None)? {
                    return Ok(());
                }
                fb += 1;
                continue;
            }
            match self.chunk(fb)? {
                crate::data::Chunk::Hole { end } => fb = end.min(blocks),
                crate::data::Chunk::Mapped {
                    first,
                    node,
                    in_inode,
                    slot,
                    ..
                } => {
                    if let Some(addr) = self.addr_in(&node, in_inode, slot + (fb - first) as usize)? {
                        let b = read_block(self.dev, addr)?;
                        let area = DentryArea::block(&b).map_err(|e| self.dir_err(Some(addr), e))?;
                        if f(&area, Some(addr))? {
                            return Ok(());
                        }
                    }
                    fb += 1;
                }
            }
        }
        Ok(())
    }

    /// All entries but "." and "..".
    pub fn read_dir(&self) -> Result<Vec<DirEntry>> {
        self.inode.check_decodable()?;
        let mut out = Vec::new();
        self.for_each_area(|area, blk| {
            for d in area.entries().map_err(|e| self.dir_err(blk, e))? {
                if d.name != b"." && d.name != b".." {
                    out.push(self.to_entry(&d, blk)?);
                }
            }
            Ok(false)
        })?;
        Ok(out)
    }

    /// Finds `name` by scanning every entry whatever its hash (the linear search of a
    /// casefolded directory after its hash lookup missed).
    fn lookup_linear(&self, name: &DirName<'_>) -> Result<Option<Ino>> {
        let mut found = None;
        self.for_each_area(|area, blk| {
            found = area
                .find_name(name, false)
                .map_err(|e| self.dir_err(blk, e))?
                .map(|d| d.ino);
            Ok(found.is_some())
        })?;
        Ok(found)
    }

    /// Looks `name` up the way F2FS does: hash, then one bucket per level; in a
    /// casefolded directory by folded name ([`crate::casefold`]), then by a linear
    /// search when that misses.
    pub fn lookup(&self, name: &[u8]) -> Result<Option<Ino>> {
        if name.len() > F2FS_NAME_LEN {
            return Err(Error::NameTooLong(crate::error::show_name(name)));
        }
        self.inode.check_decodable()?;
        let i = &self.inode.inode;
        let name = crate::casefold::dir_name(self.sb, i, self.inode.ino, name)?;
        let found = self.lookup_hashed(&name)?;
        if found.is_none() && crate::casefold::linear_fallback(self.sb, i) {
            return self.lookup_linear(&name);
        }
        Ok(found)
    }

    fn lookup_hashed(&self, name: &DirName<'_>) -> Result<Option<Ino>> {
        let i = &self.inode.inode;
        let hash = name.hash();
        if i.has_inline(F2FS_INLINE_DENTRY) {
            let area = DentryArea::inline(&self.inode.block[i.inline_data_range()]);
            return Ok(area
                .find_name(name, true)
                .map_err(|e| self.dir_err(None, e))?
                .map(|d| d.ino));
        }
        let depth = i.current_depth.min(MAX_DIR_HASH_DEPTH);
        let dir_level = i.dir_level as u32;
        let size_blocks = i.size.div_ceil(i.geometry.block_size() as u64);
        for level in 0..depth.max(1) {
            let bucket = hash as u64 % dir_buckets(level, dir_level);
            let first = dir_block_index(level, dir_level, bucket);
            for fb in first..first + bucket_blocks(level) {
                if fb >= size_blocks {
                    break;
                }
                if let Some(ino) = self.lookup_in_block(fb, name)? {
                    return Ok(Some(ino));
                }
            }
        }
        Ok(None)
    }

    fn lookup_in_block(&self, fb: u64, name: &DirName<'_>) -> Result<Option<Ino>> {
        if let Some(b) = self.pages.and_then(|p| p.get(self.inode.ino, fb)) {
            let area = DentryArea::block(&b).map_err(|e| self.dir_err(None, e))?;
            return Ok(area
                .find_name(name, true)
                .map_err(|e| self.dir_err(None, e))?
                .map(|d| d.ino));
        }
        let crate::data::Chunk::Mapped {
            node,
            in_inode,
            slot,
            first,
            ..
        } = self.chunk(fb)?
        else {
            return Ok(None);
        };
        let Some(addr) = self.addr_in(&node, in_inode, slot + (fb - first) as usize)? else {
            return Ok(None);
        };
        let b = read_block(self.dev, addr)?;
        let area = DentryArea::block(&b).map_err(|e| self.dir_err(Some(addr), e))?;
        Ok(area
            .find_name(name, true)
            .map_err(|e| self.dir_err(Some(addr), e))?
            .map(|d| d.ino))
    }
}

/// Symlinks followed while resolving one path, as Linux's MAXSYMLINKS.
const MAX_SYMLINKS: usize = 40;

impl Fs {
    /// Directory inode `ino` ([`Error::NotDir`] for any other kind).
    pub(crate) fn dir_inode(&self, ino: Ino) -> Result<InodeRef> {
        let i = self.inode(ino)?;
        if i.kind()? != FileKind::Dir {
            return Err(Error::NotDir(format!("inode {ino}")));
        }
        Ok(i)
    }

    /// Look `name` up in directory `dir` ("." and ".." work too). `Error::NotFound` if absent.
    pub fn lookup(&self, dir: Ino, name: &[u8]) -> Result<Ino> {
        self.stop_on_damage(self.lookup_inner(dir, name))
    }

    /// [`Fs::lookup`], before damage it reports stops the volume.
    fn lookup_inner(&self, dir: Ino, name: &[u8]) -> Result<Ino> {
        let d = self.dir_inode(dir)?;
        if name == b"." {
            return Ok(dir);
        }
        match self.mapper(&d).lookup(name)? {
            Some(ino) => Ok(ino),
            None if name == b".." && dir == self.root() => Ok(dir),
            None => Err(Error::NotFound(crate::error::show_name(name))),
        }
    }

    /// Resolve an absolute path inside the image ("/" is the root). Intermediate symlinks
    /// are followed (relative to the image's root); the last component is followed only
    /// when `follow_last` is true.
    pub fn resolve(&self, path: &[u8], follow_last: bool) -> Result<Ino> {
        let shown = || crate::error::show_name(path);
        // Components still to walk, last first; symlink targets are spliced in.
        let mut todo: Vec<Vec<u8>> = path
            .split(|&c| c == b'/')
            .filter(|c| !c.is_empty())
            .rev()
            .map(<[u8]>::to_vec)
            .collect();
        let mut stack: Vec<Ino> = vec![self.root()];
        let mut links = 0;
        while let Some(comp) = todo.pop() {
            let cur = *stack.last().unwrap_or(&self.root());
            if comp == b"." {
                continue;
            }
            if comp == b".." {
                if stack.len() > 1 {
                    stack.pop();
                }
                continue;
            }
            let ino = match self.lookup(cur, &comp) {
                Err(Error::NotDir(_)) => return Err(Error::NotDir(shown())),
                Err(Error::NotFound(_)) => return Err(Error::NotFound(shown())),
                r => r?,
            };
            let is_last = todo.is_empty();
            let st = self.stat(ino)?;
            if st.kind == FileKind::Symlink && (!is_last || follow_last) {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(Error::Loop(shown()));
                }
                let target = self.read_link(ino)?;
                if target.first() == Some(&b'/') {
                    stack.truncate(1);
                }
                todo.extend(
                    target
                        .split(|&c| c == b'/')
                        .filter(|c| !c.is_empty())
                        .rev()
                        .map(<[u8]>::to_vec),
                );
                continue;
            }
            stack.push(ino);
        }
        Ok(*stack.last().unwrap_or(&self.root()))
    }

    /// All entries of a directory except "." and "..", in on-disk order.
    pub fn read_dir(&self, dir: Ino) -> Result<Vec<DirEntry>> {
        self.stop_on_damage(self.read_dir_inner(dir))
    }

    /// [`Fs::read_dir`], before damage it reports stops the volume.
    fn read_dir_inner(&self, dir: Ino) -> Result<Vec<DirEntry>> {
        let d = self.dir_inode(dir)?;
        self.mapper(&d).read_dir()
    }
}
