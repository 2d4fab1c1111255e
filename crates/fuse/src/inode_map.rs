//! The one place where F2FS inode numbers and FUSE node ids meet.
//!
//! FUSE insists that the root directory is node id 1 (`FUSE_ROOT_ID`), while F2FS keeps
//! its root at `Fs::root()` (3 on every image mkfs.f2fs writes) and uses ino 1 for the
//! internal node inode, which no directory entry ever names. The map swaps the two numbers
//! and passes every other one through unchanged, so it is a bijection: even a corrupt
//! dentry that names ino 1 cannot alias the root.

use fuser::{Errno, INodeNo};
use uf2fs_core::Ino;

/// Translates between core inode numbers and FUSE node ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InoMap {
    /// The F2FS root directory's inode number.
    root: Ino,
}

/// F2FS inode number that FUSE's root id (1) would otherwise collide with.
const FUSE_ROOT: Ino = 1;

impl InoMap {
    /// A map for a file system whose root directory is `root`.
    pub(crate) fn new(root: Ino) -> InoMap {
        InoMap { root }
    }

    /// The FUSE node id for core inode `ino`.
    pub(crate) fn to_fuse(self, ino: Ino) -> INodeNo {
        INodeNo(u64::from(self.swap(ino)))
    }

    /// The core inode number for FUSE node id `node`. Ids beyond the 32-bit F2FS range
    /// cannot have come from us: `ENOENT`.
    pub(crate) fn to_core(self, node: INodeNo) -> Result<Ino, Errno> {
        let ino = Ino::try_from(node.0).map_err(|_| Errno::ENOENT)?;
        Ok(self.swap(ino))
    }

    /// Exchange `root` and FUSE's root id; everything else is unchanged. Its own inverse.
    fn swap(self, ino: Ino) -> Ino {
        if ino == self.root {
            FUSE_ROOT
        } else if ino == FUSE_ROOT {
            self.root
        } else {
            ino
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_maps_to_fuse_root_and_back() {
        let map = InoMap::new(3);
        assert_eq!(map.to_fuse(3), INodeNo::ROOT);
        assert_eq!(map.to_core(INodeNo::ROOT), Ok(3));
    }

    #[test]
    fn other_inos_pass_through() {
        let map = InoMap::new(3);
        for ino in [2, 4, 5, 1000, u32::MAX] {
            assert_eq!(map.to_fuse(ino), INodeNo(u64::from(ino)));
            assert_eq!(map.to_core(INodeNo(u64::from(ino))), Ok(ino));
        }
    }

    #[test]
    fn node_inode_does_not_alias_root() {
        let map = InoMap::new(3);
        assert_ne!(map.to_fuse(1), INodeNo::ROOT);
        assert_eq!(map.to_core(map.to_fuse(1)), Ok(1));
    }

    #[test]
    fn map_is_a_bijection_for_any_root() {
        for root in [1, 2, 3, 7, u32::MAX] {
            let map = InoMap::new(root);
            for ino in [0, 1, 2, 3, 4, 7, 8, u32::MAX - 1, u32::MAX] {
                assert_eq!(map.to_core(map.to_fuse(ino)), Ok(ino), "root {root} ino {ino}");
            }
        }
    }

    #[test]
    fn out_of_range_node_ids_are_enoent() {
        let map = InoMap::new(3);
        assert_eq!(map.to_core(INodeNo(1 << 32)), Err(Errno::ENOENT));
        assert_eq!(map.to_core(INodeNo(u64::MAX)), Err(Errno::ENOENT));
    }
}
