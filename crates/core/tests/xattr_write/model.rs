//! What Linux F2FS does with extended attributes, written out plainly: names to name
//! indexes, the limits the VFS and F2FS apply, the list's order (a changed entry moves
//! to the end), its size against the inline area and one xattr node, when the xattr
//! node exists, and what POSIX ACLs do to the mode.

use uf2fs_core::FileKind;
use uf2fs_format::xattr::{acl_chmod, acl_mode, acl_to_xattr, encode_acl, parse_acl, parse_acl_xattr, validate_acl};
use uf2fs_format::FormatError;

pub const E2BIG: i32 = 7;
pub const EACCES: i32 = 13;
pub const EEXIST: i32 = 17;
pub const EINVAL: i32 = 22;
pub const ERANGE: i32 = 34;
pub const ENODATA: i32 = 61;
pub const EOPNOTSUPP: i32 = 95;

pub const XATTR_CREATE: u32 = 1;
pub const XATTR_REPLACE: u32 = 2;

/// Bytes of the xattr node that hold entries.
pub const NODE_AREA: usize = 4096 - 24;
const HEADER: usize = 24;

/// Space one entry takes.
pub fn entry_size(name: usize, value: usize) -> usize {
    (4 + name + value + 3) & !3
}

/// One stored entry: name index, name within the namespace, value as stored (ACLs in
/// F2FS's compact format).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub index: u8,
    pub name: Vec<u8>,
    pub stored: Vec<u8>,
}

impl Entry {
    /// The full name and the value user space sees.
    pub fn visible(&self) -> (Vec<u8>, Vec<u8>) {
        let prefix: &[u8] = match self.index {
            1 => b"user.",
            2 => return (b"system.posix_acl_access".to_vec(), acl_to_xattr(&self.stored).unwrap()),
            3 => {
                return (
                    b"system.posix_acl_default".to_vec(),
                    acl_to_xattr(&self.stored).unwrap(),
                )
            }
            4 => b"trusted.",
            5 => b"lustre.",
            6 => b"security.",
            i => panic!("index {i} in the model"),
        };
        ([prefix, &self.name[..]].concat(), self.stored.clone())
    }
}

/// One inode as the model sees it.
#[derive(Debug, Clone)]
pub struct Inode {
    pub kind: FileKind,
    /// Full mode (type and permission bits).
    pub mode: u32,
    /// Bytes of its inline xattr area (0 without the inline xattr flag).
    pub inline: usize,
    pub entries: Vec<Entry>,
    /// Whether it has an xattr node.
    pub node: bool,
}

/// A name resolved: index and name within the namespace; `acl` for the two ACL names
/// (true for the access ACL).
struct Name {
    index: u8,
    suffix: Vec<u8>,
    acl: Option<bool>,
}

fn resolve(full: &[u8]) -> Result<Name, i32> {
    if full.is_empty() || full.len() > 255 {
        return Err(ERANGE);
    }
    for (prefix, index) in [(&b"user."[..], 1), (b"trusted.", 4), (b"security.", 6), (b"lustre.", 5)] {
        if let Some(s) = full.strip_prefix(prefix) {
            if s.is_empty() {
                return Err(EINVAL);
            }
            return Ok(Name {
                index,
                suffix: s.to_vec(),
                acl: None,
            });
        }
    }
    let acl = |index, access| Name {
        index,
        suffix: Vec::new(),
        acl: Some(access),
    };
    match full {
        b"system.posix_acl_access" => Ok(acl(2, true)),
        b"system.posix_acl_default" => Ok(acl(3, false)),
        _ => Err(EOPNOTSUPP),
    }
}

fn acl_errno(e: FormatError) -> i32 {
    match e {
        FormatError::BadMagic { .. } => EOPNOTSUPP,
        _ => EINVAL,
    }
}

impl Inode {
    /// Capacity of the list: inline area and one node.
    pub fn capacity(&self) -> usize {
        self.inline + NODE_AREA
    }

    /// Bytes the list takes.
    pub fn used(&self) -> usize {
        HEADER
            + self
                .entries
                .iter()
                .map(|e| entry_size(e.name.len(), e.stored.len()))
                .sum::<usize>()
    }

    /// Largest value of an entry named `name_len` bytes that fits into an empty list.
    pub fn largest_value(&self, name_len: usize) -> usize {
        self.capacity() - HEADER - 4 - name_len
    }

    /// What user space lists, in order.
    pub fn visible(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.entries.iter().map(Entry::visible).collect()
    }

    /// The kernel's change of the list: `value` `None` removes.
    fn edit(&mut self, index: u8, name: &[u8], value: Option<&[u8]>, flags: u32) -> Result<(), i32> {
        if value.is_some_and(|v| v.len() > self.capacity() - HEADER - 4) {
            return Err(E2BIG);
        }
        let at = self.entries.iter().position(|e| e.index == index && e.name == name);
        match (at, value) {
            (Some(_), _) if flags & XATTR_CREATE != 0 => return Err(EEXIST),
            (Some(p), Some(v)) if self.entries[p].stored == v => return Ok(()),
            (None, _) if flags & XATTR_REPLACE != 0 => return Err(ENODATA),
            (None, None) => return Ok(()),
            _ => {}
        }
        if let Some(v) = value {
            let freed = at.map_or(0, |p| {
                entry_size(self.entries[p].name.len(), self.entries[p].stored.len())
            });
            if self.used() - freed + entry_size(name.len(), v.len()) > self.capacity() {
                return Err(E2BIG);
            }
        }
        if let Some(p) = at {
            self.entries.remove(p);
        }
        if let Some(v) = value {
            self.entries.push(Entry {
                index,
                name: name.to_vec(),
                stored: v.to_vec(),
            });
        }
        // The list is written back: inline when it fits there, else with a node.
        self.node = !(self.inline > 0 && self.used() <= self.inline);
        Ok(())
    }

    /// `setxattr` (`value` `Some`) or `removexattr`.
    pub fn change(&mut self, full: &[u8], value: Option<&[u8]>, flags: u32) -> Result<(), i32> {
        let n = resolve(full)?;
        if value.is_some_and(|v| v.len() > 65536) {
            return Err(E2BIG);
        }
        let Some(access) = n.acl else {
            let flags = if value.is_none() { XATTR_REPLACE } else { flags };
            return self.edit(n.index, &n.suffix, value, flags);
        };
        let entries = match value {
            Some(v) => parse_acl_xattr(v).map_err(acl_errno)?,
            None => Vec::new(),
        };
        if self.kind == FileKind::Symlink {
            return Err(EOPNOTSUPP);
        }
        if !access && self.kind != FileKind::Dir {
            return if entries.is_empty() { Ok(()) } else { Err(EACCES) };
        }
        if entries.is_empty() {
            return self.edit(n.index, b"", None, 0);
        }
        validate_acl(&entries).map_err(acl_errno)?;
        if !access {
            return self.edit(n.index, b"", Some(&encode_acl(&entries)), 0);
        }
        let (bits, equivalent) = acl_mode(&entries);
        let stored = (!equivalent).then(|| encode_acl(&entries));
        self.edit(n.index, b"", stored.as_deref(), 0)?;
        self.mode = (self.mode & !0o777) | bits;
        Ok(())
    }

    /// `chmod`: the access ACL follows the new bits.
    pub fn chmod(&mut self, perm: u32) {
        self.mode = (self.mode & 0o170000) | (perm & 0o7777);
        let Some(acl) = self.entries.iter().find(|e| e.index == 2) else {
            return;
        };
        let entries = acl_chmod(&parse_acl(&acl.stored).unwrap(), perm);
        let stored = (!acl_mode(&entries).1).then(|| encode_acl(&entries));
        self.edit(2, b"", stored.as_deref(), 0).unwrap();
    }
}
