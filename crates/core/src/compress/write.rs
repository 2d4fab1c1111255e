//! Writing compressed files on a read-write file system: turning an empty regular
//! file into a compressed one ([`Fs::set_compression`]) and writing its data a cluster
//! at a time ([`Fs::write_cluster`], or [`Fs::write_cluster_data`] for clusters the
//! caller encoded itself, on other threads). Each call is one operation
//! ([`crate::ops::Op`]): room checked first, the cluster placed by [`super::place`].
//!
//! Data goes to the cold data log, as the kernel sends the data of files it
//! compresses.

use super::encode::{encode_cluster, ClusterCodec};
use super::place::{place_cluster, ClusterData, Placed};
use super::policy::CompressOptions;
use crate::file::blocks::plan_range;
use crate::inode::now;
use crate::ops::Op;
use crate::segment::{LogType, SpaceNeed};
use crate::{Error, FileKind, Fs, Ino, Result};
use uf2fs_format::node::{F2FS_COMPRESS_RELEASED, F2FS_COMPR_FL, F2FS_DATA_EXIST, F2FS_INLINE_DATA};
use uf2fs_format::superblock::FEATURE_COMPRESSION;

/// The log compressed files' data goes to.
const LOG: LogType = LogType::ColdData;

/// How a cluster was stored ([`Fs::write_cluster`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterWrite {
    /// Compressed into `blocks` blocks.
    Compressed {
        /// Blocks written.
        blocks: u64,
    },
    /// Plain (compression would not save a block, or the cluster is not whole).
    Plain {
        /// Blocks written.
        blocks: u64,
    },
}

/// A cluster's contents as the caller gives them: `data` from the cluster's first
/// byte (at most a cluster; a short last block is padded with zeros) and which of its
/// blocks are holes (`holes[i]` for block `i`; missing entries are data).
fn plain_blocks(data: &[u8], holes: &[bool], bs: usize) -> Vec<Option<Vec<u8>>> {
    data.chunks(bs)
        .enumerate()
        .map(|(i, c)| {
            (!holes.get(i).copied().unwrap_or(false)).then(|| {
                let mut b = c.to_vec();
                b.resize(bs, 0);
                b
            })
        })
        .collect()
}

impl Fs {
    /// Applies the compression mount options from now on ([`CompressOptions::check`]
    /// first; read-write only, else [`Error::ReadOnly`]).
    pub fn set_compress_options(&self, options: CompressOptions) -> Result<()> {
        options.check()?;
        self.rw()?.compress().set_options(options);
        Ok(())
    }

    /// The compression mount options in force (the kernel's defaults on a read-only
    /// file system).
    pub fn compress_options(&self) -> CompressOptions {
        self.rw().map(|rw| rw.compress().options()).unwrap_or_default()
    }

    /// Makes empty regular file `ino` a compressed file with `codec`'s settings, as
    /// `chattr +c` on an empty file does with the mount's settings
    /// (`F2FS_COMPR_FL`, the inode's compression fields, no inline data). With
    /// `released`, the file keeps no reservations for its compressed clusters
    /// (`F2FS_COMPRESS_RELEASED`, as sload's `-r` writes read-only files: unused
    /// cluster slots are `NULL_ADDR`; Linux then refuses writes to it until
    /// `F2FS_IOC_RESERVE_COMPRESS_BLOCKS`). Needs the volume's compression feature
    /// and an inode with room for the compression fields.
    pub fn set_compression(&self, ino: Ino, codec: &ClusterCodec, released: bool) -> Result<()> {
        if !self.superblock().has(FEATURE_COMPRESSION) {
            return Err(Error::Unsupported {
                feature: "compression",
                detail: "the volume has no compression feature".into(),
            });
        }
        let mut op = self.begin_op()?;
        let r = op.set_compression(ino, codec, released);
        op.end(r)
    }

    /// Writes cluster `cluster` of compressed file `ino`: `data` holds the cluster
    /// from its first byte (at most a cluster; the last block may be short), `holes`
    /// marks blocks to leave as holes (may be empty). A whole cluster without holes is
    /// compressed with the file's settings and stored compressed when that saves a
    /// block ([`encode_cluster`]); otherwise it is stored plain. `i_size` grows to
    /// cover `data`. Returns how it was stored.
    pub fn write_cluster(&self, ino: Ino, cluster: u64, data: &[u8], holes: &[bool]) -> Result<ClusterWrite> {
        let i = self.inode(ino)?;
        let c = i
            .inode
            .compress
            .filter(|_| i.inode.is_compressed())
            .ok_or_else(|| Error::Invalid(format!("inode {ino} is not a compressed file")))?;
        let bs = i.inode.geometry.block_size();
        let codec = ClusterCodec::from_compression(&c)?.with_block_size(bs);
        drop(i);
        let end = (cluster << codec.log_cluster_size()) * bs as u64 + data.len() as u64;
        let whole = data.len() == codec.cluster_bytes() && !holes.iter().any(|&h| h);
        let encoded = if whole { encode_cluster(&codec, data)? } else { None };
        if let Some(e) = &encoded {
            let placed = self.write_cluster_data(ino, cluster, ClusterData::Compressed(e), end)?;
            return Ok(ClusterWrite::Compressed { blocks: placed.written });
        }
        let owned = plain_blocks(data, holes, bs);
        let list: Vec<Option<&[u8]>> = owned.iter().map(|b| b.as_deref()).collect();
        let placed = self.write_cluster_data(ino, cluster, ClusterData::Plain(&list), end)?;
        Ok(ClusterWrite::Plain { blocks: placed.written })
    }

    /// Places cluster `cluster` of compressed file `ino` as `data` says (encoded by
    /// the caller with [`encode_cluster`] and the file's [`ClusterCodec`], or plain
    /// blocks), dropping what it held, and grows `i_size` to `end` bytes when it is
    /// smaller. A plain cluster of holes only, where the file has no node yet, changes
    /// nothing but the size.
    pub fn write_cluster_data(&self, ino: Ino, cluster: u64, data: ClusterData, end: u64) -> Result<Placed> {
        self.with_room(|fs| {
            let mut op = fs.begin_op()?;
            let r = op.write_cluster(ino, cluster, data, end);
            op.end(r)
        })
    }
}

impl Op<'_> {
    fn set_compression(&mut self, ino: Ino, codec: &ClusterCodec, released: bool) -> Result<()> {
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino]);
        let mut i = self.load(ino)?;
        if i.kind()? != FileKind::File {
            return Err(Error::Invalid(format!("inode {ino} is not a regular file")));
        }
        if i.inode.size != 0 || (!i.is_inline() && (0..i.inode.addrs_per_inode()).any(|s| i.slot(s) != 0)) {
            return Err(Error::Invalid(format!(
                "inode {ino} has data: its compression cannot change"
            )));
        }
        if (i.inode.extra_isize as usize) < uf2fs_format::node::F2FS_TOTAL_EXTRA_ATTR_SIZE {
            return Err(Error::Unsupported {
                feature: "compression",
                detail: format!("inode {ino} has no room for compression settings"),
            });
        }
        self.ensure_room(crate::ops::need([0, 0, 0, 0, 1, 0], 0), 0)?;
        self.commit();
        if i.inode.has_inline(F2FS_INLINE_DATA) {
            // The empty inline area becomes address slots: all NULL_ADDR.
            i.inode.inline &= !(F2FS_INLINE_DATA | F2FS_DATA_EXIST);
            for s in 0..i.inode.addrs_per_inode() {
                i.set_slot(s, 0);
            }
        }
        i.inode.flags |= F2FS_COMPR_FL;
        i.inode.compress = Some(codec.compression());
        if released {
            i.inode.inline |= F2FS_COMPRESS_RELEASED;
        } else {
            i.inode.inline &= !F2FS_COMPRESS_RELEASED;
        }
        i.inode.ctime = now();
        self.t.store_inode(i)
    }

    fn write_cluster(&mut self, ino: Ino, cluster: u64, data: ClusterData, end: u64) -> Result<Placed> {
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino]);
        let mut i = self.load(ino)?;
        let Some(c) = i.inode.compress.filter(|_| i.inode.is_compressed()) else {
            return Err(Error::Invalid(format!("inode {ino} is not a compressed file")));
        };
        let n = 1u64 << c.log_cluster_size;
        super::place::check_cluster_data(&data, n as usize, i.inode.geometry.block_size())?;
        let first = cluster
            .checked_mul(n)
            .filter(|f| f + n <= crate::file::blocks::max_blocks(&i))
            .ok_or_else(|| Error::FileTooBig(format!("cluster {cluster} of inode {ino}")))?;
        let plan = plan_range(&self.t, &i, first, first + n)?;
        let mut need = SpaceNeed::default();
        need.per_log[LOG as usize] += n;
        need.per_log[LogType::WarmNode as usize] += 1 + plan.dnodes + plan.new_direct;
        need.per_log[LogType::ColdNode as usize] += plan.indirect + plan.new_indirect;
        need.new_blocks = n + plan.new_direct + plan.new_indirect;
        self.ensure_room(need, (plan.new_direct + plan.new_indirect) as usize)?;
        let empty = matches!(data, ClusterData::Plain(l) if l.iter().all(Option::is_none));
        let placed = if empty && self.t.locate(&i, first)?.is_none() {
            Placed::default()
        } else {
            self.commit();
            place_cluster(&mut self.t, &mut i, cluster, data, LOG)?
        };
        self.commit();
        i.inode.size = i.inode.size.max(end);
        let t = now();
        i.inode.mtime = t;
        i.inode.ctime = t;
        self.t.store_inode(i)?;
        Ok(placed)
    }
}
