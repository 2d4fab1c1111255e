//! Test worlds: images (uf2fs mkfs, or mkfs.f2fs with a tree loaded by sload.f2fs, in
//! the default and extra-attribute feature sets), fsck.f2fs as judge, and a file
//! system driven side by side with its model.

use crate::model::{walk, Model};
use std::path::{Path, PathBuf};
use std::process::Command;
use uf2fs_core::mkfs::{mkfs, parse_features, MkfsOptions};
use uf2fs_core::{FileKind, Fs, SetAttr, Stat};

#[path = "../common/oracle.rs"]
mod oracle;
pub use oracle::{fsck_clean, fsck_clean_in_place, output};

pub const MIB: u64 = 1 << 20;
pub const EXTRA: &str = "extra_attr,inode_checksum,flexible_inline_xattr";

/// How a test image is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// uf2fs's mkfs with these features.
    Uf2fs(&'static str),
    /// mkfs.f2fs with these features, then a tree loaded by sload.f2fs.
    Sload(&'static str),
}

/// The four variants every sequence runs on.
pub const VARIANTS: [Variant; 4] = [
    Variant::Uf2fs(""),
    Variant::Uf2fs(EXTRA),
    Variant::Sload(""),
    Variant::Sload(EXTRA),
];

/// A tree for sload: files, a directory two deep, a symlink, enough names for several
/// dentry blocks (sload 1.15 corrupts files over ~867 blocks on flexible_inline_xattr
/// images, so none is that large).
fn make_tree(dir: &Path) {
    std::fs::create_dir_all(dir.join("sub/deep")).unwrap();
    std::fs::write(dir.join("small"), b"hello\n").unwrap();
    std::fs::write(dir.join("empty"), b"").unwrap();
    let medium: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(dir.join("medium"), &medium).unwrap();
    std::fs::write(dir.join("sub/deep/leaf"), b"leaf\n").unwrap();
    std::os::unix::fs::symlink("sub/deep/leaf", dir.join("link")).unwrap();
    for i in 0..300 {
        std::fs::write(dir.join(format!("sub/file-with-a-longer-name-{i:04}")), i.to_string()).unwrap();
    }
}

/// Makes an image `name` in `dir` as `v` says, `size` bytes; fsck-clean before use.
pub fn image(dir: &Path, name: &str, v: Variant, size: u64) -> PathBuf {
    let img = dir.join(name);
    let _ = std::fs::remove_file(&img);
    match v {
        Variant::Uf2fs(features) => {
            let opts = MkfsOptions {
                size_bytes: Some(size),
                features: parse_features(features).unwrap(),
                ..MkfsOptions::default()
            };
            mkfs(&img, &opts).unwrap();
        }
        Variant::Sload(features) => {
            std::fs::File::create(&img).unwrap().set_len(size).unwrap();
            let mut cmd = Command::new("mkfs.f2fs");
            cmd.args(["-q", "-f"]);
            if !features.is_empty() {
                cmd.args(["-O", features]);
            }
            let (ok, text) = output(cmd.arg(&img));
            assert!(ok, "mkfs.f2fs: {text}");
            let tree = dir.join("tree");
            if !tree.exists() {
                make_tree(&tree);
            }
            // sload 1.15 exits 1 after repairing flexible_inline_xattr images it wrote:
            // judged by the fsck below.
            let _ = output(
                Command::new("sload.f2fs")
                    .arg("-f")
                    .arg(&tree)
                    .args(["-t", "/"])
                    .arg(&img),
            );
        }
    }
    fsck_clean(&img, &format!("making {v:?}"));
    img
}

/// One namespace operation on paths.
#[derive(Clone, PartialEq, Eq)]
pub enum Op {
    Create(Vec<u8>, Vec<u8>, u32),
    Mkdir(Vec<u8>, Vec<u8>, u32),
    Mknod(Vec<u8>, Vec<u8>, FileKind, (u32, u32)),
    Symlink(Vec<u8>, Vec<u8>, Vec<u8>),
    Link(Vec<u8>, Vec<u8>, Vec<u8>),
    Unlink(Vec<u8>, Vec<u8>),
    Rmdir(Vec<u8>, Vec<u8>),
    Rename(Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>, u32),
    Chmod(Vec<u8>, u32),
    Checkpoint,
}

impl std::fmt::Debug for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = |b: &[u8]| {
            let t = String::from_utf8_lossy(b);
            if t.len() > 48 {
                format!("{}...({} bytes)", &t[..24], t.len())
            } else {
                t.into_owned()
            }
        };
        match self {
            Op::Create(p, n, m) => write!(f, "create {} {} {m:o}", s(p), s(n)),
            Op::Mkdir(p, n, m) => write!(f, "mkdir {} {} {m:o}", s(p), s(n)),
            Op::Mknod(p, n, k, r) => write!(f, "mknod {} {} {k:?} {r:?}", s(p), s(n)),
            Op::Symlink(p, n, t) => write!(f, "symlink {} {} -> {}", s(p), s(n), s(t)),
            Op::Link(src, p, n) => write!(f, "link {} {} {}", s(src), s(p), s(n)),
            Op::Unlink(p, n) => write!(f, "unlink {} {}", s(p), s(n)),
            Op::Rmdir(p, n) => write!(f, "rmdir {} {}", s(p), s(n)),
            Op::Rename(a, b, c, d, fl) => write!(f, "rename {} {} {} {} {fl}", s(a), s(b), s(c), s(d)),
            Op::Chmod(p, m) => write!(f, "chmod {} {m:o}", s(p)),
            Op::Checkpoint => write!(f, "checkpoint"),
        }
    }
}

fn v(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

/// Shorthands for scripted sequences.
impl Op {
    pub fn create(p: &str, n: &str) -> Op {
        Op::Create(v(p), v(n), 0o644)
    }
    pub fn mkdir(p: &str, n: &str) -> Op {
        Op::Mkdir(v(p), v(n), 0o755)
    }
    pub fn symlink(p: &str, n: &str, target: &[u8]) -> Op {
        Op::Symlink(v(p), v(n), target.to_vec())
    }
    pub fn link(src: &str, p: &str, n: &str) -> Op {
        Op::Link(v(src), v(p), v(n))
    }
    pub fn unlink(p: &str, n: &str) -> Op {
        Op::Unlink(v(p), v(n))
    }
    pub fn rmdir(p: &str, n: &str) -> Op {
        Op::Rmdir(v(p), v(n))
    }
    pub fn rename(sp: &str, sn: &str, dp: &str, dn: &str, flags: u32) -> Op {
        Op::Rename(v(sp), v(sn), v(dp), v(dn), flags)
    }
}

/// A read-write file system and its model, driven together.
pub struct World {
    pub fs: Fs,
    pub model: Model,
    pub img: PathBuf,
    pub ops: usize,
}

impl World {
    /// Opens `img` read-write and models what it holds.
    pub fn open(img: &Path) -> World {
        let fs = Fs::open_rw(img, &[]).unwrap();
        let model = Model::from_fs(&fs);
        World {
            fs,
            model,
            img: img.to_path_buf(),
            ops: 0,
        }
    }

    fn on_fs(&self, op: &Op) -> Result<Option<Stat>, i32> {
        let fs = &self.fs;
        let dir = |p: &[u8]| walk(fs, p).map_err(|e| e.errno());
        let r = match op {
            Op::Create(p, n, perm) => fs.create(dir(p)?, n, *perm, 0, 0).map(Some),
            Op::Mkdir(p, n, perm) => fs.mkdir(dir(p)?, n, *perm, 0, 0).map(Some),
            Op::Mknod(p, n, kind, rdev) => fs.mknod(dir(p)?, n, kind.mode_bits() | 0o640, *rdev, 0, 0).map(Some),
            Op::Symlink(p, n, t) => fs.symlink(dir(p)?, n, t, 0, 0).map(Some),
            Op::Link(src, p, n) => {
                let ino = dir(src)?;
                fs.link(ino, dir(p)?, n).map(Some)
            }
            Op::Unlink(p, n) => fs.unlink(dir(p)?, n).map(|_| None),
            Op::Rmdir(p, n) => fs.rmdir(dir(p)?, n).map(|_| None),
            Op::Rename(sp, sn, dp, dn, flags) => {
                let s = dir(sp)?;
                fs.rename(s, sn, dir(dp)?, dn, *flags).map(|_| None)
            }
            Op::Chmod(p, perm) => {
                let attrs = SetAttr {
                    mode: Some(*perm),
                    ..SetAttr::default()
                };
                fs.setattr(dir(p)?, &attrs).map(Some)
            }
            Op::Checkpoint => fs.write_checkpoint().map(|_| None),
        };
        r.map_err(|e| e.errno())
    }

    fn on_model(&mut self, op: &Op) -> Result<(), i32> {
        let m = &mut self.model;
        match op {
            Op::Create(p, n, perm) => m.create(p, n, FileKind::File, *perm, b"", (0, 0)),
            Op::Mkdir(p, n, perm) => m.create(p, n, FileKind::Dir, *perm, b"", (0, 0)),
            Op::Mknod(p, n, kind, rdev) => m.create(p, n, *kind, 0o640, b"", *rdev),
            Op::Symlink(p, n, t) => m.create(p, n, FileKind::Symlink, 0o777, t, (0, 0)),
            Op::Link(src, p, n) => m.link(src, p, n),
            Op::Unlink(p, n) => m.unlink(p, n, false),
            Op::Rmdir(p, n) => m.unlink(p, n, true),
            Op::Rename(sp, sn, dp, dn, flags) => m.rename(sp, sn, dp, dn, *flags),
            Op::Chmod(p, perm) => m.set_perm(p, *perm),
            Op::Checkpoint => Ok(()),
        }
    }

    /// Applies `op` to both; their outcomes must agree. Returns it.
    pub fn apply(&mut self, op: &Op) -> Result<(), i32> {
        let fs = self.on_fs(op).map(|_| ());
        let model = self.on_model(op);
        assert_eq!(fs, model, "op {} {op:?}: uf2fs and the model disagree", self.ops);
        self.ops += 1;
        fs
    }

    /// Applies `op` unless uf2fs refuses it for want of space (the model knows no
    /// space): then ENOSPC, with nothing changed.
    pub fn apply_unless_full(&mut self, op: &Op) -> Result<(), i32> {
        const ENOSPC: i32 = 28;
        match self.on_fs(op) {
            Err(ENOSPC) => Err(ENOSPC),
            fs => {
                let model = self.on_model(op);
                assert_eq!(fs.map(|_| ()), model, "op {} {op:?}", self.ops);
                self.ops += 1;
                model
            }
        }
    }

    /// Applies `op`, which must succeed.
    pub fn ok(&mut self, op: Op) {
        let r = self.apply(&op);
        assert_eq!(r, Ok(()), "{op:?}");
    }

    /// Applies `op`, which must fail with `errno` and change nothing.
    pub fn err(&mut self, op: Op, errno: i32) {
        let r = self.apply(&op);
        assert_eq!(r, Err(errno), "{op:?}");
    }

    /// The model must match the live file system.
    pub fn check(&self, what: &str) {
        self.model.check(&self.fs, what);
    }

    /// Unmounts, runs fsck, reopens read-only and compares with the model. Returns
    /// fsck's output.
    pub fn finish(self, what: &str) -> String {
        self.model.check(&self.fs, &format!("{what} (before unmount)"));
        self.fs.unmount().unwrap();
        let text = fsck_clean(&self.img, what);
        let fs = Fs::open(&self.img, &[]).unwrap();
        self.model.check(&fs, &format!("{what} (reopened)"));
        text
    }
}
