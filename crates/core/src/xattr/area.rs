//! Where an inode's xattr list lives, as the kernel places it: the inline xattr area (only
//! when the inode has the inline xattr flag; its size from `i_inline_xattr_size` under
//! flexible_inline_xattr, else the default), then the xattr node up to its footer. The
//! two read as one byte string.

use crate::{Error, Ino, Result};
use std::ops::Range;
use uf2fs_format::node::{Inode, F2FS_INLINE_XATTR};
use uf2fs_format::xattr::{parse_xattrs, RawXattr, XATTR_ENTRY_HEADER_SIZE, XATTR_HEADER_SIZE};

/// Bytes of the inline xattr area the kernel uses (its `inline_xattr_size`): none
/// without the inline xattr flag, even where the slots are reserved.
pub fn inline_size(inode: &Inode) -> usize {
    if inode.has_inline(F2FS_INLINE_XATTR) {
        4 * inode.inline_xattr_addrs as usize
    } else {
        0
    }
}

/// Byte range of the inline xattr area in the inode block (just before `i_nid`).
pub fn inline_range(inode: &Inode) -> Range<usize> {
    let end = inode.geometry.i_nid_offset();
    end - inline_size(inode)..end
}

/// Most bytes the list can take, header included: the inline area and a whole xattr
/// node (the kernel's `MIN_OFFSET`).
pub fn capacity(inode: &Inode) -> usize {
    (inline_size(inode) + node_area(inode) + 3) & !3
}

/// Largest value any attribute can have (the kernel's `MAX_VALUE_LEN`): the capacity
/// less the header and one entry's fixed part.
pub fn max_value_len(inode: &Inode) -> usize {
    capacity(inode) - XATTR_HEADER_SIZE - XATTR_ENTRY_HEADER_SIZE
}

/// Bytes of an xattr node that hold entries: all of it but the footer.
pub fn node_area(inode: &Inode) -> usize {
    inode.geometry.node_footer_offset()
}

/// The list's bytes: the inline area of `block` (the inode block), then the xattr
/// node's entry space when there is one.
pub fn gather(inode: &Inode, block: &[u8], node: Option<&[u8]>) -> Vec<u8> {
    let mut area = block[inline_range(inode)].to_vec();
    if let Some(n) = node {
        area.extend_from_slice(&n[..node_area(inode)]);
    }
    area
}

/// The entries of `area` (from [`gather`]) of inode `ino`; a damaged list is
/// [`Error::Corrupt`], naming the inode's block (`at`, asked only then).
pub fn parse(ino: Ino, at: impl FnOnce() -> Option<u64>, area: &[u8]) -> Result<Vec<RawXattr>> {
    parse_xattrs(area).map_err(|e| Error::corrupt(format!("xattrs of inode {ino}"), at(), e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use uf2fs_format::node::F2FS_INLINE_DENTRY;

    /// An inode with inline flags `inline`, decoded on a default uf2fs volume (no
    /// flexible_inline_xattr: the default inline xattr size).
    fn inode(sb: &uf2fs_format::superblock::Superblock, inline: u8) -> Inode {
        let mut b = vec![0u8; 4096];
        b[3] = inline;
        Inode::decode(&b, sb).unwrap()
    }

    #[test]
    fn sizes_follow_the_kernel() {
        let tmp = tempfile::tempdir().unwrap();
        let img = tmp.path().join("img");
        let opts = crate::mkfs::MkfsOptions {
            size_bytes: Some(64 << 20),
            ..Default::default()
        };
        crate::mkfs::mkfs(&img, &opts).unwrap();
        let fs = crate::Fs::open(&img, &[]).unwrap();
        let sb = fs.superblock();
        let with = inode(sb, F2FS_INLINE_XATTR);
        assert_eq!(inline_size(&with), 200);
        let end = uf2fs_format::consts::I_NID_OFFSET;
        assert_eq!(inline_range(&with), end - 200..end);
        assert_eq!(capacity(&with), 200 + 4072);
        assert_eq!(max_value_len(&with), 200 + 4072 - 28);
        // An inline dentry directory reserves the slots but, without the flag, keeps
        // no xattrs there.
        let without = inode(sb, F2FS_INLINE_DENTRY);
        assert_eq!(without.inline_xattr_addrs, 50);
        assert_eq!(inline_size(&without), 0);
        assert_eq!(capacity(&without), 4072);
        assert_eq!(max_value_len(&without), 4044);
    }
}
