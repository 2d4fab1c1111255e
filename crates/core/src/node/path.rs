//! Where file block `index` lives in an inode's node tree: the chain of slots from the
//! inode down to the direct node, and the node offsets (footer offsets) of the nodes on
//! the way, numbered as F2FS numbers them (its `get_node_path`).
//!
//! | file blocks (after the inode's own)   | path                                  |
//! |---------------------------------------|---------------------------------------|
//! | next 1018                             | `i_nid[0]` (direct, offset 1)          |
//! | next 1018                             | `i_nid[1]` (direct, offset 2)          |
//! | next 1018²                            | `i_nid[2]` (indirect, offset 3) -> direct (4 + k) |
//! | next 1018²                            | `i_nid[3]` (indirect, offset 4 + N) -> direct (5 + N + k) |
//! | next 1018³                            | `i_nid[4]` (double indirect, 5 + 2N) -> indirect (6 + 2N + k(N + 1)) -> direct (7 + 2N + k(N + 1) + j) |

use crate::{Error, Result};
use uf2fs_format::consts::{ADDRS_PER_BLOCK, NIDS_PER_BLOCK};

const D: u64 = ADDRS_PER_BLOCK as u64;
const N: u64 = NIDS_PER_BLOCK as u64;

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

/// The path to file block `index` of an inode holding `addrs_per_inode` addresses.
pub fn node_path(addrs_per_inode: u64, index: u64) -> Result<NodePath> {
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
        if rest < D {
            p.depth = 1;
            p.slots = [i_nid, rest as usize, 0, 0];
            p.offsets = [0, offset as u32, 0, 0];
            return Ok(p);
        }
        rest -= D;
    }
    for (i_nid, offset) in [(2usize, 3u64), (3, 4 + N)] {
        if rest < D * N {
            let k = rest / D;
            p.depth = 2;
            p.slots = [i_nid, k as usize, (rest % D) as usize, 0];
            p.offsets = [0, offset as u32, (offset + 1 + k) as u32, 0];
            return Ok(p);
        }
        rest -= D * N;
    }
    if rest < D * N * N {
        let k = rest / (D * N);
        let j = (rest / D) % N;
        let base = 5 + 2 * N;
        p.depth = 3;
        p.slots = [4, k as usize, j as usize, (rest % D) as usize];
        p.offsets = [
            0,
            base as u32,
            (base + 1 + k * (N + 1)) as u32,
            (base + 2 + k * (N + 1) + j) as u32,
        ];
        return Ok(p);
    }
    Err(Error::Invalid(format!(
        "file block {index} is beyond what an F2FS node tree addresses"
    )))
}

/// Whether the node at `offset` is a direct node (or the inode): it holds data
/// addresses rather than node ids.
pub fn is_dnode(offset: u32) -> bool {
    let o = offset as u64;
    if o == 3 || o == 4 + N || o == 5 + 2 * N {
        return false;
    }
    if o >= 6 + 2 * N && (o - (6 + 2 * N)) % (N + 1) == 0 {
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_the_f2fs_numbering() {
        let a = 864;
        assert_eq!(node_path(a, 5).unwrap().depth, 0);
        let p = node_path(a, a).unwrap();
        assert_eq!((p.depth, p.slots[0], p.slots[1], p.offsets[1]), (1, 0, 0, 1));
        let p = node_path(a, a + D).unwrap();
        assert_eq!((p.depth, p.slots[0], p.offsets[1]), (1, 1, 2));
        let p = node_path(a, a + 2 * D + D + 7).unwrap();
        assert_eq!(
            (p.depth, p.slots[..3].to_vec(), p.offsets[..3].to_vec()),
            (2, vec![2, 1, 7], vec![0, 3, 5])
        );
        let p = node_path(a, a + 2 * D + D * N).unwrap();
        assert_eq!(
            (p.slots[0], p.offsets[1], p.offsets[2]),
            (3, 4 + N as u32, 5 + N as u32)
        );
        let p = node_path(a, a + 2 * D + 2 * D * N + D * N + D + 3).unwrap();
        assert_eq!(p.depth, 3);
        assert_eq!(p.slots, [4, 1, 1, 3]);
        let base = 5 + 2 * N as u32;
        assert_eq!(
            p.offsets,
            [0, base, base + 1 + (N as u32 + 1), base + 2 + (N as u32 + 1) + 1]
        );
        assert!(node_path(a, a + 2 * D + 2 * D * N + D * N * N).is_err());
        for p in [
            node_path(a, 0).unwrap(),
            node_path(a, a + 3 * D).unwrap(),
            node_path(a, a + 2 * D + 2 * D * N + 5 * D * N + 9 * D).unwrap(),
        ] {
            for level in 0..p.depth {
                assert!(!is_dnode(p.offsets[level]) || level == 0, "{p:?} level {level}");
            }
            assert!(is_dnode(p.offsets[p.depth]), "{p:?}");
        }
    }
}
