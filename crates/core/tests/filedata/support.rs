//! Test support for file data: images (uf2fs mkfs, or mkfs.f2fs with a tree loaded by
//! sload.f2fs), fsck.f2fs as judge, a sparse in-memory model of file contents, and a
//! file system driven side by side with the model.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use uf2fs_core::mkfs::{mkfs, parse_features, MkfsOptions};
use uf2fs_core::{Fs, Ino, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, FALLOC_FL_ZERO_RANGE};

#[path = "../common/oracle.rs"]
mod oracle;
#[allow(unused_imports)] // Not every suite that includes this module uses every one.
pub use oracle::{fsck_clean, fsck_clean_in_place, output};

pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;
pub const B: u64 = 4096;
pub const EXTRA: &str = "extra_attr,inode_checksum,flexible_inline_xattr";

/// How a test image is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// uf2fs's mkfs with these features.
    Uf2fs(&'static str),
    /// mkfs.f2fs with these features, then a tree loaded by sload.f2fs.
    Sload(&'static str),
}

/// The four variants the scripted sequences run on.
pub const VARIANTS: [Variant; 4] = [
    Variant::Uf2fs(""),
    Variant::Uf2fs(EXTRA),
    Variant::Sload(""),
    Variant::Sload(EXTRA),
];

/// Contents of the file sload puts at "/medium" (300,000 bytes, 74 blocks).
pub fn medium_contents() -> Vec<u8> {
    (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect()
}

fn make_tree(dir: &Path) {
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("small"), b"hello\n").unwrap();
    std::fs::write(dir.join("empty"), b"").unwrap();
    std::fs::write(dir.join("medium"), medium_contents()).unwrap();
    for i in 0..40 {
        std::fs::write(dir.join(format!("sub/f{i:03}")), i.to_string()).unwrap();
    }
}

/// Makes an image `name` in `dir` as `v` says, `size` bytes (sparse); fsck-clean.
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

/// A file's contents: its size and its non-zero blocks (everything else reads as 0).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileModel {
    pub size: u64,
    pub blocks: BTreeMap<u64, Vec<u8>>,
}

impl FileModel {
    pub fn from_bytes(bytes: &[u8]) -> FileModel {
        let mut m = FileModel::default();
        m.write(0, bytes);
        m
    }

    fn block_mut(&mut self, index: u64) -> &mut Vec<u8> {
        self.blocks.entry(index).or_insert_with(|| vec![0; B as usize])
    }

    /// Zeroes bytes `from..to` (within what the model holds).
    fn zero(&mut self, from: u64, to: u64) {
        let keys: Vec<u64> = self.blocks.range(from / B..to.div_ceil(B)).map(|(k, _)| *k).collect();
        for k in keys {
            let (lo, hi) = (from.max(k * B), to.min((k + 1) * B));
            if hi - lo == B {
                self.blocks.remove(&k);
            } else {
                self.block_mut(k)[(lo - k * B) as usize..(hi - k * B) as usize].fill(0);
            }
        }
    }

    pub fn write(&mut self, offset: u64, data: &[u8]) {
        let mut pos = 0usize;
        while pos < data.len() {
            let at = offset + pos as u64;
            let within = (at % B) as usize;
            let n = (B as usize - within).min(data.len() - pos);
            self.block_mut(at / B)[within..within + n].copy_from_slice(&data[pos..pos + n]);
            pos += n;
        }
        self.size = self.size.max(offset + data.len() as u64);
    }

    pub fn truncate(&mut self, size: u64) {
        if size < self.size {
            self.zero(size, self.size.max(size).div_ceil(B) * B);
            self.blocks.retain(|&k, _| k < size.div_ceil(B));
        }
        self.size = size;
    }

    pub fn punch(&mut self, offset: u64, len: u64) {
        if offset < self.size {
            self.zero(offset, offset.saturating_add(len));
        }
    }

    /// fallocate ZERO_RANGE: the range reads as zeros; the size grows to its end
    /// unless `keep_size`.
    pub fn zero_range(&mut self, offset: u64, len: u64, keep_size: bool) {
        self.zero(offset, offset + len);
        if !keep_size {
            self.size = self.size.max(offset + len);
        }
    }

    pub fn allocate(&mut self, offset: u64, len: u64, keep_size: bool) {
        if !keep_size {
            self.size = self.size.max(offset + len);
        }
    }

    /// Bytes `offset..offset+len` as a read returns them (short at the end of file).
    pub fn read(&self, offset: u64, len: u64) -> Vec<u8> {
        let end = (offset + len).min(self.size);
        if offset >= end {
            return Vec::new();
        }
        let mut out = vec![0u8; (end - offset) as usize];
        for (k, b) in self.blocks.range(offset / B..end.div_ceil(B)) {
            let (lo, hi) = (offset.max(k * B), end.min((k + 1) * B));
            out[(lo - offset) as usize..(hi - offset) as usize]
                .copy_from_slice(&b[(lo - k * B) as usize..(hi - k * B) as usize]);
        }
        out
    }
}

/// Reads all of file `ino` in large pieces and compares it with `model`.
pub fn check_file(fs: &Fs, ino: Ino, model: &FileModel, what: &str) {
    let st = fs.stat(ino).unwrap();
    assert_eq!(st.size, model.size, "{what}: size of inode {ino}");
    const PIECE: u64 = 16 * MIB;
    let mut buf = vec![0u8; PIECE as usize];
    let mut at = 0;
    while at < model.size {
        let want = model.read(at, PIECE);
        let n = fs.read(ino, at, &mut buf).unwrap();
        assert_eq!(n, want.len(), "{what}: read of inode {ino} at {at}");
        if buf[..n] != want[..] {
            let first = (0..n).find(|&i| buf[i] != want[i]).unwrap();
            panic!(
                "{what}: inode {ino} differs at byte {} (read {:#04x}, model {:#04x})",
                at + first as u64,
                buf[first],
                want[first]
            );
        }
        at += n as u64;
    }
    let mut one = [0u8; 1];
    assert_eq!(
        fs.read(ino, model.size, &mut one).unwrap(),
        0,
        "{what}: read at the end"
    );
}

/// A file operation on a file by name (all files live in the root directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOp {
    Write(u64, Vec<u8>),
    Truncate(u64),
    Punch(u64, u64),
    Allocate(u64, u64, bool),
    /// fallocate ZERO_RANGE (offset, length, KEEP_SIZE).
    Zero(u64, u64, bool),
}

/// Data of `len` bytes that depends on `seed` and the position (so misplaced blocks
/// show), never all zero.
pub fn pattern(seed: u64, offset: u64, len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| {
            let p = offset + i;
            (p.wrapping_mul(31).wrapping_add(seed.wrapping_mul(97)) % 251 + 1) as u8
        })
        .collect()
}

/// A read-write file system with a model of the files it changes.
pub struct World {
    pub fs: Fs,
    pub img: PathBuf,
    pub files: BTreeMap<String, (Ino, FileModel)>,
}

impl World {
    pub fn open(img: &Path) -> World {
        World {
            fs: Fs::open_rw(img, &[]).unwrap(),
            img: img.to_path_buf(),
            files: BTreeMap::new(),
        }
    }

    /// Creates `name` in the root directory (empty).
    pub fn create(&mut self, name: &str) -> Ino {
        let ino = self
            .fs
            .create(self.fs.root(), name.as_bytes(), 0o644, 0, 0)
            .unwrap()
            .ino;
        self.files.insert(name.to_string(), (ino, FileModel::default()));
        ino
    }

    /// Adopts an existing file of the image into the model (its contents as read).
    pub fn adopt(&mut self, name: &str, contents: &[u8]) -> Ino {
        let ino = self.fs.lookup(self.fs.root(), name.as_bytes()).unwrap();
        let model = FileModel::from_bytes(contents);
        check_file(&self.fs, ino, &model, &format!("adopting {name}"));
        self.files.insert(name.to_string(), (ino, model));
        ino
    }

    pub fn ino(&self, name: &str) -> Ino {
        self.files[name].0
    }

    /// Applies `op` to the file system (must succeed) and the model.
    pub fn apply(&mut self, name: &str, op: FileOp) {
        let (ino, model) = self.files.get_mut(name).unwrap();
        let ino = *ino;
        match &op {
            FileOp::Write(off, data) => {
                let n = self
                    .fs
                    .write(ino, *off, data)
                    .unwrap_or_else(|e| panic!("{name} {op:?}: {e}"));
                assert_eq!(n, data.len(), "{name}: short write");
                model.write(*off, data);
            }
            FileOp::Truncate(size) => {
                self.fs
                    .truncate(ino, *size)
                    .unwrap_or_else(|e| panic!("{name} {op:?}: {e}"));
                model.truncate(*size);
            }
            FileOp::Punch(off, len) => {
                self.fs
                    .fallocate(ino, *off, *len, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)
                    .unwrap_or_else(|e| panic!("{name} {op:?}: {e}"));
                model.punch(*off, *len);
            }
            FileOp::Allocate(off, len, keep) => {
                let mode = if *keep { FALLOC_FL_KEEP_SIZE } else { 0 };
                self.fs
                    .fallocate(ino, *off, *len, mode)
                    .unwrap_or_else(|e| panic!("{name} {op:?}: {e}"));
                model.allocate(*off, *len, *keep);
            }
            FileOp::Zero(off, len, keep) => {
                let mode = FALLOC_FL_ZERO_RANGE | if *keep { FALLOC_FL_KEEP_SIZE } else { 0 };
                self.fs
                    .fallocate(ino, *off, *len, mode)
                    .unwrap_or_else(|e| panic!("{name} {op:?}: {e}"));
                model.zero_range(*off, *len, *keep);
            }
        }
    }

    /// Writes `len` bytes of a pattern at `offset` of `name`.
    pub fn write(&mut self, name: &str, offset: u64, len: usize) {
        let data = pattern(self.files.len() as u64 + offset, offset, len);
        self.apply(name, FileOp::Write(offset, data));
    }

    /// Every modelled file must read as its model says.
    pub fn check(&self, what: &str) {
        check_on(&self.fs, &self.files, what);
    }

    /// Unmounts, runs fsck, reopens read-only and compares with the model. Returns
    /// fsck's output.
    pub fn finish(self, what: &str) -> String {
        self.check(&format!("{what} (before unmount)"));
        self.fs.unmount().unwrap();
        let text = fsck_clean(&self.img, what);
        let fs = Fs::open(&self.img, &[]).unwrap();
        check_on(&fs, &self.files, &format!("{what} (reopened)"));
        text
    }

    /// [`World::finish`], then opens the image read-write again with the same model.
    pub fn cycle(self, what: &str) -> World {
        let (img, files) = (self.img.clone(), self.files.clone());
        self.finish(what);
        World {
            fs: Fs::open_rw(&img, &[]).unwrap(),
            img,
            files,
        }
    }
}

pub fn check_on(fs: &Fs, files: &BTreeMap<String, (Ino, FileModel)>, what: &str) {
    for (name, (ino, model)) in files {
        check_file(fs, *ino, model, &format!("{what}: {name}"));
    }
}
