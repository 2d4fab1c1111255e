//! Extended attributes: the inline area of the inode followed by the xattr node
//! ([`area`]), read here and changed by [`Fs::set_xattr`] and [`Fs::remove_xattr`] as
//! Linux F2FS changes them ([`write`]; POSIX ACLs in [`acl`]; names in [`name`]).
//!
//! A change runs as a namespace operation does (see [`crate::namei`]): `cp_lock`
//! shared and the inode's lock held, every check and read before the first change,
//! then the inode and the xattr node are changed in memory (dirty node blocks, NAT
//! entries) until the next checkpoint. Permission checks (who may write `trusted.*`,
//! `user.*` only on files and directories) are the VFS's, in front of the FUSE adapter.

pub(crate) mod acl;
pub(crate) mod area;
pub(crate) mod name;
pub(crate) mod write;

use crate::data::Mapper;
use crate::inode::now;
use crate::ops::Op;
use crate::{Error, Fs, Ino, Result, Xattr};
use acl::AclChange;
use name::{XattrName, XATTR_SIZE_MAX};
use uf2fs_format::xattr::{acl_to_xattr, INDEX_POSIX_ACL_ACCESS, INDEX_POSIX_ACL_DEFAULT};

/// [`Fs::set_xattr`] flag: fail with [`Error::Exists`] when the attribute exists
/// (Linux's `XATTR_CREATE`).
pub const XATTR_CREATE: u32 = 1;
/// [`Fs::set_xattr`] flag: fail with [`Error::NoAttribute`] when it does not (Linux's
/// `XATTR_REPLACE`).
pub const XATTR_REPLACE: u32 = 2;
/// [`Fs::set_xattr`] flag for `system.posix_acl_access`: the caller is neither in the
/// file's group nor privileged, so the mode the ACL sets loses set-group-ID (Linux's
/// `posix_acl_update_mode`; FUSE's `FUSE_SETXATTR_ACL_KILL_SGID`). Ignored elsewhere.
pub const XATTR_ACL_KILL_SGID: u32 = 4;
/// Set-group-ID in a mode.
const S_ISGID: u16 = 0o2000;

impl Mapper<'_> {
    /// All user-visible extended attributes.
    pub fn xattrs(&self) -> Result<Vec<Xattr>> {
        let i = &self.inode.inode;
        let node = if i.xattr_nid != 0 {
            Some(self.nodes.read(self.dev, i.xattr_nid, self.inode.ino)?)
        } else {
            None
        };
        let area = area::gather(i, &self.inode.block, node.as_ref().map(|b| b.as_slice()));
        let mut out = Vec::new();
        for x in area::parse(self.inode.ino, || self.inode.blkaddr, &area)? {
            let Some(name) = x.full_name() else { continue };
            let value = if x.index == INDEX_POSIX_ACL_ACCESS || x.index == INDEX_POSIX_ACL_DEFAULT {
                acl_to_xattr(&x.value).map_err(|e| {
                    Error::corrupt(
                        format!("xattrs of inode {}", self.inode.ino),
                        self.inode.blkaddr,
                        e.to_string(),
                    )
                })?
            } else {
                x.value
            };
            out.push(Xattr { name, value });
        }
        Ok(out)
    }
}

impl Fs {
    /// Sets extended attribute `name` (full name, e.g. `user.comment`) of inode `ino` to
    /// `value`, as Linux F2FS does. `flags` may hold [`XATTR_CREATE`] ([`Error::Exists`]
    /// when present) and [`XATTR_REPLACE`] ([`Error::NoAttribute`] when absent).
    ///
    /// Names: `user.`, `trusted.`, `security.`, `lustre.` with a name after the prefix,
    /// and `system.posix_acl_access` / `system.posix_acl_default` (values in the Linux
    /// xattr ACL format; see the `acl` module for what they do to the mode); others are
    /// [`Error::Unsupported`] (`EOPNOTSUPP`). A name that is empty or over 255 bytes is
    /// [`Error::OutOfRange`] (`ERANGE`); a value over 64 KiB, over the kernel's limit for
    /// the inode (its inline xattr area and one xattr node, less 28 bytes), or with no
    /// room left in that space is [`Error::AttributeTooBig`] (`E2BIG`). The change time
    /// becomes now. [`XATTR_ACL_KILL_SGID`] says the caller may not keep set-group-ID.
    pub fn set_xattr(&self, ino: Ino, name: &[u8], value: &[u8], flags: u32) -> Result<()> {
        if flags & !(XATTR_CREATE | XATTR_REPLACE | XATTR_ACL_KILL_SGID) != 0 {
            return Err(Error::Invalid(format!("xattr flags {flags:#x}")));
        }
        let n = name::resolve(name)?;
        if value.len() > XATTR_SIZE_MAX {
            return Err(Error::AttributeTooBig(format!(
                "value of {} bytes (at most {XATTR_SIZE_MAX})",
                value.len()
            )));
        }
        self.with_room(|fs| {
            let mut op = fs.begin_op()?;
            let r = op.change_xattr(ino, &n, name, Some(value), flags);
            op.end(r)
        })
    }

    /// Removes extended attribute `name` of inode `ino` ([`Error::NoAttribute`] when
    /// absent; name errors as [`Fs::set_xattr`]). Removing a POSIX ACL that is absent
    /// succeeds, as on Linux. When what is left fits the inline xattr area, the xattr
    /// node is freed. The change time becomes now.
    pub fn remove_xattr(&self, ino: Ino, name: &[u8]) -> Result<()> {
        let n = name::resolve(name)?;
        let mut op = self.begin_op()?;
        let r = op.change_xattr(ino, &n, name, None, XATTR_REPLACE);
        op.end(r)
    }
}

impl Op<'_> {
    /// Sets (`value` `Some`) or removes attribute `n` of `ino`.
    fn change_xattr(&mut self, ino: Ino, n: &XattrName, full: &[u8], value: Option<&[u8]>, flags: u32) -> Result<()> {
        let shown = crate::error::show_name(full);
        let _g = self.rw.lock_inodes(&[ino]);
        // An inode without links may be an orphan still open: it keeps its attributes.
        let mut i = self.load(ino)?;
        let kill_sgid = flags & XATTR_ACL_KILL_SGID != 0;
        let (stored, flags, mode) = match n.acl {
            None => (value.map(<[u8]>::to_vec), flags & !XATTR_ACL_KILL_SGID, None),
            Some(kind) => match acl::plan(kind, &i, value, &shown)? {
                AclChange::Nothing => return Ok(()),
                AclChange::Store { value, mode } => (value, 0, mode.map(|m| if kill_sgid { m & !S_ISGID } else { m })),
            },
        };
        let rewrite = write::prepare(&self.t, &i, n.index, n.suffix, stored.as_deref(), flags, &shown)?;
        let (extra, nids) = rewrite.as_ref().map_or((Default::default(), 0), |r| r.need(&i));
        let mut per_log = [0u64; 6];
        per_log[i.node_log() as usize] = 1;
        let need = crate::ops::need(per_log, 0).plus(&extra);
        self.ensure_room_as(need, nids, value.is_none())?;
        self.commit();
        if let Some(r) = rewrite {
            r.apply(&mut self.t, &mut i)?;
        }
        if let Some(m) = mode {
            i.inode.mode = m;
        }
        i.inode.ctime = now();
        self.t.store_inode(i)
    }
}

impl Fs {
    /// All extended attributes of an inode. Read-write, the read holds `cp_lock` shared
    /// and the inode's lock, so that it never sees an inode and an xattr node from
    /// different changes.
    pub fn list_xattrs(&self, ino: Ino) -> Result<Vec<Xattr>> {
        self.stop_on_damage(self.list_xattrs_inner(ino))
    }

    /// [`Fs::list_xattrs`], before damage it reports stops the volume.
    fn list_xattrs_inner(&self, ino: Ino) -> Result<Vec<Xattr>> {
        let _held = self.rw.as_ref().map(|rw| (rw.cp_shared(), rw.lock_inodes(&[ino])));
        let i = self.inode(ino)?;
        self.mapper(&i).xattrs()
    }

    /// One extended attribute by full name, `None` when absent.
    pub fn get_xattr(&self, ino: Ino, name: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self
            .list_xattrs(ino)?
            .into_iter()
            .find(|x| x.name == name)
            .map(|x| x.value))
    }
}
