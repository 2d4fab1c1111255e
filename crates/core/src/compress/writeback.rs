//! Writeback of compressed files on a read-write mount, as the kernel's
//! `f2fs_write_cache_pages` and `f2fs_write_multi_pages` decide it, through the one
//! cluster writer ([`super::place::place_cluster`]) the packer uses too:
//!
//! - a cluster stored compressed whose pages are dirty (some or all) is read back
//!   and decoded, the dirty pages laid over it (`f2fs_prepare_compress_overwrite`),
//!   and the whole cluster written again;
//! - a cluster stored plain whose every page up to the end of the file is dirty, in a
//!   file writeback may compress now ([`super::policy::CompressState::may_compress`]),
//!   is encoded;
//! - either is stored compressed when that saves a block and the cluster lies wholly
//!   inside the file, else plain (the kernel's `f2fs_write_raw_pages`);
//! - every other dirty page (a plain cluster partly dirty, the file's last partial
//!   cluster) is written as any file's page is, where it stands.
//!
//! Reading clusters back for a write goes through [`read_cluster`], which the
//! node-tree writer uses for partial writes into compressed clusters too.

use super::encode::{encode_cluster, ClusterCodec};
use super::place::{place_cluster, ClusterData};
use crate::inode::InodeMut;
use crate::pagecache::DirtyPage;
use crate::tree::Tree;
use crate::{Error, Result};
use uf2fs_format::consts::{COMPRESS_ADDR, NEW_ADDR, NULL_ADDR};

/// The cluster `cluster` of compressed file `inode` as the device holds it (dirty
/// pages not included): one entry per block, `None` for a hole or a block reserved
/// and never written. A compressed cluster is decoded whole.
pub(crate) fn read_cluster(t: &Tree, inode: &InodeMut, cluster: u64) -> Result<Vec<Option<Vec<u8>>>> {
    let c = inode
        .inode
        .compress
        .ok_or_else(|| Error::bug(format!("inode {} has no compression settings", inode.ino)))?;
    let n = 1usize << c.log_cluster_size;
    let first = cluster << c.log_cluster_size;
    let mut addrs = Vec::with_capacity(n);
    for k in 0..n as u64 {
        addrs.push(t.locate(inode, first + k)?.map_or(NULL_ADDR, |l| l.addr));
    }
    let (lo, hi) = t.nodes.main_area();
    let bad = |why: String| {
        Error::corrupt(
            format!("inode {}", inode.ino),
            None,
            format!("compressed cluster {cluster}: {why}"),
        )
    };
    let check = |a: u32| {
        if (a as u64) < lo || (a as u64) >= hi {
            Err(bad(format!("block address {a:#x} outside the main area")))
        } else {
            Ok(a as u64)
        }
    };
    if addrs[0] != COMPRESS_ADDR {
        return addrs
            .iter()
            .map(|&a| match a {
                NULL_ADDR | NEW_ADDR => Ok(None),
                COMPRESS_ADDR => Err(bad("COMPRESS_ADDR past the cluster's first slot".into())),
                a => Ok(Some(crate::device::read_block(t.dev, check(a)?)?)),
            })
            .collect();
    }
    let mut blocks = Vec::new();
    for &a in &addrs[1..] {
        match a {
            NULL_ADDR | NEW_ADDR => break,
            COMPRESS_ADDR => return Err(bad("a second COMPRESS_ADDR".into())),
            a => blocks.push(check(a)?),
        }
    }
    if blocks.is_empty() {
        return Err(bad("no compressed blocks".into()));
    }
    let bs = inode.inode.geometry.block_size();
    let mut raw = vec![0u8; blocks.len() * bs];
    for (i, &a) in blocks.iter().enumerate() {
        t.dev.read_blocks(a, &mut raw[i * bs..(i + 1) * bs])?;
    }
    let mut out = vec![0u8; n * bs];
    super::decompress_cluster(inode.ino, cluster, blocks[0], &c, &raw, &mut out)?;
    Ok(out.chunks(bs).map(|b| Some(b.to_vec())).collect())
}

/// Block `index` of compressed file `inode` when its cluster is stored compressed
/// (decoded); `None` when the cluster is not (the caller reads the block as any).
fn read_compressed_block(t: &Tree, inode: &InodeMut, index: u64) -> Result<Option<Vec<u8>>> {
    let Some(c) = inode.inode.compress.filter(|_| inode.inode.is_compressed()) else {
        return Ok(None);
    };
    let cluster = index >> c.log_cluster_size;
    let first = cluster << c.log_cluster_size;
    if t.locate(inode, first)?.map(|l| l.addr) != Some(COMPRESS_ADDR) {
        return Ok(None);
    }
    let mut blocks = read_cluster(t, inode, cluster)?;
    Ok(blocks[(index - first) as usize].take())
}

/// File block `index` of regular file `inode` as it reads now, decoded when its
/// cluster is stored compressed ([`Tree::read_block`] otherwise: the dirty copy, else
/// the device; `None` for a hole).
pub(crate) fn read_file_block(t: &Tree, inode: &InodeMut, index: u64) -> Result<Option<Vec<u8>>> {
    if let Some(p) = t.pages.get(inode.ino, index) {
        return Ok(Some(p.to_vec()));
    }
    match read_compressed_block(t, inode, index)? {
        Some(b) => Ok(Some(b)),
        None => t.read_block(inode, index),
    }
}

/// Writes the dirty pages of compressed file `inode` that writeback stores by
/// cluster (see the module notes), and answers the others, which the caller writes
/// as plain pages. The pages written leave the cache; `inode` changed (the caller
/// stores it).
pub(crate) fn write_clusters(
    t: &Tree,
    inode: &mut InodeMut,
    pages: Vec<(u64, DirtyPage)>,
) -> Result<Vec<(u64, DirtyPage)>> {
    let Some(c) = inode.inode.compress else {
        return Ok(pages);
    };
    let bs = inode.inode.geometry.block_size();
    let codec = ClusterCodec::from_compression(&c)?.with_block_size(bs);
    let may_compress = t.compress.may_compress(inode.ino);
    let n = codec.cluster_blocks() as u64;
    let eof_blocks = inode.inode.size.div_ceil(bs as u64);
    let mut rest = Vec::new();
    let mut placed_any = false;
    let mut i = 0;
    while i < pages.len() {
        let cluster = pages[i].0 / n;
        let first = cluster * n;
        let j = i + pages[i..].iter().take_while(|(x, _)| *x < first + n).count();
        let group = &pages[i..j];
        i = j;
        let k = eof_blocks.saturating_sub(first).min(n);
        let compressed = t.locate(inode, first)?.map(|l| l.addr) == Some(COMPRESS_ADDR);
        let all_dirty = k == n && group.len() as u64 == n;
        if !compressed && (!all_dirty || !may_compress) {
            rest.extend_from_slice(group);
            continue;
        }
        let mut blocks: Vec<Option<Vec<u8>>> = if compressed {
            read_cluster(t, inode, cluster)?
        } else {
            vec![None; n as usize]
        };
        for (x, p) in group {
            blocks[(x - first) as usize] = Some(p.data.to_vec());
        }
        blocks.truncate(k as usize);
        let log = group[0].1.log;
        let whole = k == n && blocks.iter().all(Option::is_some);
        let encoded = if whole && may_compress {
            let data: Vec<u8> = blocks.iter().flatten().flatten().copied().collect();
            encode_cluster(&codec, &data)?
        } else {
            None
        };
        if encoded.is_none() && !compressed {
            // Nothing saved: written as plain pages where they stand.
            rest.extend_from_slice(group);
            continue;
        }
        let mut tree = Tree {
            dev: t.dev,
            sb: t.sb,
            nodes: t.nodes,
            segs: t.segs,
            pages: t.pages,
            compress: t.compress,
            clusters: t.clusters,
            nid_pool: Vec::new(),
            block_pool: 0,
        };
        let r = match &encoded {
            Some(e) => place_cluster(&mut tree, inode, cluster, ClusterData::Compressed(e), log),
            None => {
                let list: Vec<Option<&[u8]>> = blocks.iter().map(|b| b.as_deref()).collect();
                place_cluster(&mut tree, inode, cluster, ClusterData::Plain(&list), log)
            }
        };
        tree.release_pool();
        r?;
        placed_any = true;
        for (x, p) in group {
            t.pages.remove_written(inode.ino, *x, &p.data);
        }
    }
    if placed_any {
        t.clusters.forget_inode(inode.ino);
    }
    Ok(rest)
}
