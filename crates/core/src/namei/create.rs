//! Making names: create, mkdir, mknod, symlink (a new inode and its entry) and link
//! (an entry for an existing inode).

use super::newinode::{build, file_type, temperature, NewInode, FADVISE_LOST_PINO_BIT};
use super::{check_name, dentry, is_dots, Op};
use crate::device::BLOCK;
use crate::inode::{now, InodeMut};
use crate::segment::LogType;
use crate::xattr::acl;
use crate::xattr::write::{layout, Loaded};
use crate::{Error, FileKind, Fs, Ino, Result, Stat};
use uf2fs_format::node::{F2FS_DATA_EXIST, F2FS_INLINE_DATA};

/// `S_ISGID`: a directory with it passes its group (and the bit, to directories) on.
const S_ISGID: u32 = 0o2000;
/// Permission bits of a mode.
const PERM_MASK: u32 = 0o7777;

/// Who makes a new inode: its owner, and the umask that applies to the requested
/// permissions when the directory has no default ACL (with one, the ACL limits them
/// instead, as on Linux).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Creator {
    /// Owner (the caller's fsuid).
    pub uid: u32,
    /// Group (the caller's fsgid; the directory's group when it is set-group-ID).
    pub gid: u32,
    /// The caller's umask (only `0o777` counts).
    pub umask: u32,
}

impl Creator {
    /// A creator with no umask: the caller has applied its own.
    fn masked(uid: u32, gid: u32) -> Creator {
        Creator { uid, gid, umask: 0 }
    }
}

/// What a new inode holds besides its fields.
#[derive(Clone, Copy)]
pub(super) enum Contents<'t> {
    /// Nothing (files, directories, fifos, sockets).
    None,
    /// A device number (major, minor).
    Device(u32, u32),
    /// A symlink target.
    Target(&'t [u8]),
}

/// A device number in the first address slots, as F2FS stores it: the old 16-bit
/// encoding in slot 0 when major and minor fit a byte each, else the new 32-bit one
/// in slot 1.
fn encode_rdev(major: u32, minor: u32) -> Result<(u32, u32)> {
    if major < 256 && minor < 256 {
        return Ok(((major << 8) | minor, 0));
    }
    if major >= 1 << 12 || minor >= 1 << 20 {
        return Err(Error::Invalid(format!("device number {major}:{minor} out of range")));
    }
    Ok((0, (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12)))
}

impl Fs {
    /// Creates regular file `name` in directory `dir` with permission bits `mode`
    /// (file type bits, if any, must say regular file), owned by `uid`:`gid` (the
    /// directory's group when it is set-group-ID). The caller applies its umask; a
    /// default ACL on `dir` is inherited ([`Fs::create_as`]).
    pub fn create(&self, dir: Ino, name: &[u8], mode: u32, uid: u32, gid: u32) -> Result<Stat> {
        self.create_as(dir, name, mode, Creator::masked(uid, gid))
    }

    /// [`Fs::create`] for `who`: as F2FS does, a default ACL on `dir` is inherited (the
    /// new inode's access ACL, and the mode limited by it) and the umask is applied only
    /// when there is none.
    pub fn create_as(&self, dir: Ino, name: &[u8], mode: u32, who: Creator) -> Result<Stat> {
        let ty = mode & 0o170000;
        if ty != 0 && ty != FileKind::File.mode_bits() {
            return Err(Error::Invalid(format!(
                "create with mode {mode:#o}: not a regular file"
            )));
        }
        self.make(dir, name, FileKind::File, mode, who, Contents::None)
    }

    /// Creates directory `name` in `dir` (inline dentries, "." and ".."), as
    /// [`Fs::create`]; the parent's link count grows by one.
    pub fn mkdir(&self, dir: Ino, name: &[u8], mode: u32, uid: u32, gid: u32) -> Result<Stat> {
        self.mkdir_as(dir, name, mode, Creator::masked(uid, gid))
    }

    /// [`Fs::mkdir`] for `who`, as [`Fs::create_as`]; the new directory also takes
    /// `dir`'s default ACL as its own.
    pub fn mkdir_as(&self, dir: Ino, name: &[u8], mode: u32, who: Creator) -> Result<Stat> {
        self.make(dir, name, FileKind::Dir, mode, who, Contents::None)
    }

    /// Creates a special file (or a regular one) `name` in `dir`: `mode` carries the file
    /// type (fifo, socket, character or block device, regular file) and permissions;
    /// `rdev` is (major, minor) for devices, ignored otherwise.
    pub fn mknod(&self, dir: Ino, name: &[u8], mode: u32, rdev: (u32, u32), uid: u32, gid: u32) -> Result<Stat> {
        self.mknod_as(dir, name, mode, rdev, Creator::masked(uid, gid))
    }

    /// [`Fs::mknod`] for `who`, as [`Fs::create_as`].
    pub fn mknod_as(&self, dir: Ino, name: &[u8], mode: u32, rdev: (u32, u32), who: Creator) -> Result<Stat> {
        let kind = FileKind::from_mode(mode)
            .ok_or_else(|| Error::Invalid(format!("mknod with mode {mode:#o}: no file type")))?;
        let contents = match kind {
            FileKind::CharDev | FileKind::BlockDev => Contents::Device(rdev.0, rdev.1),
            FileKind::Fifo | FileKind::Socket | FileKind::File => Contents::None,
            FileKind::Dir | FileKind::Symlink => {
                return Err(Error::Invalid(format!("mknod makes no {kind:?}; use mkdir or symlink")))
            }
        };
        self.make(dir, name, kind, mode, who, contents)
    }

    /// Creates symbolic link `name` in `dir` pointing at `target` (1 to 4095 bytes, no
    /// NUL): inline in the inode when it fits, else in one data block.
    pub fn symlink(&self, dir: Ino, name: &[u8], target: &[u8], uid: u32, gid: u32) -> Result<Stat> {
        if target.is_empty() {
            return Err(Error::NotFound("empty symlink target".into()));
        }
        // One data block at most (a 4 KiB one: PATH_MAX bounds targets on any volume).
        if target.len() >= BLOCK {
            return Err(Error::NameTooLong(format!("symlink target of {} bytes", target.len())));
        }
        if target.contains(&0) {
            return Err(Error::Invalid("symlink target contains NUL".into()));
        }
        self.make(
            dir,
            name,
            FileKind::Symlink,
            0o777,
            Creator::masked(uid, gid),
            Contents::Target(target),
        )
    }

    /// Adds name `new_name` in `new_dir` for inode `ino` (not a directory); its link
    /// count grows by one.
    pub fn link(&self, ino: Ino, new_dir: Ino, new_name: &[u8]) -> Result<Stat> {
        check_name(new_name)?;
        if is_dots(new_name) {
            return Err(Error::Exists(crate::error::show_name(new_name)));
        }
        self.with_room(|fs| {
            let mut op = fs.begin_op()?;
            let r = op.link(ino, new_dir, new_name);
            op.end(r)
        })
    }

    fn make(&self, dir: Ino, name: &[u8], kind: FileKind, mode: u32, who: Creator, contents: Contents) -> Result<Stat> {
        check_name(name)?;
        if is_dots(name) {
            return Err(Error::Exists(crate::error::show_name(name)));
        }
        if let Contents::Device(major, minor) = contents {
            encode_rdev(major, minor)?;
        }
        let mode = kind.mode_bits() | (mode & PERM_MASK);
        self.with_room(|fs| {
            let mut op = fs.begin_op()?;
            let r = op.make(dir, name, kind, mode, who, contents);
            op.end(r)
        })
    }
}

impl Op<'_> {
    /// [`Fs::make`] under the directory's lock: the new inode first (so that whoever
    /// finds the entry can read it) with the ACLs it inherits, then the entry, then the
    /// parent's times and links. Returns the new inode's attributes, read while the lock
    /// keeps others from removing it.
    fn make(
        &mut self,
        dir: Ino,
        name: &[u8],
        kind: FileKind,
        mode: u32,
        who: Creator,
        contents: Contents,
    ) -> Result<Stat> {
        let (uid, mut gid) = (who.uid, who.gid);
        let rw = self.rw;
        let _g = rw.lock_inodes(&[dir]);
        let mut d = self.load_dir(dir)?;
        if dentry::find(&self.t, &mut d, name)?.is_some() {
            return Err(Error::Exists(crate::error::show_name(name)));
        }
        if kind == FileKind::Dir && d.inode.links == u32::MAX {
            return Err(Error::TooManyLinks(format!("directory inode {dir}")));
        }
        let (mut mode, acls) = acl::inherit(&self.t, &d, kind, mode, who.umask)?;
        if d.inode.mode as u32 & S_ISGID != 0 {
            gid = d.inode.gid;
            if kind == FileKind::Dir {
                mode |= S_ISGID;
            }
        }
        let node_log = if kind == FileKind::Dir { 3 } else { 4 };
        let mut extra = super::insert_need(&d);
        extra.per_log[node_log] += 1;
        extra.per_log[LogType::WarmData as usize] += u64::from(kind == FileKind::Symlink);
        extra.new_blocks += 2;
        // Inherited ACLs too large for the inline xattr area take an xattr node.
        let xattr_node = usize::from(!acls.is_empty());
        extra.per_log[node_log] += xattr_node as u64;
        extra.new_blocks += xattr_node as u64;
        self.ensure_room(extra, super::MAKE_NIDS + xattr_node)?;
        let ino = self.t.take_nid()?;
        let spec = NewInode {
            ino,
            mode,
            uid,
            gid,
            parent: dir,
            parent_flags: d.inode.flags,
            name,
            generation: self.next_generation(),
        };
        let mut new = build(self.fs.superblock(), &spec, kind);
        if kind == FileKind::File {
            new.inode.advise |= temperature(self.fs.superblock(), name);
        }
        self.set_compress_new_inode(&mut new, kind, d.inode.flags, name);
        let xattrs = if acls.is_empty() {
            None
        } else {
            let none = Loaded {
                list: Vec::new(),
                node: None,
            };
            match layout(&new, &acls, none) {
                Ok(r) => Some(r),
                Err(e) => {
                    self.t.nodes.release_nid(ino);
                    return Err(e);
                }
            }
        };
        self.commit();
        if let Some(r) = xattrs {
            r.apply(&mut self.t, &mut new)?;
        }
        self.fill(&mut new, contents)?;
        dentry::add(&mut self.t, &mut d, name, ino, file_type(kind))?;
        let t = now();
        d.inode.mtime = t;
        d.inode.ctime = t;
        if kind == FileKind::Dir {
            d.inode.links += 1;
        }
        self.t.store_inode(d)?;
        self.fs.stat(ino)
    }

    /// Registers the new inode's node (its id becomes in use) with its contents.
    pub(super) fn fill(&mut self, new: &mut InodeMut, contents: Contents) -> Result<()> {
        let sb = self.fs.superblock();
        match contents {
            Contents::None => {}
            Contents::Device(major, minor) => {
                let (old, new_style) = encode_rdev(major, minor)?;
                new.set_slot(0, old);
                new.set_slot(1, new_style);
            }
            Contents::Target(target) if target.len() <= new.inode.max_inline_data() => {
                new.inline_area()[..target.len()].copy_from_slice(target);
                new.inode.inline |= F2FS_DATA_EXIST;
                new.inode.size = target.len() as u64;
            }
            Contents::Target(_) => new.inode.inline &= !F2FS_INLINE_DATA,
        }
        let (ino, log) = (new.ino, new.node_log());
        self.t.new_node(ino, ino, new.clone().finish(sb)?, log)?;
        if let Contents::Target(target) = contents {
            if !new.inode.has_inline(F2FS_INLINE_DATA) {
                let mut block = vec![0u8; new.inode.geometry.block_size()];
                block[..target.len()].copy_from_slice(target);
                self.t.put_block(new, 0, block, LogType::WarmData)?;
                new.inode.size = target.len() as u64;
            }
        }
        self.t.store_inode(new.clone())
    }

    /// [`Fs::link`] under the locks of the inode and the directory; returns the
    /// inode's new attributes.
    fn link(&mut self, ino: Ino, new_dir: Ino, new_name: &[u8]) -> Result<Stat> {
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino, new_dir]);
        let mut d = self.load_dir(new_dir)?;
        let mut i = self.load(ino)?;
        if i.is_dir() {
            return Err(Error::NotPermitted(format!("hard link to directory inode {ino}")));
        }
        // A second name: an fsync of it takes a checkpoint from now on.
        rw.fsync_track().needs_checkpoint(ino);
        if i.inode.links == 0 {
            return Err(Error::NotFound(format!("inode {ino} was removed")));
        }
        if i.inode.links == u32::MAX {
            return Err(Error::TooManyLinks(format!("inode {ino}")));
        }
        if dentry::find(&self.t, &mut d, new_name)?.is_some() {
            return Err(Error::Exists(crate::error::show_name(new_name)));
        }
        let mut extra = super::insert_need(&d);
        extra.per_log[LogType::WarmNode as usize] += 1;
        self.ensure_room(extra, super::INSERT_NIDS)?;
        let ft = file_type(i.kind()?);
        self.commit();
        let t = now();
        i.inode.links += 1;
        i.inode.ctime = t;
        i.inode.advise |= FADVISE_LOST_PINO_BIT;
        i.inode.name = new_name.to_vec();
        i.inode.pino = new_dir;
        self.t.store_inode(i)?;
        dentry::add(&mut self.t, &mut d, new_name, ino, ft)?;
        d.inode.mtime = t;
        d.inode.ctime = t;
        self.t.store_inode(d)?;
        self.fs.stat(ino)
    }
}

impl Op<'_> {
    /// F2FS's `set_compress_new_inode` for new inode `new` of `kind` named `name` in
    /// a directory with flags `parent_flags`, on a volume with the compression
    /// feature: a regular file with a hot extension or a `nocompress_extension` stays
    /// as it is, one with a `compress_extension` is compressed; otherwise a regular
    /// file or directory takes the parent's `FS_NOCOMP_FL`, or else its
    /// `FS_COMPR_FL` with the mount's compression settings.
    fn set_compress_new_inode(&self, new: &mut InodeMut, kind: FileKind, parent_flags: u32, name: &[u8]) {
        use super::flags::{FS_COMPR_FL, FS_NOCOMP_FL};
        use super::newinode::FADVISE_HOT_BIT;
        if !self.fs.superblock().has(uf2fs_format::superblock::FEATURE_COMPRESSION)
            || (new.inode.extra_isize as usize) < uf2fs_format::node::F2FS_TOTAL_EXTRA_ATTR_SIZE
        {
            return;
        }
        let options = self.rw.compress().options();
        let compress = match kind {
            FileKind::File => match options.for_new_file(name, new.inode.advise & FADVISE_HOT_BIT != 0) {
                Some(c) => c,
                None if parent_flags & FS_NOCOMP_FL != 0 => {
                    new.inode.flags |= FS_NOCOMP_FL;
                    false
                }
                None => parent_flags & FS_COMPR_FL != 0,
            },
            FileKind::Dir if parent_flags & FS_NOCOMP_FL != 0 => {
                new.inode.flags |= FS_NOCOMP_FL;
                false
            }
            FileKind::Dir => parent_flags & FS_COMPR_FL != 0,
            _ => false,
        };
        if !compress {
            return;
        }
        new.inode.flags |= FS_COMPR_FL;
        new.inode.compress = Some(options.codec.compression());
        if kind == FileKind::File {
            // Compressed files keep no inline data (the new inode's slots are zeros).
            new.inode.inline &= !(F2FS_INLINE_DATA | F2FS_DATA_EXIST);
        }
    }
}
