//! `uf2fs ls`: list directories like `ls`, `ls -l`, `ls -a` and `ls -R`.

use crate::format_mode::mode_string;
use crate::format_time::format_utc_minutes;
use crate::names::{escape_bytes, image_path, join_path};
use crate::output::buffered_stdout;
use anyhow::{bail, Context};
use std::collections::HashSet;
use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use uf2fs_core::{FileKind, Fs, Ino, Stat};

/// Which `ls` flags were given.
#[derive(Debug, Clone, Copy, Default)]
pub struct LsOptions {
    /// `-l`: one detailed line per entry.
    pub long: bool,
    /// `-R`: descend into subdirectories.
    pub recursive: bool,
    /// `-a`: include "." and "..".
    pub all: bool,
}

/// One line of output.
struct Row {
    name: Vec<u8>,
    ino: Ino,
    kind: FileKind,
    /// Present with `-l`.
    long: Option<LongFields>,
}

/// The columns of `ls -l` for one entry, already formatted.
struct LongFields {
    mode: String,
    nlink: String,
    uid: String,
    gid: String,
    /// Size in bytes, or `major, minor` for a device.
    size: String,
    mtime: String,
    /// Symlink target.
    target: Option<Vec<u8>>,
}

/// Lists `path` (default: the root) to stdout.
pub fn run(fs: &Fs, path: Option<&OsStr>, opts: &LsOptions) -> anyhow::Result<()> {
    let shown = path.map_or_else(|| b"/".to_vec(), |p| p.as_bytes().to_vec());
    let path = image_path(path.unwrap_or(OsStr::new("/")));
    // Like GNU ls: a symlink named on the command line is listed as itself with -l
    // (unless written with a trailing slash) and followed without.
    let follow = !opts.long || path.ends_with(b"/");
    let ino = fs.resolve(&path, follow)?;
    let stat = fs.stat(ino)?;
    let mut out = buffered_stdout();
    if stat.kind != FileKind::Dir {
        let row = make_row(fs, shown, ino, stat.kind, opts.long)?;
        write_rows(&mut out, &[row])?;
    } else if opts.recursive {
        list_tree(fs, ino, shown, opts, &mut out)?;
    } else {
        let rows = collect_rows(fs, ino, opts).with_context(|| escape_bytes(&shown))?;
        write_rows(&mut out, &rows)?;
    }
    out.flush()?;
    Ok(())
}

/// `ls -R`: each directory under a `PATH:` header, blank lines between, depth first in
/// name order, walked with an explicit stack.
fn list_tree(fs: &Fs, top: Ino, top_path: Vec<u8>, opts: &LsOptions, out: &mut impl Write) -> anyhow::Result<()> {
    let mut stack = vec![(top, top_path)];
    let mut listed: HashSet<Ino> = HashSet::new();
    let mut first = true;
    while let Some((dir, path)) = stack.pop() {
        if !listed.insert(dir) {
            bail!(
                "corrupt image: directory {} (inode {dir}) was already listed",
                escape_bytes(&path)
            );
        }
        let rows = collect_rows(fs, dir, opts).with_context(|| escape_bytes(&path))?;
        if !first {
            out.write_all(b"\n")?;
        }
        first = false;
        out.write_all(&path)?;
        out.write_all(b":\n")?;
        write_rows(out, &rows)?;
        let subdirs = rows
            .iter()
            .filter(|r| r.kind == FileKind::Dir && r.name != b"." && r.name != b"..");
        // Pushed in reverse so the smallest name is listed next.
        let children: Vec<_> = subdirs.map(|r| (r.ino, join_path(&path, &r.name))).collect();
        stack.extend(children.into_iter().rev());
    }
    Ok(())
}

/// The entries of one directory, sorted bytewise by name.
fn collect_rows(fs: &Fs, dir: Ino, opts: &LsOptions) -> anyhow::Result<Vec<Row>> {
    let entries = fs.read_dir(dir)?;
    let mut rows = Vec::with_capacity(entries.len() + 2);
    if opts.all {
        let parent = fs.lookup(dir, b"..")?;
        rows.push(make_row(fs, b".".to_vec(), dir, FileKind::Dir, opts.long)?);
        rows.push(make_row(fs, b"..".to_vec(), parent, FileKind::Dir, opts.long)?);
    }
    for entry in entries {
        let row = make_row(fs, entry.name, entry.ino, entry.kind, opts.long);
        rows.push(row?);
    }
    rows.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    Ok(rows)
}

/// Builds one row; with `long`, reads the inode (and the symlink target).
fn make_row(fs: &Fs, name: Vec<u8>, ino: Ino, kind: FileKind, long: bool) -> anyhow::Result<Row> {
    if !long {
        return Ok(Row {
            name,
            ino,
            kind,
            long: None,
        });
    }
    let stat = fs.stat(ino).with_context(|| escape_bytes(&name))?;
    let target = match stat.kind {
        FileKind::Symlink => Some(fs.read_link(ino).with_context(|| escape_bytes(&name))?),
        _ => None,
    };
    let fields = long_fields(&stat, target);
    Ok(Row {
        name,
        ino,
        kind: stat.kind,
        long: Some(fields),
    })
}

/// Formats the `-l` columns of an inode.
fn long_fields(stat: &Stat, target: Option<Vec<u8>>) -> LongFields {
    let size = match stat.kind {
        FileKind::CharDev | FileKind::BlockDev => format!("{}, {}", stat.rdev.0, stat.rdev.1),
        _ => stat.size.to_string(),
    };
    LongFields {
        mode: mode_string(stat.mode),
        nlink: stat.nlink.to_string(),
        uid: stat.uid.to_string(),
        gid: stat.gid.to_string(),
        size,
        mtime: format_utc_minutes(stat.mtime.secs),
        target,
    }
}

/// Writes rows: names only, or aligned `-l` columns.
fn write_rows(out: &mut impl Write, rows: &[Row]) -> std::io::Result<()> {
    let width = |column: fn(&LongFields) -> &str| {
        rows.iter()
            .filter_map(|r| r.long.as_ref())
            .map(|l| column(l).len())
            .max()
            .unwrap_or(0)
    };
    let nlink_w = width(|l| &l.nlink);
    let uid_w = width(|l| &l.uid);
    let gid_w = width(|l| &l.gid);
    let size_w = width(|l| &l.size);
    for row in rows {
        if let Some(l) = &row.long {
            write!(
                out,
                "{} {:>nlink_w$} {:>uid_w$} {:>gid_w$} {:>size_w$} {} ",
                l.mode, l.nlink, l.uid, l.gid, l.size, l.mtime
            )?;
        }
        out.write_all(&row.name)?;
        if let Some(target) = row.long.as_ref().and_then(|l| l.target.as_ref()) {
            out.write_all(b" -> ")?;
            out.write_all(target)?;
        }
        out.write_all(b"\n")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use uf2fs_core::Timestamp;

    fn stat(kind: FileKind, mode: u32) -> Stat {
        Stat {
            ino: 5,
            kind,
            mode: kind.mode_bits() | mode,
            nlink: 12,
            uid: 1000,
            gid: 100,
            size: 4096,
            blocks: 8,
            blksize: 4096,
            atime: Timestamp::default(),
            mtime: Timestamp {
                secs: 1_700_000_000,
                nsecs: 0,
            },
            ctime: Timestamp::default(),
            crtime: None,
            rdev: (8, 1),
            generation: 0,
            flags: 0,
        }
    }

    fn render(rows: &[Row]) -> String {
        let mut out = Vec::new();
        write_rows(&mut out, rows).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn long_rows_are_aligned() {
        let file = long_fields(&stat(FileKind::File, 0o644), None);
        let dev = long_fields(&stat(FileKind::BlockDev, 0o660), None);
        let link = long_fields(&stat(FileKind::Symlink, 0o777), Some(b"t".to_vec()));
        let rows = [
            Row {
                name: b"a".to_vec(),
                ino: 5,
                kind: FileKind::File,
                long: Some(file),
            },
            Row {
                name: b"b".to_vec(),
                ino: 6,
                kind: FileKind::BlockDev,
                long: Some(dev),
            },
            Row {
                name: b"c".to_vec(),
                ino: 7,
                kind: FileKind::Symlink,
                long: Some(link),
            },
        ];
        assert_eq!(
            render(&rows),
            "-rw-r--r-- 12 1000 100 4096 2023-11-14 22:13 a\n\
             brw-rw---- 12 1000 100 8, 1 2023-11-14 22:13 b\n\
             lrwxrwxrwx 12 1000 100 4096 2023-11-14 22:13 c -> t\n"
        );
    }

    #[test]
    fn short_rows_are_raw_names() {
        let rows = [Row {
            name: b"\xffx\n".to_vec(),
            ino: 5,
            kind: FileKind::File,
            long: None,
        }];
        let mut out = Vec::new();
        write_rows(&mut out, &rows).unwrap();
        assert_eq!(out, b"\xffx\n\n");
    }
}
