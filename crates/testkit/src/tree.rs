//! Seeded source trees: what the tests put into images, and what the images must hold.
//!
//! A [`Tree`] is a list of entries (directories, files, symlinks, hard links and special
//! files) generated from a seed. [`Tree::write`] creates it on the host; sload.f2fs copies
//! it into an image; [`Tree::expected`] says what that image must then contain, applying
//! exactly the changes sload is known to make (documented on [`SloadOptions`]).

use crate::rng::{fnv1a, Rng, FNV_OFFSET};
use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// F2FS block size (4 KiB on every image these tests build).
pub const BLOCK: u64 = 4096;
/// Block addresses in a direct node block (F2FS's ADDRS_PER_BLOCK for 4 KiB blocks).
pub const ADDRS_PER_BLOCK: u64 = 1018;

/// The contents of one regular file: `len` bytes of seeded noise, with zero-filled
/// block-aligned holes (written as real holes on the host).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileData {
    /// Size in bytes.
    pub len: u64,
    /// Seed of the noise.
    pub seed: u64,
    /// Holes as block ranges `[start, end)`, sorted, not overlapping.
    pub holes: Vec<(u64, u64)>,
}

impl FileData {
    /// File of `len` noise bytes.
    pub fn noise(len: u64, seed: u64) -> FileData {
        FileData {
            len,
            seed,
            holes: Vec::new(),
        }
    }

    fn in_hole(&self, block: u64) -> bool {
        self.holes.iter().any(|&(s, e)| block >= s && block < e)
    }

    /// Writes block `index` (up to 4096 bytes, fewer at the tail) into `buf`; returns its
    /// length. Holes read as zeros.
    pub fn block(&self, index: u64, buf: &mut [u8; BLOCK as usize]) -> usize {
        let start = index * BLOCK;
        if start >= self.len {
            return 0;
        }
        let n = (self.len - start).min(BLOCK) as usize;
        if self.in_hole(index) {
            buf[..n].fill(0);
        } else {
            Rng::new(self.seed ^ index.wrapping_mul(0x2545_f491_4f6c_dd1d)).fill(&mut buf[..n]);
        }
        n
    }

    /// All the bytes (for small files and assertions).
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len as usize);
        let mut buf = [0u8; BLOCK as usize];
        let mut i = 0;
        loop {
            let n = self.block(i, &mut buf);
            if n == 0 {
                return out;
            }
            out.extend_from_slice(&buf[..n]);
            i += 1;
        }
    }

    /// Compares `actual` (a reader of the whole file) with these contents; `Err` names the
    /// first differing offset.
    pub fn check_reader(&self, mut actual: impl io::Read) -> Result<(), String> {
        let mut want = [0u8; BLOCK as usize];
        let mut got = vec![0u8; BLOCK as usize];
        let mut index = 0u64;
        loop {
            let n = self.block(index, &mut want);
            let m = read_full(&mut actual, &mut got).map_err(|e| format!("read error at {}: {e}", index * BLOCK))?;
            if n != m {
                return Err(format!(
                    "length differs: expected {} bytes, got {} or more",
                    self.len,
                    index * BLOCK + m as u64
                ));
            }
            if n == 0 {
                return Ok(());
            }
            if want[..n] != got[..n] {
                let at = (0..n).find(|&i| want[i] != got[i]).unwrap_or(0);
                return Err(format!(
                    "contents differ at byte {} (block {index}): expected {:#04x}, got {:#04x}",
                    index * BLOCK + at as u64,
                    want[at],
                    got[at]
                ));
            }
            index += 1;
        }
    }

    /// Compares a byte slice with these contents.
    pub fn check_bytes(&self, actual: &[u8]) -> Result<(), String> {
        self.check_reader(actual)
    }

    fn write_to(&self, path: &Path) -> io::Result<()> {
        let mut f = fs::File::create(path)?;
        let mut buf = [0u8; BLOCK as usize];
        let blocks = self.len.div_ceil(BLOCK);
        let mut index = 0;
        while index < blocks {
            if self.in_hole(index) {
                index += 1;
                continue;
            }
            let n = self.block(index, &mut buf);
            f.seek(SeekFrom::Start(index * BLOCK))?;
            f.write_all(&buf[..n])?;
            index += 1;
        }
        f.set_len(self.len)?;
        Ok(())
    }
}

fn read_full(r: &mut impl io::Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// What one entry of a source tree is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Node {
    /// A directory.
    Dir,
    /// A regular file.
    File(FileData),
    /// A symbolic link with this target.
    Symlink(Vec<u8>),
    /// Another name for the regular file at this index of [`Tree::entries`].
    HardLink(usize),
    /// A named pipe (sload.f2fs skips these).
    Fifo,
    /// A Unix socket (sload.f2fs skips these).
    Socket,
}

/// One entry of a source tree.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Entry {
    /// Path relative to the tree's root, components separated by `/`; raw bytes.
    pub path: Vec<u8>,
    /// What it is.
    pub node: Node,
    /// Permission bits including setuid, setgid and sticky (ignored for symlinks and
    /// hard links, which take their primary's).
    pub perm: u32,
    /// Owner (kept below 65536: sload.f2fs -P stores 16 bits).
    pub uid: u32,
    /// Group (likewise).
    pub gid: u32,
    /// Modification time, whole seconds, kept within `0..2^32` (sload stores 32 bits).
    pub mtime: i64,
    /// Extended attributes (full names such as `user.x`), set by [`Tree::write`]; sload
    /// copies none of them, so only trees meant for copy-in tests (`cp -a`) have any.
    pub xattrs: Vec<(Vec<u8>, Vec<u8>)>,
}

/// How sload.f2fs was run, which decides what the image keeps.
///
/// What sload.f2fs (f2fs-tools 1.15, checked by experiment) keeps and drops:
/// - regular files, directories and symlinks only; FIFOs, sockets and device nodes are
///   skipped silently (no entry at all);
/// - mode: file type, rwx, setuid, setgid and sticky bits are kept;
/// - owner: only with `-P`, and only the low 16 bits of uid and gid; without `-P` every
///   inode is owned by 0:0;
/// - times: mtime whole seconds only (nanoseconds dropped), truncated to 32 bits; atime
///   and ctime are set equal to mtime; the root directory keeps mkfs's time and mode;
/// - hard links: kept (one inode, link count = number of names);
/// - holes: not kept: sparse regions are written as allocated zero blocks;
/// - xattrs: user.* and other host xattrs are not copied; with `-s file_contexts` every
///   inode gets a `security.selinux` xattr from that file (no trailing NUL);
/// - symlink targets: kept up to 4095 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SloadOptions {
    /// `-P`: keep owners.
    pub preserve_owner: bool,
    /// `-s file_contexts` with [`FILE_CONTEXTS`]: label every inode.
    pub selinux_labels: bool,
}

/// The file_contexts given to sload -s: two labels, the second for everything under
/// `/labeled`. libselinux lets the last matching line win.
pub const FILE_CONTEXTS: &str = "/.*\tu:object_r:uf2fs_file:s0\n/labeled(/.*)?\tu:object_r:uf2fs_labeled:s0\n";
/// `security.selinux` of inodes outside `/labeled`.
pub const LABEL_DEFAULT: &[u8] = b"u:object_r:uf2fs_file:s0";
/// `security.selinux` of inodes under `/labeled`.
pub const LABEL_SPECIAL: &[u8] = b"u:object_r:uf2fs_labeled:s0";
/// The xattr name sload sets.
pub const SELINUX_XATTR: &[u8] = b"security.selinux";

/// What an image built from a tree must show at one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    /// Kind and payload.
    pub kind: ExpectedKind,
    /// Permission bits (07777).
    pub perm: u32,
    /// Link count: names of a file; 2 + subdirectories of a directory; 1 for a symlink.
    pub nlink: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// mtime in whole seconds (atime and ctime equal it); `None` for the root, whose
    /// times mkfs.f2fs sets.
    pub mtime: Option<i64>,
    /// Names sharing one inode share a group (the index of the primary entry).
    pub link_group: Option<usize>,
    /// Extended attributes, sorted by name.
    pub xattrs: Vec<(Vec<u8>, Vec<u8>)>,
}

/// The kind of an expected entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpectedKind {
    /// Regular file with these contents.
    File(FileData),
    /// Directory.
    Dir,
    /// Symlink with this target.
    Symlink(Vec<u8>),
}

impl Expected {
    /// Full `st_mode`.
    pub fn mode(&self) -> u32 {
        let kind = match self.kind {
            ExpectedKind::File(_) => 0o100000,
            ExpectedKind::Dir => 0o040000,
            ExpectedKind::Symlink(_) => 0o120000,
        };
        kind | self.perm
    }

    /// `st_size`, except for directories, whose size is F2FS's dentry block count and
    /// not something the source tree decides.
    pub fn size(&self) -> Option<u64> {
        match &self.kind {
            ExpectedKind::File(d) => Some(d.len),
            ExpectedKind::Dir => None,
            ExpectedKind::Symlink(t) => Some(t.len() as u64),
        }
    }
}

/// The block geometry a tree's boundary files are sized for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Geometry {
    /// Data block addresses held in the inode itself: 923 minus extra_isize/4 minus the
    /// inline xattr slots (50).
    pub addrs_in_inode: u64,
    /// Largest regular file (in blocks) the image may hold; see `Variant::max_file_blocks`.
    pub max_file_blocks: Option<u64>,
}

/// A generated source tree.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Tree {
    /// Entries, parents before children.
    pub entries: Vec<Entry>,
}

/// Collects entries with random times and owners.
struct Builder {
    entries: Vec<Entry>,
    rng: Rng,
}

impl Builder {
    fn new(seed: u64) -> Builder {
        Builder {
            entries: Vec::new(),
            rng: Rng::new(seed),
        }
    }

    fn time(&mut self) -> i64 {
        // 2000-01-01 .. 2030-03-17: realistic times; the edges get their own files.
        self.rng.range(946_684_800, 1_900_000_000) as i64
    }

    fn push(&mut self, path: &[u8], node: Node, perm: u32) -> usize {
        let mtime = self.time();
        self.entries.push(Entry {
            path: path.to_vec(),
            node,
            perm,
            uid: 0,
            gid: 0,
            mtime,
            xattrs: Vec::new(),
        });
        self.entries.len() - 1
    }

    fn dir(&mut self, path: &[u8]) -> usize {
        self.push(path, Node::Dir, 0o755)
    }

    fn file(&mut self, path: &[u8], len: u64) -> usize {
        let seed = self.rng.next_u64();
        let perm = *self.rng.pick(&[0o644, 0o644, 0o600, 0o755, 0o640]);
        self.push(path, Node::File(FileData::noise(len, seed)), perm)
    }

    fn file_with(&mut self, path: &[u8], data: FileData, perm: u32) -> usize {
        self.push(path, Node::File(data), perm)
    }

    fn symlink(&mut self, path: &[u8], target: &[u8]) -> usize {
        self.push(path, Node::Symlink(target.to_vec()), 0o777)
    }

    fn hardlink(&mut self, path: &[u8], primary: usize) -> usize {
        self.push(path, Node::HardLink(primary), 0)
    }

    fn set(&mut self, index: usize, f: impl FnOnce(&mut Entry)) {
        f(&mut self.entries[index]);
    }

    fn finish(self) -> Tree {
        Tree { entries: self.entries }
    }
}

fn join(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut p = a.to_vec();
    p.push(b'/');
    p.extend_from_slice(b);
    p
}

impl Tree {
    /// The full end-to-end tree: inline/direct/indirect size boundaries for `geo`, a
    /// directory of ~5,000 entries, 40-level deep paths, 255-byte and non-ASCII names,
    /// symlinks of every kind, hard links across directories, empty files and
    /// directories, special modes and owners, edge timestamps, zero-filled holes and
    /// special files sload skips.
    pub fn full(seed: u64, geo: Geometry) -> Tree {
        let mut b = Builder::new(seed);
        b.file(b"empty_file", 0);
        b.file(b"one_byte", 1);
        b.dir(b"empty_dir");
        for p in [
            &b"nested_empty"[..],
            b"nested_empty/a",
            b"nested_empty/a/b",
            b"nested_empty/a/b/c",
        ] {
            b.dir(p);
        }
        add_inline_sizes(&mut b);
        add_block_boundaries(&mut b, geo);
        add_holes(&mut b, geo);
        add_big_dir(&mut b, 5000);
        add_deep(&mut b, 40);
        add_names(&mut b);
        add_symlinks(&mut b);
        add_hard_links(&mut b);
        add_modes(&mut b);
        add_owners(&mut b);
        add_times(&mut b);
        add_labeled(&mut b);
        add_special(&mut b);
        b.finish()
    }

    /// A small tree (about a hundred entries, one file that needs a direct node) for
    /// corruption tests and the demo.
    pub fn small(seed: u64) -> Tree {
        let mut b = Builder::new(seed);
        b.file(b"empty_file", 0);
        b.file(b"hello.txt", 13);
        b.file(b"inline_3000", 3000);
        b.file(b"two_blocks", 2 * BLOCK + 5);
        // More blocks than any inode holds: needs a direct node block.
        b.file(b"needs_direct_node", 900 * BLOCK + 7);
        b.dir(b"dir");
        for i in 0..60 {
            let len = b.rng.below(6000);
            b.file(format!("dir/file_{i:03}").as_bytes(), len);
        }
        b.dir(b"dir/sub");
        b.file(b"dir/sub/leaf", 100);
        b.symlink(b"link_rel", b"dir/sub/leaf");
        b.symlink(b"link_abs", b"/hello.txt");
        b.symlink(b"link_dangling", b"nowhere");
        let p = b.file(b"hard_a", 50);
        b.hardlink(b"dir/hard_b", p);
        b.file("n\u{e4}me-\u{fc}tf8".as_bytes(), 10);
        b.dir(b"empty_dir");
        b.finish()
    }

    /// `count` files of 0..=`max_len` bytes spread over directories of 100 (benchmarks).
    pub fn many_files(seed: u64, count: usize, max_len: u64) -> Tree {
        let mut b = Builder::new(seed);
        for i in 0..count {
            if i % 100 == 0 {
                b.dir(format!("d{:03}", i / 100).as_bytes());
            }
            let len = b.rng.below(max_len + 1);
            b.file(format!("d{:03}/f{i:05}", i / 100).as_bytes(), len);
        }
        b.finish()
    }

    /// A tree for copy-in tests (`cp -a` onto a mount, then compared with a host copy):
    /// `files` regular files (a third of them tiny, in one directory of many entries
    /// that spans several hash levels) over nested directories up to six levels deep,
    /// sizes from 0 to 4 MiB (most small; a few with holes), hard links within and
    /// across directories (some files with three names), symlinks (relative, absolute,
    /// dangling, up to 4095 bytes), fifos, modes of every kind (setuid, setgid, sticky,
    /// none), owners beyond 16 bits (applied when run as root), long and non-ASCII
    /// names, and xattrs: small `user.*` ones that stay in the inode, lists of up to
    /// ~3 KB that need an xattr node, and (when `trusted`, which needs root) `trusted.*`
    /// on files, directories and symlinks. About 45 KiB of data per file on average
    /// (~140 MB for 3,000 files).
    pub fn copy_mix(seed: u64, files: usize, trusted: bool) -> Tree {
        const DIR_PERMS: [u32; 8] = [0o755, 0o755, 0o755, 0o700, 0o1777, 0o2775, 0o750, 0o555];
        const FILE_PERMS: [u32; 14] = [
            0o644, 0o644, 0o644, 0o644, 0o600, 0o755, 0o640, 0o444, 0o000, 0o4755, 0o2755, 0o6711, 0o1644, 0o777,
        ];
        const IDS: [u32; 6] = [0, 0, 1000, 65534, 70_000, 123_456];
        let mut b = Builder::new(seed);
        let mut counter = 0usize;
        let mut dirs: Vec<Vec<u8>> = vec![Vec::new()];
        let mut regular: Vec<usize> = Vec::new();
        for _ in 0..(files / 40).max(4) {
            let parent = loop {
                let d = b.rng.pick(&dirs).clone();
                if d.iter().filter(|&&c| c == b'/').count() < 5 {
                    break d;
                }
            };
            let path = join_rel(&parent, &mix_name(&mut b.rng, &mut counter, "d"));
            let i = b.dir(&path);
            let perm = *b.rng.pick(&DIR_PERMS);
            b.set(i, |e| e.perm = perm);
            dirs.push(path);
        }
        let many = b"many".to_vec();
        b.dir(&many);
        for n in 0..files {
            let (dir, len) = if n < files / 3 {
                let len = if b.rng.chance(1, 4) { 0 } else { b.rng.range(1, 300) };
                (many.clone(), len)
            } else {
                let len = match b.rng.below(1000) {
                    0..=8 => b.rng.range(1 << 20, (4 << 20) + 1),
                    9..=89 => b.rng.range(64 << 10, 512 << 10),
                    90..=489 => b.rng.range(3500, 64 << 10),
                    490..=589 => 0,
                    _ => b.rng.range(1, 3500),
                };
                (b.rng.pick(&dirs).clone(), len)
            };
            let path = join_rel(&dir, &mix_name(&mut b.rng, &mut counter, "f"));
            let seed = b.rng.next_u64();
            let blocks = len / BLOCK;
            let holes = if blocks >= 16 && b.rng.chance(1, 8) {
                let start = b.rng.range(1, blocks / 2);
                vec![(start, start + b.rng.range(1, blocks / 2))]
            } else {
                Vec::new()
            };
            let perm = *b.rng.pick(&FILE_PERMS);
            regular.push(b.file_with(&path, FileData { len, seed, holes }, perm));
        }
        // Hard links: new names for random files (a few files get two).
        for _ in 0..files / 30 {
            let primary = *b.rng.pick(&regular);
            let dir = b.rng.pick(&dirs).clone();
            let path = join_rel(&dir, &mix_name(&mut b.rng, &mut counter, "h"));
            b.hardlink(&path, primary);
        }
        for _ in 0..(files / 20).max(6) {
            let target: Vec<u8> = match b.rng.below(6) {
                0 => {
                    let f = *b.rng.pick(&regular);
                    let mut t = b"/".to_vec();
                    t.extend_from_slice(&b.entries[f].path);
                    t
                }
                1 => b"../../somewhere/else".to_vec(),
                2 => b"/etc/hostname".to_vec(),
                3 => b"dangling-target".to_vec(),
                4 => {
                    let len = b.rng.range(100, 4096) as usize;
                    b"long/".iter().copied().cycle().take(len).collect()
                }
                _ => "\u{fc}ber/\u{65e5}\u{672c}".as_bytes().to_vec(),
            };
            let dir = b.rng.pick(&dirs).clone();
            let path = join_rel(&dir, &mix_name(&mut b.rng, &mut counter, "l"));
            b.symlink(&path, &target);
        }
        for _ in 0..3 {
            let dir = b.rng.pick(&dirs).clone();
            let path = join_rel(&dir, &mix_name(&mut b.rng, &mut counter, "p"));
            b.push(&path, Node::Fifo, 0o640);
        }
        // Owners and xattrs (hard links share their primary's).
        for i in 0..b.entries.len() {
            let node = b.entries[i].node.clone();
            if matches!(node, Node::HardLink(_)) {
                continue;
            }
            let uid = *b.rng.pick(&IDS);
            let gid = *b.rng.pick(&IDS);
            let mut xattrs: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            // Linux allows user.* on regular files and directories only.
            let user_ok = matches!(node, Node::Dir | Node::File(_));
            if user_ok && b.rng.chance(1, 4) {
                for k in 0..b.rng.range(1, 4) {
                    let len = b.rng.below(40) as usize;
                    xattrs.push((format!("user.k{k}").into_bytes(), random_bytes(&mut b.rng, len)));
                }
            } else if user_ok && b.rng.chance(1, 20) {
                // More than the inode's 200 bytes of inline xattrs: an xattr node.
                for k in 0..b.rng.range(4, 8) {
                    let len = b.rng.range(200, 400) as usize;
                    xattrs.push((format!("user.big{k}").into_bytes(), random_bytes(&mut b.rng, len)));
                }
            }
            let any_ok = matches!(node, Node::Dir | Node::File(_) | Node::Symlink(_));
            if trusted && any_ok && b.rng.chance(1, 10) {
                let len = b.rng.range(1, 64) as usize;
                xattrs.push((b"trusted.t".to_vec(), random_bytes(&mut b.rng, len)));
            }
            xattrs.sort();
            b.set(i, |e| {
                e.uid = uid;
                e.gid = gid;
                e.xattrs = xattrs;
            });
        }
        b.finish()
    }

    /// One regular file at the root.
    pub fn single_file(name: &[u8], data: FileData) -> Tree {
        let mut b = Builder::new(data.seed);
        b.file_with(name, data, 0o644);
        b.finish()
    }

    /// A stable fingerprint of the whole spec (cache key for built images).
    pub fn fingerprint(&self) -> u64 {
        // The entries as they printed before they had xattrs (so the images cached for
        // trees without any keep their keys), then the xattrs of those that have some.
        #[derive(Debug)]
        #[allow(dead_code)] // only printed
        struct Entry<'a> {
            path: &'a Vec<u8>,
            node: &'a Node,
            perm: u32,
            uid: u32,
            gid: u32,
            mtime: i64,
        }
        let plain: Vec<Entry> = self
            .entries
            .iter()
            .map(|e| Entry {
                path: &e.path,
                node: &e.node,
                perm: e.perm,
                uid: e.uid,
                gid: e.gid,
                mtime: e.mtime,
            })
            .collect();
        let mut h = fnv1a(FNV_OFFSET, format!("{plain:?}").as_bytes());
        for (i, e) in self.entries.iter().enumerate().filter(|(_, e)| !e.xattrs.is_empty()) {
            h = fnv1a(h, format!("{i}{:?}", e.xattrs).as_bytes());
        }
        h
    }

    /// Total bytes of regular file data.
    pub fn data_bytes(&self) -> u64 {
        self.entries
            .iter()
            .map(|e| if let Node::File(d) = &e.node { d.len } else { 0 })
            .sum()
    }

    /// Creates the tree under `root` (which must exist and be empty), then sets xattrs,
    /// owners (when running as root), modes and times, directories last and deepest
    /// first.
    pub fn write(&self, root: &Path) -> io::Result<()> {
        for e in &self.entries {
            let p = host_path(root, &e.path);
            let made = match &e.node {
                Node::Dir => fs::create_dir(&p),
                Node::File(d) => d.write_to(&p),
                Node::Symlink(t) => std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(t), &p),
                Node::HardLink(i) => fs::hard_link(host_path(root, &self.entries[*i].path), &p),
                Node::Fifo => run_tool(std::process::Command::new("mkfifo").arg(&p)),
                // A socket path longer than sun_path (108 bytes) cannot be bound; the
                // socket only shows that sload skips sockets, so do without it then.
                Node::Socket => std::os::unix::net::UnixListener::bind(&p).map(drop).or_else(|e| {
                    if p.as_os_str().len() >= 108 {
                        Ok(())
                    } else {
                        Err(e)
                    }
                }),
            };
            made.map_err(|err| io::Error::new(err.kind(), format!("{}: {err}", p.display())))?;
        }
        let root_user = is_root();
        for e in &self.entries {
            let p = host_path(root, &e.path);
            if matches!(e.node, Node::HardLink(_)) {
                continue;
            }
            // Before chown and chmod: a user may set user.* only on what it can write.
            for (name, value) in &e.xattrs {
                xattr::set(&p, std::ffi::OsStr::from_bytes(name), value).map_err(|err| {
                    io::Error::new(
                        err.kind(),
                        format!("{}: setxattr {}: {err}", p.display(), String::from_utf8_lossy(name)),
                    )
                })?;
            }
            if root_user {
                std::os::unix::fs::lchown(&p, Some(e.uid), Some(e.gid))?;
            }
            // chmod after chown: chown clears setuid/setgid.
            if !matches!(e.node, Node::Symlink(_)) {
                fs::set_permissions(&p, fs::Permissions::from_mode(e.perm))?;
            }
        }
        let mut dirs = Vec::new();
        for e in &self.entries {
            let p = host_path(root, &e.path);
            let t = filetime::FileTime::from_unix_time(e.mtime, 0);
            match e.node {
                Node::HardLink(_) => {}
                Node::Dir => dirs.push((e.path.iter().filter(|&&c| c == b'/').count(), p, t)),
                _ => filetime::set_symlink_file_times(&p, t, t)?,
            }
        }
        dirs.sort_by_key(|d| std::cmp::Reverse(d.0));
        for (_, p, t) in dirs {
            filetime::set_symlink_file_times(&p, t, t)?;
        }
        Ok(())
    }

    /// What an image built from this tree by sload.f2fs with `opts` must contain, by path
    /// relative to the root (the root itself is `""`). `root_owner` is the uid/gid that
    /// mkfs.f2fs gave the root directory (the user who ran it).
    pub fn expected(&self, opts: SloadOptions, root_owner: (u32, u32)) -> BTreeMap<Vec<u8>, Expected> {
        let mut names_of = vec![0u32; self.entries.len()];
        for (i, e) in self.entries.iter().enumerate() {
            match e.node {
                Node::File(_) => names_of[i] += 1,
                Node::HardLink(p) => names_of[p] += 1,
                _ => {}
            }
        }
        let mut out = BTreeMap::new();
        let root_label = opts.selinux_labels.then(|| label_for(b""));
        out.insert(
            Vec::new(),
            Expected {
                kind: ExpectedKind::Dir,
                perm: 0o755,
                nlink: 2,
                uid: root_owner.0,
                gid: root_owner.1,
                mtime: None,
                link_group: None,
                xattrs: root_label
                    .map(|l| vec![(SELINUX_XATTR.to_vec(), l.to_vec())])
                    .unwrap_or_default(),
            },
        );
        for (i, e) in self.entries.iter().enumerate() {
            let (primary, index) = match e.node {
                Node::HardLink(p) => (&self.entries[p], p),
                _ => (e, i),
            };
            let (kind, nlink, group) = match &primary.node {
                Node::Dir => (ExpectedKind::Dir, 2, None),
                Node::File(d) => (
                    ExpectedKind::File(d.clone()),
                    names_of[index],
                    (names_of[index] > 1).then_some(index),
                ),
                Node::Symlink(t) => (ExpectedKind::Symlink(t.clone()), 1, None),
                // sload.f2fs skips special files: no entry in the image.
                Node::Fifo | Node::Socket => continue,
                Node::HardLink(_) => unreachable!("hard link to a hard link"),
            };
            let (uid, gid) = if opts.preserve_owner {
                (primary.uid & 0xffff, primary.gid & 0xffff)
            } else {
                (0, 0)
            };
            let xattrs = if opts.selinux_labels {
                vec![(SELINUX_XATTR.to_vec(), label_for(&e.path).to_vec())]
            } else {
                Vec::new()
            };
            let perm = if matches!(kind, ExpectedKind::Symlink(_)) {
                0o777
            } else {
                primary.perm
            };
            let mtime = Some(i64::from(primary.mtime as u32));
            let exp = Expected {
                kind,
                perm,
                nlink,
                uid,
                gid,
                mtime,
                link_group: group,
                xattrs,
            };
            out.insert(e.path.clone(), exp);
        }
        // Directory link counts: 2 + subdirectories.
        let dirs: Vec<Vec<u8>> = out
            .iter()
            .filter(|(p, x)| !p.is_empty() && x.kind == ExpectedKind::Dir)
            .map(|(p, _)| p.clone())
            .collect();
        for d in dirs {
            let parent = parent_of(&d).to_vec();
            if let Some(x) = out.get_mut(&parent) {
                x.nlink += 1;
            }
        }
        out
    }
}

/// `dir/name`, or `name` at the root (`dir` empty).
fn join_rel(dir: &[u8], name: &[u8]) -> Vec<u8> {
    if dir.is_empty() {
        name.to_vec()
    } else {
        join(dir, name)
    }
}

/// A unique name for [`Tree::copy_mix`]: `prefix` and a counter, mostly with a short
/// random tail, sometimes long (up to 255 bytes) or non-ASCII.
fn mix_name(rng: &mut Rng, counter: &mut usize, prefix: &str) -> Vec<u8> {
    const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789._-";
    *counter += 1;
    let mut name = format!("{prefix}{:05}", *counter).into_bytes();
    match rng.below(20) {
        0 => {
            let len = rng.range(100, 256) as usize;
            while name.len() < len {
                name.push(*rng.pick(LETTERS));
            }
        }
        1 => name.extend_from_slice("-\u{e9}t\u{e9} \u{65e5}\u{672c}".as_bytes()),
        _ => {
            for _ in 0..rng.below(12) {
                name.push(*rng.pick(&LETTERS[..26]));
            }
        }
    }
    name
}

fn random_bytes(rng: &mut Rng, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    rng.fill(&mut v);
    v
}

/// The label sload gives `path` with [`FILE_CONTEXTS`].
fn label_for(path: &[u8]) -> &'static [u8] {
    if path == b"labeled" || path.starts_with(b"labeled/") {
        LABEL_SPECIAL
    } else {
        LABEL_DEFAULT
    }
}

/// The parent of a relative path (`""` for a top-level entry).
pub fn parent_of(path: &[u8]) -> &[u8] {
    match path.iter().rposition(|&c| c == b'/') {
        Some(i) => &path[..i],
        None => b"",
    }
}

/// `root` joined with a relative raw-byte path.
pub fn host_path(root: &Path, rel: &[u8]) -> PathBuf {
    if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(std::ffi::OsStr::from_bytes(rel))
    }
}

/// Whether this process runs as root (owner of /proc/self).
pub fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false)
}

/// The uid and gid this process runs as.
pub fn current_owner() -> (u32, u32) {
    use std::os::unix::fs::MetadataExt;
    fs::metadata("/proc/self").map(|m| (m.uid(), m.gid())).unwrap_or((0, 0))
}

fn run_tool(cmd: &mut std::process::Command) -> io::Result<()> {
    let out = cmd.output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )))
    }
}

/// Sizes around the inline-data limit. sload.f2fs 1.15 stores files of up to 3344 bytes
/// inline; the kernel's own limit is 3488 bytes (default images) or 3476 (extra_attr with
/// 12 bytes of extra attributes), so both neighbourhoods are covered.
fn add_inline_sizes(b: &mut Builder) {
    b.dir(b"inline");
    let sizes = [
        2, 100, 3300, 3343, 3344, 3345, 3346, 3400, 3475, 3476, 3477, 3487, 3488, 3489, 3500, 4095, 4096, 4097, 8191,
        8192, 8193,
    ];
    for s in sizes {
        b.file(format!("inline/s{s:05}").as_bytes(), s);
    }
}

/// Files whose last block is the last address of the inode, of the first and second
/// direct node, and the first ones of the first indirect node.
fn add_block_boundaries(b: &mut Builder, geo: Geometry) {
    b.dir(b"blocks");
    let a = geo.addrs_in_inode;
    let d = ADDRS_PER_BLOCK;
    let sizes = [
        (a - 1) * BLOCK,
        a * BLOCK - 1,
        a * BLOCK,
        a * BLOCK + 1,
        (a + d) * BLOCK - 1,
        (a + d) * BLOCK,
        (a + d) * BLOCK + 1,
        (a + 2 * d) * BLOCK,
        (a + 2 * d) * BLOCK + 1,
        (a + 3 * d + 1) * BLOCK + 100,
    ];
    let cap = geo.max_file_blocks.map_or(u64::MAX, |m| m * BLOCK);
    for s in sizes.into_iter().filter(|&s| s <= cap) {
        let blocks = s.div_ceil(BLOCK);
        b.file(format!("blocks/b{blocks:05}_{s}").as_bytes(), s);
    }
}

/// Files with holes on the host. sload.f2fs writes the holes as zero blocks, so on the
/// image these are plain files whose contents include runs of zeros.
fn add_holes(b: &mut Builder, geo: Geometry) {
    b.dir(b"holes");
    let cap = geo.max_file_blocks.unwrap_or(u64::MAX);
    let far = 1500.min(cap - 4);
    let seed = b.rng.next_u64();
    let middle = FileData {
        len: (far + 2) * BLOCK + 17,
        seed,
        holes: vec![(1, far), (far + 1, far + 2)],
    };
    b.file_with(b"holes/middle", middle, 0o644);
    let seed = b.rng.next_u64();
    b.file_with(
        b"holes/all_hole",
        FileData {
            len: 256 * BLOCK,
            seed,
            holes: vec![(0, 256)],
        },
        0o644,
    );
    let seed = b.rng.next_u64();
    b.file_with(
        b"holes/head",
        FileData {
            len: 103 * BLOCK,
            seed,
            holes: vec![(0, 100)],
        },
        0o644,
    );
}

/// A directory with `count` entries: several hash levels of dentry blocks, names of every
/// length (long ones take several dentry slots), a few subdirectories and symlinks.
fn add_big_dir(b: &mut Builder, count: usize) {
    b.dir(b"bigdir");
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
    let mut first_file = None;
    for i in 0..count {
        let mut name = format!("f{i:05}_").into_bytes();
        let extra = match b.rng.below(10) {
            0 => b.rng.range(100, 248),
            1..=3 => b.rng.range(9, 40),
            _ => b.rng.below(9),
        };
        for _ in 0..extra {
            name.push(*b.rng.pick(ALPHABET));
        }
        let path = join(b"bigdir", &name);
        match i % 1000 {
            500 => {
                b.dir(&path);
                b.file(&join(&path, b"inside"), 10);
            }
            900 => {
                let target = first_file.clone().unwrap_or_else(|| b"missing".to_vec());
                b.symlink(&path, &target);
            }
            _ => {
                let len = if b.rng.chance(1, 3) { 0 } else { b.rng.range(1, 300) };
                b.file(&path, len);
                if first_file.is_none() {
                    first_file = Some(name);
                }
            }
        }
    }
}

/// `levels` nested directories of 48-byte names (about 2 KiB of path), with files at
/// the middle and the bottom and a symlink from the bottom back to the top.
fn add_deep(b: &mut Builder, levels: usize) {
    let mut path = b"deep".to_vec();
    b.dir(&path);
    for i in 0..levels {
        let name = format!("level{i:02}_{}", "x".repeat(40));
        path = join(&path, name.as_bytes());
        b.dir(&path);
        if i == levels / 2 {
            b.file(&join(&path, b"middle"), 5000);
        }
    }
    b.file(&join(&path, b"leaf"), 12345);
    let mut up = b"../".repeat(levels + 1);
    up.extend_from_slice(b"one_byte");
    b.symlink(&join(&path, b"to_top"), &up);
}

/// Names at the 255-byte limit in ASCII and multi-byte UTF-8, a name that is not UTF-8,
/// and punctuation that shells and parsers trip on. (No newline in names: `ls` output is
/// line based.)
fn add_names(b: &mut Builder) {
    b.dir(b"names");
    let long_ascii = "a".repeat(255);
    let long_utf8_2 = format!("{}x", "\u{fc}".repeat(127)); // 2-byte chars: 255 bytes
    let long_cjk = "\u{65e5}\u{672c}\u{8a9e}".repeat(85 / 3) + "\u{540d}"; // 3-byte chars: 255 bytes
    let long_emoji = format!("{}abc", "\u{1f980}".repeat(63)); // 4-byte chars: 255 bytes
    let names: Vec<Vec<u8>> = vec![
        long_ascii.clone().into_bytes(),
        "b".repeat(254).into_bytes(),
        long_utf8_2.into_bytes(),
        long_cjk.into_bytes(),
        long_emoji.into_bytes(),
        b"not-utf8-\xff\xfe-\x80\xc3(".to_vec(),
        "caf\u{e9} na\u{ef}ve \u{0440}\u{0443}\u{0441}".as_bytes().to_vec(),
        b"with space".to_vec(),
        b"tab\there".to_vec(),
        b"-dash".to_vec(),
        b"...".to_vec(),
        b".hidden".to_vec(),
        b"back\\slash".to_vec(),
        b"glob*?[x]".to_vec(),
        b"quote'\"".to_vec(),
        b"trailing space ".to_vec(),
        b"x".to_vec(),
        b"UPPER".to_vec(),
    ];
    for (i, n) in names.iter().enumerate() {
        let len = 10 + i as u64 * 97;
        b.file(&join(b"names", n), len);
    }
    let long_dir = "c".repeat(255);
    for n in [&b"bad-dir-\xfe"[..], long_dir.as_bytes()] {
        let d = join(b"names", n);
        b.dir(&d);
        b.file(&join(&d, long_ascii.as_bytes()), 77);
    }
}

/// Relative, absolute, dangling, chained, looping and long symlinks (targets around
/// sload's inline limit, 3344 bytes, and up to 4095 bytes, the most sload reads).
///
/// No target of 3476..3700 bytes: sload.f2fs 1.15 stores a symlink whose target is at
/// least the kernel's inline limit (3488 default, 3476 with 12 bytes of extra attributes)
/// and shorter than about 3700 bytes with i_blocks one short (and, with inode_checksum, a
/// stale checksum), then repairs that with its built-in fsck and exits 1. Those images
/// are self-repaired, not what sload meant to write, so the tree avoids that range.
fn add_symlinks(b: &mut Builder) {
    b.dir(b"links");
    b.symlink(b"links/rel", b"../one_byte");
    b.symlink(b"links/rel_dir", b"../deep");
    b.symlink(b"links/abs_host", b"/etc/hostname");
    b.symlink(b"links/abs_image", b"/one_byte");
    b.symlink(b"links/dangling", b"no/such/target");
    b.symlink(b"links/chain1", b"chain2");
    b.symlink(b"links/chain2", b"../inline/s00100");
    b.symlink(b"links/loop", b"loop");
    b.symlink(b"links/utf8", "\u{fc}ber/\u{65e5}\u{672c}".as_bytes());
    for len in [1usize, 60, 3343, 3344, 3345, 3475, 3700, 4000, 4095] {
        let mut t = Vec::with_capacity(len);
        while t.len() < len {
            t.extend_from_slice(b"seg/");
        }
        t.truncate(len);
        b.symlink(format!("links/t{len:04}").as_bytes(), &t);
    }
}

/// Hard links: three names across three directories, a multi-block file with two names,
/// and an empty file with two names.
fn add_hard_links(b: &mut Builder) {
    b.dir(b"hard");
    b.dir(b"hard/sub");
    let a = b.file(b"hard/a", 333);
    b.hardlink(b"hard/sub/b", a);
    b.hardlink(b"names/hard_c", a);
    let big = b.file(b"hard/big", 40 * BLOCK + 3);
    b.hardlink(b"hard/sub/big_again", big);
    let empty = b.file(b"hard/empty1", 0);
    b.hardlink(b"hard/empty2", empty);
}

fn add_modes(b: &mut Builder) {
    b.dir(b"modes");
    for (name, perm) in [
        (&b"setuid"[..], 0o4755),
        (b"setgid", 0o2755),
        (b"setuid_setgid", 0o6711),
        (b"sticky_file", 0o1644),
        (b"none", 0o000),
        (b"read_only", 0o444),
        (b"exec_only", 0o111),
        (b"all", 0o777),
    ] {
        let i = b.file(&join(b"modes", name), 20);
        b.set(i, |e| e.perm = perm);
    }
    for (name, perm) in [
        (&b"sticky_dir"[..], 0o1777),
        (b"setgid_dir", 0o2775),
        (b"private_dir", 0o700),
        (b"locked_dir", 0o500),
    ] {
        let d = join(b"modes", name);
        let i = b.dir(&d);
        b.set(i, |e| e.perm = perm);
        b.file(&join(&d, b"inside"), 30);
    }
}

fn add_owners(b: &mut Builder) {
    b.dir(b"owners");
    for (uid, gid) in [(1000, 1000), (65534, 65534), (12345, 54321), (0, 100), (65535, 1)] {
        let i = b.file(format!("owners/u{uid}_g{gid}").as_bytes(), 15);
        b.set(i, |e| {
            e.uid = uid;
            e.gid = gid;
        });
    }
    let i = b.dir(b"owners/dir_4242");
    b.set(i, |e| {
        e.uid = 4242;
        e.gid = 4343;
    });
    let i = b.symlink(b"owners/dir_4242/link", b"..");
    b.set(i, |e| {
        e.uid = 777;
        e.gid = 888;
    });
}

/// Edge timestamps: the epoch, 2^31 - 1 and 2^31 (the 2038 boundary), 2100, and the
/// largest 32-bit value. (Negative and 33-bit times are not here: sload truncates them.)
fn add_times(b: &mut Builder) {
    let d = b.dir(b"times");
    b.set(d, |e| e.mtime = 2_147_483_648);
    for t in [0i64, 1, 59, 2_147_483_647, 2_147_483_648, 4_107_542_400, 4_294_967_295] {
        let i = b.file(format!("times/t{t}").as_bytes(), 8);
        b.set(i, |e| e.mtime = t);
    }
    let i = b.symlink(b"times/link_1", b"t1");
    b.set(i, |e| e.mtime = 1);
}

fn add_labeled(b: &mut Builder) {
    b.dir(b"labeled");
    b.file(b"labeled/a", 100);
    b.dir(b"labeled/sub");
    b.file(b"labeled/sub/b", 5000);
    b.symlink(b"labeled/link", b"a");
}

fn add_special(b: &mut Builder) {
    b.dir(b"special");
    b.push(b"special/fifo", Node::Fifo, 0o644);
    b.push(b"special/socket", Node::Socket, 0o755);
    b.file(b"special/regular", 3);
}

#[cfg(test)]
mod tests {
    use super::*;

    const GEO: Geometry = Geometry {
        addrs_in_inode: 873,
        max_file_blocks: None,
    };

    #[test]
    fn deterministic() {
        assert_eq!(Tree::full(1, GEO).fingerprint(), Tree::full(1, GEO).fingerprint());
        assert_ne!(Tree::full(1, GEO).fingerprint(), Tree::full(2, GEO).fingerprint());
    }

    #[test]
    fn paths_are_unique() {
        let t = Tree::full(3, GEO);
        let mut paths: Vec<&[u8]> = t.entries.iter().map(|e| e.path.as_slice()).collect();
        paths.sort();
        let n = paths.len();
        paths.dedup();
        assert_eq!(n, paths.len());
    }

    #[test]
    fn names_fit_f2fs_limits() {
        for e in Tree::full(3, GEO).entries {
            for c in e.path.split(|&c| c == b'/') {
                assert!(!c.is_empty() && c.len() <= 255, "{:?}", String::from_utf8_lossy(c));
            }
            assert!(e.path.len() < 3000);
        }
    }

    #[test]
    fn expected_counts_links() {
        let t = Tree::full(5, GEO);
        let x = t.expected(
            SloadOptions {
                preserve_owner: true,
                selinux_labels: false,
            },
            (0, 0),
        );
        assert_eq!(x[&b"hard/a"[..]].nlink, 3);
        assert_eq!(x[&b"names/hard_c"[..]].nlink, 3);
        assert_eq!(x[&b"hard/a"[..]].link_group, x[&b"hard/sub/b"[..]].link_group);
        assert_eq!(x[&b"hard"[..]].nlink, 3);
        assert!(!x.contains_key(&b"special/fifo"[..]));
        assert_eq!(x[&b"owners/u65535_g1"[..]].uid, 65535);
        assert_eq!(x[&b"modes/setuid"[..]].mode(), 0o104755);
    }

    #[test]
    fn file_data_checks() {
        let d = FileData {
            len: 3 * BLOCK + 5,
            seed: 9,
            holes: vec![(1, 2)],
        };
        let bytes = d.bytes();
        assert_eq!(bytes.len() as u64, d.len);
        assert!(bytes[BLOCK as usize..2 * BLOCK as usize].iter().all(|&c| c == 0));
        assert!(d.check_bytes(&bytes).is_ok());
        assert!(d.check_bytes(&bytes[..10]).is_err());
        let mut bad = bytes.clone();
        bad[7] ^= 1;
        assert!(d.check_bytes(&bad).unwrap_err().contains("byte 7"));
    }
}
