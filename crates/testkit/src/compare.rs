//! Compares a host directory tree (what `uf2fs extract` wrote, or a read-only FUSE
//! mount) with what the image must contain.

use crate::tree::{host_path, Expected, ExpectedKind};
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Which attributes to hold the tree to.
#[derive(Debug, Clone, Copy)]
pub struct CompareOptions {
    /// Compare uid and gid (extract only keeps owners when run as root).
    pub owners: bool,
    /// Compare the root directory's own attributes (a mount shows the image's root; an
    /// extract destination is the host's directory).
    pub root: bool,
    /// Compare atime with the expected time (sload sets atime = mtime).
    pub atime: bool,
    /// Compare ctime with the expected time (only a mount can show the image's ctime).
    pub ctime: bool,
    /// Compare extended attributes.
    pub xattrs: bool,
    /// Compare file contents.
    pub contents: bool,
}

/// Extended attributes as (full name, value), sorted by name.
pub type XattrList = Vec<(Vec<u8>, Vec<u8>)>;

/// What was found at one path.
struct Found {
    meta: fs::Metadata,
    target: Option<Vec<u8>>,
    xattrs: Result<XattrList, String>,
}

fn show(path: &[u8]) -> String {
    if path.is_empty() {
        "/".to_string()
    } else {
        format!("/{}", String::from_utf8_lossy(path))
    }
}

/// Reads the extended attributes of `p` without following symlinks, sorted by name.
pub fn read_xattrs(p: &Path) -> Result<XattrList, String> {
    let names = xattr::list(p).map_err(|e| format!("listxattr: {e}"))?;
    let mut out = Vec::new();
    for n in names {
        let v = xattr::get(p, &n)
            .map_err(|e| format!("getxattr {n:?}: {e}"))?
            .unwrap_or_default();
        out.push((n.as_bytes().to_vec(), v));
    }
    out.sort();
    Ok(out)
}

/// Walks `root` without following symlinks: every entry is `lstat`ed before its
/// directory is read, so reading does not disturb the atimes being checked.
fn scan(root: &Path, want_xattrs: bool, problems: &mut Vec<String>) -> BTreeMap<Vec<u8>, Found> {
    let mut found = BTreeMap::new();
    let mut stack: Vec<Vec<u8>> = vec![Vec::new()];
    while let Some(rel) = stack.pop() {
        let p = host_path(root, &rel);
        let meta = match fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) => {
                problems.push(format!("{}: lstat failed: {e}", show(&rel)));
                continue;
            }
        };
        let target = if meta.file_type().is_symlink() {
            match fs::read_link(&p) {
                Ok(t) => Some(t.as_os_str().as_bytes().to_vec()),
                Err(e) => {
                    problems.push(format!("{}: readlink failed: {e}", show(&rel)));
                    None
                }
            }
        } else {
            None
        };
        let xattrs = if want_xattrs { read_xattrs(&p) } else { Ok(Vec::new()) };
        let is_dir = meta.is_dir();
        found.insert(rel.clone(), Found { meta, target, xattrs });
        if is_dir {
            match fs::read_dir(&p) {
                Ok(rd) => {
                    for ent in rd {
                        match ent {
                            Ok(ent) => {
                                let mut child = rel.clone();
                                if !child.is_empty() {
                                    child.push(b'/');
                                }
                                child.extend_from_slice(ent.file_name().as_bytes());
                                stack.push(child);
                            }
                            Err(e) => problems.push(format!("{}: readdir failed: {e}", show(&rel))),
                        }
                    }
                }
                Err(e) => problems.push(format!("{}: opendir failed: {e}", show(&rel))),
            }
        }
    }
    found
}

/// Every difference between the tree at `root` and `expected`, one message each (empty
/// when they agree).
pub fn compare_tree(root: &Path, expected: &BTreeMap<Vec<u8>, Expected>, opts: CompareOptions) -> Vec<String> {
    let mut problems = Vec::new();
    let found = scan(root, opts.xattrs, &mut problems);
    for path in found.keys() {
        if !expected.contains_key(path) {
            problems.push(format!("{}: present but not expected", show(path)));
        }
    }
    let mut groups: HashMap<usize, (u64, u64, Vec<u8>)> = HashMap::new();
    let mut inodes: HashMap<(u64, u64), (Option<usize>, Vec<u8>)> = HashMap::new();
    for (path, want) in expected {
        let Some(got) = found.get(path) else {
            problems.push(format!("{}: missing", show(path)));
            continue;
        };
        if path.is_empty() && !opts.root {
            continue;
        }
        compare_entry(path, want, got, opts, &mut problems);
        if !got.meta.is_dir() {
            let key = (got.meta.dev(), got.meta.ino());
            if let Some(g) = want.link_group {
                match groups.get(&g) {
                    Some((dev, ino, first)) if (*dev, *ino) != key => problems.push(format!(
                        "{}: should be a hard link of {} (inode {ino}), but is inode {}",
                        show(path),
                        show(first),
                        key.1
                    )),
                    Some(_) => {}
                    None => {
                        groups.insert(g, (key.0, key.1, path.clone()));
                    }
                }
            }
            match inodes.get(&key) {
                Some((g, other)) if g.is_none() || *g != want.link_group => problems.push(format!(
                    "{}: shares inode {} with {}, but they are not hard links",
                    show(path),
                    key.1,
                    show(other)
                )),
                Some(_) => {}
                None => {
                    inodes.insert(key, (want.link_group, path.clone()));
                }
            }
        }
    }
    if opts.contents {
        for (path, want) in expected {
            if let (ExpectedKind::File(data), Some(got)) = (&want.kind, found.get(path)) {
                if !got.meta.file_type().is_file() {
                    continue;
                }
                let p = host_path(root, path);
                match fs::File::open(&p) {
                    Ok(f) => {
                        if let Err(e) = data.check_reader(std::io::BufReader::with_capacity(1 << 20, f)) {
                            problems.push(format!("{}: {e}", show(path)));
                        }
                    }
                    Err(e) => problems.push(format!("{}: open failed: {e}", show(path))),
                }
            }
        }
    }
    problems
}

fn compare_entry(path: &[u8], want: &Expected, got: &Found, opts: CompareOptions, problems: &mut Vec<String>) {
    let name = show(path);
    let m = &got.meta;
    let mut differ = |what: &str, w: String, g: String| {
        if w != g {
            problems.push(format!("{name}: {what}: expected {w}, got {g}"));
        }
    };
    differ("mode", format!("{:o}", want.mode()), format!("{:o}", m.mode()));
    if let Some(size) = want.size() {
        differ("size", size.to_string(), m.size().to_string());
    }
    differ("link count", want.nlink.to_string(), m.nlink().to_string());
    if opts.owners {
        differ(
            "owner",
            format!("{}:{}", want.uid, want.gid),
            format!("{}:{}", m.uid(), m.gid()),
        );
    }
    if let Some(t) = want.mtime {
        differ(
            "mtime",
            format!("{t}.000000000"),
            format!("{}.{:09}", m.mtime(), m.mtime_nsec()),
        );
        if opts.atime {
            differ(
                "atime",
                format!("{t}.000000000"),
                format!("{}.{:09}", m.atime(), m.atime_nsec()),
            );
        }
        if opts.ctime {
            differ(
                "ctime",
                format!("{t}.000000000"),
                format!("{}.{:09}", m.ctime(), m.ctime_nsec()),
            );
        }
    }
    if let ExpectedKind::Symlink(t) = &want.kind {
        let got_t = got.target.clone().unwrap_or_default();
        if &got_t != t {
            problems.push(format!(
                "{name}: symlink target: expected {} bytes {:?}, got {} bytes {:?}",
                t.len(),
                String::from_utf8_lossy(&t[..t.len().min(80)]),
                got_t.len(),
                String::from_utf8_lossy(&got_t[..got_t.len().min(80)])
            ));
        }
    }
    if opts.xattrs {
        match &got.xattrs {
            Ok(x) if *x == want.xattrs => {}
            Ok(x) => problems.push(format!(
                "{name}: xattrs: expected {}, got {}",
                show_xattrs(&want.xattrs),
                show_xattrs(x)
            )),
            Err(e) => problems.push(format!("{name}: xattrs: {e}")),
        }
    }
}

fn show_xattrs(x: &[(Vec<u8>, Vec<u8>)]) -> String {
    let items: Vec<String> = x
        .iter()
        .map(|(n, v)| format!("{}={:?}", String::from_utf8_lossy(n), String::from_utf8_lossy(v)))
        .collect();
    format!("[{}]", items.join(", "))
}

/// Formats a problem list for an assertion message (the first 40, then a count).
pub fn report(what: &str, problems: &[String]) -> String {
    let mut s = format!("{what}: {} problem(s)\n", problems.len());
    for p in problems.iter().take(40) {
        s.push_str("  ");
        s.push_str(p);
        s.push('\n');
    }
    if problems.len() > 40 {
        s.push_str(&format!("  ... and {} more\n", problems.len() - 40));
    }
    s
}

/// Whether `dir`'s file system lets this process set a `security.*` xattr on a regular
/// file and on a symlink (decides whether extract can be held to keeping sload's labels).
pub fn host_keeps_security_xattrs(dir: &Path) -> bool {
    let probe = dir.join(".uf2fs-xattr-probe");
    let link = dir.join(".uf2fs-xattr-probe-link");
    let _ = fs::remove_file(&probe);
    let _ = fs::remove_file(&link);
    let ok = fs::write(&probe, b"x").is_ok()
        && std::os::unix::fs::symlink("x", &link).is_ok()
        && xattr::set(&probe, "security.selinux", b"u:object_r:uf2fs_probe:s0").is_ok()
        && xattr::set(&link, "security.selinux", b"u:object_r:uf2fs_probe:s0").is_ok()
        && xattr::get(&probe, "security.selinux").ok().flatten().as_deref()
            == Some(b"u:object_r:uf2fs_probe:s0".as_slice());
    let _ = fs::remove_file(&probe);
    let _ = fs::remove_file(&link);
    ok
}
