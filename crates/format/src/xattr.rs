//! Extended attributes: the inline area and the xattr node share one entry list.
//!
//! The list is one byte string: a header (magic, reference count, reserved bytes), then
//! entries (name index, name length, value size, name, value), each padded to 4 bytes,
//! ended by a zero word or by the end of the space. Its first bytes sit in the inode's
//! inline xattr area, the rest in the xattr node (up to the node's footer). POSIX ACLs
//! are stored in F2FS's compact format, not in the Linux xattr ACL format user space
//! sees; [`acl_to_xattr`] and [`xattr_to_acl`] convert.

use crate::consts::NODE_FOOTER_OFFSET;
use crate::le::{put_u16, put_u32, u16_at, u32_at};
use crate::{FormatError, Result};

/// Magic of the xattr header.
pub const F2FS_XATTR_MAGIC: u32 = 0xF2F5_2011;
/// Size of the xattr header (magic, refcount, reserved).
pub const XATTR_HEADER_SIZE: usize = 24;
/// Size of an entry's fixed part (index, name length, value size).
pub const XATTR_ENTRY_HEADER_SIZE: usize = 4;
/// Bytes of the xattr node that hold entries: all of it but the footer.
pub const XATTR_NODE_AREA: usize = NODE_FOOTER_OFFSET;
/// Node offset (in the footer) of an xattr node: all 29 offset bits set.
pub const XATTR_NODE_OFFSET: u32 = u32::MAX >> 3;
/// Longest name within a namespace.
pub const XATTR_NAME_MAX: usize = 255;

/// Name index of user.* attributes.
pub const INDEX_USER: u8 = 1;
/// Name index of the POSIX access ACL.
pub const INDEX_POSIX_ACL_ACCESS: u8 = 2;
/// Name index of the POSIX default ACL.
pub const INDEX_POSIX_ACL_DEFAULT: u8 = 3;
/// Name index of trusted.* attributes.
pub const INDEX_TRUSTED: u8 = 4;
/// Name index of lustre.* attributes.
pub const INDEX_LUSTRE: u8 = 5;
/// Name index of security.* attributes.
pub const INDEX_SECURITY: u8 = 6;

/// One raw xattr entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawXattr {
    /// Name index (namespace).
    pub index: u8,
    /// Name within the namespace.
    pub name: Vec<u8>,
    /// Value.
    pub value: Vec<u8>,
}

impl RawXattr {
    /// The full name a user sees (`user.foo`), or `None` for internal namespaces
    /// (encryption context, verity descriptor, ...).
    pub fn full_name(&self) -> Option<Vec<u8>> {
        let prefix: &[u8] = match self.index {
            INDEX_USER => b"user.",
            INDEX_POSIX_ACL_ACCESS => return Some(b"system.posix_acl_access".to_vec()),
            INDEX_POSIX_ACL_DEFAULT => return Some(b"system.posix_acl_default".to_vec()),
            INDEX_TRUSTED => b"trusted.",
            INDEX_LUSTRE => b"lustre.",
            INDEX_SECURITY => b"security.",
            _ => return None,
        };
        Some([prefix, &self.name].concat())
    }
}

/// Space entry `name`/`value` takes: fixed part, name and value, padded to 4 bytes.
pub fn xattr_entry_size(name_len: usize, value_len: usize) -> usize {
    (XATTR_ENTRY_HEADER_SIZE + name_len + value_len + 3) & !3
}

/// Bytes a list of `entries` takes, header included (no end marker counted).
pub fn xattrs_len(entries: &[RawXattr]) -> usize {
    XATTR_HEADER_SIZE
        + entries
            .iter()
            .map(|x| xattr_entry_size(x.name.len(), x.value.len()))
            .sum::<usize>()
}

/// Encodes `entries` in order: header (magic, reference count 1), then each entry padded
/// to 4 bytes with zeros. The result is [`xattrs_len`] bytes; the caller places it at the
/// start of the (zeroed) inline area and xattr node. Fails for an index of 0 (its entry
/// would read as the end of the list), a name over 255 bytes or a value over 65535.
pub fn encode_xattrs(entries: &[RawXattr]) -> Result<Vec<u8>> {
    const S: &str = "xattr entry";
    let mut out = vec![0u8; XATTR_HEADER_SIZE];
    put_u32(&mut out, 0, F2FS_XATTR_MAGIC);
    put_u32(&mut out, 4, 1);
    for x in entries {
        if x.index == 0 {
            return Err(FormatError::invalid(S, "name index 0"));
        }
        let name_len = u8::try_from(x.name.len())
            .map_err(|_| FormatError::invalid(S, format!("name of {} bytes", x.name.len())))?;
        let value_len = u16::try_from(x.value.len())
            .map_err(|_| FormatError::invalid(S, format!("value of {} bytes", x.value.len())))?;
        let at = out.len();
        out.resize(at + xattr_entry_size(x.name.len(), x.value.len()), 0);
        out[at] = x.index;
        out[at + 1] = name_len;
        put_u16(&mut out, at + 2, value_len);
        let name_at = at + XATTR_ENTRY_HEADER_SIZE;
        out[name_at..name_at + x.name.len()].copy_from_slice(&x.name);
        let value_at = name_at + x.name.len();
        out[value_at..value_at + x.value.len()].copy_from_slice(&x.value);
    }
    Ok(out)
}

/// Parses an xattr area: the inline part followed by the xattr node's part (either may
/// be empty). The header sits at the start of the combined area. A header without the
/// magic is one never written (Linux F2FS's `read_all_xattrs` gives it a fresh header
/// and reads the entries after it, and so does fsck.f2fs): not damage. sload.f2fs
/// (f2fs-tools 1.15) was seen leaving a data block address there, the one after the
/// inode's last, in a file whose addresses fill `i_addr` (the fuzz base image
/// `extra`'s inode 92, which fsck.f2fs passes).
pub fn parse_xattrs(area: &[u8]) -> Result<Vec<RawXattr>> {
    const S: &str = "xattr area";
    if area.len() < XATTR_HEADER_SIZE {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let mut at = XATTR_HEADER_SIZE;
    while at + 4 <= area.len() && u32_at(area, at) != 0 {
        let index = area[at];
        let name_len = area[at + 1] as usize;
        let value_len = u16_at(area, at + 2) as usize;
        let end = at + 4 + name_len + value_len;
        if end > area.len() {
            return Err(FormatError::invalid(
                S,
                format!("entry at byte {at} runs past the area"),
            ));
        }
        let name = area[at + 4..at + 4 + name_len].to_vec();
        let value = area[at + 4 + name_len..end].to_vec();
        out.push(RawXattr { index, name, value });
        at = (end + 3) & !3;
    }
    Ok(out)
}

/// Version of F2FS's compact ACL encoding.
pub const F2FS_ACL_VERSION: u32 = 1;
/// Version of the Linux xattr ACL format (`posix_acl_xattr_header`).
pub const POSIX_ACL_XATTR_VERSION: u32 = 2;
/// ACL tag: the owner.
pub const ACL_USER_OBJ: u16 = 0x01;
/// ACL tag: a named user.
pub const ACL_USER: u16 = 0x02;
/// ACL tag: the owning group.
pub const ACL_GROUP_OBJ: u16 = 0x04;
/// ACL tag: a named group.
pub const ACL_GROUP: u16 = 0x08;
/// ACL tag: the mask of named entries and the owning group.
pub const ACL_MASK: u16 = 0x10;
/// ACL tag: everyone else.
pub const ACL_OTHER: u16 = 0x20;
/// The id of entries that name nobody (all but [`ACL_USER`] and [`ACL_GROUP`]).
pub const ACL_UNDEFINED_ID: u32 = u32::MAX;

/// One POSIX ACL entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AclEntry {
    /// `ACL_*` tag.
    pub tag: u16,
    /// Permission bits (read 4, write 2, execute 1).
    pub perm: u16,
    /// User or group id for [`ACL_USER`] and [`ACL_GROUP`], else [`ACL_UNDEFINED_ID`].
    pub id: u32,
}

fn names_someone(tag: u16) -> bool {
    tag == ACL_USER || tag == ACL_GROUP
}

/// Parses an ACL in the Linux xattr format (version header, then 8-byte entries of tag,
/// permissions and id). Ids of entries that name nobody become [`ACL_UNDEFINED_ID`], as
/// Linux ignores them. An empty list (header only) is valid: setting it removes the
/// ACL. A wrong version is [`FormatError::BadMagic`]; a bad size is
/// [`FormatError::Invalid`]. Entries are not checked (see [`validate_acl`]).
pub fn parse_acl_xattr(v: &[u8]) -> Result<Vec<AclEntry>> {
    const S: &str = "POSIX ACL xattr";
    FormatError::need(S, v, 4)?;
    if u32_at(v, 0) != POSIX_ACL_XATTR_VERSION {
        return Err(FormatError::BadMagic {
            structure: S,
            found: u32_at(v, 0),
            expected: POSIX_ACL_XATTR_VERSION,
        });
    }
    if (v.len() - 4) % 8 != 0 {
        return Err(FormatError::invalid(
            S,
            format!("{} bytes is not a whole number of entries", v.len()),
        ));
    }
    Ok(v[4..]
        .chunks_exact(8)
        .map(|e| {
            let tag = u16_at(e, 0);
            AclEntry {
                tag,
                perm: u16_at(e, 2),
                id: if names_someone(tag) {
                    u32_at(e, 4)
                } else {
                    ACL_UNDEFINED_ID
                },
            }
        })
        .collect())
}

/// Checks an ACL as Linux's `posix_acl_valid` does: permissions within `rwx`; entries in
/// the order owner, named users, owning group, named groups, mask, other; exactly one
/// owner, owning group and other entry; a mask when any named entry is present.
pub fn validate_acl(entries: &[AclEntry]) -> Result<()> {
    const S: &str = "POSIX ACL";
    // Where the walk is: the tags allowed next.
    #[derive(PartialEq)]
    enum Next {
        Owner,
        Users,
        Groups,
        Other,
        Done,
    }
    let mut next = Next::Owner;
    let mut named = false;
    for (i, e) in entries.iter().enumerate() {
        let bad = || FormatError::invalid(S, format!("entry {i} (tag {:#x}) out of place", e.tag));
        if e.perm & !7 != 0 {
            return Err(FormatError::invalid(
                S,
                format!("entry {i} has permissions {:#x}", e.perm),
            ));
        }
        next = match (e.tag, &next) {
            (ACL_USER_OBJ, Next::Owner) => Next::Users,
            (ACL_USER, Next::Users) | (ACL_GROUP, Next::Groups) => {
                if e.id == ACL_UNDEFINED_ID {
                    return Err(FormatError::invalid(S, format!("entry {i} names no id")));
                }
                named = true;
                next
            }
            (ACL_GROUP_OBJ, Next::Users) => Next::Groups,
            (ACL_MASK, Next::Groups) => Next::Other,
            (ACL_OTHER, Next::Other) => Next::Done,
            (ACL_OTHER, Next::Groups) if !named => Next::Done,
            _ => return Err(bad()),
        };
    }
    if next != Next::Done {
        return Err(FormatError::invalid(S, "owner, owning group or other entry missing"));
    }
    Ok(())
}

/// Encodes an ACL in F2FS's compact format: version 1, then 8-byte entries (tag,
/// permissions, id) for named users and groups and 4-byte ones (tag, permissions) for
/// the rest.
pub fn encode_acl(entries: &[AclEntry]) -> Vec<u8> {
    let mut out = F2FS_ACL_VERSION.to_le_bytes().to_vec();
    for e in entries {
        out.extend_from_slice(&e.tag.to_le_bytes());
        out.extend_from_slice(&e.perm.to_le_bytes());
        if names_someone(e.tag) {
            out.extend_from_slice(&e.id.to_le_bytes());
        }
    }
    out
}

/// Converts an ACL from the Linux xattr format to F2FS's compact format (the
/// counterpart of [`acl_to_xattr`]): parsed, checked ([`validate_acl`]) and encoded.
/// An empty ACL is refused: storing none means removing the attribute.
pub fn xattr_to_acl(v: &[u8]) -> Result<Vec<u8>> {
    let entries = parse_acl_xattr(v)?;
    if entries.is_empty() {
        return Err(FormatError::invalid("POSIX ACL", "no entries"));
    }
    validate_acl(&entries)?;
    Ok(encode_acl(&entries))
}

/// The permission bits (`0o777`) an ACL stands for, as Linux's `posix_acl_equiv_mode`
/// computes them: owner, group (the mask when present, else the owning group) and
/// other; and whether the mode bits alone say as much (no mask, no named entry).
pub fn acl_mode(entries: &[AclEntry]) -> (u32, bool) {
    let mut mode = 0u32;
    let mut equivalent = true;
    for e in entries {
        let p = (e.perm & 7) as u32;
        match e.tag {
            ACL_USER_OBJ => mode |= p << 6,
            ACL_GROUP_OBJ => mode |= p << 3,
            ACL_OTHER => mode |= p,
            ACL_MASK => {
                mode = (mode & !0o070) | (p << 3);
                equivalent = false;
            }
            _ => equivalent = false,
        }
    }
    (mode, equivalent)
}

/// What a new inode takes from its directory's default ACL `default`, as Linux's
/// `posix_acl_create_masq` works it out for requested permission bits `mode` (only
/// `0o777` is looked at): the owner, other and (the mask when present, else the owning
/// group) entries keep only the bits the mode asks for, and the mode keeps only the
/// bits those entries grant. Returns the new access ACL, the new permission bits
/// (`0o777` at most) and whether the ACL says no more than those bits (then Linux
/// stores no access ACL).
pub fn acl_create_masq(default: &[AclEntry], mode: u32) -> (Vec<AclEntry>, u32, bool) {
    let mut acl = default.to_vec();
    let mut bits = mode & 0o777;
    let mut equivalent = true;
    let has_mask = acl.iter().any(|e| e.tag == ACL_MASK);
    // The class each entry limits: its shift in the mode.
    let shift = |tag: u16| match tag {
        ACL_USER_OBJ => Some(6),
        ACL_OTHER => Some(0),
        ACL_MASK => Some(3),
        ACL_GROUP_OBJ if !has_mask => Some(3),
        _ => None,
    };
    for e in &mut acl {
        if names_someone(e.tag) || e.tag == ACL_MASK {
            equivalent = false;
        }
        if let Some(s) = shift(e.tag) {
            let granted = u32::from(e.perm) & ((bits >> s) & 7);
            e.perm = (u32::from(e.perm) & !7 | granted) as u16;
            bits = (bits & !(7 << s)) | (granted << s);
        }
    }
    (acl, bits, equivalent)
}

/// The ACL after a change of mode to `mode`, as Linux's `posix_acl_chmod` makes it: the
/// owner, other and (the mask when present, else the owning group) entries take the
/// mode's bits.
pub fn acl_chmod(entries: &[AclEntry], mode: u32) -> Vec<AclEntry> {
    let has_mask = entries.iter().any(|e| e.tag == ACL_MASK);
    entries
        .iter()
        .map(|e| {
            let perm = match e.tag {
                ACL_USER_OBJ => Some(mode >> 6),
                ACL_GROUP_OBJ if !has_mask => Some(mode >> 3),
                ACL_MASK => Some(mode >> 3),
                ACL_OTHER => Some(mode),
                _ => None,
            };
            AclEntry {
                perm: perm.map_or(e.perm, |p| (p & 7) as u16),
                ..*e
            }
        })
        .collect()
}

/// Parses F2FS's compact ACL encoding (version 1; 8-byte entries for named users and
/// groups, 4-byte ones for the rest).
pub fn parse_acl(v: &[u8]) -> Result<Vec<AclEntry>> {
    const S: &str = "POSIX ACL";
    FormatError::need(S, v, 4)?;
    if u32_at(v, 0) != F2FS_ACL_VERSION {
        return Err(FormatError::invalid(S, format!("version {}", u32_at(v, 0))));
    }
    let mut out = Vec::new();
    let mut at = 4;
    while at < v.len() {
        FormatError::need(S, &v[at..], 4)?;
        let tag = u16_at(v, at);
        let perm = u16_at(v, at + 2);
        let id = if names_someone(tag) {
            FormatError::need(S, &v[at..], 8)?;
            let id = u32_at(v, at + 4);
            at += 8;
            id
        } else {
            at += 4;
            ACL_UNDEFINED_ID
        };
        out.push(AclEntry { tag, perm, id });
    }
    Ok(out)
}

/// Encodes an ACL in the Linux xattr format (version 2, 8-byte entries).
pub fn encode_acl_xattr(entries: &[AclEntry]) -> Vec<u8> {
    let mut out = POSIX_ACL_XATTR_VERSION.to_le_bytes().to_vec();
    for e in entries {
        out.extend_from_slice(&e.tag.to_le_bytes());
        out.extend_from_slice(&e.perm.to_le_bytes());
        out.extend_from_slice(&e.id.to_le_bytes());
    }
    out
}

/// Converts F2FS's compact POSIX ACL encoding to the Linux xattr ACL format
/// (`posix_acl_xattr_header` version 2, 8-byte entries).
pub fn acl_to_xattr(v: &[u8]) -> Result<Vec<u8>> {
    Ok(encode_acl_xattr(&parse_acl(v)?))
}
