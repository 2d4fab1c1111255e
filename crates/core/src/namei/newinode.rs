//! New inodes, set up as F2FS's `f2fs_new_inode` and `f2fs_init_inode_metadata` set
//! them up with the default mount options (inline_xattr, inline_data, inline_dentry):
//!
//! | field            | value                                                          |
//! |------------------|----------------------------------------------------------------|
//! | `i_inline`       | inline xattr always; extra attrs when the volume has extra_attr; inline dentry for directories; inline data for regular files and symlinks |
//! | `i_extra_isize`  | 36 (every extra field) under extra_attr, else 0                 |
//! | inline xattr     | 50 slots (200 bytes)                                           |
//! | `i_links`        | 1; 2 for a directory ("." names it too)                        |
//! | `i_size`         | 0; the inline dentry area's size for a directory; the target length for a symlink |
//! | `i_blocks`       | 1 (the inode block)                                            |
//! | `i_current_depth`| 1 for a directory, else 0                                      |
//! | `i_flags`        | the parent's inheritable flags (masked by file type); `INDEX` for directories |
//! | `i_generation`   | random                                                         |
//! | times            | now (crtime too, under inode_crtime)                           |
//! | `i_pino`, `i_name` | the parent and the name                                      |
//! | footer           | nid = ino, cold mark unless a directory                        |

use crate::inode::{now, InodeMut};
use crate::tree::new_node_block;
use crate::{FileKind, Ino};
use uf2fs_format::consts::DEFAULT_INLINE_XATTR_ADDRS;
use uf2fs_format::dentry::{ft, DentryAreaMut};
use uf2fs_format::node::{
    Inode, F2FS_EXTRA_ATTR, F2FS_INLINE_DATA, F2FS_INLINE_DENTRY, F2FS_INLINE_XATTR, F2FS_TOTAL_EXTRA_ATTR_SIZE,
};
use uf2fs_format::superblock::{Superblock, FEATURE_EXTRA_ATTR, FEATURE_INODE_CRTIME};

const SYNC_FL: u32 = super::flags::FS_SYNC_FL;
const NODUMP_FL: u32 = super::flags::FS_NODUMP_FL;
const NOATIME_FL: u32 = super::flags::FS_NOATIME_FL;
const INDEX_FL: u32 = super::flags::FS_INDEX_FL;
const DIRSYNC_FL: u32 = super::flags::FS_DIRSYNC_FL;
const PROJINHERIT_FL: u32 = super::flags::FS_PROJINHERIT_FL;
const CASEFOLD_FL: u32 = super::flags::FS_CASEFOLD_FL;
/// Flags a new inode takes from its parent (`F2FS_FL_INHERITED`).
const INHERITED: u32 = SYNC_FL | NODUMP_FL | NOATIME_FL | DIRSYNC_FL | PROJINHERIT_FL | CASEFOLD_FL;
/// Inherited flags a regular file keeps (`F2FS_REG_FLMASK`).
const REG_FLMASK: u32 = !(DIRSYNC_FL | PROJINHERIT_FL | CASEFOLD_FL);
/// Inherited flags other non-directories keep (`F2FS_OTHER_FLMASK`).
const OTHER_FLMASK: u32 = NODUMP_FL | NOATIME_FL;

/// `i_advise`: the file's data is cold (a cold extension).
pub const FADVISE_COLD_BIT: u8 = 0x01;
/// `i_advise`: the parent recorded in `i_pino` may be stale (hard links, renames).
pub const FADVISE_LOST_PINO_BIT: u8 = 0x02;
/// `i_advise`: the file's data is hot (a hot extension).
pub const FADVISE_HOT_BIT: u8 = 0x20;

/// What a new inode is made from.
pub struct NewInode<'a> {
    /// Its number (a free node id).
    pub ino: Ino,
    /// Full mode, file type bits included.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// The directory it is created in.
    pub parent: Ino,
    /// The parent's `i_flags`.
    pub parent_flags: u32,
    /// Its name there.
    pub name: &'a [u8],
    /// Its `i_generation`.
    pub generation: u32,
}

/// The inheritable flags of `parent_flags` a new inode of `kind` keeps.
fn inherited_flags(kind: FileKind, parent_flags: u32) -> u32 {
    let f = parent_flags & INHERITED;
    match kind {
        FileKind::Dir => f | INDEX_FL,
        FileKind::File => f & REG_FLMASK,
        _ => f & OTHER_FLMASK,
    }
}

/// The inode block of a new inode of `kind` (its "." and ".." in place for a
/// directory).
pub fn build(sb: &Superblock, n: &NewInode, kind: FileKind) -> InodeMut {
    let time = now();
    let extra = sb.has(FEATURE_EXTRA_ATTR);
    let mut inline = F2FS_INLINE_XATTR;
    if extra {
        inline |= F2FS_EXTRA_ATTR;
    }
    match kind {
        FileKind::Dir => inline |= F2FS_INLINE_DENTRY,
        FileKind::File | FileKind::Symlink => inline |= F2FS_INLINE_DATA,
        _ => {}
    }
    let dir = kind == FileKind::Dir;
    let inode = Inode {
        mode: n.mode as u16,
        advise: 0,
        inline,
        uid: n.uid,
        gid: n.gid,
        links: if dir { 2 } else { 1 },
        size: 0,
        blocks: 1,
        atime: time,
        ctime: time,
        mtime: time,
        generation: n.generation,
        current_depth: u32::from(dir),
        xattr_nid: 0,
        flags: inherited_flags(kind, n.parent_flags),
        pino: n.parent,
        name: n.name.to_vec(),
        dir_level: 0,
        ext: (0, 0, 0),
        extra_isize: if extra { F2FS_TOTAL_EXTRA_ATTR_SIZE as u16 } else { 0 },
        inline_xattr_addrs: DEFAULT_INLINE_XATTR_ADDRS as u16,
        projid: 0,
        inode_checksum: 0,
        crtime: sb.has(FEATURE_INODE_CRTIME).then_some(time),
        compress: None,
        nids: [0; 5],
        geometry: sb.geometry(),
    };
    let mut m = InodeMut {
        ino: n.ino,
        block: new_node_block(sb.geometry(), n.ino, n.ino, 0, dir),
        inode,
    };
    if dir {
        m.inode.size = m.inode.max_inline_data() as u64;
        let (ino, parent) = (n.ino, n.parent);
        let mut area = DentryAreaMut::inline(m.inline_area());
        // Slots 0 and 1 of an empty area always take them: the inline area has room.
        let _ = area.insert_at(0, 0, b".", ino, ft::DIR);
        let _ = area.insert_at(1, 0, b"..", parent, ft::DIR);
    }
    m
}

/// Temperature of a new regular file from its name and the superblock's extension
/// lists (F2FS's `set_file_temperature`): cold or hot `i_advise` bit, or none. An
/// extension matches after any '.' past the first byte, case-insensitively, as a
/// prefix of the rest ("a.mp4.tmp" is cold for "mp4"); "*" matches every name.
pub fn temperature(sb: &Superblock, name: &[u8]) -> u8 {
    let cold = sb.extensions.len().saturating_sub(sb.hot_ext_count as usize);
    for (i, ext) in sb.extensions.iter().enumerate() {
        if extension_matches(name, ext.as_bytes()) {
            return if i < cold { FADVISE_COLD_BIT } else { FADVISE_HOT_BIT };
        }
    }
    0
}

fn extension_matches(name: &[u8], ext: &[u8]) -> bool {
    if ext == b"*" {
        return true;
    }
    if ext.is_empty() || name.len() < ext.len() + 2 {
        return false;
    }
    (1..name.len() - ext.len()).any(|i| name[i] == b'.' && name[i + 1..i + 1 + ext.len()].eq_ignore_ascii_case(ext))
}

/// The `ft::*` dentry file type of a kind.
pub fn file_type(kind: FileKind) -> u8 {
    match kind {
        FileKind::File => ft::REG_FILE,
        FileKind::Dir => ft::DIR,
        FileKind::Symlink => ft::SYMLINK,
        FileKind::CharDev => ft::CHRDEV,
        FileKind::BlockDev => ft::BLKDEV,
        FileKind::Fifo => ft::FIFO,
        FileKind::Socket => ft::SOCK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_match_as_the_kernel_matches_them() {
        assert!(extension_matches(b"movie.mp4", b"mp"));
        assert!(extension_matches(b"a.MKV", b"mkv"));
        assert!(extension_matches(b"a.mp4.tmp", b"mp4"));
        assert!(!extension_matches(b".mp4", b"mp4"), "a leading dot is not an extension");
        assert!(!extension_matches(b"mp4", b"mp4"));
        assert!(extension_matches(b"anything", b"*"));
        assert_eq!(
            inherited_flags(
                FileKind::File,
                DIRSYNC_FL | NOATIME_FL | super::super::flags::FS_IMMUTABLE_FL
            ),
            NOATIME_FL
        );
        assert_eq!(inherited_flags(FileKind::Dir, DIRSYNC_FL), DIRSYNC_FL | INDEX_FL);
        assert_eq!(inherited_flags(FileKind::Fifo, SYNC_FL | NODUMP_FL), NODUMP_FL);
    }
}
