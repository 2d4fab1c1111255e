//! `extract --fs-config FILE --file-contexts FILE`: the Android metadata of the extracted
//! tree, read from the inodes and their xattrs (whether or not the host could set them
//! on the extracted files), in the formats AOSP's image tools read back.
//!
//! - fs_config, one line per path: `PATH UID GID MODE capabilities=0xCAPS`, as AOSP's
//!   canned fs_config loader parses it (space-separated, uid and gid in decimal, the
//!   permission bits in octal, the capability token read with base prefix). CAPS is the
//!   64-bit permitted mask of the `security.capability` xattr (0 without one).
//! - file_contexts, one line per labelled path: `PATH-REGEX<TAB>LABEL`, the path with
//!   every regex metacharacter escaped so that it matches only itself, the label the
//!   `security.selinux` xattr without its trailing NUL. Unlabelled inodes get no line.
//!
//! Paths: both files describe the extracted tree as it will sit under the mount point
//! `--mount-point` (default `/`, as sload.f2fs's `-t`), since that is how
//! `sload.f2fs -f DEST -C fs_config -s file_contexts -t MOUNT_POINT` looks them up:
//! fs_config keys are MOUNT_POINT + the path inside DEST without the leading `/`
//! (`system/bin/sh`; the tree's own root is `system`, or `/` for mount point `/`, which
//! AOSP's loader reads as the root), file_contexts keys are absolute (`/system/bin/sh`).

use crate::names::escape_bytes;
use anyhow::{bail, Context};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use uf2fs_core::{Fs, Ino, Stat};

/// The xattr holding file capabilities (`struct vfs_cap_data`).
const CAPABILITY_XATTR: &[u8] = b"security.capability";
/// The xattr holding the SELinux label.
const SELINUX_XATTR: &[u8] = b"security.selinux";

/// Where to write what, from `extract`'s flags.
#[derive(Debug, Clone, Default)]
pub struct AndroidOptions {
    /// `--fs-config FILE`.
    pub fs_config: Option<PathBuf>,
    /// `--file-contexts FILE`.
    pub file_contexts: Option<PathBuf>,
    /// `--mount-point PATH` (absolute; `/` when not given).
    pub mount_point: Option<Vec<u8>>,
}

impl AndroidOptions {
    /// Whether any of the files is asked for.
    pub fn wanted(&self) -> bool {
        self.fs_config.is_some() || self.file_contexts.is_some()
    }
}

/// The open output files of one extraction.
pub struct AndroidWriter {
    fs_config: Option<(PathBuf, BufWriter<File>)>,
    file_contexts: Option<(PathBuf, BufWriter<File>)>,
    /// The mount point without trailing `/` (empty for `/`).
    mount_point: Vec<u8>,
    /// Paths fs_config cannot hold (whitespace in a name), the first one, and a count.
    unwritable: Option<(String, u64)>,
    /// Capability xattrs that could not be decoded (first path, count).
    bad_caps: Option<(String, u64)>,
}

fn create(path: &Path) -> anyhow::Result<BufWriter<File>> {
    let file = File::create(path).with_context(|| format!("creating {}", crate::names::escape_os(path)))?;
    Ok(BufWriter::new(file))
}

impl AndroidWriter {
    /// Creates the files `opts` asks for.
    pub fn create(opts: &AndroidOptions) -> anyhow::Result<AndroidWriter> {
        let mut mount_point = opts.mount_point.clone().unwrap_or_else(|| b"/".to_vec());
        if !mount_point.starts_with(b"/") {
            bail!(
                "--mount-point {} must be absolute (as sload.f2fs -t takes it)",
                escape_bytes(&mount_point)
            );
        }
        while mount_point.ends_with(b"/") {
            mount_point.pop();
        }
        let open =
            |p: &Option<PathBuf>| -> anyhow::Result<_> { p.as_ref().map(|p| Ok((p.clone(), create(p)?))).transpose() };
        Ok(AndroidWriter {
            fs_config: open(&opts.fs_config)?,
            file_contexts: open(&opts.file_contexts)?,
            mount_point,
            unwritable: None,
            bad_caps: None,
        })
    }

    /// Writes the lines of one inode found at `rel`, its path inside the extracted tree
    /// without leading `/` (empty for the tree's root).
    pub fn record(&mut self, fs: &Fs, ino: Ino, stat: &Stat, rel: &[u8]) -> anyhow::Result<()> {
        let mut absolute = self.mount_point.clone();
        if !rel.is_empty() {
            absolute.push(b'/');
            absolute.extend_from_slice(rel);
        }
        if absolute.is_empty() {
            absolute.push(b'/');
        }
        let xattrs = fs.list_xattrs(ino)?;
        let find = |name: &[u8]| xattrs.iter().find(|x| x.name == name).map(|x| x.value.as_slice());
        if let Some((path, out)) = &mut self.fs_config {
            // The root of mount point `/` is written `/`, which AOSP's loader takes as
            // the root; everything else without its leading `/`.
            let key = if absolute == b"/" {
                &absolute[..]
            } else {
                &absolute[1..]
            };
            if key.iter().any(|b| b.is_ascii_whitespace()) {
                note(&mut self.unwritable, rel);
            } else {
                let caps = match find(CAPABILITY_XATTR).map(permitted_capabilities) {
                    None => 0,
                    Some(Ok(caps)) => caps,
                    Some(Err(_)) => {
                        note(&mut self.bad_caps, rel);
                        0
                    }
                };
                out.write_all(&fs_config_line(key, stat.uid, stat.gid, stat.mode, caps))
                    .with_context(|| format!("writing {}", crate::names::escape_os(path)))?;
            }
        }
        if let Some((path, out)) = &mut self.file_contexts {
            if let Some(label) = find(SELINUX_XATTR) {
                out.write_all(&file_contexts_line(&absolute, label))
                    .with_context(|| format!("writing {}", crate::names::escape_os(path)))?;
            }
        }
        Ok(())
    }

    /// Flushes the files; returns the warnings to print.
    pub fn finish(self) -> anyhow::Result<Vec<String>> {
        for (path, mut out) in self.fs_config.into_iter().chain(self.file_contexts) {
            out.flush()
                .with_context(|| format!("writing {}", crate::names::escape_os(&path)))?;
        }
        let mut warnings = Vec::new();
        if let Some((first, count)) = self.unwritable {
            warnings.push(format!(
                "fs_config: left out {count} path(s) with whitespace, which its format cannot hold (first: {first})"
            ));
        }
        if let Some((first, count)) = self.bad_caps {
            warnings.push(format!(
                "fs_config: {count} security.capability xattr(s) not understood, written as capabilities=0x0 (first: {first})"
            ));
        }
        Ok(warnings)
    }
}

fn note(slot: &mut Option<(String, u64)>, rel: &[u8]) {
    match slot {
        Some((_, count)) => *count += 1,
        None => *slot = Some((format!("/{}", escape_bytes(rel)), 1)),
    }
}

/// One fs_config line: `KEY UID GID MODE capabilities=0xCAPS\n`, MODE the permission
/// bits (07777) in octal.
pub fn fs_config_line(key: &[u8], uid: u32, gid: u32, mode: u32, caps: u64) -> Vec<u8> {
    let mut line = key.to_vec();
    line.extend_from_slice(format!(" {uid} {gid} {:o} capabilities={caps:#x}\n", mode & 0o7777).as_bytes());
    line
}

/// One file_contexts line: the escaped path, a tab, the label without trailing NULs.
pub fn file_contexts_line(absolute: &[u8], label: &[u8]) -> Vec<u8> {
    let mut label = label;
    while let [rest @ .., 0] = label {
        label = rest;
    }
    let mut line = regex_escape(absolute);
    line.push(b'\t');
    line.extend_from_slice(label);
    line.push(b'\n');
    line
}

/// `path` as a regular expression matching only itself (file_contexts entries are
/// anchored regexes): metacharacters get a backslash; whitespace, control bytes and the
/// backslash's neighbours that a line cannot carry become `\xHH`.
pub fn regex_escape(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    for &b in path {
        match b {
            b'.' | b'^' | b'$' | b'*' | b'+' | b'?' | b'(' | b')' | b'[' | b']' | b'{' | b'}' | b'|' | b'\\' => {
                out.push(b'\\');
                out.push(b);
            }
            b if b.is_ascii_whitespace() || b.is_ascii_control() || b == b'#' => {
                out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
            }
            b => out.push(b),
        }
    }
    out
}

/// The permitted capabilities of a `security.capability` value (`struct
/// vfs_cap_data`: magic_etc, then permitted/inheritable pairs, low word first; revision
/// 1 has one pair, revisions 2 and 3 two, revision 3 a root uid after them).
pub fn permitted_capabilities(value: &[u8]) -> Result<u64, String> {
    let word = |i: usize| -> Option<u32> { Some(u32::from_le_bytes(value.get(i * 4..i * 4 + 4)?.try_into().ok()?)) };
    let magic = word(0).ok_or("shorter than its header")?;
    let (len, pairs) = match magic & 0xff00_0000 {
        0x0100_0000 => (12, 1),
        0x0200_0000 => (20, 2),
        0x0300_0000 => (24, 2),
        other => return Err(format!("unknown revision {other:#x}")),
    };
    if value.len() != len {
        return Err(format!("{} bytes, its revision has {len}", value.len()));
    }
    let low = u64::from(word(1).unwrap_or(0));
    let high = if pairs == 2 { u64::from(word(3).unwrap_or(0)) } else { 0 };
    Ok(low | high << 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fs_config_lines_are_aosp_s() {
        assert_eq!(
            fs_config_line(b"system/bin/sh", 0, 2000, 0o104755, 0x1000),
            b"system/bin/sh 0 2000 4755 capabilities=0x1000\n"
        );
        assert_eq!(
            fs_config_line(b"system", 0, 0, 0o40755, 0),
            b"system 0 0 755 capabilities=0x0\n"
        );
    }

    #[test]
    fn file_contexts_paths_match_only_themselves() {
        assert_eq!(
            file_contexts_line(b"/system/lib/libc++.so", b"u:object_r:system_lib_file:s0\0"),
            b"/system/lib/libc\\+\\+\\.so\tu:object_r:system_lib_file:s0\n"
        );
        assert_eq!(
            regex_escape(b"/a b\n(x)|[y]{z}^$*?\\#"),
            b"/a\\x20b\\x0a\\(x\\)\\|\\[y\\]\\{z\\}\\^\\$\\*\\?\\\\\\x23"
        );
    }

    #[test]
    fn capabilities_are_the_permitted_mask_of_every_revision() {
        let v2 = [0x0200_0001u32, 0x1000, 0x5, 0x3, 0x9];
        let bytes: Vec<u8> = v2.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(permitted_capabilities(&bytes), Ok(0x3_0000_1000));
        let mut v3 = bytes.clone();
        v3[3] = 3;
        v3.extend_from_slice(&0u32.to_le_bytes());
        assert_eq!(permitted_capabilities(&v3), Ok(0x3_0000_1000));
        let mut v1 = bytes[..12].to_vec();
        v1[3] = 1;
        assert_eq!(permitted_capabilities(&v1), Ok(0x1000));
        assert!(permitted_capabilities(&bytes[..19]).is_err());
        assert!(permitted_capabilities(&v3[..20]).is_err());
        assert!(permitted_capabilities(&[0, 0, 0, 4]).is_err());
        assert!(permitted_capabilities(&[]).is_err());
    }
}
