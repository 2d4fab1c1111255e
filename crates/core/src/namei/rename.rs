//! rename(2) with `RENAME_NOREPLACE` and `RENAME_EXCHANGE`, as F2FS's `f2fs_rename`
//! and `f2fs_cross_rename` do it:
//!
//! - plain: the target name is added (or, when it exists, pointed at the source inode,
//!   whose replaced inode loses a link, two for a directory), then the source name is
//!   removed; a moved directory's ".." and `i_pino` follow it to its new parent, whose
//!   link count grows while the old parent's shrinks;
//! - exchange: both names are pointed at each other's inode; moved directories get
//!   their ".." fixed, and parents' link counts follow when a directory and a
//!   non-directory trade places between different parents.
//!
//! - whiteout (`RENAME_WHITEOUT`, overlayfs's): a plain rename whose source name is
//!   then pointed at a new whiteout inode, a character device 0:0 with no permission
//!   bits owned by the caller (F2FS's `f2fs_create_whiteout`), in the same operation.
//!
//! Non-directories moved get the lost-parent hint (`FADVISE_LOST_PINO`); a directory
//! cannot move into itself or below itself ([`Error::Invalid`]).

use super::create::Contents;
use super::dentry::{self, Entry};
use super::newinode::{build, file_type, NewInode, FADVISE_LOST_PINO_BIT};
use super::{check_name, is_dots, Op, LOCK_ATTEMPTS_MAX};
use crate::api::{RENAME_EXCHANGE, RENAME_NOREPLACE, RENAME_WHITEOUT};
use crate::inode::{now, InodeMut};
use crate::{Creator, Error, FileKind, Fs, Ino, Result};
use std::collections::BTreeMap;

/// Directory levels walked up at most when checking that a directory does not move
/// below itself (deeper trees are refused).
const ANCESTORS_MAX: usize = 1 << 16;

/// The two names of a rename and what they name.
struct Names<'n> {
    src_dir: Ino,
    src_name: &'n [u8],
    dst_dir: Ino,
    dst_name: &'n [u8],
    /// Who makes the whiteout, under `RENAME_WHITEOUT`.
    who: Creator,
}

/// `S_ISGID`: a directory with it gives new inodes its group.
const S_ISGID: u32 = 0o2000;

/// Both entries as found under the locks.
struct Found {
    src: Entry,
    dst: Option<Entry>,
}

impl Fs {
    /// Renames `src_name` in `src_dir` to `dst_name` in `dst_dir`. `flags`: 0,
    /// [`RENAME_NOREPLACE`] (fail with [`Error::Exists`] if the target exists) or
    /// [`RENAME_EXCHANGE`] (swap two existing names), either with `RENAME_WHITEOUT`
    /// (leave a whiteout, owned by root, under the source name; see
    /// [`Fs::rename_as`]).
    pub fn rename(&self, src_dir: Ino, src_name: &[u8], dst_dir: Ino, dst_name: &[u8], flags: u32) -> Result<()> {
        self.rename_as(src_dir, src_name, dst_dir, dst_name, flags, Creator::default())
    }

    /// [`Fs::rename`] for `who`: under [`RENAME_WHITEOUT`] the source name is left
    /// naming a whiteout (a character device 0:0 with mode 0) owned by `who` (the
    /// group of a set-group-ID source directory), as F2FS makes it; not with
    /// [`RENAME_EXCHANGE`] ([`Error::Invalid`], as Linux).
    pub fn rename_as(
        &self,
        src_dir: Ino,
        src_name: &[u8],
        dst_dir: Ino,
        dst_name: &[u8],
        flags: u32,
        who: Creator,
    ) -> Result<()> {
        let replace_or_exchange = RENAME_NOREPLACE | RENAME_EXCHANGE;
        let exchange_and_other = flags & RENAME_EXCHANGE != 0 && flags & (RENAME_NOREPLACE | RENAME_WHITEOUT) != 0;
        if flags & !(replace_or_exchange | RENAME_WHITEOUT) != 0 || exchange_and_other {
            return Err(Error::Invalid(format!("rename flags {flags:#x}")));
        }
        check_name(src_name)?;
        check_name(dst_name)?;
        if is_dots(src_name) || is_dots(dst_name) {
            return Err(Error::Invalid("rename of \".\" or \"..\"".into()));
        }
        let names = Names {
            src_dir,
            src_name,
            dst_dir,
            dst_name,
            who,
        };
        let mut op = self.begin_op()?;
        let r = op.rename(&names, flags);
        op.end(r)
    }
}

impl<'a> Op<'a> {
    fn rename(&mut self, n: &Names, flags: u32) -> Result<()> {
        let rw = self.rw;
        let _r = rw.rename_guard();
        let (_g, found) = self.lock_rename(n)?;
        let mut inodes: BTreeMap<Ino, InodeMut> = BTreeMap::new();
        for ino in [n.src_dir, n.dst_dir] {
            inodes.insert(ino, self.load_dir(ino)?);
        }
        let s = found.src.ino;
        inodes.insert(s, self.load(s)?);
        let target = found.dst.as_ref().map(|e| e.ino);
        if target == Some(s) {
            return Ok(()); // two links of one inode: nothing to do
        }
        if let Some(t) = target {
            inodes.insert(t, self.load(t)?);
        }
        let s_dir = inodes[&s].is_dir();
        let t_dir = target.is_some_and(|t| inodes[&t].is_dir());
        self.check_rename(n, flags, &found, &mut inodes, (s_dir, t_dir))?;
        // The target name's insertion, the source's dentry block and the moved
        // directory's "..", four inodes.
        let mut extra = super::insert_need(&inodes[&n.dst_dir]).plus(&super::need([2, 0, 0, 3, 2, 0], 0));
        let whiteout = flags & RENAME_WHITEOUT != 0;
        if whiteout {
            // The whiteout's inode.
            extra = extra.plus(&super::need([0, 0, 0, 0, 1, 0], 1));
        }
        self.ensure_room(extra, super::INSERT_NIDS + usize::from(whiteout))?;
        // A plain rename over a name takes a link of the inode it named (two of a
        // directory); one left with none that is open becomes an orphan.
        let mut orphan = match target {
            Some(t) if flags & RENAME_EXCHANGE == 0 => {
                let drop = if s_dir { 2 } else { 1 };
                self.orphan_slot(t, inodes[&t].inode.links.saturating_sub(drop))?
            }
            _ => None,
        };
        self.commit();
        // Names and parents change: an fsync of these takes a checkpoint.
        rw.fsync_track().needs_checkpoint(s);
        if let Some(t) = target {
            rw.fsync_track().needs_checkpoint(t);
        }
        if s_dir || t_dir {
            // Every path below them changes (Linux's fsync would link a file under
            // its parent's old path; uf2fs checkpoints instead).
            rw.fsync_track().directory_renamed();
        }
        if flags & RENAME_EXCHANGE != 0 {
            let dst = found
                .dst
                .as_ref()
                .ok_or_else(|| Error::NotFound(crate::error::show_name(n.dst_name)))?;
            self.exchange(n, &found.src, dst, &mut inodes)?;
        } else {
            self.move_entry(n, &found, &mut inodes, whiteout)?;
        }
        for (ino, i) in inodes {
            if i.inode.links == 0 {
                let slot = if Some(ino) == target { orphan.take() } else { None };
                self.drop_last_link(i, slot)?;
            } else {
                self.t.store_inode(i)?;
            }
        }
        Ok(())
    }

    /// Locks both directories and both named inodes, looking both names up again under
    /// the locks until they are stable.
    fn lock_rename(&self, n: &Names) -> Result<(super::locks::InodeGuard<'a>, Found)> {
        let find_both = |g: &super::locks::InodeGuard<'_>| -> Result<Found> {
            debug_assert!(g.holds(n.src_dir) && g.holds(n.dst_dir));
            let mut sd = self.load_dir(n.src_dir)?;
            let mut dd = self.load_dir(n.dst_dir)?;
            let src = dentry::find(&self.t, &mut sd, n.src_name)?
                .ok_or_else(|| Error::NotFound(crate::error::show_name(n.src_name)))?;
            let dst = dentry::find(&self.t, &mut dd, n.dst_name)?;
            Ok(Found { src, dst })
        };
        for _ in 0..LOCK_ATTEMPTS_MAX {
            let seen = {
                let g = self.rw.lock_inodes(&[n.src_dir, n.dst_dir]);
                find_both(&g)?
            };
            let mut want = vec![n.src_dir, n.dst_dir, seen.src.ino];
            want.extend(seen.dst.as_ref().map(|e| e.ino));
            let rw: &'a crate::fs::ReadWrite = self.rw;
            let g = rw.lock_inodes(&want);
            let now_found = find_both(&g)?;
            if now_found.src == seen.src && now_found.dst == seen.dst {
                return Ok((g, now_found));
            }
        }
        Err(Error::Invalid(
            "rename: the names kept changing while being locked".into(),
        ))
    }

    /// The refusals: flags against the target, types, emptiness, moving a directory
    /// below itself, link counts.
    fn check_rename(
        &self,
        n: &Names,
        flags: u32,
        found: &Found,
        inodes: &mut BTreeMap<Ino, InodeMut>,
        (s_dir, t_dir): (bool, bool),
    ) -> Result<()> {
        let shown = crate::error::show_name(n.dst_name);
        let exchange = flags & RENAME_EXCHANGE != 0;
        match (&found.dst, exchange) {
            (None, true) => return Err(Error::NotFound(shown)),
            (Some(_), false) if flags & RENAME_NOREPLACE != 0 => return Err(Error::Exists(shown)),
            (Some(t), false) => {
                if s_dir && !t_dir {
                    return Err(Error::NotDir(shown));
                }
                if !s_dir && t_dir {
                    return Err(Error::IsDir(shown));
                }
                if t_dir {
                    let ti = inodes.get_mut(&t.ino).ok_or_else(|| Error::NotFound(shown.clone()))?;
                    if !dentry::is_empty(&self.t, ti)? {
                        return Err(Error::NotEmpty(shown));
                    }
                }
            }
            _ => {}
        }
        if n.src_dir != n.dst_dir {
            if s_dir {
                self.check_not_below(found.src.ino, n.dst_dir)?;
            }
            if let (true, Some(t)) = (exchange && t_dir, &found.dst) {
                self.check_not_below(t.ino, n.src_dir)?;
            }
            let gains = if exchange {
                t_dir != s_dir
            } else {
                s_dir && found.dst.is_none()
            };
            let gainer = if exchange && !s_dir { n.src_dir } else { n.dst_dir };
            if gains && inodes[&gainer].inode.links == u32::MAX {
                return Err(Error::TooManyLinks(format!("directory inode {gainer}")));
            }
        }
        Ok(())
    }

    /// Fails with [`Error::Invalid`] when `dir` is directory `moving` or lies below it
    /// (walking ".." up to the root; directories do not move meanwhile: renames hold
    /// the rename lock).
    fn check_not_below(&self, moving: Ino, dir: Ino) -> Result<()> {
        let root = self.fs.root();
        let mut cur = dir;
        for _ in 0..ANCESTORS_MAX {
            if cur == moving {
                return Err(Error::Invalid(format!(
                    "directory inode {moving} cannot move into itself or below itself"
                )));
            }
            if cur == root {
                return Ok(());
            }
            let mut d = self.load_dir(cur)?;
            cur = dentry::find(&self.t, &mut d, b"..")?
                .ok_or_else(|| {
                    Error::corrupt(
                        format!("directory inode {cur}"),
                        self.t.nodes.blkaddr_of(self.t.dev, cur),
                        "no \"..\" entry",
                    )
                })?
                .ino;
        }
        Err(Error::Invalid(format!("directory tree above inode {dir} is too deep")))
    }

    /// A plain rename (see the module notes).
    fn move_entry(
        &mut self,
        n: &Names,
        found: &Found,
        inodes: &mut BTreeMap<Ino, InodeMut>,
        whiteout: bool,
    ) -> Result<()> {
        let t = now();
        let s = found.src.ino;
        let s_dir = inodes[&s].is_dir();
        let s_ft = file_type(inodes[&s].kind()?);
        let get = |m: &mut BTreeMap<Ino, InodeMut>, ino: Ino| {
            m.remove(&ino).ok_or_else(|| Error::NotFound(format!("inode {ino}")))
        };
        let mut dd = get(inodes, n.dst_dir)?;
        match &found.dst {
            Some(e) => {
                dentry::retarget(&mut self.t, &mut dd, e, s, s_ft)?;
                let victim = inodes
                    .get_mut(&e.ino)
                    .ok_or_else(|| Error::NotFound(format!("inode {}", e.ino)))?;
                victim.inode.ctime = t;
                let drop = if s_dir { 2 } else { 1 };
                victim.inode.links = victim.inode.links.saturating_sub(drop);
            }
            None => {
                dentry::add(&mut self.t, &mut dd, n.dst_name, s, s_ft)?;
                if s_dir {
                    dd.inode.links += 1;
                }
                let si = inodes
                    .get_mut(&s)
                    .ok_or_else(|| Error::NotFound(format!("inode {s}")))?;
                si.inode.name = n.dst_name.to_vec();
                si.inode.pino = n.dst_dir;
            }
        }
        dd.inode.mtime = t;
        dd.inode.ctime = t;
        inodes.insert(n.dst_dir, dd);
        let mut sd = get(inodes, n.src_dir)?;
        // In one directory, adding the new name may have moved the old one (an inline
        // directory converted into dentry blocks): look it up again where it is now.
        let src = if n.src_dir == n.dst_dir && found.dst.is_none() {
            dentry::find(&self.t, &mut sd, n.src_name)?
                .filter(|e| e.ino == s)
                .ok_or_else(|| {
                    Error::bug(format!(
                        "the entry being renamed vanished from directory inode {} while locked",
                        n.src_dir
                    ))
                })?
        } else {
            found.src.clone()
        };
        if whiteout {
            let w = self.make_whiteout(n, &sd)?;
            dentry::retarget(&mut self.t, &mut sd, &src, w, uf2fs_format::dentry::ft::CHRDEV)?;
        } else {
            dentry::remove(&mut self.t, &mut sd, &src)?;
        }
        sd.inode.mtime = t;
        sd.inode.ctime = t;
        if s_dir {
            sd.inode.links = sd.inode.links.saturating_sub(1);
        }
        inodes.insert(n.src_dir, sd);
        let mut si = get(inodes, s)?;
        si.inode.ctime = t;
        if s_dir {
            si.inode.pino = n.dst_dir;
            if n.src_dir != n.dst_dir {
                self.set_dotdot(&mut si, n.dst_dir, t)?;
            }
        } else {
            si.inode.advise |= FADVISE_LOST_PINO_BIT;
        }
        inodes.insert(s, si);
        Ok(())
    }

    /// A new whiteout inode for the source name of `n` in directory `sd` (its room
    /// and node id were taken with the rename's): `S_IFCHR` with mode 0 and device
    /// 0:0, owned by the caller, the directory's group when it is set-group-ID.
    fn make_whiteout(&mut self, n: &Names, sd: &InodeMut) -> Result<Ino> {
        let ino = self.t.take_nid()?;
        let gid = if sd.inode.mode as u32 & S_ISGID != 0 {
            sd.inode.gid
        } else {
            n.who.gid
        };
        let spec = NewInode {
            ino,
            mode: FileKind::CharDev.mode_bits(),
            uid: n.who.uid,
            gid,
            parent: n.src_dir,
            parent_flags: sd.inode.flags,
            name: n.src_name,
            generation: self.next_generation(),
        };
        let mut w = build(self.fs.superblock(), &spec, FileKind::CharDev);
        self.fill(&mut w, Contents::Device(0, 0))?;
        Ok(ino)
    }

    /// Points directory `d`'s ".." at `parent` (its times change, as F2FS's
    /// `f2fs_set_link` changes them).
    fn set_dotdot(&mut self, d: &mut InodeMut, parent: Ino, t: (u64, u32)) -> Result<()> {
        let e = dentry::find(&self.t, d, b"..")?.ok_or_else(|| {
            Error::corrupt(
                format!("directory inode {}", d.ino),
                self.t.nodes.blkaddr_of(self.t.dev, d.ino),
                "no \"..\" entry",
            )
        })?;
        dentry::retarget(&mut self.t, d, &e, parent, uf2fs_format::dentry::ft::DIR)?;
        d.inode.mtime = t;
        d.inode.ctime = t;
        Ok(())
    }

    /// RENAME_EXCHANGE (see the module notes).
    fn exchange(&mut self, n: &Names, src: &Entry, dst: &Entry, inodes: &mut BTreeMap<Ino, InodeMut>) -> Result<()> {
        let t = now();
        let (s, o) = (src.ino, dst.ino);
        let get = |m: &mut BTreeMap<Ino, InodeMut>, ino: Ino| {
            m.remove(&ino).ok_or_else(|| Error::NotFound(format!("inode {ino}")))
        };
        let mut si = get(inodes, s)?;
        let mut oi = get(inodes, o)?;
        let (s_dir, o_dir) = (si.is_dir(), oi.is_dir());
        let moved = n.src_dir != n.dst_dir;
        if moved && s_dir {
            self.set_dotdot(&mut si, n.dst_dir, t)?;
        }
        if moved && o_dir {
            self.set_dotdot(&mut oi, n.src_dir, t)?;
        }
        let mut sd = get(inodes, n.src_dir)?;
        dentry::retarget(&mut self.t, &mut sd, src, o, file_type(oi.kind()?))?;
        sd.inode.mtime = t;
        sd.inode.ctime = t;
        if moved && s_dir != o_dir {
            // The source parent trades a subdirectory for a file, or the reverse.
            if s_dir {
                sd.inode.links = sd.inode.links.saturating_sub(1);
            } else {
                sd.inode.links += 1;
            }
        }
        inodes.insert(n.src_dir, sd);
        let mut dd = get(inodes, n.dst_dir)?;
        dentry::retarget(&mut self.t, &mut dd, dst, s, file_type(si.kind()?))?;
        dd.inode.mtime = t;
        dd.inode.ctime = t;
        if moved && s_dir != o_dir {
            if o_dir {
                dd.inode.links = dd.inode.links.saturating_sub(1);
            } else {
                dd.inode.links += 1;
            }
        }
        inodes.insert(n.dst_dir, dd);
        for (i, parent, is_dir) in [(&mut si, n.dst_dir, s_dir), (&mut oi, n.src_dir, o_dir)] {
            if is_dir {
                i.inode.pino = parent;
            } else {
                i.inode.advise |= FADVISE_LOST_PINO_BIT;
            }
        }
        inodes.insert(s, si);
        inodes.insert(o, oi);
        Ok(())
    }
}
