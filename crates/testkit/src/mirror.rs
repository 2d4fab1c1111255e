//! The same change made to two trees: a mount under test and a host directory that
//! serves as its reference (held together afterwards by
//! [`compare_dirs`](crate::compare::compare_dirs)).
//!
//! Every operation runs on the reference first, then on the mount; both must succeed,
//! or both fail with the same errno (a divergence is an `Err` naming both results).
//! Times are kept equal too: a file whose contents change gets the same seeded time
//! (with nanoseconds) on both sides at once, and directories whose entries change are
//! remembered until [`Mirror::settle_times`] gives them the same times at the end.

use crate::rng::Rng;
use crate::tree::host_path;
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs;
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Two trees changed in step.
#[derive(Debug)]
pub struct Mirror {
    reference: PathBuf,
    mount: PathBuf,
    /// Directories whose mtime the changes moved (relative paths).
    touched: BTreeSet<Vec<u8>>,
    rng: Rng,
    /// Operations that succeeded on both sides.
    pub succeeded: usize,
    /// Operations that failed on both sides with the same errno.
    pub failed_alike: usize,
}

/// The parent of a relative path (`""` at the top).
fn parent(rel: &[u8]) -> Vec<u8> {
    crate::tree::parent_of(rel).to_vec()
}

fn show(rel: &[u8]) -> String {
    format!("/{}", String::from_utf8_lossy(rel))
}

fn outcome(r: &io::Result<()>) -> String {
    match r {
        Ok(()) => "ok".to_string(),
        Err(e) => format!("{e}"),
    }
}

impl Mirror {
    /// Changes `mount` and `reference` in step; `seed` drives the times it sets.
    pub fn new(reference: &Path, mount: &Path, seed: u64) -> Mirror {
        Mirror {
            reference: reference.to_path_buf(),
            mount: mount.to_path_buf(),
            touched: BTreeSet::new(),
            rng: Rng::new(seed),
            succeeded: 0,
            failed_alike: 0,
        }
    }

    /// The reference tree's root.
    pub fn reference(&self) -> &Path {
        &self.reference
    }

    /// The mount's root.
    pub fn mount(&self) -> &Path {
        &self.mount
    }

    /// Runs `op` on the reference root, then on the mount's; `Ok(true)` when both
    /// succeeded, `Ok(false)` when both failed with the same errno. `dirs` are the
    /// directories whose entries the operation changes.
    pub fn apply(&mut self, what: &str, dirs: &[&[u8]], op: impl Fn(&Path) -> io::Result<()>) -> Result<bool, String> {
        let want = op(&self.reference);
        let got = op(&self.mount);
        let agreed = match (&want, &got) {
            (Ok(()), Ok(())) => true,
            (Err(a), Err(b)) if a.raw_os_error().is_some() && a.raw_os_error() == b.raw_os_error() => false,
            _ => {
                return Err(format!(
                    "{what}: the reference says {}, the mount {}",
                    outcome(&want),
                    outcome(&got)
                ))
            }
        };
        if agreed {
            self.succeeded += 1;
            self.touched.extend(dirs.iter().map(|d| d.to_vec()));
        } else {
            self.failed_alike += 1;
        }
        Ok(agreed)
    }

    /// Gives `rel` the same new (seeded) atime and mtime on both sides; the times of a
    /// file whose contents just changed.
    pub fn stamp(&mut self, rel: &[u8]) -> Result<bool, String> {
        let t = self.random_time();
        let a = self.random_time();
        self.apply(&format!("set the times of {}", show(rel)), &[], |root| {
            filetime::set_symlink_file_times(host_path(root, rel), a, t)
        })
    }

    fn random_time(&mut self) -> filetime::FileTime {
        let secs = self.rng.range(946_684_800, 1_900_000_000) as i64;
        filetime::FileTime::from_unix_time(secs, self.rng.below(1_000_000_000) as u32)
    }

    /// Writes `data` at `offset` of the existing file `rel` (past its end leaves a hole).
    pub fn write_at(&mut self, rel: &[u8], offset: u64, data: &[u8]) -> Result<bool, String> {
        let what = format!("write {} bytes at {offset} of {}", data.len(), show(rel));
        let done = self.apply(&what, &[], |root| {
            let mut f = fs::OpenOptions::new().write(true).open(host_path(root, rel))?;
            f.seek(SeekFrom::Start(offset))?;
            f.write_all(data)
        })?;
        self.stamp_if(done, rel)
    }

    /// Appends `data` to the existing file `rel`.
    pub fn append(&mut self, rel: &[u8], data: &[u8]) -> Result<bool, String> {
        let what = format!("append {} bytes to {}", data.len(), show(rel));
        let done = self.apply(&what, &[], |root| {
            fs::OpenOptions::new()
                .append(true)
                .open(host_path(root, rel))?
                .write_all(data)
        })?;
        self.stamp_if(done, rel)
    }

    /// Truncates or extends `rel` to `len` bytes.
    pub fn set_len(&mut self, rel: &[u8], len: u64) -> Result<bool, String> {
        let what = format!("truncate {} to {len}", show(rel));
        let done = self.apply(&what, &[], |root| {
            fs::OpenOptions::new()
                .write(true)
                .open(host_path(root, rel))?
                .set_len(len)
        })?;
        self.stamp_if(done, rel)
    }

    /// Creates (or replaces the contents of) `rel` with `data` and mode `perm`.
    pub fn create(&mut self, rel: &[u8], data: &[u8], perm: u32) -> Result<bool, String> {
        let what = format!("create {} ({} bytes)", show(rel), data.len());
        let dir = parent(rel);
        let done = self.apply(&what, &[&dir], |root| {
            let p = host_path(root, rel);
            fs::write(&p, data)?;
            fs::set_permissions(&p, fs::Permissions::from_mode(perm))
        })?;
        self.stamp_if(done, rel)
    }

    /// Makes the directory `rel`.
    pub fn mkdir(&mut self, rel: &[u8]) -> Result<bool, String> {
        let dir = parent(rel);
        let done = self.apply(&format!("mkdir {}", show(rel)), &[&dir], |root| {
            fs::create_dir(host_path(root, rel))
        })?;
        if done {
            self.touched.insert(rel.to_vec());
        }
        Ok(done)
    }

    /// Makes the symlink `rel` pointing at `target`.
    pub fn symlink(&mut self, target: &[u8], rel: &[u8]) -> Result<bool, String> {
        let dir = parent(rel);
        let what = format!("symlink {} -> {}", show(rel), String::from_utf8_lossy(target));
        let done = self.apply(&what, &[&dir], |root| {
            std::os::unix::fs::symlink(OsStr::from_bytes(target), host_path(root, rel))
        })?;
        self.stamp_if(done, rel)
    }

    /// Gives the file `existing` the further name `rel`.
    pub fn hard_link(&mut self, existing: &[u8], rel: &[u8]) -> Result<bool, String> {
        let dir = parent(rel);
        let what = format!("link {} to {}", show(rel), show(existing));
        self.apply(&what, &[&dir], |root| {
            fs::hard_link(host_path(root, existing), host_path(root, rel))
        })
    }

    /// Removes the name `rel` (not a directory).
    pub fn remove_file(&mut self, rel: &[u8]) -> Result<bool, String> {
        let dir = parent(rel);
        self.apply(&format!("unlink {}", show(rel)), &[&dir], |root| {
            fs::remove_file(host_path(root, rel))
        })
    }

    /// Removes the directory `rel` and everything under it.
    pub fn remove_tree(&mut self, rel: &[u8]) -> Result<bool, String> {
        let dir = parent(rel);
        self.apply(&format!("rm -r {}", show(rel)), &[&dir], |root| {
            fs::remove_dir_all(host_path(root, rel))
        })
    }

    /// `rename(from, to)`.
    pub fn rename(&mut self, from: &[u8], to: &[u8]) -> Result<bool, String> {
        self.rename_with(from, to, false, |a, b| fs::rename(a, b))
    }

    /// A rename done by `op(from, to)` (e.g. `renameat2` with flags); `exchange` says
    /// that the two names swap places (RENAME_EXCHANGE) rather than `from` moving.
    pub fn rename_with(
        &mut self,
        from: &[u8],
        to: &[u8],
        exchange: bool,
        op: impl Fn(&Path, &Path) -> io::Result<()>,
    ) -> Result<bool, String> {
        let (pf, pt) = (parent(from), parent(to));
        let what = format!(
            "{} {} {}",
            if exchange { "exchange" } else { "rename" },
            show(from),
            show(to)
        );
        // A directory moving to another parent rewrites its "..": F2FS then changes
        // its mtime, ext4 does not. Both names count as changed directories.
        let done = self.apply(&what, &[&pf, &pt, from, to], |root| {
            op(&host_path(root, from), &host_path(root, to))
        })?;
        if done {
            // What was under one name is now under the other.
            let moved = |p: &Vec<u8>, a: &[u8], b: &[u8]| -> Option<Vec<u8>> {
                let rest = p.strip_prefix(a)?;
                (rest.is_empty() || rest[0] == b'/').then(|| [b, rest].concat())
            };
            let before = std::mem::take(&mut self.touched);
            for p in before {
                let q = moved(&p, from, to)
                    .or_else(|| if exchange { moved(&p, to, from) } else { None })
                    .unwrap_or(p);
                self.touched.insert(q);
            }
            self.touched.extend([pf, pt, from.to_vec(), to.to_vec()]);
        }
        Ok(done)
    }

    /// Sets (or replaces) the xattr `name` of `rel` (a symlink itself, not its target).
    pub fn set_xattr(&mut self, rel: &[u8], name: &[u8], value: &[u8]) -> Result<bool, String> {
        let what = format!(
            "setxattr {} {} ({} bytes)",
            show(rel),
            String::from_utf8_lossy(name),
            value.len()
        );
        self.apply(&what, &[], |root| {
            xattr::set(host_path(root, rel), OsStr::from_bytes(name), value)
        })
    }

    /// Removes the xattr `name` of `rel`.
    pub fn remove_xattr(&mut self, rel: &[u8], name: &[u8]) -> Result<bool, String> {
        let what = format!("removexattr {} {}", show(rel), String::from_utf8_lossy(name));
        self.apply(&what, &[], |root| {
            xattr::remove(host_path(root, rel), OsStr::from_bytes(name))
        })
    }

    /// `chmod` (follows a symlink, as chmod(2) does).
    pub fn chmod(&mut self, rel: &[u8], perm: u32) -> Result<bool, String> {
        self.apply(&format!("chmod {perm:o} {}", show(rel)), &[], |root| {
            fs::set_permissions(host_path(root, rel), fs::Permissions::from_mode(perm))
        })
    }

    /// `lchown`.
    pub fn chown(&mut self, rel: &[u8], uid: u32, gid: u32) -> Result<bool, String> {
        self.apply(&format!("chown {uid}:{gid} {}", show(rel)), &[], |root| {
            std::os::unix::fs::lchown(host_path(root, rel), Some(uid), Some(gid))
        })
    }

    fn stamp_if(&mut self, done: bool, rel: &[u8]) -> Result<bool, String> {
        if done {
            self.stamp(rel)?;
        }
        Ok(done)
    }

    /// Gives every directory whose entries changed the same seeded times on both
    /// sides (those gone from both are skipped). Call after the last change.
    pub fn settle_times(&mut self) -> Result<(), String> {
        for rel in std::mem::take(&mut self.touched) {
            let on_ref = fs::symlink_metadata(host_path(&self.reference, &rel)).is_ok();
            let on_mount = fs::symlink_metadata(host_path(&self.mount, &rel)).is_ok();
            match (on_ref, on_mount) {
                (false, false) => {}
                (true, true) => {
                    self.stamp(&rel)?;
                }
                _ => {
                    return Err(format!(
                        "{}: exists on {} only",
                        show(&rel),
                        if on_ref { "the reference" } else { "the mount" }
                    ))
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{compare_dirs, CompareOptions};

    const OPTS: CompareOptions = CompareOptions {
        owners: false,
        root: false,
        atime: false,
        ctime: false,
        xattrs: false,
        contents: true,
    };

    #[test]
    fn two_host_trees_stay_equal() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        fs::create_dir(&a).unwrap();
        fs::create_dir(&b).unwrap();
        let mut m = Mirror::new(&a, &b, 1);
        assert_eq!(m.mkdir(b"d"), Ok(true));
        assert_eq!(m.mkdir(b"d/e"), Ok(true));
        assert_eq!(m.create(b"d/e/f", b"hello", 0o640), Ok(true));
        assert_eq!(m.write_at(b"d/e/f", 10_000, b"far"), Ok(true));
        assert_eq!(m.hard_link(b"d/e/f", b"g"), Ok(true));
        assert_eq!(m.symlink(b"d/e/f", b"s"), Ok(true));
        assert_eq!(m.rename(b"d", b"d2"), Ok(true));
        assert_eq!(m.set_len(b"g", 7), Ok(true));
        assert_eq!(m.append(b"d2/e/f", b"!"), Ok(true));
        // The same failure on both sides.
        assert_eq!(m.remove_file(b"missing"), Ok(false));
        assert_eq!(m.mkdir(b"d2"), Ok(false));
        assert_eq!((m.succeeded, m.failed_alike), (14, 2));
        m.settle_times().unwrap();
        let problems = compare_dirs(&a, &b, OPTS);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(fs::read(b.join("g")).unwrap(), b"hello\0\0!");
    }

    #[test]
    fn a_divergence_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        fs::create_dir(&a).unwrap();
        fs::create_dir(&b).unwrap();
        fs::write(b.join("only_here"), b"").unwrap();
        let mut m = Mirror::new(&a, &b, 1);
        let err = m.remove_file(b"only_here").unwrap_err();
        assert!(
            err.contains("unlink /only_here") && err.contains("the mount ok"),
            "{err}"
        );
    }
}
