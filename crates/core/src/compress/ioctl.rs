//! The compression ioctls of F2FS on a read-write file system, as Linux's file.c
//! serves them: `F2FS_IOC_GET_COMPRESS_BLOCKS` ([`Fs::compress_blocks`]),
//! `RELEASE_COMPRESS_BLOCKS` and `RESERVE_COMPRESS_BLOCKS`
//! ([`Fs::release_compress_blocks`], [`Fs::reserve_compress_blocks`]),
//! `COMPRESS_FILE` and `DECOMPRESS_FILE` ([`Fs::recompress_file`]) and
//! `GET/SET_COMPRESS_OPTION` ([`Fs::compress_option`], [`Fs::set_compress_option`]).
//!
//! Errors map to Linux's errnos: no compression feature [`Error::Unsupported`]
//! (EOPNOTSUPP), not a compressed file or a file in the wrong state
//! [`Error::Invalid`] (EINVAL), `COMPRESS_FILE`/`DECOMPRESS_FILE` outside
//! `compress_mode=user` EOPNOTSUPP, a file with blocks whose options change
//! [`Error::FileTooBig`] (EFBIG), no room to reserve [`Error::NoSpace`] (ENOSPC).

use super::policy::CompressMode;
use crate::inode::InodeMut;
use crate::ops::{need, Op};
use crate::tree::{node_log, set_slot, slot_of, Tree};
use crate::{Error, FileKind, Fs, Ino, Result};
use uf2fs_format::consts::{COMPRESS_ADDR, NEW_ADDR, NULL_ADDR};
use uf2fs_format::node::{NodeFooter, F2FS_COMPRESS_RELEASED, MAX_COMPRESS_LOG_SIZE, MIN_COMPRESS_LOG_SIZE};
use uf2fs_format::superblock::FEATURE_COMPRESSION;

/// Blocks one operation of [`Fs::recompress_file`] dirties at most.
const REDIRTY_BLOCKS: u64 = 256;

impl Fs {
    fn compression_volume(&self) -> Result<()> {
        if self.superblock().has(FEATURE_COMPRESSION) {
            Ok(())
        } else {
            Err(Error::Unsupported {
                feature: "compression",
                detail: "the volume has no compression feature".into(),
            })
        }
    }

    fn compressed_inode(&self, ino: Ino) -> Result<crate::inode::InodeRef> {
        self.compression_volume()?;
        let i = self.inode(ino)?;
        if !i.inode.is_compressed() {
            return Err(Error::Invalid(format!("inode {ino} is not a compressed file")));
        }
        Ok(i)
    }

    /// `F2FS_IOC_GET_COMPRESS_BLOCKS`: the blocks compression saved in file `ino`
    /// (`i_compr_blocks`; clusters still in the page cache count once written back).
    pub fn compress_blocks(&self, ino: Ino) -> Result<u64> {
        let i = self.compressed_inode(ino)?;
        Ok(i.inode.compress.map_or(0, |c| c.compr_blocks))
    }

    /// `F2FS_IOC_GET_COMPRESS_OPTION`: the algorithm (`i_compress_algorithm`) and
    /// `log2` of the cluster size of compressed file `ino`.
    pub fn compress_option(&self, ino: Ino) -> Result<(u8, u8)> {
        let i = self.compressed_inode(ino)?;
        let c = i
            .inode
            .compress
            .ok_or_else(|| Error::bug("compressed file without settings"))?;
        Ok((c.algorithm, c.log_cluster_size))
    }

    /// `F2FS_IOC_SET_COMPRESS_OPTION`: gives compressed file `ino`, which has no
    /// blocks yet, `algorithm` and clusters of `2^log_cluster_size` blocks (the level
    /// back to the algorithm's default; checksums kept). Out-of-range values are
    /// EINVAL, a file with blocks (written or
    /// waiting in the page cache) EFBIG.
    pub fn set_compress_option(&self, ino: Ino, algorithm: u8, log_cluster_size: u8) -> Result<()> {
        self.compression_volume()?;
        if !(MIN_COMPRESS_LOG_SIZE..=MAX_COMPRESS_LOG_SIZE).contains(&log_cluster_size)
            || algorithm > uf2fs_format::node::compress_algorithm::LZORLE
        {
            return Err(Error::Invalid(format!(
                "compression algorithm {algorithm} with clusters of 2^{log_cluster_size} blocks"
            )));
        }
        let rw = self.rw()?;
        let mut op = self.begin_op()?;
        let r = (|| {
            let _g = rw.lock_inodes(&[ino]);
            let mut i = op.load(ino)?;
            let Some(mut c) = i.inode.compress.filter(|_| i.inode.is_compressed()) else {
                return Err(Error::Invalid(format!("inode {ino} is not a compressed file")));
            };
            if i.inode.blocks > 1 {
                return Err(Error::FileTooBig(format!(
                    "inode {ino} has blocks: its compression is set"
                )));
            }
            op.ensure_room(need([0, 0, 0, 0, 1, 0], 0), 0)?;
            op.commit();
            c.algorithm = algorithm;
            c.log_cluster_size = log_cluster_size;
            c.flag &= uf2fs_format::node::COMPRESS_CHKSUM;
            i.inode.compress = Some(c);
            i.inode.ctime = crate::inode::now();
            op.t.store_inode(i)
        })();
        op.end(r)
    }

    /// `F2FS_IOC_RELEASE_COMPRESS_BLOCKS`: writes file `ino` back, then gives back the
    /// blocks its compressed clusters keep reserved (their `NEW_ADDR` slots become
    /// `NULL_ADDR`) and marks it released (`F2FS_COMPRESS_RELEASED`): from then on
    /// writes and truncates are EPERM until [`Fs::reserve_compress_blocks`]. Returns
    /// the blocks given back. A file released already is EINVAL.
    pub fn release_compress_blocks(&self, ino: Ino) -> Result<u64> {
        let i = self.compressed_inode(ino)?;
        if i.inode.has_inline(F2FS_COMPRESS_RELEASED) {
            return Err(Error::Invalid(format!("inode {ino}'s blocks are released already")));
        }
        drop(i);
        self.writeback_inode(ino)?;
        self.change_reservations(ino, true)
    }

    /// `F2FS_IOC_RESERVE_COMPRESS_BLOCKS`: reserves again the blocks a released
    /// compressed file's clusters gave back and clears `F2FS_COMPRESS_RELEASED`.
    /// Returns the blocks reserved: 0 (and nothing done) when the file records saved
    /// blocks (it keeps its reservations), EINVAL for a file that is not released,
    /// ENOSPC when the volume has no room for them.
    pub fn reserve_compress_blocks(&self, ino: Ino) -> Result<u64> {
        let i = self.compressed_inode(ino)?;
        if i.inode.compress.is_some_and(|c| c.compr_blocks != 0) {
            return Ok(0);
        }
        if !i.inode.has_inline(F2FS_COMPRESS_RELEASED) {
            return Err(Error::Invalid(format!("inode {ino}'s blocks are not released")));
        }
        drop(i);
        self.change_reservations(ino, false)
    }

    fn change_reservations(&self, ino: Ino, release: bool) -> Result<u64> {
        let rw = self.rw()?;
        let mut op = self.begin_op()?;
        let r = (|| {
            let _g = rw.lock_inodes(&[ino]);
            let mut i = op.load(ino)?;
            op.ensure_room(need([0, 0, 0, 0, 4, 2], 0), 0)?;
            op.commit();
            let n = reservations(&mut op.t, &mut i, release)?;
            if release {
                i.inode.inline |= F2FS_COMPRESS_RELEASED;
            } else {
                i.inode.inline &= !F2FS_COMPRESS_RELEASED;
            }
            i.inode.ctime = crate::inode::now();
            op.t.store_inode(i)?;
            Ok(n)
        })();
        op.end(r)
    }

    /// `F2FS_IOC_COMPRESS_FILE` (`compress`) and `F2FS_IOC_DECOMPRESS_FILE`: under
    /// `compress_mode=user` (else EOPNOTSUPP), rewrites every cluster of compressed
    /// file `ino` with data, compressed where that saves a block, or all plain. A
    /// released file is EINVAL.
    pub fn recompress_file(&self, ino: Ino, compress: bool) -> Result<()> {
        let i = self.compressed_inode(ino)?;
        let rw = self.rw()?;
        if rw.compress().options().mode != CompressMode::User {
            return Err(Error::Unsupported {
                feature: "compression",
                detail: "compressing or decompressing a file on request needs compress_mode=user".into(),
            });
        }
        if i.inode.has_inline(F2FS_COMPRESS_RELEASED) {
            return Err(Error::Invalid(format!("inode {ino}'s blocks are released")));
        }
        let blocks = i.inode.size.div_ceil(i.inode.geometry.block_size() as u64);
        drop(i);
        self.writeback_inode(ino)?;
        if !compress && self.compress_blocks(ino)? == 0 {
            return Ok(());
        }
        rw.compress().set_enabled(ino, compress);
        let r = (|| {
            let mut from = 0;
            while from < blocks {
                let to = (from + REDIRTY_BLOCKS).min(blocks);
                let mut op = self.begin_op()?;
                let r = op.redirty(ino, from, to);
                op.end(r)?;
                self.writeback_inode(ino)?;
                from = to;
            }
            Ok(())
        })();
        rw.compress().set_enabled(ino, false);
        r
    }
}

impl Op<'_> {
    /// Makes blocks `from..to` of compressed file `ino` that hold data dirty again
    /// (decoded), for writeback to store their clusters anew.
    fn redirty(&mut self, ino: Ino, from: u64, to: u64) -> Result<()> {
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino]);
        let i = self.load(ino)?;
        if i.kind()? != FileKind::File {
            return Err(Error::Invalid(format!("inode {ino} is not a regular file")));
        }
        self.ensure_room(need([0, 0, 0, 0, 1, 0], 0), 0)?;
        self.commit();
        let log = crate::segment::LogType::ColdData;
        for index in from..to {
            if self.t.pages.get(ino, index).is_some() {
                continue;
            }
            let Some(l) = self.t.locate(&i, index)? else { continue };
            if l.addr == NULL_ADDR {
                continue;
            }
            if let Some(b) = super::writeback::read_file_block(&self.t, &i, index)? {
                self.t.pages.put(ino, index, b, log);
            }
        }
        Ok(())
    }
}

/// Releases (`release`) or reserves again the slots of `inode`'s compressed clusters
/// past their compressed blocks, as `release_compress_blocks` and
/// `reserve_compress_blocks` do: `NEW_ADDR` to `NULL_ADDR` or back, `i_blocks` and
/// `i_compr_blocks` down or up by the cluster's `COMPRESS_ADDR` and those slots, one
/// reservation each. Returns the slots changed (with their `COMPRESS_ADDR`).
fn reservations(t: &mut Tree, inode: &mut InodeMut, release: bool) -> Result<u64> {
    let Some(c) = inode.inode.compress else {
        return Ok(0);
    };
    let n = 1usize << c.log_cluster_size;
    let clusters = inode
        .inode
        .size
        .div_ceil(inode.inode.geometry.block_size() as u64)
        .div_ceil(n as u64);
    let mut total = 0u64;
    for cluster in 0..clusters {
        let first = cluster << c.log_cluster_size;
        let Some(loc) = t.locate(inode, first)? else { continue };
        if loc.addr != COMPRESS_ADDR {
            continue;
        }
        let mut node = if loc.in_inode {
            None
        } else {
            Some(t.nodes.read(t.dev, loc.nid, inode.ino)?.to_vec())
        };
        let get = |inode: &InodeMut, node: &Option<Vec<u8>>, k: usize| match node {
            Some(b) => slot_of(b, loc.slot + k),
            None => Ok(inode.slot(loc.slot + k)),
        };
        let (from, to) = if release {
            (NEW_ADDR, NULL_ADDR)
        } else {
            (NULL_ADDR, NEW_ADDR)
        };
        let slots: Vec<usize> = (1..n)
            .map(|k| get(inode, &node, k).map(|a| (k, a)))
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .filter(|&(_, a)| a == from)
            .map(|(k, _)| k)
            .collect();
        let count = slots.len() as u64 + 1;
        if release {
            crate::lockrank::lock_segments(t.segs).release_new_blocks(count);
            inode.inode.blocks -= count;
        } else {
            t.reserve_blocks(count)?;
            inode.inode.blocks += count;
        }
        for k in slots {
            match &mut node {
                Some(b) => set_slot(b, loc.slot + k, to)?,
                None => inode.set_slot(loc.slot + k, to),
            }
        }
        if let Some(cm) = inode.inode.compress.as_mut() {
            if release {
                cm.compr_blocks = cm.compr_blocks.saturating_sub(count);
            } else {
                cm.compr_blocks += count;
            }
        }
        if let Some(b) = node {
            let offset = NodeFooter::decode(&b)
                .map_err(|e| Error::corrupt(format!("node {}", loc.nid), None, e.to_string()))?
                .offset();
            t.nodes
                .store_dirty(loc.nid, b, node_log(inode.inode.geometry, offset, inode.is_dir()));
        }
        total += count;
    }
    Ok(total)
}
