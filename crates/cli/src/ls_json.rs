//! `uf2fs ls --json`: the listing as one JSON object, `{"entries": [...]}`, every entry
//! with its full path and its inode's attributes (the fields: docs/json.md). `-a` adds
//! `.` and `..`; `-R` adds every subdirectory's entries after its own, depth first in name
//! order, as `ls -R` lists them. A symlink named on the command line is described as
//! itself, unless written with a trailing slash (as `ls -l`).

use crate::json::{self, bytes_if_lossy};
use crate::ls::LsOptions;
use crate::names::{base_name, escape_bytes, image_path, join_path};
use anyhow::{bail, Context};
use serde::Serialize;
use std::collections::HashSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use uf2fs_core::{FileKind, Fs, Ino, Timestamp};

/// The document.
#[derive(Debug, Serialize)]
struct Listing {
    entries: Vec<Entry>,
}

/// One listed name and its inode.
#[derive(Debug, Serialize)]
struct Entry {
    path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    path_bytes: Option<Vec<u8>>,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    name_bytes: Option<Vec<u8>>,
    ino: Ino,
    #[serde(rename = "type")]
    kind: &'static str,
    /// Permission bits with setuid, setgid and sticky (`st_mode & 07777`).
    mode: u32,
    nlink: u32,
    uid: u32,
    gid: u32,
    size: u64,
    /// 512-byte sectors in use, as `st_blocks`.
    blocks: u64,
    atime: i64,
    atime_nsec: u32,
    mtime: i64,
    mtime_nsec: u32,
    ctime: i64,
    ctime_nsec: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    crtime: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    crtime_nsec: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rdev_major: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rdev_minor: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target_bytes: Option<Vec<u8>>,
    /// F2FS inode flags (`i_flags`).
    flags: u32,
}

/// The `type` field's value.
fn kind_name(kind: FileKind) -> &'static str {
    match kind {
        FileKind::File => "file",
        FileKind::Dir => "dir",
        FileKind::Symlink => "symlink",
        FileKind::CharDev => "chardev",
        FileKind::BlockDev => "blockdev",
        FileKind::Fifo => "fifo",
        FileKind::Socket => "socket",
    }
}

/// Prints the listing of `path` (default: the root) as JSON.
pub fn run(fs: &Fs, path: Option<&OsStr>, opts: &LsOptions) -> anyhow::Result<()> {
    let shown = path.map_or_else(|| b"/".to_vec(), |p| p.as_bytes().to_vec());
    let path = image_path(path.unwrap_or(OsStr::new("/")));
    let ino = fs.resolve(&path, path.ends_with(b"/"))?;
    let stat = fs.stat(ino)?;
    let mut entries = Vec::new();
    if stat.kind != FileKind::Dir {
        entries.push(entry(fs, &path, base_name(&path), ino).with_context(|| escape_bytes(&shown))?);
    } else {
        let mut stack = vec![(ino, path)];
        let mut listed: HashSet<Ino> = HashSet::new();
        while let Some((dir, dir_path)) = stack.pop() {
            if !listed.insert(dir) {
                bail!(
                    "corrupt image: directory {} (inode {dir}) was already listed",
                    escape_bytes(&dir_path)
                );
            }
            let first = entries.len();
            list_dir(fs, dir, &dir_path, opts, &mut entries).with_context(|| escape_bytes(&dir_path))?;
            if opts.recursive {
                let subdirs: Vec<(Ino, Vec<u8>)> = entries[first..]
                    .iter()
                    .filter(|e| e.kind == "dir" && e.name != "." && e.name != "..")
                    .map(|e| {
                        (
                            e.ino,
                            e.path_bytes.clone().unwrap_or_else(|| e.path.clone().into_bytes()),
                        )
                    })
                    .collect();
                // Pushed in reverse so the smallest name is listed next.
                stack.extend(subdirs.into_iter().rev());
            }
        }
    }
    json::print(&Listing { entries })
}

/// Appends the entries of directory `dir` (at `dir_path`), sorted bytewise by name.
fn list_dir(fs: &Fs, dir: Ino, dir_path: &[u8], opts: &LsOptions, out: &mut Vec<Entry>) -> anyhow::Result<()> {
    let mut names: Vec<(Vec<u8>, Ino)> = fs.read_dir(dir)?.into_iter().map(|e| (e.name, e.ino)).collect();
    if opts.all {
        names.push((b".".to_vec(), dir));
        names.push((b"..".to_vec(), fs.lookup(dir, b"..")?));
    }
    names.sort_unstable();
    for (name, ino) in names {
        let path = join_path(dir_path, &name);
        out.push(entry(fs, &path, &name, ino).with_context(|| escape_bytes(&name))?);
    }
    Ok(())
}

/// Reads one inode (and a symlink's target) into an entry.
fn entry(fs: &Fs, path: &[u8], name: &[u8], ino: Ino) -> anyhow::Result<Entry> {
    let stat = fs.stat(ino)?;
    let target = match stat.kind {
        FileKind::Symlink => Some(fs.read_link(ino)?),
        _ => None,
    };
    let device = matches!(stat.kind, FileKind::CharDev | FileKind::BlockDev);
    let secs = |t: Timestamp| t.secs;
    Ok(Entry {
        path: json::text(path),
        path_bytes: bytes_if_lossy(path),
        name: json::text(name),
        name_bytes: bytes_if_lossy(name),
        ino,
        kind: kind_name(stat.kind),
        mode: stat.mode & 0o7777,
        nlink: stat.nlink,
        uid: stat.uid,
        gid: stat.gid,
        size: stat.size,
        blocks: stat.blocks,
        atime: secs(stat.atime),
        atime_nsec: stat.atime.nsecs,
        mtime: secs(stat.mtime),
        mtime_nsec: stat.mtime.nsecs,
        ctime: secs(stat.ctime),
        ctime_nsec: stat.ctime.nsecs,
        crtime: stat.crtime.map(secs),
        crtime_nsec: stat.crtime.map(|t| t.nsecs),
        rdev_major: device.then_some(stat.rdev.0),
        rdev_minor: device.then_some(stat.rdev.1),
        target: target.as_deref().map(json::text),
        target_bytes: target.as_deref().and_then(bytes_if_lossy),
        flags: stat.flags,
    })
}
