//! `uf2fs mkfs IMAGE SOURCE`: an F2FS image holding a directory tree, with AOSP's
//! metadata (fs_config, file_contexts) applied, files compressed as asked, and the same
//! bytes for the same tree and options.
//!
//! How: the fresh volume is made by `uf2fs_core::mkfs`, then filled through the core's
//! read-write API (create, mkdir, mknod, symlink, link, write, set_xattr, and the
//! compressed-cluster writer), the very code the mount uses, which fsck.f2fs and
//! Linux already accept; then checkpointed. Everything that can be wrong with the input
//! (the source, fs_config, file_contexts, the size) is found by the scan
//! ([`scan`]) before the image is touched; a failure while writing removes the image.
//!
//! Reproducible bytes: entries are created in bytewise name order, every inode's
//! times and generation are set at the end (to the source's mtime, or to `-T` /
//! `SOURCE_DATE_EPOCH`), the UUID and checkpoint version are derived from a hash of
//! the scanned tree and the options unless given, the superblock's version string is
//! fixed, and the file system's age clock does not follow the wall clock.

mod args;
pub mod contexts;
pub mod fs_config;
mod holes;
pub mod like;
pub mod sparse;

pub use args::PackArgs;

use crate::progress::Progress;
use anyhow::{bail, Context};
use contexts::FileContexts;
use fs_config::{capability_xattr, FsConfig};
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use uf2fs_core::compress::{encode_cluster, ClusterCodec, ClusterData, CompressedCluster};
use uf2fs_core::mkfs::layout::{compute, compute_ro, LayoutInput, RO_ACTIVE_LOGS};
use uf2fs_core::mkfs::Geometry;
use uf2fs_core::{Fs, Ino, SetAttr, Stamp, Timestamp};

/// What `uf2fs mkfs` with a source tree was asked for.
#[derive(Debug, Clone, Default)]
pub struct PackOptions {
    /// The directory whose contents become the volume's root.
    pub source: PathBuf,
    /// `--fs-config FILE`: owners, modes and capabilities by path.
    pub fs_config: Option<PathBuf>,
    /// `--fs-config-default`: paths fs_config does not list keep the tree's owner
    /// (with `--preserve-owner`, else 0:0) and mode, instead of being an error.
    pub fs_config_default: bool,
    /// `--file-contexts FILE`: SELinux labels.
    pub file_contexts: Option<PathBuf>,
    /// `--mount-point PATH`: where the volume is mounted (absolute; default `/`).
    pub mount_point: Vec<u8>,
    /// `--sload-root`: the root directory is not looked up in fs_config (sload's
    /// behaviour): it keeps mode 0755 and the root owner.
    pub sload_root: bool,
    /// `-T SECS` / `SOURCE_DATE_EPOCH`: every time of every inode.
    pub timestamp: Option<i64>,
    /// `--preserve-owner`: owners from the tree (else 0:0 before fs_config).
    pub preserve_owner: bool,
    /// `--xattrs`: copy the tree's extended attributes.
    pub xattrs: bool,
    /// `--compress ALGO`: compress regular files with these settings.
    pub compress: Option<ClusterCodec>,
    /// `--compress-extension`: only files with these extensions (after the last `.`).
    pub compress_ext: Vec<String>,
    /// `--nocompress-extension`: every file but these.
    pub nocompress_ext: Vec<String>,
    /// `--release-blocks`: compressed files keep no reserved blocks (read-only images).
    pub release: bool,
}

/// One entry of the scanned tree.
#[derive(Debug, Clone)]
struct Entry {
    /// Index of the parent directory in the scan (the root is its own parent).
    parent: usize,
    /// Name in the parent (empty for the root).
    name: Vec<u8>,
    /// Path inside the tree, starting with `/` (`/` for the root).
    rel: Vec<u8>,
    /// Host path.
    host: PathBuf,
    /// Full mode (type and permission bits) to give the inode.
    mode: u32,
    uid: u32,
    gid: u32,
    size: u64,
    rdev: (u32, u32),
    mtime: Timestamp,
    /// Symlink target.
    target: Vec<u8>,
    /// Extended attributes to set, sorted by name.
    xattrs: Vec<(Vec<u8>, Vec<u8>)>,
    /// For an inode with several links in the tree: the first entry with it.
    link_of: Option<usize>,
    /// Whether the file is stored compressed.
    compress: bool,
    /// Byte ranges of data (the rest are holes), for regular files.
    data: Vec<(u64, u64)>,
}

fn kind_name(mode: u32) -> &'static str {
    match mode & 0o170000 {
        0o040000 => "directory",
        0o100000 => "file",
        0o120000 => "symlink",
        _ => "special file",
    }
}

/// Data ranges of `file` (`size` bytes) by `SEEK_DATA`/`SEEK_HOLE`; one range when the
/// host cannot tell.
pub(crate) fn data_ranges(file: &File, size: u64) -> Vec<(u64, u64)> {
    use nix::unistd::{lseek, Whence};
    use std::os::fd::AsFd;
    let mut out = Vec::new();
    let mut pos = 0i64;
    let fd = file.as_fd();
    while (pos as u64) < size {
        let Ok(start) = lseek(fd, pos, Whence::SeekData) else {
            if out.is_empty() && pos == 0 {
                // ENXIO: no data at all; other errors: assume all data.
                if nix::errno::Errno::last() == nix::errno::Errno::ENXIO {
                    return out;
                }
                return vec![(0, size)];
            }
            break;
        };
        let end = lseek(fd, start, Whence::SeekHole).unwrap_or(size as i64);
        let end = (end as u64).min(size);
        if end > start as u64 {
            out.push((start as u64, end));
        }
        pos = end as i64;
    }
    out
}

fn ts(secs: i64, nsecs: i64) -> Timestamp {
    Timestamp {
        secs,
        nsecs: nsecs.clamp(0, 999_999_999) as u32,
    }
}

/// Whether a file named `name` is compressed under `opts`.
fn wants_compression(opts: &PackOptions, name: &[u8]) -> bool {
    if opts.compress.is_none() {
        return false;
    }
    let ext = name
        .iter()
        .rposition(|&b| b == b'.')
        .filter(|&i| i > 0)
        .map(|i| &name[i + 1..]);
    let listed = |list: &[String]| ext.is_some_and(|e| list.iter().any(|x| x.as_bytes() == e));
    if !opts.compress_ext.is_empty() {
        return listed(&opts.compress_ext);
    }
    !listed(&opts.nocompress_ext)
}

/// The scanned tree, with everything looked up.
struct Scan {
    entries: Vec<Entry>,
    /// Entries in creation order (preorder, children by name bytes).
    order: Vec<usize>,
}

/// An entry of the scan still to visit.
struct Pending {
    parent: usize,
    host: PathBuf,
    name: Vec<u8>,
    rel: Vec<u8>,
}

/// Walks the source and applies fs_config and file_contexts to every entry; any
/// problem is an error naming the path, before anything is written.
fn scan(opts: &PackOptions, fsc: Option<&FsConfig>, fc: Option<&FileContexts>) -> anyhow::Result<Scan> {
    use std::os::unix::ffi::OsStrExt;
    let meta = std::fs::symlink_metadata(&opts.source)
        .with_context(|| format!("cannot read the source {}", opts.source.display()))?;
    if !meta.is_dir() {
        bail!("the source {} is not a directory", opts.source.display());
    }
    let mut entries: Vec<Entry> = Vec::new();
    let mut order = Vec::new();
    let mut seen: HashMap<(u64, u64), usize> = HashMap::new();
    let mut stack = vec![Pending {
        parent: 0,
        host: opts.source.clone(),
        name: Vec::new(),
        rel: b"/".to_vec(),
    }];
    while let Some(Pending {
        parent,
        host,
        name,
        rel,
    }) = stack.pop()
    {
        let m = std::fs::symlink_metadata(&host).with_context(|| format!("cannot read {}", host.display()))?;
        let idx = entries.len();
        let shown = || String::from_utf8_lossy(&rel).into_owned();
        let ft = m.mode() & 0o170000;
        let mut e = Entry {
            parent: if idx == 0 { 0 } else { parent },
            name: name.clone(),
            rel: rel.clone(),
            host: host.clone(),
            mode: m.mode() & 0o177777,
            uid: if opts.preserve_owner { m.uid() } else { 0 },
            gid: if opts.preserve_owner { m.gid() } else { 0 },
            size: if ft == 0o100000 { m.size() } else { 0 },
            rdev: (
                nix::sys::stat::major(m.rdev()) as u32,
                nix::sys::stat::minor(m.rdev()) as u32,
            ),
            mtime: ts(m.mtime(), m.mtime_nsec()),
            target: Vec::new(),
            xattrs: Vec::new(),
            link_of: None,
            compress: false,
            data: Vec::new(),
        };
        if ft != 0o040000 && m.nlink() > 1 {
            if let Some(&first) = seen.get(&(m.dev(), m.ino())) {
                e.link_of = Some(first);
            } else {
                seen.insert((m.dev(), m.ino()), idx);
            }
        }
        if e.link_of.is_none() {
            if ft == 0o120000 {
                e.target = std::fs::read_link(&host)
                    .with_context(|| format!("cannot read the symlink {}", host.display()))?
                    .as_os_str()
                    .as_bytes()
                    .to_vec();
            }
            if ft == 0o100000 {
                let f = File::open(&host).with_context(|| format!("cannot open {}", host.display()))?;
                e.data = data_ranges(&f, e.size);
            }
            if opts.xattrs {
                let names =
                    xattr::list(&host).with_context(|| format!("cannot list the xattrs of {}", host.display()))?;
                for n in names {
                    if let Some(v) = xattr::get(&host, &n)
                        .with_context(|| format!("cannot read xattr {:?} of {}", n, host.display()))?
                    {
                        e.xattrs.push((n.as_bytes().to_vec(), v));
                    }
                }
            }
            // fs_config: keyed by the mount point and the path inside the tree.
            let mut full = opts.mount_point.clone();
            if full != b"/" {
                full.extend_from_slice(if rel == b"/" { b"" } else { &rel[..] });
            } else {
                full = rel.clone();
            }
            let is_root = idx == 0;
            if let Some(c) = fsc {
                if !(is_root && opts.sload_root) {
                    match c.lookup(&full) {
                        Some(x) => {
                            e.uid = x.uid;
                            e.gid = x.gid;
                            e.mode = (e.mode & 0o170000) | x.mode;
                            if x.caps != 0 {
                                if ft != 0o100000 {
                                    bail!("fs_config gives capabilities to {} {}, which is not a regular file", kind_name(e.mode), shown());
                                }
                                e.xattrs.retain(|(n, _)| n != b"security.capability");
                                e.xattrs.push((b"security.capability".to_vec(), capability_xattr(x.caps)));
                            }
                        }
                        None if opts.fs_config_default => {}
                        None => bail!(
                            "{} is not in the fs_config file (looked up as '{}'; pass --fs-config-default to keep the tree's mode)",
                            shown(),
                            String::from_utf8_lossy(fs_config::key(&full))
                        ),
                    }
                }
            }
            if is_root && opts.sload_root {
                e.mode = 0o040755;
            }
            if let Some(c) = fc {
                if let Some(label) = c.lookup(&full, e.mode) {
                    // Stored as sload stores it: the label's bytes, no terminating
                    // NUL (f2fs-tools' inode_set_selinux passes strlen).
                    let v = label.to_vec();
                    e.xattrs.retain(|(n, _)| n != b"security.selinux");
                    e.xattrs.push((b"security.selinux".to_vec(), v));
                }
            }
            e.xattrs.sort();
            e.compress = ft == 0o100000 && wants_compression(opts, &name);
        }
        entries.push(e);
        order.push(idx);
        if ft == 0o040000 {
            let mut kids: Vec<(Vec<u8>, PathBuf)> = Vec::new();
            for d in std::fs::read_dir(&host).with_context(|| format!("cannot list {}", host.display()))? {
                let d = d.with_context(|| format!("cannot list {}", host.display()))?;
                kids.push((d.file_name().as_bytes().to_vec(), d.path()));
            }
            kids.sort();
            for (n, p) in kids.into_iter().rev() {
                let mut r = rel.clone();
                if r != b"/" {
                    r.push(b'/');
                }
                r.extend_from_slice(&n);
                stack.push(Pending {
                    parent: idx,
                    host: p,
                    name: n,
                    rel: r,
                });
            }
        }
    }
    Ok(Scan { entries, order })
}

/// A 64-bit FNV-1a hash (fixed, so that derived values do not change between builds).
fn fnv(seed: u64, data: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed;
    for &b in data {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// What identifies the image: the scanned tree's names, kinds, sizes, owners, modes,
/// times and xattrs, and the options (not the file contents, which would cost a read).
fn identity(scan: &Scan, opts: &PackOptions) -> Vec<u8> {
    let mut v = Vec::new();
    for e in &scan.entries {
        v.extend_from_slice(&e.rel);
        v.push(0);
        for x in [
            e.mode as u64,
            e.uid as u64,
            e.gid as u64,
            e.size,
            e.mtime.secs as u64,
            e.mtime.nsecs as u64,
        ] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        for (n, val) in &e.xattrs {
            v.extend_from_slice(n);
            v.extend_from_slice(val);
        }
    }
    v.extend_from_slice(format!("{:?}", opts.compress).as_bytes());
    v.extend_from_slice(&opts.mount_point);
    v.extend_from_slice(&opts.timestamp.unwrap_or(0).to_le_bytes());
    v
}

/// UUID and checkpoint version derived from the identity.
pub fn derived_ids(id: &[u8]) -> ([u8; 16], u64) {
    let a = fnv(1, id);
    let b = fnv(2, id);
    let mut u = [0u8; 16];
    u[..8].copy_from_slice(&a.to_le_bytes());
    u[8..].copy_from_slice(&b.to_le_bytes());
    // A version 4 (random-looking) UUID, as mkfs.f2fs makes.
    u[6] = (u[6] & 0x0f) | 0x40;
    u[8] = (u[8] & 0x3f) | 0x80;
    let cp_ver = (fnv(3, id) & 0x7fff_ffff) | 1;
    (u, cp_ver)
}

/// Blocks of `geo`'s size the tree needs at most (data, nodes, dentries, xattr
/// nodes), counting compressed files (clusters of `cluster_blocks`) as if they did not
/// compress, with the holes the packer writes ([`holes::stored_ranges`]).
fn blocks_needed(scan: &Scan, geo: Geometry, ro: bool, cluster_blocks: Option<u64>) -> u64 {
    let bs = geo.block_size() as u64;
    // Addresses an inode keeps for data with room for extra attributes and inline
    // xattrs (900 of 923 with 4 KiB blocks), a direct node's, and dentry slots a block.
    let (per_inode, per_node) = (geo.addrs_per_inode() as u64 - 23, geo.addrs_per_block() as u64);
    let slots_per_block = geo.dentries_per_block() as u64;
    let mut blocks = 0u64;
    let mut dir_slots: HashMap<usize, u64> = HashMap::new();
    for e in &scan.entries {
        if e.parent != 0 || !e.name.is_empty() {
            *dir_slots.entry(e.parent).or_default() += (e.name.len() as u64).div_ceil(8).max(1);
        }
        if e.link_of.is_some() {
            continue;
        }
        blocks += 1; // the inode
        let xattr_bytes: usize = e.xattrs.iter().map(|(n, v)| n.len() + v.len() + 8).sum();
        if xattr_bytes > 150 {
            blocks += 1;
        }
        let data = match e.mode & 0o170000 {
            // Compressed files keep fewer holes (holes::stored_ranges): on ro volumes
            // none up to a direct node past the last data, elsewhere a cluster for
            // each direct node of holes.
            0o100000 if e.compress && cluster_blocks.is_some() => {
                let last = e.data.last().map_or(0, |&(_, z)| z.div_ceil(bs));
                let widen = per_node.max(per_inode + 23);
                if ro {
                    (last + widen).min(e.size.div_ceil(bs))
                } else {
                    let nodes = e.size.div_ceil(bs).div_ceil(per_node - 256) + 1;
                    let data = e.data.iter().map(|(a, b)| b.div_ceil(bs) - a / bs).sum::<u64>();
                    data + nodes * cluster_blocks.unwrap_or(0)
                }
            }
            0o100000 if e.size > 3000 => e.data.iter().map(|(a, b)| b.div_ceil(bs) - a / bs).sum::<u64>(),
            0o120000 if e.target.len() > 3000 => 1,
            _ => 0,
        };
        blocks += data;
        if data > per_inode {
            // Direct nodes, and one indirect node per that many of them.
            let dnodes = (data - per_inode).div_ceil(per_node) + 1;
            blocks += dnodes + dnodes.div_ceil(per_node) + 1;
        }
    }
    for slots in dir_slots.values() {
        // Hashed directories leave room: twice the dentry blocks, plus a bucket pair
        // per level.
        if *slots > 10 {
            blocks += 2 * slots.div_ceil(slots_per_block) + 4;
        }
    }
    blocks
}

/// The smallest volume (whole segments: a multiple of 2 MiB, or 8 MiB with 16 KiB
/// blocks; with `ro` whole segments after the two superblock blocks) whose user blocks
/// of `geo`'s size hold `blocks` plus the open logs' segments and `margin` percent more.
fn shrink_size(blocks: u64, margin_pct: u64, ro: bool, geo: Geometry) -> anyhow::Result<u64> {
    let seg = geo.block_size() as u64 * 512;
    let (base, logs) = if ro {
        (2 * geo.block_size() as u64, RO_ACTIVE_LOGS as u64 + 2)
    } else {
        (0, 8)
    };
    let want = blocks + blocks * margin_pct / 100 + logs * 512;
    let fits = |bytes: u64| -> bool {
        let input = LayoutInput {
            bytes,
            sector_size: 512,
            segs_per_sec: 1,
            secs_per_zone: 1,
            overprovision_pct: None,
            geometry: geo,
        };
        let layout = if ro { compute_ro(&input) } else { compute(&input) };
        layout.is_ok_and(|l| l.user_block_count() >= want)
    };
    let fits = |bytes: u64| fits(bytes + base);
    let (mut lo, mut hi) = (seg * 8, seg * 16);
    while !fits(hi) {
        lo = hi;
        hi *= 2;
        if hi > 1 << 50 {
            bail!("no F2FS volume holds this tree");
        }
    }
    while hi - lo > seg {
        let mid = (lo + hi) / 2 / seg * seg;
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi + base)
}

/// What [`fill`] made.
#[derive(Debug, Clone)]
pub struct PackReport {
    /// Inodes made (the root included).
    pub inodes: u64,
    /// Regular files stored compressed.
    pub compressed_files: u64,
    /// Clusters stored compressed, and blocks they saved.
    pub compressed_clusters: u64,
}

/// Everything [`fill`] needs besides the options: the loaded metadata and the scan.
pub struct Inputs {
    fsc: Option<FsConfig>,
    fc: Option<FileContexts>,
    scan: Scan,
    /// Blocks per cluster of compressed files (`--compress`).
    cluster_blocks: Option<u64>,
}

/// Loads fs_config and file_contexts and scans the tree (no image touched).
pub fn prepare(opts: &PackOptions) -> anyhow::Result<Inputs> {
    let fsc = opts.fs_config.as_deref().map(FsConfig::load).transpose()?;
    let fc = opts.file_contexts.as_deref().map(FileContexts::load).transpose()?;
    let scan = scan(opts, fsc.as_ref(), fc.as_ref())?;
    Ok(Inputs {
        fsc,
        fc,
        scan,
        cluster_blocks: opts.compress.map(|c| c.cluster_blocks() as u64),
    })
}

impl Inputs {
    /// Bytes of the smallest image of `geo`'s blocks that holds the tree, plus
    /// `margin_pct` percent. With `ro`, the `ro` feature's layout.
    pub fn shrink_size(&self, margin_pct: u64, ro: bool, geo: Geometry) -> anyhow::Result<u64> {
        shrink_size(
            blocks_needed(&self.scan, geo, ro, self.cluster_blocks),
            margin_pct,
            ro,
            geo,
        )
    }

    /// The UUID and checkpoint version this tree and options give.
    pub fn ids(&self, opts: &PackOptions) -> ([u8; 16], u64) {
        let _ = (&self.fsc, &self.fc);
        derived_ids(&identity(&self.scan, opts))
    }

    /// The root directory's owner (for mkfs).
    pub fn root_owner(&self) -> (u32, u32) {
        let r = &self.scan.entries[0];
        (r.uid, r.gid)
    }

    /// The time the image's own inodes get when `-T` is not given: the root's mtime.
    pub fn root_time(&self) -> i64 {
        self.scan.entries[0].mtime.secs
    }

    /// What [`fill`] will do, for its progress: inodes to make, and bytes of file data
    /// to write (holes not counted).
    pub fn work(&self) -> (u64, u64) {
        let inodes = self.scan.entries.iter().filter(|e| e.link_of.is_none()).count() as u64;
        let bytes = self
            .scan
            .entries
            .iter()
            .filter(|e| e.link_of.is_none())
            .flat_map(|e| e.data.iter().map(|&(a, z)| z - a))
            .sum();
        (inodes, bytes)
    }
}

/// Writes the scanned tree into the freshly made volume `fs` (see the module notes)
/// and checkpoints it, counting inodes and data bytes in `progress`.
pub fn fill(fs: Fs, opts: &PackOptions, inputs: &Inputs, progress: &Progress) -> anyhow::Result<PackReport> {
    fs.set_simulated_clock(Some(u64::MAX))?;
    // Inode times while building are fixed too (nodes written before the final
    // stamps, then left behind as stale copies, must not carry the wall clock).
    struct Unpin;
    impl Drop for Unpin {
        fn drop(&mut self) {
            uf2fs_core::pin_now(None);
        }
    }
    let t = opts.timestamp.unwrap_or_else(|| inputs.root_time());
    uf2fs_core::pin_now(Some((t.max(0) as u64, 0)));
    let _unpin = Unpin;
    let scan = &inputs.scan;
    let mut ino_of: Vec<Ino> = vec![0; scan.entries.len()];
    let mut report = PackReport {
        inodes: 0,
        compressed_files: 0,
        compressed_clusters: 0,
    };
    let root = fs.root();
    // One read buffer for every file's data (allocating and zeroing a fresh 1 MiB
    // per file was a sixth of the packer's CPU time on 22,000 files).
    let mut buf = Vec::new();
    for &i in &scan.order {
        let e = &scan.entries[i];
        let shown = || String::from_utf8_lossy(&e.rel).into_owned();
        let ctx = || format!("cannot write {} {}", kind_name(e.mode), shown());
        let ino = if i == 0 {
            fs.setattr(
                root,
                &SetAttr {
                    mode: Some(e.mode & 0o7777),
                    uid: Some(e.uid),
                    gid: Some(e.gid),
                    ..Default::default()
                },
            )
            .with_context(ctx)?;
            root
        } else {
            let dir = ino_of[e.parent];
            if let Some(first) = e.link_of {
                ino_of[i] = ino_of[first];
                fs.link(ino_of[first], dir, &e.name).with_context(ctx)?;
                continue;
            }
            let st = match e.mode & 0o170000 {
                0o040000 => fs.mkdir(dir, &e.name, e.mode & 0o7777, e.uid, e.gid),
                0o100000 => fs.create(dir, &e.name, e.mode, e.uid, e.gid),
                0o120000 => fs.symlink(dir, &e.name, &e.target, e.uid, e.gid),
                _ => fs.mknod(dir, &e.name, e.mode, e.rdev, e.uid, e.gid),
            }
            .with_context(ctx)?;
            st.ino
        };
        ino_of[i] = ino;
        report.inodes += 1;
        progress.add_file();
        for (n, v) in &e.xattrs {
            fs.set_xattr(ino, n, v, 0)
                .with_context(|| format!("cannot set xattr {} of {}", String::from_utf8_lossy(n), shown()))?;
        }
        if e.mode & 0o170000 == 0o100000 {
            let clusters = write_data(&fs, ino, e, opts, progress, &mut buf).with_context(ctx)?;
            if let Some(c) = clusters {
                report.compressed_files += 1;
                report.compressed_clusters += c;
            }
        }
        // Modes with bits create() may have masked (setuid and the like).
        if i != 0 && e.mode & 0o170000 != 0o120000 {
            let st = fs.stat(ino)?;
            if st.mode & 0o7777 != e.mode & 0o7777 {
                fs.setattr(
                    ino,
                    &SetAttr {
                        mode: Some(e.mode & 0o7777),
                        ..Default::default()
                    },
                )
                .with_context(ctx)?;
            }
        }
    }
    // Times and generations last, children before parents.
    let mut stamped = vec![false; scan.entries.len()];
    for &i in scan.order.iter().rev() {
        let e = &scan.entries[i];
        let first = e.link_of.unwrap_or(i);
        if stamped[first] {
            continue;
        }
        stamped[first] = true;
        let owner = &scan.entries[first];
        let t = opts.timestamp.map_or(owner.mtime, |s| ts(s, 0));
        let s = Stamp {
            atime: t,
            mtime: t,
            ctime: t,
            crtime: t,
            generation: 0,
        };
        fs.set_stamp(ino_of[first], &s)?;
    }
    // The quota files (features quota, project_quota): the usage of the whole tree.
    fs.write_quota_files().context("cannot write the quota files")?;
    fs.unmount().context("cannot write the checkpoint")?;
    Ok(report)
}

/// Writes the data of regular file `ino` from `e`'s host file: holes stay holes;
/// compressed files a cluster at a time. `buf` is scratch space kept between files.
/// Returns the clusters compressed, for a compressed file.
fn write_data(
    fs: &Fs,
    ino: Ino,
    e: &Entry,
    opts: &PackOptions,
    progress: &Progress,
    buf: &mut Vec<u8>,
) -> anyhow::Result<Option<u64>> {
    if e.size == 0 {
        return Ok(None);
    }
    let f = File::open(&e.host).with_context(|| format!("cannot open {}", e.host.display()))?;
    let codec = opts
        .compress
        .map(|c| c.with_block_size(fs.superblock().block_size()))
        .filter(|c| e.compress && e.size >= c.cluster_bytes() as u64);
    if let Some(codec) = codec {
        fs.set_compression(ino, &codec, opts.release)?;
        let ro = fs.superblock().has(uf2fs_core::mkfs::parse_features("ro")?);
        let cluster = codec.cluster_blocks() as u64;
        let bs = codec.block_size() as u64;
        let data = holes::stored_ranges(&e.data, e.size, fs.tree_shape(ino)?, cluster, bs, ro);
        let compressed = write_compressed(fs, ino, e, &data, &f, &codec, progress)?;
        if ro {
            if let Some(m) = fs.linux_ro_misread(ino)? {
                bail!("uf2fs bug: Linux would misread this compressed file on the ro volume ({m})");
            }
        }
        return Ok(Some(compressed));
    }
    const CHUNK: u64 = 1 << 20;
    // Each read fills the bytes it hands on: what an earlier file left is never seen.
    if buf.len() < CHUNK as usize {
        buf.resize(CHUNK as usize, 0);
    }
    for &(a, z) in &e.data {
        let mut pos = a;
        while pos < z {
            let n = (z - pos).min(CHUNK) as usize;
            read_exact_at(&f, &mut buf[..n], pos, &e.host)?;
            let done = fs.write(ino, pos, &buf[..n])?;
            if done < n {
                bail!("the volume is full");
            }
            progress.add_bytes(n as u64);
            pos += n as u64;
        }
    }
    if e.data.last().is_none_or(|&(_, z)| z < e.size) {
        fs.truncate(ino, e.size)?;
    }
    Ok(None)
}

/// One cluster read from the host: its index, bytes, holes, and its encoding (when
/// it is whole, has no holes and compression saves a block).
struct ReadCluster {
    index: u64,
    data: Vec<u8>,
    holes: Vec<bool>,
    encoded: Option<CompressedCluster>,
}

/// Clusters read and encoded together (then written in order).
const BATCH_CLUSTERS: usize = 64;

/// Writes compressed file `ino` from `f`, whose bytes outside the ranges `data` are
/// written as holes: clusters in batches, each batch encoded on every core
/// ([`std::thread::available_parallelism`]), then placed in order. Returns the
/// clusters stored compressed.
fn write_compressed(
    fs: &Fs,
    ino: Ino,
    e: &Entry,
    data: &[(u64, u64)],
    f: &File,
    codec: &ClusterCodec,
    progress: &Progress,
) -> anyhow::Result<u64> {
    let cb = codec.cluster_bytes() as u64;
    let bs = codec.block_size();
    let clusters = e.size.div_ceil(cb);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut compressed = 0;
    let mut wrote_last = false;
    let mut k = 0;
    while k < clusters {
        // Read a batch (clusters that are all holes are skipped).
        let mut batch: Vec<ReadCluster> = Vec::new();
        while k < clusters && batch.len() < BATCH_CLUSTERS {
            let start = k * cb;
            let len = (e.size - start).min(cb) as usize;
            let holes: Vec<bool> = (0..len.div_ceil(bs) as u64)
                .map(|b| {
                    let (lo, hi) = (start + b * bs as u64, (start + (b + 1) * bs as u64).min(e.size));
                    !data.iter().any(|&(a, z)| a < hi && z > lo)
                })
                .collect();
            if !holes.iter().all(|&h| h) {
                let mut data = vec![0u8; len];
                read_exact_at(f, &mut data, start, &e.host)?;
                for (b, _) in holes.iter().enumerate().filter(|(_, &h)| h) {
                    data[b * bs..((b + 1) * bs).min(len)].fill(0);
                }
                batch.push(ReadCluster {
                    index: k,
                    data,
                    holes,
                    encoded: None,
                });
            }
            k += 1;
        }
        // Encode it on every core.
        let per = batch.len().div_ceil(threads).max(1);
        std::thread::scope(|scope| -> anyhow::Result<()> {
            let jobs: Vec<_> = batch
                .chunks_mut(per)
                .map(|part| {
                    scope.spawn(move || -> uf2fs_core::Result<()> {
                        for c in part {
                            if c.data.len() as u64 == cb && !c.holes.iter().any(|&h| h) {
                                c.encoded = encode_cluster(codec, &c.data)?;
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            for j in jobs {
                j.join().map_err(|_| anyhow::anyhow!("a compression thread failed"))??;
            }
            Ok(())
        })?;
        // Place it in order.
        for c in &batch {
            let end = c.index * cb + c.data.len() as u64;
            match &c.encoded {
                Some(enc) => {
                    fs.write_cluster_data(ino, c.index, ClusterData::Compressed(enc), end)?;
                    compressed += 1;
                }
                None => {
                    let list: Vec<Option<&[u8]>> = c
                        .data
                        .chunks(bs)
                        .zip(&c.holes)
                        .map(|(b, &h)| (!h).then_some(b))
                        .collect();
                    let padded;
                    let list = if c.data.len() % bs != 0 {
                        // The last block is short: pad it to a whole block.
                        let mut last = c.data[c.data.len() / bs * bs..].to_vec();
                        last.resize(bs, 0);
                        padded = last;
                        let mut l = list;
                        if let Some(Some(x)) = l.last_mut() {
                            *x = &padded;
                        }
                        l
                    } else {
                        list
                    };
                    fs.write_cluster_data(ino, c.index, ClusterData::Plain(&list), end)?;
                }
            }
            wrote_last = c.index + 1 == clusters;
            // The cluster's data bytes, holes left out (as the total counts them).
            let start = c.index * cb;
            let data: u64 = e
                .data
                .iter()
                .map(|&(a, z)| z.min(start + c.data.len() as u64).saturating_sub(a.max(start)))
                .sum();
            progress.add_bytes(data);
        }
    }
    if !wrote_last {
        fs.write_cluster_data(ino, clusters - 1, ClusterData::Plain(&[]), e.size)?;
    }
    Ok(compressed)
}

fn read_exact_at(f: &File, buf: &mut [u8], at: u64, host: &Path) -> anyhow::Result<()> {
    f.read_exact_at(buf, at)
        .with_context(|| format!("cannot read {} (did it change during the build?)", host.display()))
}

/// Reads `SOURCE_DATE_EPOCH` when set (a number of seconds), as reproducible builds
/// define it.
pub fn source_date_epoch() -> anyhow::Result<Option<i64>> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) if !v.is_empty() => {
            Ok(Some(v.trim().parse().with_context(|| {
                format!("SOURCE_DATE_EPOCH '{v}' is not a number of seconds")
            })?))
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_lists_choose_files_as_sload_does() {
        let mut o = PackOptions {
            compress: Some(ClusterCodec::parse("lz4", 2, false).unwrap()),
            ..Default::default()
        };
        assert!(wants_compression(&o, b"a.so"));
        o.compress_ext = vec!["so".into()];
        assert!(wants_compression(&o, b"lib.so"));
        assert!(!wants_compression(&o, b"lib.apk"));
        assert!(!wants_compression(&o, b".so"), "a leading dot is no extension");
        o.compress_ext.clear();
        o.nocompress_ext = vec!["apk".into()];
        assert!(!wants_compression(&o, b"x.apk"));
        assert!(wants_compression(&o, b"x"));
    }

    #[test]
    fn ids_follow_the_input() {
        let (u1, c1) = derived_ids(b"a");
        let (u2, c2) = derived_ids(b"b");
        assert_ne!((u1, c1), (u2, c2));
        assert_eq!(derived_ids(b"a"), (u1, c1));
        assert_eq!(u1[6] >> 4, 4);
        assert_eq!(c1 & 1, 1);
    }

    #[test]
    fn shrink_sizes_grow_with_the_tree() {
        let a = shrink_size(1000, 0, false, Geometry::DEFAULT).unwrap();
        let b = shrink_size(100_000, 0, false, Geometry::DEFAULT).unwrap();
        assert!(a < b && a % (2 << 20) == 0);
        let c = shrink_size(1000, 0, false, Geometry::BLOCK_16K).unwrap();
        assert!(c % (8 << 20) == 0);
    }
}
