//! A crash harness: a workload runs on a [`CrashDevice`] through the public API while a
//! model beside it records every state the tree and each file passed through and when
//! each `fsync` and `sync_fs` returned (the device's flush count then). Every cut of
//! the recording (after each flush, with none, all, half and seeded subsets of the
//! writes in flight, an F2FS block of several device blocks kept or dropped whole;
//! plus any cuts the workload adds with [`Recording::add_torn_cuts`], such as a torn
//! block) is rebuilt as an image, deduplicated by content, and judged only by
//! durability guarantees, never by how fsync is implemented:
//!
//! 1. The image opens read-write (a mount: whatever recovery the core runs at open).
//! 2. The tree read back satisfies the model's guarantees at that cut (below), and
//!    every reachable file reads without error.
//! 3. A probe file is created and written, the file system unmounts,
//!    `fsck.f2fs -f --dry-run` is clean, and a read-only open shows the same tree plus
//!    the probe.
//!
//! # The rule at a cut after flush `k`
//!
//! An operation that returned when the device had seen `f` flushes is *durable at* `k`
//! when `f <= k`: everything it wrote went out before flush `f`. An operation that
//! began when the device had seen more than `k` flushes wrote nothing the image holds
//! (its writes come after flush `k + 1`), so the states the image may show end with
//! the last operation `m` that began at or before flush `k`.
//!
//! - Each path `p` (a name in the tree) has a durable point `d`: the newest durable
//!   `sync_fs` (or checkpoint, or the unmount), the newest durable `fsync` of a file
//!   that was at `p` when it ran, and the newest durable `fsync` of the directory that
//!   was `p`'s parent when it ran. What `p` names after the cut (nothing, or an inode)
//!   must be what it named at `d` or after some operation in `(d, m]`. So a rename
//!   followed by a completed `sync_fs` has happened: the new name is there and the
//!   old one is gone (unless a later operation changed them again).
//! - Each file has a durable point `d` (the newest durable `sync_fs` or `fsync` of that
//!   file). Its size must be one of its sizes in `[d, m]` or between the sizes before
//!   and after one operation in `(d, m]` (a long write runs in chunks), and every block
//!   within that size must equal the same block in one of those states: blocks are
//!   written whole, so a block that matches none was torn or never written. Bytes
//!   nothing touched after the fsync are therefore exactly the fsync'd ones.
//! - An object that existed at its durable point and had a name throughout `[d, m]` is
//!   reachable after the cut under one of those names: an fsync'd file is not lost.
//! - Nothing else is in the tree.

#![allow(dead_code)]

#[path = "cuts.rs"]
mod cuts;
#[path = "oracle.rs"]
mod oracle;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use uf2fs_core::device::CrashDevice;
use uf2fs_core::{
    FileKind, Fs, Ino, OpenOptions, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, FALLOC_FL_ZERO_RANGE, RENAME_EXCHANGE,
};

/// Block size.
pub const B: usize = 4096;
const ZERO: [u8; B] = [0; B];
/// The name of the file written into each recovered image before unmounting it.
pub const PROBE: &str = "crash-probe";

/// xorshift64*: deterministic workloads.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// A generator for `seed` (any value, zero included).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// The next 64 bits.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True `pct` times in a hundred.
    pub fn pct(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// `len` bytes no other call returns (a counter-tagged stream).
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 8);
        while out.len() < len {
            out.extend_from_slice(&self.next().to_le_bytes());
        }
        out.truncate(len);
        out
    }
}

/// A file's contents as a sparse list of shared blocks (`None` reads as zeros); bytes
/// past `size` are never stored, so a block compares equal to what a read returns.
#[derive(Debug, Clone, Default)]
pub struct FileData {
    /// Size in bytes.
    pub size: u64,
    blocks: Vec<Option<Arc<Vec<u8>>>>,
}

impl FileData {
    /// Block `i` (zeros past the end or in a hole).
    pub fn block(&self, i: usize) -> &[u8] {
        match self.blocks.get(i) {
            Some(Some(b)) => b,
            _ => &ZERO,
        }
    }

    fn block_mut(&mut self, i: usize) -> &mut Vec<u8> {
        let slot = &mut self.blocks[i];
        let b = slot.get_or_insert_with(|| Arc::new(vec![0; B]));
        Arc::make_mut(b)
    }

    /// Writes `data` at `offset`, growing the file as needed.
    pub fn write(&mut self, offset: u64, data: &[u8]) {
        let end = offset + data.len() as u64;
        if end > self.size {
            self.blocks.resize(end.div_ceil(B as u64) as usize, None);
            self.size = end;
        }
        let mut pos = offset;
        let mut rest = data;
        while !rest.is_empty() {
            let (i, at) = ((pos / B as u64) as usize, (pos % B as u64) as usize);
            let n = rest.len().min(B - at);
            self.block_mut(i)[at..at + n].copy_from_slice(&rest[..n]);
            pos += n as u64;
            rest = &rest[n..];
        }
    }

    /// Sets the size (`truncate(2)`): a shrink zeroes the tail of the last block.
    pub fn truncate(&mut self, size: u64) {
        if size < self.size {
            self.blocks.truncate(size.div_ceil(B as u64) as usize);
            let at = (size % B as u64) as usize;
            if at != 0 && self.blocks.last().is_some_and(|b| b.is_some()) {
                let i = self.blocks.len() - 1;
                self.block_mut(i)[at..].fill(0);
            }
        } else {
            self.blocks.resize(size.div_ceil(B as u64) as usize, None);
        }
        self.size = size;
    }

    /// Zeroes bytes `[start, end)` within the size.
    pub fn zero(&mut self, start: u64, end: u64) {
        let end = end.min(self.size);
        let mut pos = start;
        while pos < end {
            let (i, at) = ((pos / B as u64) as usize, (pos % B as u64) as usize);
            let n = ((end - pos) as usize).min(B - at);
            if n == B {
                self.blocks[i] = None;
            } else if self.blocks[i].is_some() {
                self.block_mut(i)[at..at + n].fill(0);
            }
            pos += n as u64;
        }
    }

    /// The whole contents.
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.size as usize);
        for i in 0..self.blocks.len() {
            out.extend_from_slice(self.block(i));
        }
        out.truncate(self.size as usize);
        out
    }
}

/// An object of the model: a file or a directory.
pub type ObjId = usize;

#[derive(Debug)]
struct Obj {
    kind: FileKind,
    ino: Ino,
    /// Changed only by atomic commits: every state it shows after a cut must be one
    /// of its states whole (no mix of two commits' blocks).
    atomic: bool,
    /// Contents (files) after each operation that changed them, by operation index;
    /// the first entry is the file as created (or as found at the start).
    data: Vec<(usize, Arc<FileData>)>,
}

/// What an operation makes durable once it returns.
#[derive(Debug, Clone)]
enum Sync {
    None,
    /// `sync_fs`, a checkpoint, the unmount: everything.
    All,
    /// `fsync` of a file: its contents, and the names it had then.
    File(ObjId, Vec<String>),
    /// `fsync` of a directory (at this path then): its entries.
    Dir(String),
}

#[derive(Debug, Clone)]
struct OpRec {
    what: String,
    /// Flushes the device had seen when the operation began and when it returned.
    start: usize,
    end: usize,
    sync: Sync,
}

/// The model: every state of the tree (path to object) and of each file, by operation.
pub struct Model {
    objs: Vec<Obj>,
    ns: BTreeMap<String, ObjId>,
    ns_hist: Vec<Arc<BTreeMap<String, ObjId>>>,
    ops: Vec<OpRec>,
}

/// Indexes of a finished model, for checking cuts.
pub struct Judge {
    model: Model,
    /// Per path, each change of what it names: (operation index, object).
    paths: BTreeMap<String, Vec<(usize, Option<ObjId>)>>,
    /// Per object, each change of its names.
    names: Vec<Vec<(usize, BTreeSet<String>)>>,
    /// Durable-all operations: (end flush, index).
    all: Vec<(usize, usize)>,
    /// Per object, its fsyncs: (end flush, index).
    file_syncs: Vec<Vec<(usize, usize)>>,
    /// Per path, fsyncs of the file at it: (end flush, index).
    path_syncs: HashMap<String, Vec<(usize, usize)>>,
    /// Per directory path, fsyncs of the directory at it: (end flush, index).
    dir_syncs: HashMap<String, Vec<(usize, usize)>>,
    /// Per object, per block index, each change of the block's contents: (operation
    /// index, contents; `None` reads as zeros).
    blocks: Vec<Vec<BlockHist>>,
}

type BlockHist = Vec<(usize, Option<Arc<Vec<u8>>>)>;

/// Each block's changes over the states of one file.
fn block_histories(data: &[(usize, Arc<FileData>)]) -> Vec<BlockHist> {
    let t0 = data[0].0;
    let n = data.iter().map(|(_, d)| d.blocks.len()).max().unwrap_or(0);
    let mut out: Vec<BlockHist> = vec![vec![(t0, None)]; n];
    for (t, d) in data {
        for (i, hist) in out.iter_mut().enumerate() {
            let cur = d.blocks.get(i).cloned().flatten();
            let last = &hist.last().unwrap().1;
            let same = match (last, &cur) {
                (None, None) => true,
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            };
            if !same {
                hist.push((*t, cur));
            }
        }
    }
    out
}

/// The values of a history at `d` (or its first, when it starts later) and after each
/// change in `(d, m]`.
fn window<T>(hist: &[(usize, T)], d: usize, m: usize) -> impl Iterator<Item = &T> {
    let first = hist.iter().take_while(|(t, _)| *t <= d).count().max(1) - 1;
    hist[first..]
        .iter()
        .enumerate()
        .take_while(move |(j, (t, _))| *j == 0 || *t <= m)
        .map(|(_, (_, v))| v)
}

/// The parent of `path` ("/" for a top-level name).
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) => "/",
        Some(i) => &path[..i],
        None => "/",
    }
}

/// The last component of `path`.
pub fn base_name(path: &str) -> &str {
    &path[path.rfind('/').map_or(0, |i| i + 1)..]
}

/// `dir` joined with `name`.
pub fn join(dir: &str, name: &str) -> String {
    if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// Whether `path` is `top` or below it.
pub fn is_under(path: &str, top: &str) -> bool {
    path == top || (path.starts_with(top) && path.as_bytes().get(top.len()) == Some(&b'/'))
}

/// A workload's handle: the file system on a recording device and the model beside it.
pub struct Recorder {
    fs: Option<Fs>,
    dev: CrashDevice,
    model: Model,
    base: Vec<u8>,
}

impl Recorder {
    /// Opens `image` read-write on a recording device (at most `writes_max` writes);
    /// the tree starts as the root alone, which must be what `image` holds.
    pub fn new(image: Vec<u8>, writes_max: usize) -> Recorder {
        let dev = CrashDevice::new(image.clone(), writes_max);
        let fs = Fs::open_device_with(Box::new(dev.clone()), "crash", OpenOptions { read_write: true }).unwrap();
        let root = Obj {
            kind: FileKind::Dir,
            ino: fs.root(),
            atomic: false,
            data: vec![(0, Arc::new(FileData::default()))],
        };
        let ns: BTreeMap<String, ObjId> = [("/".to_string(), 0)].into();
        Recorder {
            fs: Some(fs),
            dev,
            model: Model {
                objs: vec![root],
                ns_hist: vec![Arc::new(ns.clone())],
                ns,
                ops: Vec::new(),
            },
            base: image,
        }
    }

    /// The file system.
    pub fn fs(&self) -> &Fs {
        self.fs.as_ref().expect("unmounted")
    }

    /// Makes everything so far durable (`sync_fs`) and the start of the recording:
    /// the device forgets what it recorded and the model its history (setup done).
    pub fn settle(&mut self) {
        self.fs().sync_fs().unwrap();
        self.dev.settle();
        self.base = self.dev.image_now();
        let m = &mut self.model;
        m.ops.clear();
        m.ns_hist = vec![Arc::new(m.ns.clone())];
        for o in &mut m.objs {
            let last = o.data.last().unwrap().1.clone();
            o.data = vec![(0, last)];
        }
    }

    /// The paths of the tree now, with whether each is a directory.
    pub fn tree(&self) -> Vec<(String, bool)> {
        self.model
            .ns
            .iter()
            .map(|(p, &o)| (p.clone(), self.model.objs[o].kind == FileKind::Dir))
            .collect()
    }

    /// Whether `path` names something now.
    pub fn exists(&self, path: &str) -> bool {
        self.model.ns.contains_key(path)
    }

    /// Whether `path` is a directory now.
    pub fn is_dir(&self, path: &str) -> bool {
        self.model
            .ns
            .get(path)
            .is_some_and(|&o| self.model.objs[o].kind == FileKind::Dir)
    }

    /// The contents of the file at `path` now.
    pub fn data(&self, path: &str) -> Arc<FileData> {
        let o = self.model.ns[path];
        self.model.objs[o].data.last().unwrap().1.clone()
    }

    /// The inode at `path`.
    pub fn ino(&self, path: &str) -> Ino {
        self.model.objs[self.model.ns[path]].ino
    }

    /// Runs `f` on the file system, recording the flushes around it; panics (naming
    /// the operation) when it fails: workloads only ask for what must succeed.
    fn run<T>(&mut self, what: String, sync: Sync, f: impl FnOnce(&Fs) -> uf2fs_core::Result<T>) -> T {
        let start = self.dev.flush_count();
        let r = f(self.fs());
        let end = self.dev.flush_count();
        let r = r.unwrap_or_else(|e| panic!("operation {} ({what}) failed: {e}", self.model.ops.len() + 1));
        self.model.ops.push(OpRec { what, start, end, sync });
        r
    }

    fn t(&self) -> usize {
        self.model.ops.len()
    }

    /// Closes an operation: the tree after it joins the history.
    fn push_ns(&mut self) {
        let m = &mut self.model;
        let same = m.ns_hist.last().is_some_and(|h| **h == m.ns);
        let next = if same {
            m.ns_hist.last().unwrap().clone()
        } else {
            Arc::new(m.ns.clone())
        };
        m.ns_hist.push(next);
    }

    fn set_data(&mut self, path: &str, f: impl FnOnce(&mut FileData)) {
        let t = self.t();
        let o = self.model.ns[path];
        let mut d = (*self.model.objs[o].data.last().unwrap().1).clone();
        f(&mut d);
        self.model.objs[o].data.push((t, Arc::new(d)));
    }

    fn new_obj(&mut self, path: &str, kind: FileKind, ino: Ino) {
        let t = self.t();
        self.model.objs.push(Obj {
            kind,
            ino,
            atomic: false,
            data: vec![(t, Arc::new(FileData::default()))],
        });
        self.model.ns.insert(path.to_string(), self.model.objs.len() - 1);
    }

    /// Creates a regular file.
    pub fn create(&mut self, path: &str) {
        let dir = self.ino(parent(path));
        let name = base_name(path).as_bytes().to_vec();
        let st = self.run(format!("create {path}"), Sync::None, |fs| {
            fs.create(dir, &name, 0o644, 0, 0)
        });
        self.new_obj(path, FileKind::File, st.ino);
        self.push_ns();
    }

    /// Creates a directory.
    pub fn mkdir(&mut self, path: &str) {
        let dir = self.ino(parent(path));
        let name = base_name(path).as_bytes().to_vec();
        let st = self.run(format!("mkdir {path}"), Sync::None, |fs| {
            fs.mkdir(dir, &name, 0o755, 0, 0)
        });
        self.new_obj(path, FileKind::Dir, st.ino);
        self.push_ns();
    }

    /// Removes a file's name.
    pub fn unlink(&mut self, path: &str) {
        let dir = self.ino(parent(path));
        let name = base_name(path).as_bytes().to_vec();
        self.run(format!("unlink {path}"), Sync::None, |fs| fs.unlink(dir, &name));
        self.model.ns.remove(path);
        self.push_ns();
    }

    /// Removes an empty directory.
    pub fn rmdir(&mut self, path: &str) {
        let dir = self.ino(parent(path));
        let name = base_name(path).as_bytes().to_vec();
        self.run(format!("rmdir {path}"), Sync::None, |fs| fs.rmdir(dir, &name));
        self.model.ns.remove(path);
        self.push_ns();
    }

    /// Renames `from` to `to` (replacing a file or an empty directory there), or with
    /// `exchange` swaps them.
    pub fn rename(&mut self, from: &str, to: &str, exchange: bool) {
        let (sd, dd) = (self.ino(parent(from)), self.ino(parent(to)));
        let (sn, dn) = (base_name(from).as_bytes().to_vec(), base_name(to).as_bytes().to_vec());
        let flags = if exchange { RENAME_EXCHANGE } else { 0 };
        let what = format!("rename {from} {to}{}", if exchange { " (exchange)" } else { "" });
        self.run(what, Sync::None, |fs| fs.rename(sd, &sn, dd, &dn, flags));
        let ns = &mut self.model.ns;
        let take = |ns: &mut BTreeMap<String, ObjId>, top: &str| -> Vec<(String, ObjId)> {
            let keys: Vec<String> = ns.keys().filter(|p| is_under(p, top)).cloned().collect();
            keys.into_iter()
                .map(|k| {
                    let o = ns.remove(&k).unwrap();
                    (k[top.len()..].to_string(), o)
                })
                .collect()
        };
        let moved = take(ns, from);
        let replaced = take(ns, to);
        for (rest, o) in moved {
            ns.insert(format!("{to}{rest}"), o);
        }
        if exchange {
            for (rest, o) in replaced {
                ns.insert(format!("{from}{rest}"), o);
            }
        }
        self.push_ns();
    }

    /// Writes `data` at `offset` of the file at `path`.
    pub fn write(&mut self, path: &str, offset: u64, data: &[u8]) {
        let ino = self.ino(path);
        let what = format!("write {path} {offset}+{}", data.len());
        let n = self.run(what, Sync::None, |fs| fs.write(ino, offset, data));
        assert_eq!(n, data.len(), "short write to {path} at {offset}");
        self.set_data(path, |d| d.write(offset, data));
        self.push_ns();
    }

    /// Sets the size of the file at `path`.
    pub fn truncate(&mut self, path: &str, size: u64) {
        let ino = self.ino(path);
        self.run(format!("truncate {path} {size}"), Sync::None, |fs| {
            fs.truncate(ino, size)
        });
        self.set_data(path, |d| d.truncate(size));
        self.push_ns();
    }

    /// Punches a hole (`PUNCH_HOLE | KEEP_SIZE`).
    pub fn punch(&mut self, path: &str, offset: u64, len: u64) {
        let ino = self.ino(path);
        let mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
        let what = format!("punch {path} {offset}+{len}");
        self.run(what, Sync::None, |fs| fs.fallocate(ino, offset, len, mode));
        self.set_data(path, |d| d.zero(offset, offset + len));
        self.push_ns();
    }

    /// Zeroes a range (`ZERO_RANGE`, with or without `KEEP_SIZE`).
    pub fn zero_range(&mut self, path: &str, offset: u64, len: u64, keep_size: bool) {
        let ino = self.ino(path);
        let mode = FALLOC_FL_ZERO_RANGE | if keep_size { FALLOC_FL_KEEP_SIZE } else { 0 };
        let what = format!("zero range {path} {offset}+{len} keep {keep_size}");
        self.run(what, Sync::None, |fs| fs.fallocate(ino, offset, len, mode));
        self.set_data(path, |d| {
            if !keep_size && offset + len > d.size {
                d.truncate(offset + len);
            }
            d.zero(offset, offset + len);
        });
        self.push_ns();
    }

    /// Reserves blocks (`fallocate` mode 0 or `KEEP_SIZE`).
    pub fn allocate(&mut self, path: &str, offset: u64, len: u64, keep_size: bool) {
        let ino = self.ino(path);
        let mode = if keep_size { FALLOC_FL_KEEP_SIZE } else { 0 };
        let what = format!("allocate {path} {offset}+{len} keep {keep_size}");
        self.run(what, Sync::None, |fs| fs.fallocate(ino, offset, len, mode));
        self.set_data(path, |d| {
            if !keep_size && offset + len > d.size {
                d.truncate(offset + len);
            }
        });
        self.push_ns();
    }

    /// `F2FS_IOC_MOVE_RANGE` ([`Fs::move_range`]) of `len` bytes (block-aligned, or
    /// reaching the source's end of file) from `src` at `pos_in` to `dst` at
    /// `pos_out`: each source block with data becomes the target's block, the
    /// source's slot a hole; a hole in the source leaves the target's block; the
    /// target grows to `pos_out + len`. Recorded as one operation on both files (the
    /// move runs in chunks, so a cut may show any mix of the blocks before and after).
    /// The workload must not reserve blocks in `src` (a reservation is a hole to the
    /// model).
    pub fn move_range(&mut self, src: &str, pos_in: u64, dst: &str, pos_out: u64, len: u64) {
        let (si, di) = (self.ino(src), self.ino(dst));
        assert_ne!(self.model.ns[src], self.model.ns[dst], "move between two files");
        let what = format!("move range {src} {pos_in}+{len} to {dst} {pos_out}");
        let dst_size = self.data(dst).size;
        let n = self.run(what, Sync::None, |fs| fs.move_range(si, pos_in, di, pos_out, len));
        assert_eq!(
            n,
            dst_size.max(pos_out + len) - pos_out,
            "move range: bytes the target covers"
        );
        let from = self.data(src);
        let blocks = len.div_ceil(B as u64) as usize;
        let (s0, d0) = ((pos_in / B as u64) as usize, (pos_out / B as u64) as usize);
        let moved: Vec<Option<Vec<u8>>> = (0..blocks)
            .map(|i| match from.blocks.get(s0 + i) {
                Some(Some(b)) => Some(b.to_vec()),
                _ => None,
            })
            .collect();
        let t = self.t();
        let (so, dob) = (self.model.ns[src], self.model.ns[dst]);
        // The source's slots become holes, the last one too when the range ends
        // inside it (at the end of file).
        let mut s = (*from).clone();
        for slot in s.blocks.iter_mut().skip(s0).take(blocks) {
            *slot = None;
        }
        let mut d = (*self.data(dst)).clone();
        if pos_out + len > d.size {
            d.truncate(pos_out + len);
        }
        for (i, b) in moved.iter().enumerate() {
            if let Some(b) = b {
                let at = (d0 + i) as u64 * B as u64;
                let keep = (d.size - at).min(B as u64) as usize;
                d.write(at, &b[..keep]);
            }
        }
        self.model.objs[so].data.push((t, Arc::new(s)));
        self.model.objs[dob].data.push((t, Arc::new(d)));
        self.push_ns();
    }

    /// An F2FS atomic write on the file at `path`, committed: `writes` staged (and
    /// for `replace`, the file's old data dropped first), then the size `size` when
    /// given, all durable together. The file counts as atomic from here on (see
    /// [`Judge`]): a workload changes it by atomic commits only.
    pub fn atomic_commit(&mut self, path: &str, replace: bool, writes: &[(u64, Vec<u8>)], size: Option<u64>) {
        let ino = self.ino(path);
        let o = self.model.ns[path];
        self.model.objs[o].atomic = true;
        let names = self
            .model
            .ns
            .iter()
            .filter(|(_, &x)| x == o)
            .map(|(p, _)| p.clone())
            .collect();
        let what = format!("atomic commit {path} ({} writes, replace {replace})", writes.len());
        self.run(what, Sync::File(o, names), |fs| {
            let mut aw = fs.atomic_start(ino, replace)?;
            for (off, data) in writes {
                fs.atomic_stage_write(ino, &mut aw, *off, data)?;
            }
            if let Some(size) = size {
                fs.atomic_stage_truncate(ino, &mut aw, size)?;
            }
            fs.atomic_commit(ino, &aw)
        });
        self.set_data(path, |d| {
            if replace {
                *d = FileData::default();
            }
            for (off, data) in writes {
                d.write(*off, data);
            }
            if let Some(size) = size {
                d.truncate(size);
            }
        });
        self.push_ns();
    }

    /// `fsync` (or `fdatasync`) of the file or directory at `path`.
    pub fn fsync(&mut self, path: &str, datasync: bool) {
        let ino = self.ino(path);
        let o = self.model.ns[path];
        let sync = if self.model.objs[o].kind == FileKind::Dir {
            Sync::Dir(path.to_string())
        } else {
            let names = self
                .model
                .ns
                .iter()
                .filter(|(_, &x)| x == o)
                .map(|(p, _)| p.clone())
                .collect();
            Sync::File(o, names)
        };
        let what = format!("{} {path}", if datasync { "fdatasync" } else { "fsync" });
        self.run(what, sync, |fs| fs.fsync(ino, datasync));
        self.push_ns();
    }

    /// `sync_fs`.
    pub fn sync_fs(&mut self) {
        self.run("sync_fs".into(), Sync::All, |fs| fs.sync_fs());
        self.push_ns();
    }

    /// Records an `fsync` of `path` (with `None`, a `sync_fs`) that never ran, for
    /// checking that the judge notices what such a sync would have lost.
    pub fn pretend_sync(&mut self, path: Option<&str>) {
        let sync = match path {
            None => Sync::All,
            Some(p) => {
                let o = self.model.ns[p];
                Sync::File(o, vec![p.to_string()])
            }
        };
        self.run(format!("pretended sync of {path:?}"), sync, |_| Ok(()));
        self.push_ns();
    }

    /// Reads the file at `path` and compares it with the model (a check of the live
    /// file system during the workload; records nothing).
    pub fn verify(&self, path: &str) {
        let want = self.data(path).bytes();
        let mut got = vec![0u8; want.len() + 1];
        let n = self.fs().read(self.ino(path), 0, &mut got).unwrap();
        if n != want.len() || got[..n] != want[..] {
            let first = (0..n.min(want.len())).find(|&i| got[i] != want[i]);
            let ops = &self.model.ops;
            let last: Vec<&str> = ops.iter().rev().take(6).map(|o| o.what.as_str()).collect();
            panic!(
                "{path} reads back wrong while live: {n} bytes of {}, first difference at {first:?}; \
                 the last operations, newest first: {last:?}",
                want.len()
            );
        }
    }

    /// Unmounts (recorded, as a sync of everything) and hands back the recording.
    pub fn finish(mut self) -> Recording {
        let fs = self.fs.take().unwrap();
        let start = self.dev.flush_count();
        fs.unmount().unwrap();
        let end = self.dev.flush_count();
        self.model.ops.push(OpRec {
            what: "unmount".into(),
            start,
            end,
            sync: Sync::All,
        });
        self.push_ns();
        let flushes = self.dev.flush_count();
        let windows: Vec<Vec<(u64, Vec<u8>)>> = (0..=flushes).map(|k| self.dev.in_flight_after(k)).collect();
        let touched: BTreeSet<u64> = windows.iter().flatten().map(|(a, _)| *a).collect();
        let mut nonzero = touched;
        for (i, b) in self.base.chunks(B).enumerate() {
            if b.iter().any(|&x| x != 0) {
                nonzero.insert(i as u64);
            }
        }
        let unit = block_unit(&self.base);
        Recording {
            dev: self.dev,
            base: self.base,
            windows,
            nonzero: nonzero.into_iter().collect(),
            extra_cuts: Vec::new(),
            unit,
            judge: Judge::new(self.model),
        }
    }
}

/// A finished recording: the image it started from, the writes between flushes, and
/// the model's judge.
pub struct Recording {
    dev: CrashDevice,
    base: Vec<u8>,
    /// `windows[k]`: the writes after flush `k` and before flush `k + 1`.
    windows: Vec<Vec<(u64, Vec<u8>)>>,
    /// Blocks that may be non-zero in a cut image, in order.
    nonzero: Vec<u64>,
    /// Cuts checked beyond the flush cuts ([`Recording::add_torn_cuts`]).
    extra_cuts: Vec<(usize, Vec<bool>)>,
    /// Device blocks (4 KiB) per F2FS block: the unit a flush cut keeps or drops whole.
    unit: usize,
    judge: Judge,
}

impl Recording {
    /// Flushes recorded.
    pub fn flushes(&self) -> usize {
        self.windows.len() - 1
    }

    /// Block writes recorded.
    pub fn writes(&self) -> usize {
        self.windows.iter().map(Vec::len).sum()
    }

    /// Operations recorded.
    pub fn ops(&self) -> usize {
        self.judge.model.ops.len()
    }

    /// Adds the cuts at every write of a `unit`-block (`unit` device blocks, aligned
    /// to `region.start`) inside the device blocks `region`: the power fails while the
    /// device writes in order, so every write before it since the last flush landed,
    /// nothing after it, and of its `unit` device blocks each subset (none, all, and
    /// every torn mix). Only every `every`-th such write from the first is cut (1: all
    /// of them), a deterministic sample. Returns how many cuts were added.
    pub fn add_torn_cuts(&mut self, region: std::ops::Range<u64>, unit: usize, every: usize) -> usize {
        let before = self.extra_cuts.len();
        let mut nth = 0;
        for (k, w) in self.windows.iter().enumerate() {
            let mut i = 0;
            while i < w.len() {
                let addr = w[i].0;
                let whole = i + unit <= w.len()
                    && region.contains(&addr)
                    && (addr - region.start) % unit as u64 == 0
                    && (0..unit).all(|j| w[i + j].0 == addr + j as u64);
                if !whole {
                    i += 1;
                    continue;
                }
                nth += 1;
                if (nth - 1) % every.max(1) != 0 {
                    i += unit;
                    continue;
                }
                for mask in 0..1u32 << unit {
                    let keep = (0..w.len())
                        .map(|j| j < i || (j < i + unit && mask >> (j - i) & 1 == 1))
                        .collect();
                    self.extra_cuts.push((k, keep));
                }
                i += unit;
            }
        }
        self.extra_cuts.len() - before
    }

    /// `keep` (of the writes in flight after flush `k`) with each F2FS block's device
    /// blocks kept or dropped together, as its first one is: the device writes an
    /// F2FS block whole. (Linux trusts a node block by the footer in its last bytes,
    /// so a 16 KiB node block torn on a 4 KiB-atomic device is beyond what F2FS
    /// survives, on Linux as here; [`Recording::add_torn_cuts`] tears the blocks a
    /// test means to tear.)
    fn whole_blocks(&self, k: usize, mut keep: Vec<bool>) -> Vec<bool> {
        let (w, u) = (&self.windows[k], self.unit);
        let mut i = 0;
        while i < w.len() {
            let addr = w[i].0;
            let whole =
                u > 1 && addr % u as u64 == 0 && i + u <= w.len() && (0..u).all(|j| w[i + j].0 == addr + j as u64);
            if whole {
                for j in 1..u {
                    keep[i + j] = keep[i];
                }
                i += u;
            } else {
                i += 1;
            }
        }
        keep
    }

    /// Block writes recorded inside the device blocks `region`.
    pub fn writes_in(&self, region: std::ops::Range<u64>) -> usize {
        self.windows
            .iter()
            .flatten()
            .filter(|(a, _)| region.contains(a))
            .count()
    }

    /// The image after a cut at flush `k` keeping `keep` of the writes in flight.
    pub fn image(&self, k: usize, keep: &[bool]) -> Vec<u8> {
        let mut img = self.base.clone();
        self.apply(&mut img, 0, k, keep);
        img
    }

    /// Turns `img`, the base image with the writes before flush `from` applied, into
    /// the image after a cut at flush `k` (not before `from`) keeping `keep` of the
    /// writes in flight.
    fn apply(&self, img: &mut [u8], from: usize, k: usize, keep: &[bool]) {
        for w in &self.windows[from..k] {
            for (addr, b) in w {
                put(img, *addr, b);
            }
        }
        for (i, (addr, b)) in self.windows[k].iter().enumerate() {
            if keep[i] {
                put(img, *addr, b);
            }
        }
    }

    /// Writes the image after a cut to a new sparse file at `path`. `img` is the base
    /// image with the writes before flush `*durable` applied, and is left so with
    /// `*durable = k`; `k` is not before `*durable`.
    fn write_cut(&self, path: &Path, img: &mut [u8], durable: &mut usize, k: usize, keep: &[bool]) {
        use std::os::unix::fs::FileExt;
        self.apply(img, *durable, k, &vec![false; self.windows[k].len()]);
        *durable = k;
        let saved: Vec<(u64, Vec<u8>)> = self.windows[k]
            .iter()
            .map(|(addr, _)| (*addr, img[*addr as usize * B..(*addr as usize + 1) * B].to_vec()))
            .collect();
        self.apply(img, k, k, keep);
        let _ = std::fs::remove_file(path);
        let f = std::fs::File::create(path).unwrap();
        f.set_len(img.len() as u64).unwrap();
        let mut i = 0;
        while i < self.nonzero.len() {
            let mut j = i + 1;
            while j < self.nonzero.len() && self.nonzero[j] == self.nonzero[j - 1] + 1 {
                j += 1;
            }
            let (a, b) = (self.nonzero[i] as usize * B, (self.nonzero[j - 1] as usize + 1) * B);
            f.write_all_at(&img[a..b], a as u64).unwrap();
            i = j;
        }
        for (addr, b) in saved.iter().rev() {
            put(img, *addr, b);
        }
    }
}

/// Device blocks (4 KiB) per F2FS block of the volume `image` holds (its superblock's
/// `log_blocksize`; 1 when unreadable).
fn block_unit(image: &[u8]) -> usize {
    image
        .get(1024 + 16..1024 + 20)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
        .filter(|log| (12..=16).contains(log))
        .map_or(1, |log| 1 << (log - 12))
}

fn put(img: &mut [u8], addr: u64, b: &[u8]) {
    let at = addr as usize * B;
    img[at..at + B].copy_from_slice(b);
}

fn hash_of(bytes: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

impl Judge {
    fn new(model: Model) -> Judge {
        let mut paths: BTreeMap<String, Vec<(usize, Option<ObjId>)>> = BTreeMap::new();
        let mut names: Vec<Vec<(usize, BTreeSet<String>)>> = vec![Vec::new(); model.objs.len()];
        let mut prev: Option<&BTreeMap<String, ObjId>> = None;
        for (t, ns) in model.ns_hist.iter().enumerate() {
            if prev.is_some_and(|p| std::ptr::eq(p, &**ns) || *p == **ns) {
                prev = Some(ns);
                continue;
            }
            let empty = BTreeMap::new();
            let before = prev.unwrap_or(&empty);
            let mut touched: BTreeSet<ObjId> = BTreeSet::new();
            for (p, &o) in ns.iter() {
                if before.get(p) != Some(&o) {
                    paths.entry(p.clone()).or_default().push((t, Some(o)));
                    touched.insert(o);
                    if let Some(&old) = before.get(p) {
                        touched.insert(old);
                    }
                }
            }
            for (p, &o) in before.iter() {
                if !ns.contains_key(p) {
                    paths.entry(p.clone()).or_default().push((t, None));
                    touched.insert(o);
                }
            }
            for o in touched {
                let set: BTreeSet<String> = ns.iter().filter(|(_, &x)| x == o).map(|(p, _)| p.clone()).collect();
                names[o].push((t, set));
            }
            prev = Some(ns);
        }
        let mut all = Vec::new();
        let mut file_syncs = vec![Vec::new(); model.objs.len()];
        let mut path_syncs: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
        let mut dir_syncs: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
        for (i, op) in model.ops.iter().enumerate() {
            let t = i + 1;
            match &op.sync {
                Sync::None => {}
                Sync::All => all.push((op.end, t)),
                Sync::File(o, at) => {
                    file_syncs[*o].push((op.end, t));
                    for p in at {
                        path_syncs.entry(p.clone()).or_default().push((op.end, t));
                    }
                }
                Sync::Dir(p) => dir_syncs.entry(p.clone()).or_default().push((op.end, t)),
            }
        }
        let blocks = model.objs.iter().map(|o| block_histories(&o.data)).collect();
        Judge {
            blocks,
            model,
            paths,
            names,
            all,
            file_syncs,
            path_syncs,
            dir_syncs,
        }
    }

    /// The newest operation durable at `k` among `syncs` (0: none).
    fn newest(syncs: Option<&Vec<(usize, usize)>>, k: usize) -> usize {
        syncs
            .into_iter()
            .flatten()
            .filter(|(end, _)| *end <= k)
            .map(|(_, t)| *t)
            .max()
            .unwrap_or(0)
    }

    /// The last operation that began at or before flush `k`.
    fn last_begun(&self, k: usize) -> usize {
        self.model.ops.iter().take_while(|op| op.start <= k).count()
    }

    /// What `path` may name after a cut: at `d` and after each change in `(d, m]`.
    fn path_values(&self, path: &str, d: usize, m: usize) -> Vec<Option<ObjId>> {
        let Some(hist) = self.paths.get(path) else {
            return vec![None];
        };
        let mut out = vec![hist.iter().take_while(|(t, _)| *t <= d).last().and_then(|(_, v)| *v)];
        out.extend(hist.iter().filter(|(t, _)| *t > d && *t <= m).map(|(_, v)| *v));
        out
    }

    fn path_durable(&self, path: &str, all: usize, k: usize) -> usize {
        let file = Judge::newest(self.path_syncs.get(path), k);
        let dir = if path == "/" {
            0
        } else {
            Judge::newest(self.dir_syncs.get(parent(path)), k)
        };
        all.max(file).max(dir)
    }

    /// The sizes file `o` may show after a cut: each state's in the window, and
    /// between the sizes before and after each operation in it.
    fn file_sizes(&self, o: ObjId, d: usize, m: usize) -> Vec<(u64, u64)> {
        let mut prev = None;
        window(&self.model.objs[o].data, d, m)
            .map(|s| {
                let p = prev.replace(s.size).unwrap_or(s.size);
                (p.min(s.size), p.max(s.size))
            })
            .collect()
    }

    /// Checks the tree `seen` read back after a cut at flush `k`; the failures.
    fn check(&self, k: usize, seen: &BTreeMap<String, Seen>) -> Vec<String> {
        let mut fails = Vec::new();
        let m = self.last_begun(k);
        let all = Judge::newest(Some(&self.all), k);
        let objs = &self.model.objs;
        let show = |v: &Option<ObjId>| match v {
            None => "nothing".to_string(),
            Some(o) => format!("inode {} ({:?})", objs[*o].ino, objs[*o].kind),
        };
        let paths: BTreeSet<&String> = self.paths.keys().chain(seen.keys()).collect();
        for path in paths {
            if path == "/" || path.as_str() == join("/", PROBE) {
                continue;
            }
            let d = self.path_durable(path, all, k);
            let values = self.path_values(path, d, m);
            let got = seen.get(path.as_str());
            let ok: Vec<ObjId> = match got {
                None => {
                    if !values.contains(&None) {
                        let want: Vec<String> = values.iter().map(show).collect();
                        fails.push(format!(
                            "{path} is missing; durable at op {d}, it must name one of [{}]",
                            want.join(", ")
                        ));
                    }
                    continue;
                }
                Some(s) => values
                    .iter()
                    .flatten()
                    .copied()
                    .filter(|&o| objs[o].ino == s.ino && objs[o].kind == s.kind)
                    .collect(),
            };
            let s = got.unwrap();
            if ok.is_empty() {
                let want: Vec<String> = values.iter().map(show).collect();
                fails.push(format!(
                    "{path} names inode {} ({:?}); durable at op {d}, it must name one of [{}]",
                    s.ino,
                    s.kind,
                    want.join(", ")
                ));
                continue;
            }
            if s.kind != FileKind::File {
                continue;
            }
            let data = s.data.as_deref().unwrap_or(&[]);
            let mut why = String::new();
            let good = ok.iter().any(|&o| {
                let d = all.max(Judge::newest(self.file_syncs.get(o), k));
                match self.check_data(o, d, m, s.size, data) {
                    Ok(()) => true,
                    Err(e) => {
                        why = format!("{e} (durable at op {d}, states up to op {m})");
                        false
                    }
                }
            });
            if !good {
                fails.push(format!("{path} (inode {}): {why}", s.ino));
            } else if let Some(&o) = ok.iter().find(|&&o| objs[o].atomic) {
                // All or nothing: the file is one of its states whole.
                let d = all.max(Judge::newest(self.file_syncs.get(o), k));
                let whole = window(&objs[o].data, d, m).any(|st| st.size == s.size && st.bytes() == data);
                if !whole {
                    fails.push(format!(
                        "{path} (inode {}): half an atomic commit (size {}; no state of it, durable at op {d}, \
                         up to op {m}, is what was read)",
                        s.ino, s.size
                    ));
                }
            }
        }
        // Objects durable at their point and named throughout are reachable.
        for (o, hist) in self.names.iter().enumerate() {
            if o == 0 {
                continue;
            }
            let d = all.max(Judge::newest(self.file_syncs.get(o), k));
            let first = hist.iter().take_while(|(t, _)| *t <= d).count();
            if first == 0 {
                continue; // created after its durable point
            }
            let window: Vec<&BTreeSet<String>> = std::iter::once(&hist[first - 1].1)
                .chain(hist[first..].iter().take_while(|(t, _)| *t <= m).map(|(_, s)| s))
                .collect();
            if window.iter().any(|s| s.is_empty()) {
                continue;
            }
            let ino = objs[o].ino;
            let found = window
                .iter()
                .flat_map(|s| s.iter())
                .any(|p| seen.get(p).is_some_and(|s| s.ino == ino));
            if !found {
                let names: BTreeSet<&String> = window.iter().flat_map(|s| s.iter()).collect();
                fails.push(format!(
                    "inode {ino} ({:?}), durable at op {d}, is not reachable under any of {names:?}",
                    objs[o].kind
                ));
            }
        }
        fails
    }

    fn check_data(&self, o: ObjId, d: usize, m: usize, size: u64, data: &[u8]) -> Result<(), String> {
        let sizes = self.file_sizes(o, d, m);
        if !sizes.iter().any(|&(lo, hi)| lo <= size && size <= hi) {
            let want: BTreeSet<u64> = sizes.iter().map(|s| s.1).collect();
            return Err(format!("size {size}, expected one of {want:?} or between two in a row"));
        }
        for (i, got) in data.chunks(B).enumerate() {
            let hist = &self.blocks[o][i];
            let mut n = 0;
            let found = window(hist, d, m).any(|b| {
                n += 1;
                &b.as_deref().map_or(&ZERO[..], |b| &b[..])[..got.len()] == got
            });
            if !found {
                return Err(format!(
                    "block {i} (bytes {}..{}) matches none of the {n} contents it had",
                    i * B,
                    i * B + got.len(),
                ));
            }
        }
        Ok(())
    }
}

/// What the read path shows of one name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// Inode.
    pub ino: Ino,
    /// Kind.
    pub kind: FileKind,
    /// Size.
    pub size: u64,
    /// Contents (regular files).
    pub data: Option<Vec<u8>>,
}

/// The whole tree by path, every file read in full; an error names what failed.
pub fn walk(fs: &Fs) -> Result<BTreeMap<String, Seen>, String> {
    let mut out = BTreeMap::new();
    let mut todo = vec![("/".to_string(), fs.root())];
    while let Some((path, ino)) = todo.pop() {
        let st = fs.stat(ino).map_err(|e| format!("stat {path} (inode {ino}): {e}"))?;
        let mut data = None;
        match st.kind {
            FileKind::Dir => {
                let entries = fs.read_dir(ino).map_err(|e| format!("read_dir {path}: {e}"))?;
                for e in entries {
                    let name = String::from_utf8_lossy(&e.name).into_owned();
                    todo.push((join(&path, &name), e.ino));
                }
            }
            FileKind::File => {
                let mut b = vec![0u8; st.size as usize + 1];
                let n = fs.read(ino, 0, &mut b).map_err(|e| format!("read {path}: {e}"))?;
                if n as u64 != st.size {
                    return Err(format!("read {path}: {n} bytes of {}", st.size));
                }
                b.truncate(n);
                data = Some(b);
            }
            _ => {}
        }
        let seen = Seen {
            ino,
            kind: st.kind,
            size: st.size,
            data,
        };
        out.insert(path, seen);
    }
    Ok(out)
}

/// The fsck.f2fs that judges `img`: Debian's (on the `PATH`) for 4 KiB blocks; for
/// other block sizes (the superblock's `log_blocksize`) the development tree's
/// ([`oracle::dev_fsck`]), or `None` when it is not installed (the caller skips fsck;
/// the reason is printed once).
fn fsck_for(img: &Path) -> Option<std::path::PathBuf> {
    use std::io::{Read, Seek, SeekFrom};
    static DEV: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    let mut log = [0u8; 4];
    let read = std::fs::File::open(img).and_then(|mut f| {
        f.seek(SeekFrom::Start(1024 + 16))?;
        f.read_exact(&mut log)
    });
    if read.is_err() || u32::from_le_bytes(log) == 12 {
        return Some("fsck.f2fs".into());
    }
    DEV.get_or_init(oracle::dev_fsck).clone()
}

/// `fsck.f2fs -f --dry-run` on `img` (for a volume of 16 KiB blocks, the development
/// tree's; `Ok(false)` when there is none): `Err` with its output when it exits
/// non-zero or prints "[Fail]", "[FIX" or "ASSERT"; `Ok(true)` when it ran clean.
pub fn fsck(img: &Path) -> Result<bool, String> {
    let Some(bin) = fsck_for(img) else {
        return Ok(false);
    };
    let out = Command::new(bin)
        .args(["-f", "--dry-run"])
        .arg(img)
        .output()
        .unwrap_or_else(|e| panic!("cannot run fsck.f2fs: {e} (is f2fs-tools installed?)"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let bad = text
        .lines()
        .any(|l| l.contains("[Fail]") || l.contains("[FIX") || l.contains("ASSERT"));
    if out.status.success() && !bad {
        Ok(true)
    } else {
        Err(text)
    }
}

/// The probe's contents.
fn probe_data() -> Vec<u8> {
    Rng::new(0x0bad_cafe).bytes(3 * B + 100)
}

/// Judges one cut image at `path`, for each flush index in `ks` that produces it.
/// Returns the failures and whether fsck ran.
fn check_image(judge: &Judge, path: &Path, ks: &[usize]) -> (Vec<String>, bool) {
    let mut fails = Vec::new();
    let fs = match Fs::open_rw(path, &[]) {
        Ok(fs) => fs,
        Err(e) => return (vec![format!("read-write open: {e}")], false),
    };
    let seen = match walk(&fs) {
        Ok(s) => s,
        Err(e) => return (vec![format!("reading the tree: {e}")], false),
    };
    for &k in ks {
        fails.extend(judge.check(k, &seen).into_iter().map(|f| format!("at flush {k}: {f}")));
    }
    let probe = probe_data();
    let r = fs
        .create(fs.root(), PROBE.as_bytes(), 0o644, 0, 0)
        .and_then(|st| fs.write(st.ino, 0, &probe).map(|n| (st.ino, n)));
    let probe_ino = match r {
        Ok((ino, n)) if n == probe.len() => Some(ino),
        Ok((_, n)) => {
            fails.push(format!("probe write: {n} bytes of {}", probe.len()));
            None
        }
        Err(e) => {
            fails.push(format!("probe write: {e}"));
            None
        }
    };
    if let Err(e) = fs.unmount() {
        fails.push(format!("unmount: {e}"));
        return (fails, false);
    }
    let fsck_ran = match fsck(path) {
        Ok(ran) => ran,
        Err(text) => {
            fails.push(format!("fsck.f2fs -f:\n{text}"));
            true
        }
    };
    let mut want = seen;
    if let Some(ino) = probe_ino {
        let seen = Seen {
            ino,
            kind: FileKind::File,
            size: probe.len() as u64,
            data: Some(probe),
        };
        want.insert(join("/", PROBE), seen);
    }
    match Fs::open(path, &[]).map_err(|e| e.to_string()).and_then(|fs| walk(&fs)) {
        Ok(ro) if ro == want => {}
        Ok(ro) => {
            let differ: Vec<&String> = ro
                .keys()
                .chain(want.keys())
                .filter(|p| ro.get(*p) != want.get(*p))
                .take(5)
                .collect();
            fails.push(format!(
                "read-only reopen differs from the read-write view at {differ:?}"
            ));
        }
        Err(e) => fails.push(format!("read-only reopen: {e}")),
    }
    (fails, fsck_ran)
}

/// How many cuts to try: environment `UF2FS_CRASH_*` over the defaults given.
#[derive(Debug, Clone)]
pub struct Scale {
    /// Seeds per workload (`UF2FS_CRASH_SEEDS`).
    pub seeds: u64,
    /// The first seed (`UF2FS_CRASH_SEED_BASE`).
    pub seed_base: u64,
    /// Seeded subsets of the writes in flight per flush (`UF2FS_CRASH_SUBSETS`),
    /// beyond none, all and half.
    pub subsets: usize,
    /// Most distinct images checked per workload, spread evenly over the cuts
    /// (`UF2FS_CRASH_POINTS`; 0: all).
    pub points: usize,
    /// Checking threads (`UF2FS_CRASH_THREADS`; default: the CPUs).
    pub threads: usize,
    /// Workloads to run (`UF2FS_CRASH_WORKLOADS`, comma-separated; default all).
    pub workloads: Option<Vec<String>>,
    /// Size of each workload, in operations, as a multiple of its default
    /// (`UF2FS_CRASH_LENGTH`, percent).
    pub length_pct: u64,
}

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v.parse().unwrap_or_else(|_| panic!("${name}: cannot parse {v:?}")),
        Err(_) => default,
    }
}

impl Scale {
    /// `defaults`, each overridden by its environment variable when set.
    pub fn from_env(defaults: Scale) -> Scale {
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        Scale {
            seeds: env("UF2FS_CRASH_SEEDS", defaults.seeds),
            seed_base: env("UF2FS_CRASH_SEED_BASE", defaults.seed_base),
            subsets: env("UF2FS_CRASH_SUBSETS", defaults.subsets),
            points: env("UF2FS_CRASH_POINTS", defaults.points),
            threads: env(
                "UF2FS_CRASH_THREADS",
                if defaults.threads == 0 { cpus } else { defaults.threads },
            ),
            workloads: std::env::var("UF2FS_CRASH_WORKLOADS")
                .ok()
                .map(|v| v.split(',').map(str::to_string).collect())
                .or(defaults.workloads),
            length_pct: env("UF2FS_CRASH_LENGTH", defaults.length_pct),
        }
    }

    /// Whether workload `name` runs.
    pub fn runs(&self, name: &str) -> bool {
        self.workloads.as_ref().is_none_or(|w| w.iter().any(|x| x == name))
    }

    /// `n` operations scaled by `length_pct`.
    pub fn len(&self, n: u64) -> u64 {
        (n * self.length_pct / 100).max(1)
    }
}

/// Counts of one workload's run.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    /// Recordings (seeds) run.
    pub recordings: usize,
    /// Operations recorded.
    pub ops: usize,
    /// Flushes recorded.
    pub flushes: usize,
    /// Cuts enumerated (flush index and subset).
    pub points: usize,
    /// Distinct images among them (by content).
    pub distinct: usize,
    /// Distinct images checked (after `points` capping).
    pub checked: usize,
    /// (cut, image) pairs judged against the model.
    pub judged: usize,
    /// Distinct images checked that come from the recordings' extra cuts
    /// ([`Recording::add_torn_cuts`]).
    pub extra_checked: usize,
    /// fsck.f2fs runs.
    pub fsck_runs: usize,
    /// Checks that panicked.
    pub panics: usize,
    /// Failures, each naming its workload, seed and cut.
    pub failures: Vec<String>,
    /// Seconds in all.
    pub seconds: f64,
    /// Seconds spent running and recording workloads.
    pub record_seconds: f64,
}

impl Tally {
    /// One summary line.
    pub fn line(&self, name: &str) -> String {
        format!(
            "crash {name}: {} recordings, {} ops, {} flushes; {} cut points, {} distinct images, {} checked \
             ({} cut judgements), {} fsck runs; {} failures, {} panics; {:.1} s ({:.1} s recording)",
            self.recordings,
            self.ops,
            self.flushes,
            self.points,
            self.distinct,
            self.checked,
            self.judged,
            self.fsck_runs,
            self.failures.len(),
            self.panics,
            self.seconds,
            self.record_seconds
        ) + &if self.extra_checked > 0 {
            format!(
                "; {} of the images checked from torn or per-write cuts",
                self.extra_checked
            )
        } else {
            String::new()
        }
    }
}

/// Checks the cuts of `rec` (a recording of workload `name` with `seed`) and adds to
/// `tally`; `seen` holds the content hashes of images already checked for this
/// workload (a repeat is counted once); `budget` is how many distinct images this
/// recording may check (`None`: all).
pub fn check_recording(
    rec: &Recording,
    name: &str,
    seed: u64,
    scale: &Scale,
    budget: Option<usize>,
    seen: &mut HashSet<u64>,
    tally: &mut Tally,
) {
    let t0 = Instant::now();
    let set = cuts::CutSet {
        half: true,
        singles: 0,
        seeded: scale.subsets,
    };
    // Each cut tagged with whether it is one of the recording's extra cuts (those are
    // all checked before any budget is spread over the rest), in flush order (stable:
    // the flush cuts first at each flush).
    let mut cuts: Vec<(usize, Vec<bool>, bool)> = cuts::cuts_of(&rec.dev, seed ^ 0x5851_f42d_4c95_7f2d, set)
        .into_iter()
        .map(|(k, keep)| {
            let keep = rec.whole_blocks(k, keep);
            (k, keep, false)
        })
        .chain(rec.extra_cuts.iter().map(|(k, keep)| (*k, keep.clone(), true)))
        .collect();
    cuts.sort_by_key(|c| c.0);

    tally.recordings += 1;
    tally.ops += rec.ops();
    tally.flushes += rec.flushes();
    tally.points += cuts.len();
    // Image hashes: over (address, block hash) of every block that differs from the
    // base, so equal images hash equal whatever cut made them.
    let base_hash = |addr: u64| hash_of(&rec.base[addr as usize * B..(addr as usize + 1) * B]);
    let whash: Vec<Vec<u64>> = rec
        .windows
        .iter()
        .map(|w| w.iter().map(|(_, b)| hash_of(b)).collect())
        .collect();
    let mut base_cache: HashMap<u64, u64> = HashMap::new();
    let mut durable: BTreeMap<u64, u64> = BTreeMap::new();
    let mut durable_k = 0;
    // Distinct images in order: (hash, cut to rebuild it, flushes that produce it).
    let mut order: Vec<(u64, usize, Vec<bool>)> = Vec::new();
    let mut ks: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut extra: HashSet<u64> = HashSet::new();
    for (k, keep, is_extra) in cuts {
        while durable_k < k {
            for (i, (addr, _)) in rec.windows[durable_k].iter().enumerate() {
                durable.insert(*addr, whash[durable_k][i]);
            }
            durable_k += 1;
        }
        let mut img = durable.clone();
        for (i, (addr, _)) in rec.windows[k].iter().enumerate() {
            if keep[i] {
                img.insert(*addr, whash[k][i]);
            }
        }
        let mut h = DefaultHasher::new();
        for (addr, bh) in img {
            if *base_cache.entry(addr).or_insert_with(|| base_hash(addr)) != bh {
                (addr, bh).hash(&mut h);
            }
        }
        let h = h.finish();
        if is_extra {
            extra.insert(h);
        }
        if seen.contains(&h) && !ks.contains_key(&h) {
            continue; // checked in an earlier recording
        }
        let e = ks.entry(h).or_default();
        if e.is_empty() {
            order.push((h, k, keep));
        }
        if !e.contains(&k) {
            e.push(k);
        }
    }
    tally.distinct += order.len();
    if std::env::var("UF2FS_CRASH_DEBUG").is_ok() {
        eprintln!("enumerated in {:.2} s", t0.elapsed().as_secs_f64());
    }
    if let Some(budget) = budget.filter(|&b| b < order.len()) {
        let (mut first, rest): (Vec<_>, Vec<_>) = order.into_iter().partition(|(h, _, _)| extra.contains(h));
        let (n, left) = (rest.len(), budget.saturating_sub(first.len()).min(rest.len()));
        first.extend((0..left).map(|i| rest[i * n / left].clone()));
        first.sort_by_key(|(_, k, _)| *k);
        order = first;
    }
    for (h, _, _) in &order {
        seen.insert(*h);
    }
    tally.extra_checked += order.iter().filter(|(h, _, _)| extra.contains(h)).count();
    let dir = scratch_dir();
    let next = AtomicUsize::new(0);
    let results: Mutex<(Vec<String>, usize, usize, usize)> = Mutex::new((Vec::new(), 0, 0, 0));
    std::thread::scope(|s| {
        for w in 0..scale.threads.max(1) {
            let (order, ks, next, results, dir) = (&order, &ks, &next, &results, dir.path());
            s.spawn(move || {
                let img = dir.join(format!("cut-{w}.img"));
                let mut buf = rec.base.clone();
                let mut durable = 0;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((h, k, keep)) = order.get(i) else { break };
                    let ks = &ks[h];
                    if *k < durable {
                        buf.copy_from_slice(&rec.base);
                        durable = 0;
                    }
                    rec.write_cut(&img, &mut buf, &mut durable, *k, keep);
                    let kept = keep.iter().filter(|&&x| x).count();
                    let what = format!(
                        "{name} seed {seed}, cut after flush {k} keeping {kept} of {} in flight (image {h:016x})",
                        keep.len()
                    );
                    let r = catch_unwind(AssertUnwindSafe(|| check_image(&rec.judge, &img, ks)));
                    let mut res = results.lock().unwrap();
                    res.3 += ks.len();
                    match r {
                        Ok((fails, fsck_ran)) => {
                            res.1 += usize::from(fsck_ran);
                            res.0.extend(fails.into_iter().map(|f| format!("{what}: {f}")));
                        }
                        Err(p) => {
                            let msg = p
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                                .unwrap_or_default();
                            res.2 += 1;
                            res.0.push(format!("{what}: panic: {msg}"));
                        }
                    }
                }
            });
        }
    });
    let (fails, fscks, panics, judged) = results.into_inner().unwrap();
    tally.checked += order.len();
    tally.fsck_runs += fscks;
    tally.panics += panics;
    tally.judged += judged;
    tally.failures.extend(fails);
    tally.seconds += t0.elapsed().as_secs_f64();
}

/// A scratch directory for cut images, in memory when /dev/shm is there.
fn scratch_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("uf2fs-crash")
        .tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap()
}

/// Runs workload `name` for each seed of `scale`, through `record` (which runs the
/// workload on a fresh recorder and finishes it), and checks every recording; the
/// summary line is printed.
pub fn run_workload(name: &str, scale: &Scale, record: &dyn Fn(u64, &Scale) -> Recording) -> Tally {
    let mut tally = Tally::default();
    let mut seen = HashSet::new();
    let t0 = Instant::now();
    for i in 0..scale.seeds {
        let seed = scale.seed_base + i;
        let t1 = Instant::now();
        let rec = record(seed, scale);
        tally.record_seconds += t1.elapsed().as_secs_f64();
        let left = (scale.points > 0)
            .then(|| (scale.points - tally.checked.min(scale.points)).div_ceil((scale.seeds - i) as usize));
        check_recording(&rec, name, seed, scale, left, &mut seen, &mut tally);
    }
    tally.seconds = t0.elapsed().as_secs_f64();
    println!("{}", tally.line(name));
    for f in tally.failures.iter().take(20) {
        println!("  FAIL {f}");
    }
    tally
}
