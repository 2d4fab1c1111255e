//! Which holes of a compressed file the packer keeps, and which it writes as zeros.
//!
//! Two readers set the rules:
//! - Linux, on a volume with the `ro` feature, reads a compressed file's plain cluster
//!   through an extent it caches for the whole cluster, so a hole inside a direct node
//!   (or the inode) that exists is misread (`uf2fs_core::compress::ro`): on `ro`
//!   volumes every block of a node that exists is written, zeros for the source's
//!   holes (zero clusters compress to one block), as sload writes every file.
//! - fsck.f2fs before f2fs-tools 1.17 (Debian's 1.15 among them) counts a missing
//!   direct node under an indirect node as 1018 addresses, not the compressed file's
//!   whole-cluster count, so every compressed cluster after it looks misaligned to it
//!   (it "fixes" them away; f2fs-tools' "should use inode when updating file offset",
//!   2023). So a compressed file's direct node under an indirect node is missing only
//!   when nothing follows it, or when its whole indirect node is missing (the inode's
//!   own count is right). A direct node that must exist but holds only holes gets its
//!   first cluster written as zeros (one compressed block), or, on `ro`, all of it.
//!
//! Everything else stays a hole: holes inside nodes on normal volumes, and whole
//! direct nodes of holes where both readers allow it.

use uf2fs_core::TreeShape;

/// Which part of the node tree a direct node's span hangs from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parent {
    /// The inode's own addresses.
    Inode,
    /// One of the inode's two direct nodes.
    Direct,
    /// A direct node under the inode's indirect node 0 or 1.
    Indirect(u64),
    /// A direct node under the double-indirect node.
    DoubleIndirect,
}

fn parent(shape: &TreeShape, lo: u64) -> Parent {
    if lo < shape.in_inode {
        return Parent::Inode;
    }
    let d = (lo - shape.in_inode) / shape.per_dnode.max(1);
    match d {
        0 | 1 => Parent::Direct,
        _ if d < 2 + 2 * shape.per_indirect => Parent::Indirect((d - 2) / shape.per_indirect.max(1)),
        _ => Parent::DoubleIndirect,
    }
}

/// The byte ranges of a compressed file of `size` bytes, with data at `data`, that
/// the packer writes (the rest stays holes), for an inode of shape `shape` with
/// clusters of `cluster_blocks` blocks of `bs` bytes, on an `ro` volume or not (see
/// the module notes). Sorted, not overlapping.
pub(crate) fn stored_ranges(
    data: &[(u64, u64)],
    size: u64,
    shape: TreeShape,
    cluster_blocks: u64,
    bs: u64,
    ro: bool,
) -> Vec<(u64, u64)> {
    let blocks = size.div_ceil(bs);
    let overlaps = |x: u64, y: u64| data.iter().any(|&(a, z)| a < y && z > x);
    // The node spans: [lo, hi) in blocks, whether the source has data there.
    let mut spans: Vec<(u64, u64, bool)> = Vec::new();
    let mut b = 0;
    while b < blocks {
        let (lo, hi) = shape.node_span(b);
        let hi = hi.min(blocks).max(b + 1);
        spans.push((lo, hi, overlaps(lo * bs, (hi * bs).min(size))));
        b = hi;
    }
    let last = spans.iter().rposition(|s| s.2);
    let with_data: Vec<Parent> = spans.iter().filter(|s| s.2).map(|s| parent(&shape, s.0)).collect();
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut push = |x: u64, y: u64| match out.last_mut() {
        Some(l) if l.1 >= x => l.1 = l.1.max(y),
        _ => out.push((x, y)),
    };
    for (i, &(lo, hi, has)) in spans.iter().enumerate() {
        let p = parent(&shape, lo);
        // Whether the span's node may be missing (only for a span without data).
        let may_miss = match p {
            Parent::Inode => false,
            _ if last.is_none_or(|l| i > l) => true,
            Parent::Direct => true,
            Parent::Indirect(_) => !with_data.contains(&p),
            Parent::DoubleIndirect => false,
        };
        let (x, y) = (lo * bs, (hi * bs).min(size));
        if ro {
            if has || !may_miss {
                push(x, y);
            }
        } else if has {
            for &(a, z) in data {
                let (a, z) = (a.max(x), z.min(y));
                if a < z {
                    push(a, z);
                }
            }
        } else if !may_miss && p != Parent::Inode {
            push(x, ((lo + cluster_blocks) * bs).min(y));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Clusters of 4 blocks: 864 addresses in the inode, 1016 per direct node.
    const SHAPE: TreeShape = TreeShape {
        in_inode: 864,
        per_dnode: 1016,
        per_indirect: 1018,
    };
    const MIB: u64 = 1 << 20;
    const BS: u64 = 4096;

    fn dnode(k: u64) -> u64 {
        (SHAPE.in_inode + k * SHAPE.per_dnode) * BS
    }

    #[test]
    fn normal_volumes_keep_holes_and_give_fsck_the_nodes_it_needs() {
        // Holes inside nodes stay.
        let data = [(0, 8192), (MIB, MIB + 4096)];
        assert_eq!(stored_ranges(&data, 3 * MIB, SHAPE, 4, BS, false), data.to_vec());
        // A whole direct node of holes under an indirect node, data after it: its first
        // cluster is written (zeros). The inode's two direct nodes may be missing.
        let far = dnode(4) + 100;
        let data = [(0, 4096), (far, far + 5000)];
        assert_eq!(
            stored_ranges(&data, far + 5000, SHAPE, 4, BS, false),
            vec![
                (0, 4096),
                (dnode(2), dnode(2) + 4 * BS),
                (dnode(3), dnode(3) + 4 * BS),
                (far, far + 5000)
            ]
        );
        // Trailing holes stay, however many nodes they cover.
        assert_eq!(stored_ranges(&[(0, 10)], dnode(9), SHAPE, 4, BS, false), vec![(0, 10)]);
        // A whole indirect node of holes stays (its node is missing, which fsck counts right).
        let past = dnode(2 + 1018) + 8;
        assert_eq!(
            stored_ranges(&[(0, 10), (past, past + 10)], past + 10, SHAPE, 4, BS, false),
            vec![(0, 10), (past, past + 10)]
        );
    }

    #[test]
    fn ro_volumes_write_every_node_that_exists_whole() {
        // Holes inside the inode's addresses, and at the end of the file, are written.
        assert_eq!(
            stored_ranges(&[(0, 8192), (MIB, MIB + 4096)], 3 * MIB + 5, SHAPE, 4, BS, true),
            vec![(0, 3 * MIB + 5)]
        );
        // A file of holes only: the inode's addresses exist, so they are written.
        assert_eq!(stored_ranges(&[], 100_000, SHAPE, 4, BS, true), vec![(0, 100_000)]);
        // Direct nodes 0 and 1 of holes may be missing; under an indirect node, not
        // when data follows; the last node is written to the end of the file.
        let far = dnode(3) + 100;
        assert_eq!(
            stored_ranges(&[(10, 20), (far, far + 10)], far + 10, SHAPE, 4, BS, true),
            vec![(0, dnode(0)), (dnode(2), far + 10)]
        );
        // Trailing nodes of holes stay missing.
        assert_eq!(
            stored_ranges(&[(0, 10)], 9 * MIB, SHAPE, 4, BS, true),
            vec![(0, dnode(0))]
        );
    }
}
