//! Full attribute names (`user.comment`) to F2FS name indexes and back, checked as
//! Linux checks them: the VFS's limits first, then the namespace handlers F2FS has.

use crate::{Error, Result};
use uf2fs_format::xattr::{
    INDEX_LUSTRE, INDEX_POSIX_ACL_ACCESS, INDEX_POSIX_ACL_DEFAULT, INDEX_SECURITY, INDEX_TRUSTED, INDEX_USER,
    XATTR_NAME_MAX,
};

/// Longest value the VFS passes to a file system (`XATTR_SIZE_MAX`).
pub const XATTR_SIZE_MAX: usize = 65536;

/// Name of the POSIX access ACL.
pub const POSIX_ACL_ACCESS: &[u8] = b"system.posix_acl_access";
/// Name of the POSIX default ACL (directories only).
pub const POSIX_ACL_DEFAULT: &[u8] = b"system.posix_acl_default";

/// Namespaces stored with a prefix and a name after it.
const PREFIXED: [(&[u8], u8); 4] = [
    (b"user.", INDEX_USER),
    (b"trusted.", INDEX_TRUSTED),
    (b"security.", INDEX_SECURITY),
    (b"lustre.", INDEX_LUSTRE),
];

/// Which POSIX ACL a name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclKind {
    /// `system.posix_acl_access`: the permissions of the inode itself.
    Access,
    /// `system.posix_acl_default`: what new entries of a directory inherit.
    Default,
}

/// A full attribute name resolved to where F2FS stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XattrName<'a> {
    /// F2FS name index (namespace).
    pub index: u8,
    /// The name within the namespace (empty for ACLs).
    pub suffix: &'a [u8],
    /// Set for the two POSIX ACL names, whose values are converted and checked.
    pub acl: Option<AclKind>,
}

/// Resolves `full` as Linux does for a write: an empty name or one over 255 bytes is
/// `ERANGE` ([`Error::OutOfRange`]); a known prefix with nothing after it is `EINVAL`;
/// a name no F2FS handler takes (including `system.*` but the two ACLs) is
/// `EOPNOTSUPP` ([`Error::Unsupported`]).
pub fn resolve(full: &[u8]) -> Result<XattrName<'_>> {
    let shown = || crate::error::show_name(full);
    if full.is_empty() || full.len() > XATTR_NAME_MAX {
        return Err(Error::OutOfRange(format!(
            "attribute name of {} bytes (1 to {XATTR_NAME_MAX})",
            full.len()
        )));
    }
    for (prefix, index) in PREFIXED {
        if let Some(suffix) = full.strip_prefix(prefix) {
            if suffix.is_empty() {
                return Err(Error::Invalid(format!(
                    "attribute name {:?} has nothing after its prefix",
                    shown()
                )));
            }
            return Ok(XattrName {
                index,
                suffix,
                acl: None,
            });
        }
    }
    let acl = |index, kind| XattrName {
        index,
        suffix: b"",
        acl: Some(kind),
    };
    match full {
        POSIX_ACL_ACCESS => Ok(acl(INDEX_POSIX_ACL_ACCESS, AclKind::Access)),
        POSIX_ACL_DEFAULT => Ok(acl(INDEX_POSIX_ACL_DEFAULT, AclKind::Default)),
        _ => Err(Error::Unsupported {
            feature: "xattr namespace",
            detail: format!(
                "attribute {:?}: F2FS stores user., trusted., security., lustre. and the system.posix_acl_* names",
                shown()
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_map_to_indexes() {
        let r = resolve(b"user.comment").unwrap();
        assert_eq!((r.index, r.suffix, r.acl), (INDEX_USER, &b"comment"[..], None));
        assert_eq!(resolve(b"trusted.x").unwrap().index, INDEX_TRUSTED);
        assert_eq!(resolve(b"security.selinux").unwrap().index, INDEX_SECURITY);
        assert_eq!(resolve(b"lustre.lov").unwrap().index, INDEX_LUSTRE);
        let a = resolve(POSIX_ACL_ACCESS).unwrap();
        assert_eq!(
            (a.index, a.suffix, a.acl),
            (INDEX_POSIX_ACL_ACCESS, &b""[..], Some(AclKind::Access))
        );
        assert_eq!(resolve(POSIX_ACL_DEFAULT).unwrap().acl, Some(AclKind::Default));
    }

    #[test]
    fn bad_names_get_linux_errors() {
        let errno = |n: &[u8]| resolve(n).unwrap_err().errno();
        assert_eq!(errno(b""), 34);
        assert_eq!(errno(&[b'u'; 256]), 34);
        assert_eq!(errno(b"user."), 22);
        assert_eq!(errno(b"system.advise"), 95);
        assert_eq!(errno(b"system.posix_acl_accessx"), 95);
        assert_eq!(errno(b"other.x"), 95);
        assert_eq!(errno(b"User.x"), 95);
        let mut long = b"user.".to_vec();
        long.resize(255, b'x');
        assert!(resolve(&long).is_ok());
        long.push(b'x');
        assert_eq!(errno(&long), 34);
    }
}
