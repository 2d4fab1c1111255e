//! Where file block `index` lives in an inode's node tree: the chain of slots from the
//! inode down to the direct node, and the node offsets (footer offsets) of the nodes on
//! the way, numbered as F2FS numbers them (its `get_node_path`).
//!
//! With `D` addresses per direct node and `N` node ids per indirect node (both 1018
//! with 4 KiB blocks, 4090 with 16 KiB ones: [`Geometry`]; `D` rounded down to whole
//! clusters for a compressed file), as an inode's [`TreeShape`]
//! (`uf2fs_format::node::Inode::tree_shape`) gives them:
//!
//! | file blocks (after the inode's own)   | path                                  |
//! |---------------------------------------|---------------------------------------|
//! | next D                                | `i_nid[0]` (direct, offset 1)          |
//! | next D                                | `i_nid[1]` (direct, offset 2)          |
//! | next D·N                              | `i_nid[2]` (indirect, offset 3) -> direct (4 + k) |
//! | next D·N                              | `i_nid[3]` (indirect, offset 4 + N) -> direct (5 + N + k) |
//! | next D·N²                             | `i_nid[4]` (double indirect, 5 + 2N) -> indirect (6 + 2N + k(N + 1)) -> direct (7 + 2N + k(N + 1) + j) |

use crate::{Error, Result};
pub use uf2fs_format::node::TreeShape;
use uf2fs_format::Geometry;

/// The path to one file block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodePath {
    /// Nodes below the inode: 0 (the address is in the inode), 1 (a direct node), 2
    /// (indirect, direct) or 3 (double indirect, indirect, direct).
    pub depth: usize,
    /// Slot taken at each level: `slots[0]` indexes the inode's data addresses when
    /// `depth` is 0, else its node ids (`i_nid`, 0..5); `slots[i]` (i ≥ 1) indexes the
    /// node at level `i`; `slots[depth]` is the data address slot.
    pub slots: [usize; 4],
    /// Node offset of the node at each level (`offsets[0]` = 0, the inode).
    pub offsets: [u32; 4],
}

impl NodePath {
    /// First file block and length (in blocks) of the node at `level` (1..=depth) of
    /// this path, the path of block `index` in a tree of `shape`.
    pub fn span(&self, shape: TreeShape, index: u64, level: usize) -> (u64, u64) {
        let mut start = index;
        let mut unit = 1u64;
        for m in (level..=self.depth).rev() {
            start -= self.slots[m] as u64 * unit;
            unit *= if m == self.depth {
                shape.per_dnode
            } else {
                shape.per_indirect
            };
        }
        (start, unit)
    }
}

/// The path to file block `index` in a tree of `shape`.
pub fn node_path(shape: TreeShape, index: u64) -> Result<NodePath> {
    let (addrs_per_inode, d, n) = (shape.in_inode, shape.per_dnode, shape.per_indirect);
    let mut p = NodePath {
        depth: 0,
        slots: [0; 4],
        offsets: [0; 4],
    };
    if index < addrs_per_inode {
        p.slots[0] = index as usize;
        return Ok(p);
    }
    let mut rest = index - addrs_per_inode;
    for (i_nid, offset) in [(0usize, 1u64), (1, 2)] {
        if rest < d {
            p.depth = 1;
            p.slots = [i_nid, rest as usize, 0, 0];
            p.offsets = [0, offset as u32, 0, 0];
            return Ok(p);
        }
        rest -= d;
    }
    for (i_nid, offset) in [(2usize, 3u64), (3, 4 + n)] {
        if rest < d * n {
            let k = rest / d;
            p.depth = 2;
            p.slots = [i_nid, k as usize, (rest % d) as usize, 0];
            p.offsets = [0, offset as u32, (offset + 1 + k) as u32, 0];
            return Ok(p);
        }
        rest -= d * n;
    }
    if rest < d * n * n {
        let k = rest / (d * n);
        let j = (rest / d) % n;
        let base = 5 + 2 * n;
        p.depth = 3;
        p.slots = [4, k as usize, j as usize, (rest % d) as usize];
        p.offsets = [
            0,
            base as u32,
            (base + 1 + k * (n + 1)) as u32,
            (base + 2 + k * (n + 1) + j) as u32,
        ];
        return Ok(p);
    }
    Err(Error::Invalid(format!(
        "file block {index} is beyond what an F2FS node tree addresses"
    )))
}

/// Whether the node at `offset` is a direct node (or the inode): it holds data
/// addresses rather than node ids.
pub fn is_dnode(geo: Geometry, offset: u32) -> bool {
    let n = geo.nids_per_block() as u64;
    let o = offset as u64;
    if o == 3 || o == 4 + n || o == 5 + 2 * n {
        return false;
    }
    if o >= 6 + 2 * n && (o - (6 + 2 * n)) % (n + 1) == 0 {
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: u64 = uf2fs_format::consts::ADDRS_PER_BLOCK as u64;
    const N: u64 = uf2fs_format::consts::NIDS_PER_BLOCK as u64;
    const G: Geometry = Geometry::DEFAULT;

    fn shape(a: u64) -> TreeShape {
        TreeShape::plain(G, a)
    }

    #[test]
    fn paths_follow_the_f2fs_numbering() {
        let a = 864;
        assert_eq!(node_path(shape(a), 5).unwrap().depth, 0);
        let p = node_path(shape(a), a).unwrap();
        assert_eq!((p.depth, p.slots[0], p.slots[1], p.offsets[1]), (1, 0, 0, 1));
        let p = node_path(shape(a), a + D).unwrap();
        assert_eq!((p.depth, p.slots[0], p.offsets[1]), (1, 1, 2));
        let p = node_path(shape(a), a + 2 * D + D + 7).unwrap();
        assert_eq!(
            (p.depth, p.slots[..3].to_vec(), p.offsets[..3].to_vec()),
            (2, vec![2, 1, 7], vec![0, 3, 5])
        );
        let p = node_path(shape(a), a + 2 * D + D * N).unwrap();
        assert_eq!(
            (p.slots[0], p.offsets[1], p.offsets[2]),
            (3, 4 + N as u32, 5 + N as u32)
        );
        let p = node_path(shape(a), a + 2 * D + 2 * D * N + D * N + D + 3).unwrap();
        assert_eq!(p.depth, 3);
        assert_eq!(p.slots, [4, 1, 1, 3]);
        let base = 5 + 2 * N as u32;
        assert_eq!(
            p.offsets,
            [0, base, base + 1 + (N as u32 + 1), base + 2 + (N as u32 + 1) + 1]
        );
        assert!(node_path(shape(a), a + 2 * D + 2 * D * N + D * N * N).is_err());
        for p in [
            node_path(shape(a), 0).unwrap(),
            node_path(shape(a), a + 3 * D).unwrap(),
            node_path(shape(a), a + 2 * D + 2 * D * N + 5 * D * N + 9 * D).unwrap(),
        ] {
            for level in 0..p.depth {
                assert!(!is_dnode(G, p.offsets[level]) || level == 0, "{p:?} level {level}");
            }
            assert!(is_dnode(G, p.offsets[p.depth]), "{p:?}");
        }
    }
}
