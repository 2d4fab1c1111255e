//! Changing an inode's xattr list as the kernel's `__f2fs_setxattr` and
//! `write_all_xattrs` do: the entry found is removed and the new one appended at the end
//! of the list; the list is written back over the inline area and, when it does not fit
//! there (or the inode has no inline area), over the xattr node, which is made when
//! missing and freed once everything fits inline again.
//!
//! A change is prepared first ([`prepare`]: everything that can fail for a caller's
//! reason, and every read), then applied ([`Rewrite::apply`]: memory only) after the
//! operation has committed.

use super::area::{capacity, gather, inline_range, inline_size, max_value_len, node_area, parse};
use super::{XATTR_CREATE, XATTR_REPLACE};
use crate::inode::InodeMut;
use crate::node::NodeBlock;
use crate::segment::SpaceNeed;
use crate::tree::{new_node_block, node_log, Tree};
use crate::{Error, Result};
use uf2fs_format::xattr::{encode_xattrs, xattr_entry_size, xattrs_len, RawXattr, XATTR_NODE_OFFSET};

/// An inode's xattr list as read for changing.
pub struct Loaded {
    /// The entries, in on-disk order.
    pub list: Vec<RawXattr>,
    /// The xattr node and its block, when the inode has one.
    pub node: Option<(u32, NodeBlock)>,
}

/// Reads the xattr list of `i` (its xattr node through the dirty copies first).
pub fn load(t: &Tree, i: &InodeMut) -> Result<Loaded> {
    let xnid = i.inode.xattr_nid;
    let node = if xnid != 0 {
        Some((xnid, t.nodes.read(t.dev, xnid, i.ino)?))
    } else {
        None
    };
    let area = gather(&i.inode, &i.block, node.as_ref().map(|(_, b)| b.as_slice()));
    Ok(Loaded {
        list: parse(i.ino, || t.nodes.blkaddr_of(t.dev, i.ino), &area)?,
        node,
    })
}

/// Applies one change to `list` as the kernel does: `value` `None` removes. With
/// [`XATTR_CREATE`] an existing entry is [`Error::Exists`]; with [`XATTR_REPLACE`] a
/// missing one is [`Error::NoAttribute`]; a new entry that does not fit in `capacity`
/// bytes (header included) is [`Error::AttributeTooBig`]. Returns whether the list
/// changed: setting the value an entry already has, or removing a missing entry without
/// [`XATTR_REPLACE`], changes nothing.
pub fn edit(
    list: &mut Vec<RawXattr>,
    index: u8,
    name: &[u8],
    value: Option<&[u8]>,
    flags: u32,
    capacity: usize,
    shown: &str,
) -> Result<bool> {
    let at = list.iter().position(|x| x.index == index && x.name == name);
    match at {
        Some(_) if flags & XATTR_CREATE != 0 => return Err(Error::Exists(format!("attribute {shown}"))),
        Some(p) if value.is_some_and(|v| list[p].value == v) => return Ok(false),
        None if flags & XATTR_REPLACE != 0 => return Err(Error::NoAttribute(shown.to_string())),
        None if value.is_none() => return Ok(false),
        _ => {}
    }
    if let Some(v) = value {
        let freed = at.map_or(0, |p| xattr_entry_size(list[p].name.len(), list[p].value.len()));
        let used = xattrs_len(list) - freed + xattr_entry_size(name.len(), v.len());
        if used > capacity {
            return Err(Error::AttributeTooBig(format!(
                "attribute {shown} of {} bytes: the list would take {used} of {capacity} bytes",
                v.len()
            )));
        }
    }
    if let Some(p) = at {
        list.remove(p);
    }
    if let Some(v) = value {
        list.push(RawXattr {
            index,
            name: name.to_vec(),
            value: v.to_vec(),
        });
    }
    Ok(true)
}

/// What happens to the xattr node.
enum NodeChange {
    /// The inode has none and needs none.
    Absent,
    /// The list fits inline again: the node goes.
    Free(u32),
    /// The node's entry space is rewritten (its block as read, footer kept).
    Rewrite(u32, NodeBlock),
    /// A new node is made.
    Make,
}

/// A prepared change of an inode's xattr list.
pub struct Rewrite {
    /// The list's bytes, zero-filled to the inline area and a whole node.
    bytes: Vec<u8>,
    node: NodeChange,
}

/// Prepares writing `list` over the xattr space of `i` (which `loaded` was read from).
pub fn layout(i: &InodeMut, list: &[RawXattr], loaded: Loaded) -> Result<Rewrite> {
    let mut bytes =
        encode_xattrs(list).map_err(|e| Error::Invalid(format!("cannot store the xattrs of inode {}: {e}", i.ino)))?;
    let hsize = bytes.len();
    let inline = inline_size(&i.inode);
    if hsize > capacity(&i.inode) {
        return Err(Error::AttributeTooBig(format!(
            "the xattrs of inode {} would take {hsize} of {} bytes",
            i.ino,
            capacity(&i.inode)
        )));
    }
    bytes.resize(inline + node_area(&i.inode), 0);
    let node = match (inline > 0 && hsize <= inline, loaded.node) {
        (true, Some((nid, _))) => NodeChange::Free(nid),
        (true, None) => NodeChange::Absent,
        (false, Some((nid, block))) => NodeChange::Rewrite(nid, block),
        (false, None) => NodeChange::Make,
    };
    Ok(Rewrite { bytes, node })
}

/// Prepares setting (`value` `Some`) or removing attribute `index`/`name` of `i` under
/// `flags` (see [`edit`]); `None` when nothing changes. A value over the kernel's
/// largest ([`max_value_len`]) is [`Error::AttributeTooBig`] before anything else.
pub fn prepare(
    t: &Tree,
    i: &InodeMut,
    index: u8,
    name: &[u8],
    value: Option<&[u8]>,
    flags: u32,
    shown: &str,
) -> Result<Option<Rewrite>> {
    if let Some(v) = value {
        let max = max_value_len(&i.inode);
        if v.len() > max {
            return Err(Error::AttributeTooBig(format!(
                "attribute {shown}: value of {} bytes, at most {max} on inode {}",
                v.len(),
                i.ino
            )));
        }
    }
    let mut loaded = load(t, i)?;
    let mut list = std::mem::take(&mut loaded.list);
    if !edit(&mut list, index, name, value, flags, capacity(&i.inode), shown)? {
        return Ok(None);
    }
    layout(i, &list, loaded).map(Some)
}

impl Rewrite {
    /// Blocks this change writes besides the inode (the xattr node, in the inode's node
    /// log), and the node ids it takes.
    pub fn need(&self, i: &InodeMut) -> (SpaceNeed, usize) {
        let mut per_log = [0u64; 6];
        let (blocks, new, nids) = match self.node {
            NodeChange::Absent | NodeChange::Free(_) => (0, 0, 0),
            NodeChange::Rewrite(..) => (1, 0, 0),
            NodeChange::Make => (1, 1, 1),
        };
        per_log[i.node_log() as usize] = blocks;
        (crate::ops::need(per_log, new), nids)
    }

    /// Writes the list into `i` (stored by the caller) and the xattr node: made (counted
    /// in `i_blocks`), rewritten, or freed.
    pub fn apply(self, t: &mut Tree, i: &mut InodeMut) -> Result<()> {
        let inline = inline_size(&i.inode);
        let range = inline_range(&i.inode);
        i.block[range].copy_from_slice(&self.bytes[..inline]);
        let node_part = &self.bytes[inline..];
        let log = node_log(i.inode.geometry, XATTR_NODE_OFFSET, i.is_dir());
        match self.node {
            NodeChange::Absent => {}
            NodeChange::Free(nid) => {
                t.nodes.free_node(t.dev, t.segs, nid)?;
                i.inode.xattr_nid = 0;
                i.inode.blocks = i.inode.blocks.saturating_sub(1);
            }
            NodeChange::Rewrite(nid, block) => {
                let mut b = block.to_vec();
                b[..node_area(&i.inode)].copy_from_slice(node_part);
                t.nodes.store_dirty(nid, b, log);
            }
            NodeChange::Make => {
                let nid = t.take_nid()?;
                let mut b = new_node_block(i.inode.geometry, nid, i.ino, XATTR_NODE_OFFSET, i.is_dir());
                b[..node_area(&i.inode)].copy_from_slice(node_part);
                if let Err(e) = t.new_node(nid, i.ino, b, log) {
                    t.nodes.release_nid(nid);
                    return Err(e);
                }
                i.inode.xattr_nid = nid;
                i.inode.blocks += 1;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x(index: u8, name: &str, value: &[u8]) -> RawXattr {
        RawXattr {
            index,
            name: name.as_bytes().to_vec(),
            value: value.to_vec(),
        }
    }

    #[test]
    fn replacing_moves_the_entry_to_the_end() {
        let mut l = vec![x(1, "a", b"1"), x(1, "b", b"2"), x(4, "a", b"3")];
        assert!(edit(&mut l, 1, b"a", Some(b"new"), 0, 4096, "a").unwrap());
        assert_eq!(l, vec![x(1, "b", b"2"), x(4, "a", b"3"), x(1, "a", b"new")]);
        // The same value again changes nothing.
        assert!(!edit(&mut l, 1, b"a", Some(b"new"), XATTR_REPLACE, 4096, "a").unwrap());
        assert!(edit(&mut l, 4, b"a", None, XATTR_REPLACE, 4096, "a").unwrap());
        assert_eq!(l, vec![x(1, "b", b"2"), x(1, "a", b"new")]);
    }

    #[test]
    fn flags_and_space() {
        let mut l = vec![x(1, "a", b"1")];
        let errno = |r: Result<bool>| r.unwrap_err().errno();
        assert_eq!(errno(edit(&mut l, 1, b"a", Some(b"2"), XATTR_CREATE, 4096, "a")), 17);
        assert_eq!(errno(edit(&mut l, 1, b"b", Some(b"2"), XATTR_REPLACE, 4096, "b")), 61);
        assert_eq!(errno(edit(&mut l, 1, b"b", None, XATTR_REPLACE, 4096, "b")), 61);
        assert!(!edit(&mut l, 1, b"b", None, 0, 4096, "b").unwrap());
        // Header 24 + "a"=1 (8 bytes): 32 used. A 4-byte entry fits a capacity of 36
        // exactly; 5 bytes do not.
        assert!(edit(&mut l, 1, b"", Some(b""), XATTR_CREATE, 36, "").unwrap());
        assert_eq!(errno(edit(&mut l, 1, b"c", Some(b""), 0, 36, "c")), 7);
        // Replacing counts the old entry's space as free.
        assert!(edit(&mut l, 1, b"a", Some(b"1234"), 0, 40, "a").unwrap());
        assert_eq!(xattrs_len(&l), 40);
    }
}
