//! Test worlds for xattr writes: images (uf2fs mkfs, or mkfs.f2fs with a tree loaded by
//! sload.f2fs), the inodes the tests change, fsck.f2fs and dump.f2fs as outside
//! judges, and the file system driven side by side with the model.

use crate::model::{self, Entry};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use uf2fs_core::mkfs::{mkfs, parse_features, MkfsOptions};
use uf2fs_core::{FileKind, Fs, Ino, SetAttr};
use uf2fs_format::node::{Inode, F2FS_INLINE_XATTR};
use uf2fs_format::xattr::parse_acl;

#[path = "../common/oracle.rs"]
mod oracle;
pub use oracle::{fsck_clean, output};

pub const MIB: u64 = 1 << 20;
pub const EXTRA: &str = "extra_attr,inode_checksum,flexible_inline_xattr";

/// How a test image is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// uf2fs's mkfs with these features.
    Uf2fs(&'static str),
    /// mkfs.f2fs with these features, then a small tree loaded by sload.f2fs.
    Sload(&'static str),
}

/// The variants every test runs on.
pub const VARIANTS: [Variant; 4] = [
    Variant::Uf2fs(""),
    Variant::Uf2fs(EXTRA),
    Variant::Sload(""),
    Variant::Sload(EXTRA),
];

/// Makes image `name` in `dir` as `v` says; fsck-clean before use.
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
                std::fs::create_dir_all(tree.join("sub")).unwrap();
                std::fs::write(tree.join("small"), b"hello\n").unwrap();
                std::fs::write(tree.join("sub/more"), vec![7u8; 20_000]).unwrap();
                std::os::unix::fs::symlink("sub/more", tree.join("link")).unwrap();
            }
            // sload 1.15 may exit 1 after repairing what it wrote: judged by the fsck.
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

/// An inode the tests change.
#[derive(Debug, Clone)]
pub struct Target {
    pub path: String,
    pub ino: Ino,
    /// `i_blocks` without the xattr node.
    pub base_blocks: u64,
}

/// The inode block of `ino` as on the device (a read-only `fs`, or after a checkpoint).
pub fn raw_inode(fs: &Fs, ino: Ino) -> Inode {
    let block = fs.read_raw_block(fs.node_blkaddr(ino).unwrap()).unwrap();
    Inode::decode(&block, fs.superblock()).unwrap()
}

/// A read-write file system, the inodes under test, and their model.
pub struct World {
    pub fs: Fs,
    pub img: PathBuf,
    pub targets: Vec<Target>,
    pub model: BTreeMap<Ino, model::Inode>,
    /// Every operation so far, for failure messages.
    pub log: Vec<String>,
}

impl World {
    /// Makes the inodes under test on `img` (a file, a directory, a symlink, a fifo,
    /// besides the root and what sload made), checkpoints, and models them.
    pub fn open(img: &Path) -> World {
        let fs = Fs::open_rw(img, &[]).unwrap();
        let root = fs.root();
        fs.create(root, b"f", 0o644, 0, 0).unwrap();
        fs.mkdir(root, b"d", 0o755, 0, 0).unwrap();
        fs.symlink(root, b"l", b"f", 0, 0).unwrap();
        fs.mknod(root, b"p", 0o010640, (0, 0), 0, 0).unwrap();
        fs.write_checkpoint().unwrap();
        let mut targets = Vec::new();
        let mut model = BTreeMap::new();
        for path in ["/", "/f", "/d", "/l", "/p", "/small", "/sub", "/link"] {
            let Ok(ino) = fs.resolve(path.as_bytes(), false) else {
                continue;
            };
            let raw = raw_inode(&fs, ino);
            let stat = fs.stat(ino).unwrap();
            let inline = if raw.has_inline(F2FS_INLINE_XATTR) {
                4 * raw.inline_xattr_addrs as usize
            } else {
                0
            };

            assert_eq!(raw.xattr_nid, 0, "{path} starts without xattrs");
            assert!(fs.list_xattrs(ino).unwrap().is_empty());
            targets.push(Target {
                path: path.to_string(),
                ino,
                base_blocks: raw.blocks,
            });
            model.insert(
                ino,
                model::Inode {
                    kind: stat.kind,
                    mode: stat.mode,
                    inline,
                    entries: Vec::new(),
                    node: false,
                },
            );
        }
        World {
            fs,
            img: img.to_path_buf(),
            targets,
            model,
            log: Vec::new(),
        }
    }

    /// The target at `path`.
    pub fn target(&self, path: &str) -> &Target {
        self.targets.iter().find(|t| t.path == path).unwrap()
    }

    /// The model of the target at `path`.
    pub fn inode(&self, path: &str) -> &model::Inode {
        &self.model[&self.target(path).ino]
    }

    /// Sets (`value` `Some`) or removes `name` of the target at `path` on both; their
    /// outcomes must agree. Returns it.
    pub fn change(&mut self, path: &str, name: &[u8], value: Option<&[u8]>, flags: u32) -> Result<(), i32> {
        let ino = self.target(path).ino;
        let shown = String::from_utf8_lossy(&name[..name.len().min(40)]).into_owned();
        self.log.push(format!(
            "{} {path} {shown:?}({}) {:?} {flags}",
            if value.is_some() { "set" } else { "remove" },
            name.len(),
            value.map(<[u8]>::len)
        ));
        let got = match value {
            Some(v) => self.fs.set_xattr(ino, name, v, flags),
            None => self.fs.remove_xattr(ino, name),
        }
        .map_err(|e| e.errno());
        let want = self.model.get_mut(&ino).unwrap().change(name, value, flags);
        assert_eq!(got, want, "{path} after {:#?}", self.log);
        self.check_one(path, &self.fs, "live");
        got
    }

    /// Must succeed.
    pub fn set(&mut self, path: &str, name: &str, value: &[u8]) {
        self.change(path, name.as_bytes(), Some(value), 0).unwrap();
    }

    /// `chmod` on both.
    pub fn chmod(&mut self, path: &str, perm: u32) {
        let ino = self.target(path).ino;
        self.log.push(format!("chmod {path} {perm:o}"));
        let attrs = SetAttr {
            mode: Some(perm),
            ..SetAttr::default()
        };
        self.fs.setattr(ino, &attrs).unwrap();
        self.model.get_mut(&ino).unwrap().chmod(perm);
        self.check_one(path, &self.fs, "live");
    }

    /// Grows the target at `path` out of its inode: a file gets data past its inline
    /// area, a directory enough entries to move its dentries to blocks. The xattrs in
    /// the inline xattr area next door must not move.
    pub fn grow(&mut self, path: &str) {
        let ino = self.target(path).ino;
        self.log.push(format!("grow {path}"));
        let stat = self.fs.stat(ino).unwrap();
        match stat.kind {
            FileKind::File => {
                let data: Vec<u8> = (0..6000u32).map(|i| (i % 251) as u8).collect();
                self.fs.write(ino, stat.size, &data).unwrap();
            }
            FileKind::Dir => {
                for i in 0..12 {
                    let name = format!("{:0>60}", format!("{}-{i}", self.log.len()));
                    self.fs.create(ino, name.as_bytes(), 0o644, 0, 0).unwrap();
                }
            }
            _ => {}
        }
        // i_blocks now counts the new blocks too.
        let blocks = self.fs.stat(ino).unwrap().blocks / 8 + 1;
        let node = self.model[&ino].node as u64;
        self.targets.iter_mut().find(|t| t.ino == ino).unwrap().base_blocks = blocks - node;
        self.check_one(path, &self.fs, "grown");
    }

    /// `fs` lists what the model holds for `path`, in order, and has its mode.
    pub fn check_one(&self, path: &str, fs: &Fs, when: &str) {
        let t = self.target(path);
        let m = &self.model[&t.ino];
        let got: Vec<(Vec<u8>, Vec<u8>)> = fs
            .list_xattrs(t.ino)
            .unwrap()
            .into_iter()
            .map(|x| (x.name, x.value))
            .collect();
        assert!(
            got == m.visible(),
            "{when}: xattrs of {path} differ from the model after {:#?}",
            self.log
        );
        for (name, value) in &got {
            assert_eq!(fs.get_xattr(t.ino, name).unwrap().as_ref(), Some(value));
        }
        assert_eq!(fs.stat(t.ino).unwrap().mode, m.mode, "{when}: mode of {path}");
    }

    /// Every target against the model.
    pub fn check_all(&self, fs: &Fs, when: &str) {
        for t in &self.targets {
            self.check_one(&t.path, fs, when);
        }
    }

    /// Unmounts, then: fsck clean; read-only, every target matches the model, its xattr
    /// node exists exactly when the model says and counts in `i_blocks`; dump.f2fs (the
    /// f2fs-tools reader) lists the model's entries in its order; reopens read-write.
    pub fn cycle(&mut self, what: &str) {
        let fs = std::mem::replace(&mut self.fs, Fs::open(&self.img, &[]).unwrap());
        fs.unmount().unwrap();
        let what = format!("{what} after {:#?}", self.log);
        fsck_clean(&self.img, &what);
        let ro = Fs::open(&self.img, &[]).unwrap();
        self.check_all(&ro, "reopened");
        for t in &self.targets {
            let m = &self.model[&t.ino];
            let raw = raw_inode(&ro, t.ino);
            assert_eq!(raw.xattr_nid != 0, m.node, "xattr node of {} ({what})", t.path);
            assert_eq!(raw.blocks, t.base_blocks + m.node as u64, "i_blocks of {}", t.path);
            // dump.f2fs 1.15 reads the node's footer as more entries after a list that
            // fills its space to the last byte (the kernel stops there): compare what
            // comes before.
            let full = m.used() == m.capacity();
            let limit = if full { m.entries.len() } else { usize::MAX };
            let dumped = dump_xattrs(&self.img, t.ino, limit);
            assert_eq!(dumped, m.entries, "dump.f2fs -i of {} ({what})", t.path);
        }
        drop(ro);
        self.fs = Fs::open_rw(&self.img, &[]).unwrap();
    }
}

/// The first `limit` xattr entries `dump.f2fs -i INO` prints, in order (ACLs it prints
/// decoded: re-encoded here from its lines).
pub fn dump_xattrs(img: &Path, ino: Ino, limit: usize) -> Vec<Entry> {
    let (_, text) = output(
        Command::new("dump.f2fs")
            .args(["-i", &ino.to_string()])
            .arg(img)
            .stdin(std::process::Stdio::null()),
    );
    let mut out = Vec::new();
    for block in text.split("\nxattr: ").skip(1).take(limit) {
        let mut lines = block.lines();
        let head = lines.next().unwrap();
        let field = |key: &str| -> &str {
            let at = head.find(key).unwrap_or_else(|| panic!("{key} in {head:?}")) + key.len();
            head[at..].split(' ').next().unwrap()
        };
        let index: u8 = field("e_name_index:").parse().unwrap();
        let name_at = head.find("e_name:").unwrap() + "e_name:".len();
        let name_end = head.find(" e_name_len:").unwrap();
        let name = head.as_bytes()[name_at..name_end].to_vec();
        let size: usize = field("e_value_size:").parse().unwrap();
        let stored = if index == 2 || index == 3 {
            let mut acl = 1u32.to_le_bytes().to_vec();
            for l in lines.take_while(|l| l.starts_with("tag:")) {
                let num = |key: &str| {
                    let at = l.find(key).unwrap() + key.len();
                    let s = l[at..].split(' ').next().unwrap();
                    match s.strip_prefix("0x") {
                        Some(hex) => u32::from_str_radix(hex, 16).unwrap(),
                        None => s.parse().unwrap(),
                    }
                };
                acl.extend_from_slice(&(num("tag:") as u16).to_le_bytes());
                acl.extend_from_slice(&(num("perm:") as u16).to_le_bytes());
                if l.contains("uid:") {
                    acl.extend_from_slice(&num("uid:").to_le_bytes());
                } else if l.contains("gid:") {
                    acl.extend_from_slice(&num("gid:").to_le_bytes());
                }
            }
            parse_acl(&acl).unwrap();
            acl
        } else {
            let hex = lines.next().unwrap_or("");
            (0..hex.len() / 2)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
                .collect()
        };
        assert_eq!(stored.len(), size, "dump.f2fs value size of {name:?}");
        out.push(Entry { index, name, stored });
    }
    out
}

/// `kind` of the target at `path`.
pub fn kind(w: &World, path: &str) -> FileKind {
    w.inode(path).kind
}
