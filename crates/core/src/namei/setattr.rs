//! setattr: mode, owner, group and times. Size changes are file data (step 3 of the
//! write path) and are refused for now.

use super::Op;
use crate::api::SetAttr;
use crate::inode::now;
use crate::{Error, Fs, Ino, Result, Stat, Timestamp};
use uf2fs_format::node::RawTime;

/// `t` as an inode stores it: F2FS's time fields are 64-bit seconds that Linux reads
/// as signed, so times before 1970 are stored in two's complement, as Linux writes
/// them.
pub(super) fn raw(t: Timestamp) -> Result<RawTime> {
    if t.nsecs >= 1_000_000_000 {
        return Err(Error::Invalid(format!(
            "time {}.{:09} cannot be stored",
            t.secs, t.nsecs
        )));
    }
    Ok((t.secs as u64, t.nsecs))
}

impl Fs {
    /// Changes the attributes `attrs` names of inode `ino` (see [`SetAttr`]); the
    /// change time becomes now unless given. Returns the new attributes.
    pub fn setattr(&self, ino: Ino, attrs: &SetAttr) -> Result<Stat> {
        if attrs.size.is_some() {
            return Err(Error::Unsupported {
                feature: "truncate",
                detail: "changing a file's size comes with file data (write path step 3)".into(),
            });
        }
        let times = [attrs.atime, attrs.mtime, attrs.ctime].map(|t| t.map(raw).transpose());
        let [atime, mtime, ctime] = times;
        let (atime, mtime, ctime) = (atime?, mtime?, ctime?);
        self.with_room(|fs| {
            let mut op = fs.begin_op()?;
            let r = op.setattr(ino, attrs, (atime, mtime, ctime));
            op.end(r)
        })?;
        self.stat(ino)
    }
}

impl Fs {
    /// Sets the access time of inode `ino` to `t`, nothing else (not the change time):
    /// the update a read or a directory listing makes on Linux under the mount's atime
    /// rule (`touch_atime`). The caller decides whether one is due.
    pub fn touch_atime(&self, ino: Ino, t: Timestamp) -> Result<()> {
        let t = raw(t)?;
        let mut op = self.begin_op()?;
        let r = op.touch_atime(ino, t);
        op.end(r)
    }
}

impl Op<'_> {
    fn touch_atime(&mut self, ino: Ino, t: RawTime) -> Result<()> {
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino]);
        let mut i = self.load(ino)?;
        self.ensure_room(super::need([0, 0, 0, 1, 1, 0], 0), 0)?;
        self.commit();
        i.inode.atime = t;
        self.t.store_inode(i)
    }

    fn setattr(
        &mut self,
        ino: Ino,
        attrs: &SetAttr,
        (atime, mtime, ctime): (Option<RawTime>, Option<RawTime>, Option<RawTime>),
    ) -> Result<()> {
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino]);
        // An inode without links is an orphan still open: its attributes change too.
        let mut i = self.load(ino)?;
        let ty = i.inode.mode as u32 & 0o170000;
        if let Some(m) = attrs.mode {
            if m & 0o170000 != 0 && m & 0o170000 != ty {
                return Err(Error::Invalid(format!(
                    "mode {m:#o} changes the file type of inode {ino}"
                )));
            }
        }
        // A new mode rewrites the access ACL's owner, group (or mask) and other entries.
        let acl = match attrs.mode {
            Some(m) => crate::xattr::acl::after_chmod(&self.t, &i, m)?,
            None => None,
        };
        let (extra, nids) = acl.as_ref().map_or((Default::default(), 0), |r| r.need(&i));
        self.ensure_room(super::need([0, 0, 0, 1, 1, 0], 0).plus(&extra), nids)?;
        self.commit();
        if let Some(r) = acl {
            r.apply(&mut self.t, &mut i)?;
        }
        if let Some(m) = attrs.mode {
            i.inode.mode = (ty | (m & 0o7777)) as u16;
        }
        if let Some(u) = attrs.uid {
            i.inode.uid = u;
        }
        if let Some(g) = attrs.gid {
            i.inode.gid = g;
        }
        if let Some(t) = atime {
            i.inode.atime = t;
        }
        if let Some(t) = mtime {
            i.inode.mtime = t;
        }
        i.inode.ctime = ctime.unwrap_or_else(now);
        self.t.store_inode(i)
    }
}
