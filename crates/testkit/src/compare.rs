//! Compares a host directory tree (what `uf2fs extract` wrote, or a read-only FUSE
//! mount) with what the image must contain.

use crate::tree::{host_path, Expected, ExpectedKind};
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
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

/// Every difference between two trees on the host: `got` (a mount, say) held to `want`
/// (a host copy that went through the same changes), one message each (empty when they
/// agree). Compared: the names; type and mode; size (not of directories, whose size is
/// the file system's business); link count; which names are hard links of each other;
/// mtime to the nanosecond; symlink targets; device numbers; and, as `opts` says,
/// owners, atime, the root's own attributes, xattrs and file contents. ctime is never
/// compared: no copy can set it.
pub fn compare_dirs(want: &Path, got: &Path, opts: CompareOptions) -> Vec<String> {
    let mut problems = Vec::new();
    let mut want_problems = Vec::new();
    let w = scan(want, opts.xattrs, &mut want_problems);
    problems.extend(want_problems.into_iter().map(|p| format!("(reference tree) {p}")));
    let g = scan(got, opts.xattrs, &mut problems);
    for path in g.keys().filter(|p| !w.contains_key(*p)) {
        problems.push(format!("{}: present but not expected", show(path)));
    }
    let want_links = link_groups(&w);
    let got_links = link_groups(&g);
    for (path, a) in &w {
        let Some(b) = g.get(path) else {
            problems.push(format!("{}: missing", show(path)));
            continue;
        };
        if path.is_empty() && !opts.root {
            continue;
        }
        compare_found(path, a, b, opts, &mut problems);
        let (wl, gl) = (want_links.get(path), got_links.get(path));
        // Once per group of names: at its first name.
        if wl != gl && wl.is_none_or(|names| names.first() == Some(path)) {
            let list = |l: Option<&Vec<Vec<u8>>>| {
                let names: Vec<String> = l.map_or(vec![show(path)], |l| l.iter().map(|p| show(p)).collect());
                names.join(", ")
            };
            problems.push(format!(
                "{}: hard links: expected one inode for [{}], got one for [{}]",
                show(path),
                list(wl),
                list(gl)
            ));
        }
    }
    if opts.contents {
        for (path, a) in &w {
            match g.get(path) {
                Some(b) if a.meta.file_type().is_file() && b.meta.file_type().is_file() => {
                    if let Err(e) = same_contents(&host_path(want, path), &host_path(got, path)) {
                        problems.push(format!("{}: {e}", show(path)));
                    }
                }
                _ => {}
            }
        }
    }
    problems
}

/// For every name of an inode with several names (directories aside): all its names,
/// sorted.
fn link_groups(found: &BTreeMap<Vec<u8>, Found>) -> HashMap<Vec<u8>, Vec<Vec<u8>>> {
    let mut by_inode: HashMap<(u64, u64), Vec<Vec<u8>>> = HashMap::new();
    for (path, f) in found {
        if !f.meta.is_dir() {
            by_inode
                .entry((f.meta.dev(), f.meta.ino()))
                .or_default()
                .push(path.clone());
        }
    }
    let mut out = HashMap::new();
    for names in by_inode.into_values().filter(|n| n.len() > 1) {
        for n in &names {
            out.insert(n.clone(), names.clone());
        }
    }
    out
}

fn compare_found(path: &[u8], want: &Found, got: &Found, opts: CompareOptions, problems: &mut Vec<String>) {
    let name = show(path);
    let (w, g) = (&want.meta, &got.meta);
    let mut differ = |what: &str, a: String, b: String| {
        if a != b {
            problems.push(format!("{name}: {what}: expected {a}, got {b}"));
        }
    };
    differ("mode", format!("{:o}", w.mode()), format!("{:o}", g.mode()));
    if !w.is_dir() {
        differ("size", w.size().to_string(), g.size().to_string());
    }
    differ("link count", w.nlink().to_string(), g.nlink().to_string());
    let time = |s: i64, ns: i64| format!("{s}.{ns:09}");
    differ(
        "mtime",
        time(w.mtime(), w.mtime_nsec()),
        time(g.mtime(), g.mtime_nsec()),
    );
    if opts.atime {
        differ(
            "atime",
            time(w.atime(), w.atime_nsec()),
            time(g.atime(), g.atime_nsec()),
        );
    }
    if opts.owners {
        differ(
            "owner",
            format!("{}:{}", w.uid(), w.gid()),
            format!("{}:{}", g.uid(), g.gid()),
        );
    }
    let ft = w.file_type();
    if ft.is_block_device() || ft.is_char_device() {
        differ("device", format!("{:#x}", w.rdev()), format!("{:#x}", g.rdev()));
    }
    if want.target != got.target {
        let t = |t: &Option<Vec<u8>>| match t {
            Some(t) => format!("{} bytes {:?}", t.len(), String::from_utf8_lossy(&t[..t.len().min(80)])),
            None => "none".to_string(),
        };
        problems.push(format!(
            "{name}: symlink target: expected {}, got {}",
            t(&want.target),
            t(&got.target)
        ));
    }
    if opts.xattrs {
        match (&want.xattrs, &got.xattrs) {
            (Ok(a), Ok(b)) if a == b => {}
            (Ok(a), Ok(b)) => problems.push(format!(
                "{name}: xattrs: expected {}, got {}",
                show_xattrs(a),
                show_xattrs(b)
            )),
            (Err(e), _) => problems.push(format!("{name}: (reference tree) xattrs: {e}")),
            (_, Err(e)) => problems.push(format!("{name}: xattrs: {e}")),
        }
    }
}

/// Compares two files' bytes; `Err` names the first differing offset.
fn same_contents(want: &Path, got: &Path) -> Result<(), String> {
    let open = |p: &Path| fs::File::open(p).map_err(|e| format!("open {}: {e}", p.display()));
    let (mut a, mut b) = (open(want)?, open(got)?);
    let (mut abuf, mut bbuf) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    let mut offset = 0u64;
    loop {
        let n = read_fill(&mut a, &mut abuf).map_err(|e| format!("reading the reference at {offset}: {e}"))?;
        let m = read_fill(&mut b, &mut bbuf).map_err(|e| format!("read error at {offset}: {e}"))?;
        if abuf[..n.min(m)] != bbuf[..n.min(m)] {
            let at = (0..n.min(m)).find(|&i| abuf[i] != bbuf[i]).unwrap_or(0);
            return Err(format!(
                "contents differ at byte {}: expected {:#04x}, got {:#04x}",
                offset + at as u64,
                abuf[at],
                bbuf[at]
            ));
        }
        if n != m {
            return Err(format!(
                "length differs: one copy ends at byte {}, the other goes on to {} or more",
                offset + n.min(m) as u64,
                offset + n.max(m) as u64
            ));
        }
        if n == 0 {
            return Ok(());
        }
        offset += n as u64;
    }
}

fn read_fill(r: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};
    use std::process::Command;

    const ALL: CompareOptions = CompareOptions {
        owners: true,
        root: false,
        atime: false,
        ctime: false,
        xattrs: true,
        contents: true,
    };

    /// A small tree at `root`/a and its `cp -a` copy at `root`/b.
    fn pair(root: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
        let a = root.join("a");
        fs::create_dir_all(a.join("sub")).unwrap();
        fs::write(a.join("file"), vec![7u8; 10_000]).unwrap();
        fs::write(a.join("sub/other"), b"other").unwrap();
        fs::hard_link(a.join("file"), a.join("sub/link")).unwrap();
        symlink("file", a.join("sym")).unwrap();
        xattr::set(a.join("file"), "user.x", b"value").unwrap();
        let b = root.join("b");
        let st = Command::new("cp").arg("-a").arg(&a).arg(&b).status().unwrap();
        assert!(st.success());
        (a, b)
    }

    fn problems_after(change: impl FnOnce(&Path)) -> Vec<String> {
        let tmp = tempfile::tempdir().unwrap();
        if xattr::set(tmp.path(), "user.probe", b"1").is_err() {
            // No user xattrs on this temporary directory's file system: compare without.
            eprintln!("skipping: no user xattrs in {}", tmp.path().display());
            return vec!["skipped".into()];
        }
        let (a, b) = pair(tmp.path());
        change(&b);
        compare_dirs(&a, &b, ALL)
    }

    #[test]
    fn a_copy_agrees() {
        let p = problems_after(|_| {});
        assert!(p.is_empty() || p == ["skipped"], "{p:?}");
    }

    fn assert_one(p: &[String], want: &str) {
        if p == ["skipped"] {
            return;
        }
        assert!(
            p.len() == 1 && p[0].contains(want),
            "expected one problem with {want:?}: {p:?}"
        );
    }

    #[test]
    fn each_difference_is_reported() {
        assert_one(
            &problems_after(|b| {
                let mut d = fs::read(b.join("sub/other")).unwrap();
                d[3] ^= 1;
                let t = fs::metadata(b.join("sub/other")).unwrap().modified().unwrap();
                fs::write(b.join("sub/other"), d).unwrap();
                fs::File::options()
                    .write(true)
                    .open(b.join("sub/other"))
                    .unwrap()
                    .set_modified(t)
                    .unwrap();
            }),
            "/sub/other: contents differ at byte 3",
        );
        assert_one(
            &problems_after(|b| fs::set_permissions(b.join("sub/other"), fs::Permissions::from_mode(0o600)).unwrap()),
            "mode",
        );
        assert_one(
            &problems_after(|b| {
                let f = fs::File::options().write(true).open(b.join("sub/other")).unwrap();
                let t = f.metadata().unwrap().modified().unwrap();
                f.set_modified(t + std::time::Duration::from_nanos(1)).unwrap();
            }),
            "/sub/other: mtime",
        );
        assert_one(
            &problems_after(|b| xattr::set(b.join("sub/other"), "user.y", b"").unwrap()),
            "xattrs",
        );
        let p = problems_after(|b| {
            // sub/link becomes a copy instead of a second name.
            let t = fs::metadata(b.join("sub")).unwrap().modified().unwrap();
            fs::remove_file(b.join("sub/link")).unwrap();
            fs::copy(b.join("file"), b.join("sub/link")).unwrap();
            let f = fs::File::options().write(true).open(b.join("sub/link")).unwrap();
            f.set_modified(fs::metadata(b.join("file")).unwrap().modified().unwrap())
                .unwrap();
            xattr::set(b.join("sub/link"), "user.x", b"value").unwrap();
            filetime::set_file_mtime(b.join("sub"), filetime::FileTime::from_system_time(t)).unwrap();
        });
        if p != ["skipped"] {
            assert!(p.iter().any(|x| x.contains("hard links")), "{p:?}");
            assert!(p.iter().any(|x| x.contains("link count")), "{p:?}");
        }
        let p = problems_after(|b| {
            fs::remove_file(b.join("sym")).unwrap();
            symlink("fil", b.join("sym")).unwrap();
        });
        if p != ["skipped"] {
            assert!(p.iter().any(|x| x.contains("/sym: symlink target")), "{p:?}");
        }
        let p = problems_after(|b| fs::write(b.join("extra"), b"").unwrap());
        if p != ["skipped"] {
            assert!(
                p.iter().any(|x| x.contains("/extra: present but not expected")),
                "{p:?}"
            );
        }
    }
}
