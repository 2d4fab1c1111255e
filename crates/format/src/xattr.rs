//! Extended attributes: the inline area and the xattr node share one entry list.

use crate::le::{u16_at, u32_at};
use crate::{FormatError, Result};

/// Magic of the xattr header.
pub const F2FS_XATTR_MAGIC: u32 = 0xF2F5_2011;
/// Size of the xattr header (magic, refcount, reserved).
pub const XATTR_HEADER_SIZE: usize = 24;

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

/// Parses an xattr area: the inline part followed by the xattr node's part (either may
/// be empty). The header sits at the start of the combined area.
pub fn parse_xattrs(area: &[u8]) -> Result<Vec<RawXattr>> {
    const S: &str = "xattr area";
    if area.len() < XATTR_HEADER_SIZE {
        return Ok(Vec::new());
    }
    let magic = u32_at(area, 0);
    if magic == 0 && area[..XATTR_HEADER_SIZE].iter().all(|&b| b == 0) {
        return Ok(Vec::new()); // never initialised: no xattrs
    }
    if magic != F2FS_XATTR_MAGIC {
        return Err(FormatError::BadMagic {
            structure: S,
            found: magic,
            expected: F2FS_XATTR_MAGIC,
        });
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

/// Converts F2FS's compact POSIX ACL encoding to the Linux xattr ACL format
/// (`posix_acl_xattr_header` version 2, 8-byte entries).
pub fn acl_to_xattr(v: &[u8]) -> Result<Vec<u8>> {
    const S: &str = "POSIX ACL";
    const F2FS_ACL_VERSION: u32 = 1;
    const ACL_USER: u16 = 0x02;
    const ACL_GROUP: u16 = 0x08;
    FormatError::need(S, v, 4)?;
    if u32_at(v, 0) != F2FS_ACL_VERSION {
        return Err(FormatError::invalid(S, format!("version {}", u32_at(v, 0))));
    }
    let mut out = 2u32.to_le_bytes().to_vec();
    let mut at = 4;
    while at < v.len() {
        FormatError::need(S, &v[at..], 4)?;
        let tag = u16_at(v, at);
        let perm = u16_at(v, at + 2);
        let id = if tag == ACL_USER || tag == ACL_GROUP {
            FormatError::need(S, &v[at..], 8)?;
            let id = u32_at(v, at + 4);
            at += 8;
            id
        } else {
            at += 4;
            u32::MAX
        };
        out.extend_from_slice(&tag.to_le_bytes());
        out.extend_from_slice(&perm.to_le_bytes());
        out.extend_from_slice(&id.to_le_bytes());
    }
    Ok(out)
}
