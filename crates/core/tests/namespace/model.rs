//! The in-memory model of a namespace the tests keep beside uf2fs: path -> kind,
//! permissions, symlink target, device number and link group (names of one inode share
//! a group), with the outcome every operation must have, as errno.

use std::collections::{BTreeMap, BTreeSet};
use uf2fs_core::{Error, FileKind, Fs, Ino, RENAME_EXCHANGE, RENAME_NOREPLACE};

pub const ENOENT: i32 = 2;
pub const EPERM: i32 = 1;
pub const EEXIST: i32 = 17;
pub const ENOTDIR: i32 = 20;
pub const EISDIR: i32 = 21;
pub const EINVAL: i32 = 22;
pub const ENOTEMPTY: i32 = 39;
pub const ENAMETOOLONG: i32 = 36;

fn check_len(name: &[u8]) -> Result<(), i32> {
    if name.len() > 255 {
        Err(ENAMETOOLONG)
    } else {
        Ok(())
    }
}

/// One name in the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MNode {
    pub kind: FileKind,
    pub perm: u32,
    pub target: Vec<u8>,
    pub rdev: (u32, u32),
    pub group: u64,
}

/// Paths ("/" and "/a/b") to what they name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    pub nodes: BTreeMap<Vec<u8>, MNode>,
    next_group: u64,
}

/// What the read path shows of one name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub kind: FileKind,
    pub perm: u32,
    pub nlink: u32,
    pub target: Vec<u8>,
    pub rdev: (u32, u32),
    pub ino: Ino,
    pub size: u64,
}

pub fn join(parent: &[u8], name: &[u8]) -> Vec<u8> {
    let mut p = parent.to_vec();
    if p != b"/" {
        p.push(b'/');
    }
    p.extend_from_slice(name);
    p
}

fn show(p: &[u8]) -> String {
    String::from_utf8_lossy(p).into_owned()
}

/// Whether `path` is `top` or below it.
fn within(path: &[u8], top: &[u8]) -> bool {
    path == top || (path.starts_with(top) && path.get(top.len()) == Some(&b'/'))
}

/// The whole tree as the read path sees it (iterative walk, no symlinks followed).
pub fn fs_tree(fs: &Fs) -> BTreeMap<Vec<u8>, Seen> {
    let mut out = BTreeMap::new();
    let mut todo: Vec<(Vec<u8>, Ino)> = vec![(b"/".to_vec(), fs.root())];
    while let Some((path, ino)) = todo.pop() {
        let st = fs.stat(ino).unwrap_or_else(|e| panic!("stat {}: {e}", show(&path)));
        let target = match st.kind {
            FileKind::Symlink => fs.read_link(ino).unwrap(),
            FileKind::Dir => {
                let entries = fs
                    .read_dir(ino)
                    .unwrap_or_else(|e| panic!("read_dir {}: {e}", show(&path)));
                for e in entries {
                    todo.push((join(&path, &e.name), e.ino));
                }
                Vec::new()
            }
            _ => Vec::new(),
        };
        let seen = Seen {
            kind: st.kind,
            perm: st.mode & 0o7777,
            nlink: st.nlink,
            target,
            rdev: st.rdev,
            ino,
            size: st.size,
        };
        assert!(out.insert(path.clone(), seen).is_none(), "{} seen twice", show(&path));
    }
    out
}

/// Resolves `path` one name at a time without following symlinks.
pub fn walk(fs: &Fs, path: &[u8]) -> Result<Ino, Error> {
    let mut cur = fs.root();
    for comp in path.split(|&c| c == b'/').filter(|c| !c.is_empty()) {
        cur = fs.lookup(cur, comp)?;
    }
    Ok(cur)
}

impl Model {
    /// The model of what `fs` holds now (names of one inode in one group).
    pub fn from_fs(fs: &Fs) -> Model {
        let mut groups: BTreeMap<Ino, u64> = BTreeMap::new();
        let mut nodes = BTreeMap::new();
        for (path, s) in fs_tree(fs) {
            let n = groups.len() as u64;
            let group = *groups.entry(s.ino).or_insert(n);
            nodes.insert(
                path,
                MNode {
                    kind: s.kind,
                    perm: s.perm,
                    target: s.target,
                    rdev: s.rdev,
                    group,
                },
            );
        }
        Model {
            next_group: groups.len() as u64,
            nodes,
        }
    }

    fn get(&self, p: &[u8]) -> Option<&MNode> {
        self.nodes.get(p)
    }

    fn is_dir(&self, p: &[u8]) -> bool {
        self.get(p).is_some_and(|n| n.kind == FileKind::Dir)
    }

    /// Checks every name on the way to `path` (and `path` itself): missing ENOENT, a
    /// non-directory on the way ENOTDIR.
    pub fn resolve(&self, path: &[u8]) -> Result<(), i32> {
        let mut cur = b"/".to_vec();
        for comp in path.split(|&c| c == b'/').filter(|c| !c.is_empty()) {
            if !self.is_dir(&cur) {
                return Err(ENOTDIR);
            }
            cur = join(&cur, comp);
            if self.get(&cur).is_none() {
                return Err(ENOENT);
            }
        }
        Ok(())
    }

    /// `path` must resolve to a directory.
    fn resolve_dir(&self, path: &[u8]) -> Result<(), i32> {
        self.resolve(path)?;
        if self.is_dir(path) {
            Ok(())
        } else {
            Err(ENOTDIR)
        }
    }

    fn children(&self, dir: &[u8]) -> impl Iterator<Item = (&Vec<u8>, &MNode)> {
        let prefix = join(dir, b"");
        let len = prefix.len();
        let p2 = prefix.clone();
        self.nodes
            .range(prefix..)
            .take_while(move |(k, _)| k.starts_with(&p2))
            .filter(move |(k, _)| k.len() > len && !k[len..].contains(&b'/'))
    }

    fn is_empty_dir(&self, dir: &[u8]) -> bool {
        self.children(dir).next().is_none()
    }

    /// The link count the model implies.
    pub fn nlink(&self, path: &[u8]) -> u32 {
        let n = &self.nodes[path];
        if n.kind == FileKind::Dir {
            return 2 + self.children(path).filter(|(_, c)| c.kind == FileKind::Dir).count() as u32;
        }
        self.nodes.values().filter(|m| m.group == n.group).count() as u32
    }

    /// A new name of a new inode.
    pub fn create(
        &mut self,
        parent: &[u8],
        name: &[u8],
        kind: FileKind,
        perm: u32,
        target: &[u8],
        rdev: (u32, u32),
    ) -> Result<(), i32> {
        self.resolve_dir(parent)?;
        if kind == FileKind::Symlink && target.len() >= 4096 {
            return Err(ENAMETOOLONG);
        }
        check_len(name)?;
        let p = join(parent, name);
        if self.nodes.contains_key(&p) {
            return Err(EEXIST);
        }
        let group = self.next_group;
        self.next_group += 1;
        let rdev = if matches!(kind, FileKind::CharDev | FileKind::BlockDev) {
            rdev
        } else {
            (0, 0)
        };
        self.nodes.insert(
            p,
            MNode {
                kind,
                perm,
                target: target.to_vec(),
                rdev,
                group,
            },
        );
        Ok(())
    }

    pub fn link(&mut self, src: &[u8], parent: &[u8], name: &[u8]) -> Result<(), i32> {
        self.resolve(src)?;
        self.resolve_dir(parent)?;
        check_len(name)?;
        let n = self.nodes[src].clone();
        if n.kind == FileKind::Dir {
            return Err(EPERM);
        }
        let p = join(parent, name);
        if self.nodes.contains_key(&p) {
            return Err(EEXIST);
        }
        self.nodes.insert(p, n);
        Ok(())
    }

    pub fn unlink(&mut self, parent: &[u8], name: &[u8], want_dir: bool) -> Result<(), i32> {
        self.resolve_dir(parent)?;
        check_len(name)?;
        let p = join(parent, name);
        let n = self.get(&p).ok_or(ENOENT)?;
        match (want_dir, n.kind == FileKind::Dir) {
            (false, true) => return Err(EISDIR),
            (true, false) => return Err(ENOTDIR),
            _ => {}
        }
        if want_dir && !self.is_empty_dir(&p) {
            return Err(ENOTEMPTY);
        }
        self.nodes.remove(&p);
        Ok(())
    }

    pub fn set_perm(&mut self, path: &[u8], perm: u32) -> Result<(), i32> {
        self.resolve(path)?;
        let g = self.nodes[path].group;
        for n in self.nodes.values_mut().filter(|n| n.group == g) {
            n.perm = perm;
        }
        Ok(())
    }

    /// Takes `top` and everything below it out of the model, paths relative to `top`.
    fn take_subtree(&mut self, top: &[u8]) -> Vec<(Vec<u8>, MNode)> {
        let keys: Vec<Vec<u8>> = self.nodes.keys().filter(|k| within(k, top)).cloned().collect();
        keys.into_iter()
            .map(|k| {
                let n = self.nodes.remove(&k).unwrap();
                (k[top.len()..].to_vec(), n)
            })
            .collect()
    }

    fn put_subtree(&mut self, top: &[u8], items: Vec<(Vec<u8>, MNode)>) {
        for (rel, n) in items {
            let mut k = top.to_vec();
            k.extend_from_slice(&rel);
            self.nodes.insert(k, n);
        }
    }

    /// rename(2), with the checks in uf2fs's order.
    pub fn rename(&mut self, sp: &[u8], sn: &[u8], dp: &[u8], dn: &[u8], flags: u32) -> Result<(), i32> {
        // Both parents are resolved before either is checked to be a directory (the
        // test harness resolves paths to inodes first).
        self.resolve(sp)?;
        self.resolve(dp)?;
        self.resolve_dir(sp)?;
        self.resolve_dir(dp)?;
        check_len(sn)?;
        check_len(dn)?;
        let (s, d) = (join(sp, sn), join(dp, dn));
        let sg = self.get(&s).ok_or(ENOENT)?.group;
        let target = self.get(&d).map(|n| n.group);
        if target == Some(sg) {
            return Ok(());
        }
        let exchange = flags & RENAME_EXCHANGE != 0;
        let (s_dir, t_dir) = (self.is_dir(&s), self.is_dir(&d));
        match (target, exchange) {
            (None, true) => return Err(ENOENT),
            (Some(_), false) if flags & RENAME_NOREPLACE != 0 => return Err(EEXIST),
            (Some(_), false) => {
                if s_dir && !t_dir {
                    return Err(ENOTDIR);
                }
                if !s_dir && t_dir {
                    return Err(EISDIR);
                }
                if t_dir && !self.is_empty_dir(&d) {
                    return Err(ENOTEMPTY);
                }
            }
            _ => {}
        }
        if sp != dp {
            if s_dir && within(dp, &s) {
                return Err(EINVAL);
            }
            if exchange && t_dir && within(sp, &d) {
                return Err(EINVAL);
            }
        }
        let moving = self.take_subtree(&s);
        if exchange {
            let other = self.take_subtree(&d);
            self.put_subtree(&s, other);
        } else if target.is_some() {
            self.take_subtree(&d);
        }
        self.put_subtree(&d, moving);
        Ok(())
    }

    /// Panics unless `fs` shows exactly this model: the same paths; the same kind,
    /// permissions, target, device number and link count for each; and names of one
    /// group on one inode, different groups on different inodes.
    pub fn check(&self, fs: &Fs, what: &str) {
        let seen = fs_tree(fs);
        let want: BTreeSet<&Vec<u8>> = self.nodes.keys().collect();
        let got: BTreeSet<&Vec<u8>> = seen.keys().collect();
        if want != got {
            let missing: Vec<String> = want.difference(&got).map(|p| show(p)).take(10).collect();
            let extra: Vec<String> = got.difference(&want).map(|p| show(p)).take(10).collect();
            panic!("{what}: paths differ; missing {missing:?}, unexpected {extra:?}");
        }
        let mut ino_of: BTreeMap<u64, Ino> = BTreeMap::new();
        let mut group_of: BTreeMap<Ino, u64> = BTreeMap::new();
        for (p, m) in &self.nodes {
            let s = &seen[p];
            let at = show(p);
            assert_eq!((s.kind, s.perm), (m.kind, m.perm), "{what}: {at}: kind and permissions");
            assert_eq!(s.target, m.target, "{what}: {at}: symlink target");
            assert_eq!(s.rdev, m.rdev, "{what}: {at}: device number");
            assert_eq!(s.nlink, self.nlink(p), "{what}: {at}: link count");
            if m.kind == FileKind::Symlink {
                assert_eq!(s.size, m.target.len() as u64, "{what}: {at}: symlink size");
            }
            if m.kind == FileKind::Dir {
                continue;
            }
            assert_eq!(
                *ino_of.entry(m.group).or_insert(s.ino),
                s.ino,
                "{what}: {at}: links of one file split"
            );
            assert_eq!(
                *group_of.entry(s.ino).or_insert(m.group),
                m.group,
                "{what}: {at}: two files share an inode"
            );
        }
    }
}
