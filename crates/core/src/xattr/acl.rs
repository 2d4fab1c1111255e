//! POSIX ACLs as Linux F2FS handles them (`posix_acl_xattr_set`, `set_posix_acl`,
//! `__f2fs_set_acl`, `posix_acl_chmod`, `f2fs_acl_create`). An ACL arrives in the Linux
//! xattr format and is stored in F2FS's compact one. Setting an access ACL also sets the
//! permission bits it implies (and clears set-group-ID when asked to, for a caller
//! outside the file's group), and one that says no more than those bits is not stored
//! at all; a default ACL belongs to directories only and is inherited by what is made
//! in them ([`inherit`]); symlinks take no ACL. The attribute flags (create/replace) do
//! not apply, and removing a missing ACL succeeds.

use super::name::AclKind;
use super::write::{edit, layout, load, Rewrite};
use crate::inode::InodeMut;
use crate::tree::Tree;
use crate::{Error, FileKind, Result};
use uf2fs_format::xattr::{
    acl_chmod, acl_create_masq, acl_mode, encode_acl, parse_acl, parse_acl_xattr, validate_acl, RawXattr,
    INDEX_POSIX_ACL_ACCESS, INDEX_POSIX_ACL_DEFAULT,
};
use uf2fs_format::FormatError;

/// What setting or removing an ACL does.
pub enum AclChange {
    /// Nothing at all (removing the default ACL of a non-directory).
    Nothing,
    /// Store `value` (compact format) or, when `None`, remove the attribute; then set
    /// the permission bits to `mode` when given.
    Store {
        /// The compact ACL, or `None` to remove it.
        value: Option<Vec<u8>>,
        /// The inode's new mode (type and special bits kept).
        mode: Option<u16>,
    },
}

fn format_error(shown: &str, e: FormatError) -> Error {
    match e {
        FormatError::BadMagic { .. } => Error::Unsupported {
            feature: "posix_acl",
            detail: format!("{shown}: {e}"),
        },
        _ => Error::Invalid(format!("{shown}: {e}")),
    }
}

/// Works out what setting ACL `kind` of `i` to `value` (Linux xattr format; `None`
/// removes) does, or why it is refused: a value Linux cannot parse (`EINVAL`, or
/// `EOPNOTSUPP` for another version), a symlink (`EOPNOTSUPP`), a default ACL on a
/// non-directory (`EACCES`), an ACL `posix_acl_valid` refuses (`EINVAL`). An ACL of no
/// entries removes it.
pub fn plan(kind: AclKind, i: &InodeMut, value: Option<&[u8]>, shown: &str) -> Result<AclChange> {
    let entries = match value {
        Some(v) => Some(parse_acl_xattr(v).map_err(|e| format_error(shown, e))?),
        None => None,
    }
    .filter(|e| !e.is_empty());
    let file_kind = i.kind()?;
    if file_kind == FileKind::Symlink {
        return Err(Error::Unsupported {
            feature: "posix_acl",
            detail: format!("{shown}: symbolic links have no ACLs"),
        });
    }
    if kind == AclKind::Default && file_kind != FileKind::Dir {
        return match entries {
            Some(_) => Err(Error::AccessDenied(format!(
                "{shown}: only directories have a default ACL"
            ))),
            None => Ok(AclChange::Nothing),
        };
    }
    let Some(entries) = entries else {
        return Ok(AclChange::Store {
            value: None,
            mode: None,
        });
    };
    validate_acl(&entries).map_err(|e| format_error(shown, e))?;
    if kind == AclKind::Default {
        return Ok(AclChange::Store {
            value: Some(encode_acl(&entries)),
            mode: None,
        });
    }
    let (bits, equivalent) = acl_mode(&entries);
    let mode = Some(((i.inode.mode as u32 & !0o777) | bits) as u16);
    let value = (!equivalent).then(|| encode_acl(&entries));
    Ok(AclChange::Store { value, mode })
}

/// The change a new mode `mode` makes to the access ACL of `i`, as `posix_acl_chmod`
/// makes it: `None` when `i` has none (or keeps it as it is).
pub fn after_chmod(t: &Tree, i: &InodeMut, mode: u32) -> Result<Option<Rewrite>> {
    if i.kind()? == FileKind::Symlink {
        return Ok(None);
    }
    let mut loaded = load(t, i)?;
    let Some(old) = loaded
        .list
        .iter()
        .find(|x| x.index == INDEX_POSIX_ACL_ACCESS && x.name.is_empty())
    else {
        return Ok(None);
    };
    let corrupt = |e: FormatError| {
        Error::corrupt(
            format!("access ACL of inode {}", i.ino),
            t.nodes.blkaddr_of(t.dev, i.ino),
            e.to_string(),
        )
    };
    let entries = acl_chmod(&parse_acl(&old.value).map_err(corrupt)?, mode);
    let value = (!acl_mode(&entries).1).then(|| encode_acl(&entries));
    let mut list = std::mem::take(&mut loaded.list);
    let cap = super::area::capacity(&i.inode);
    let shown = "system.posix_acl_access";
    if !edit(&mut list, INDEX_POSIX_ACL_ACCESS, b"", value.as_deref(), 0, cap, shown)? {
        return Ok(None);
    }
    layout(i, &list, loaded).map(Some)
}

/// What a new inode of `kind` takes from directory `dir`, as F2FS's `f2fs_acl_create`
/// works it out for requested permissions `mode`: with a default ACL on `dir`, the
/// mode keeps only what that ACL grants ([`acl_create_masq`]; the umask is not
/// applied), a new directory gets the default ACL too, and the inode an access ACL
/// unless the mode says all of it; without one, the mode loses the umask. Symlinks
/// take nothing. Returns the new mode and the inode's xattr list (default ACL first,
/// then access ACL, the order F2FS writes them in).
pub fn inherit(t: &Tree, dir: &InodeMut, kind: FileKind, mode: u32, umask: u32) -> Result<(u32, Vec<RawXattr>)> {
    if kind == FileKind::Symlink {
        return Ok((mode, Vec::new()));
    }
    let loaded = load(t, dir)?;
    let Some(default) = loaded
        .list
        .into_iter()
        .find(|x| x.index == INDEX_POSIX_ACL_DEFAULT && x.name.is_empty())
    else {
        return Ok((mode & !(umask & 0o777), Vec::new()));
    };
    let corrupt = |e: FormatError| {
        Error::corrupt(
            format!("default ACL of inode {}", dir.ino),
            t.nodes.blkaddr_of(t.dev, dir.ino),
            e.to_string(),
        )
    };
    let entries = parse_acl(&default.value).map_err(corrupt)?;
    let (access, bits, equivalent) = acl_create_masq(&entries, mode);
    let mut list = Vec::new();
    if kind == FileKind::Dir {
        list.push(default);
    }
    if !equivalent {
        list.push(RawXattr {
            index: INDEX_POSIX_ACL_ACCESS,
            name: Vec::new(),
            value: encode_acl(&access),
        });
    }
    Ok(((mode & !0o777) | bits, list))
}
