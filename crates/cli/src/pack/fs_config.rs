//! AOSP's canned fs_config text, as `load_canned_fs_config` reads it: one entry a line,
//! `PATH UID GID MODE [capabilities=CAPS]`, separated by blanks; PATH relative to the
//! partition's parent (`system/bin/sh`, no leading `/`; the mount point's own entry is
//! its name, or `/` for a root mount point), UID and GID decimal, MODE octal, CAPS a
//! number in C notation (`0x...`, `0...` or decimal). When a path is listed twice the
//! last entry wins. Empty lines and lines starting with `#` are skipped.

use anyhow::{bail, Context};
use std::collections::HashMap;
use std::path::Path;

/// One fs_config entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Permission bits (`0o7777`).
    pub mode: u32,
    /// File capabilities (the permitted mask; 0 for none).
    pub caps: u64,
}

/// A loaded fs_config file.
#[derive(Debug, Default)]
pub struct FsConfig {
    entries: HashMap<Vec<u8>, Entry>,
}

/// The key a path is looked up by: without leading or trailing `/` (the root of a
/// `/` mount point is the empty key, however the file spells it).
pub fn key(path: &[u8]) -> &[u8] {
    let mut p = path;
    while let [b'/', rest @ ..] = p {
        p = rest;
    }
    while let [rest @ .., b'/'] = p {
        p = rest;
    }
    p
}

/// A number as C's `strtoull(s, NULL, 0)` reads it (whole string only).
fn c_number(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

impl FsConfig {
    /// Parses the text of `file` (named in errors as `shown`).
    pub fn parse(text: &[u8], shown: &str) -> anyhow::Result<FsConfig> {
        let mut entries = HashMap::new();
        for (n, line) in text.split(|&b| b == b'\n').enumerate() {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let t: Vec<&[u8]> = line
                .split(|b| b.is_ascii_whitespace())
                .filter(|w| !w.is_empty())
                .collect();
            if t.is_empty() || t[0].starts_with(b"#") {
                continue;
            }
            let at = || format!("{shown}:{}", n + 1);
            let word = |w: &[u8]| String::from_utf8_lossy(w).into_owned();
            if t.len() < 4 || t.len() > 5 {
                bail!(
                    "{}: expected 'PATH UID GID MODE [capabilities=CAPS]', found {} fields",
                    at(),
                    t.len()
                );
            }
            let uid: u32 = word(t[1])
                .parse()
                .with_context(|| format!("{}: uid '{}' is not a number", at(), word(t[1])))?;
            let gid: u32 = word(t[2])
                .parse()
                .with_context(|| format!("{}: gid '{}' is not a number", at(), word(t[2])))?;
            let mode = u32::from_str_radix(&word(t[3]), 8)
                .ok()
                .filter(|m| *m <= 0o7777)
                .with_context(|| format!("{}: mode '{}' is not octal permission bits", at(), word(t[3])))?;
            let caps = match t.get(4) {
                None => 0,
                Some(c) => {
                    let c = word(c);
                    let v = c
                        .strip_prefix("capabilities=")
                        .with_context(|| format!("{}: '{c}' is not capabilities=CAPS", at()))?;
                    c_number(v).with_context(|| format!("{}: capabilities '{v}' is not a number", at()))?
                }
            };
            entries.insert(key(t[0]).to_vec(), Entry { uid, gid, mode, caps });
        }
        Ok(FsConfig { entries })
    }

    /// Reads and parses `path`.
    pub fn load(path: &Path) -> anyhow::Result<FsConfig> {
        let text = std::fs::read(path).with_context(|| format!("cannot read fs_config {}", path.display()))?;
        FsConfig::parse(&text, &path.display().to_string())
    }

    /// The entry of `path` (any leading `/` ignored).
    pub fn lookup(&self, path: &[u8]) -> Option<&Entry> {
        self.entries.get(key(path))
    }
}

/// The `security.capability` value of capabilities `caps`: `struct vfs_cap_data` at
/// revision 2 with the effective flag, the permitted mask in two 32-bit halves and no
/// inheritable ones, as Linux stores it and as AOSP's image tools write fs_config
/// capabilities.
pub fn capability_xattr(caps: u64) -> Vec<u8> {
    const VFS_CAP_REVISION_2: u32 = 0x0200_0000;
    const VFS_CAP_FLAGS_EFFECTIVE: u32 = 0x0000_0001;
    let mut v = Vec::with_capacity(20);
    v.extend_from_slice(&(VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE).to_le_bytes());
    v.extend_from_slice(&(caps as u32).to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    v.extend_from_slice(&((caps >> 32) as u32).to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_as_aosp_reads_them_and_the_last_duplicate_wins() {
        let text = b"# comment\n/ 0 0 755\nsystem/bin/sh 0 2000 0755\n\nsystem/bin/ping 0 0 0750 capabilities=0x2000\nsystem/bin/sh 1000 1000 0700\n";
        let c = FsConfig::parse(text, "fs").unwrap();
        assert_eq!(c.lookup(b"").unwrap().mode, 0o755);
        assert_eq!(
            c.lookup(b"/system/bin/sh").unwrap(),
            &Entry {
                uid: 1000,
                gid: 1000,
                mode: 0o700,
                caps: 0
            }
        );
        assert_eq!(c.lookup(b"system/bin/ping").unwrap().caps, 0x2000);
        assert!(c.lookup(b"system/bin/ls").is_none());
        for bad in [
            &b"a 0 0"[..],
            b"a x 0 755",
            b"a 0 0 999",
            b"a 0 0 755 caps=1",
            b"a 0 0 755 capabilities=zz",
        ] {
            let e = FsConfig::parse(bad, "fs").unwrap_err().to_string();
            assert!(e.starts_with("fs:1:"), "{e}");
        }
    }

    #[test]
    fn capabilities_are_revision_2_and_read_back() {
        let v = capability_xattr(0x1_0000_2000);
        assert_eq!(v.len(), 20);
        assert_eq!(crate::extract::android::permitted_capabilities(&v), Ok(0x1_0000_2000));
    }
}
