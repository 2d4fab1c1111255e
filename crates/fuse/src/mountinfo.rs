//! Reading `/proc/self/mountinfo`: is a directory a mountpoint, of which mounts, and
//! with which flags?

use std::io;
use std::path::Path;

/// Where the kernel lists this process's mounts.
pub const MOUNTINFO_PATH: &str = "/proc/self/mountinfo";

/// One mount of a mountinfo table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The mount's id (unique while it is mounted).
    pub id: u64,
    /// The device of its file system (`st_dev`, as major and minor), the same in every
    /// mount namespace.
    pub dev: (u32, u32),
    /// Where it is mounted, unescaped.
    pub mountpoint: Vec<u8>,
    /// The per-mount options (`rw,nosuid,relatime`): the flags a remount changes.
    pub options: Vec<u8>,
    /// The file system type (`fuse`, `fuse.f2fs`, `ext4`).
    pub fs_type: Vec<u8>,
}

impl Entry {
    /// Whether the per-mount options include `option`.
    pub fn has_option(&self, option: &[u8]) -> bool {
        self.options.split(|&b| b == b',').any(|o| o == option)
    }
}

/// The mounts of a mountinfo table, in its order (later mounts on one point stack on
/// earlier ones). Each line reads `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS
/// [OPTIONAL...] - TYPE SOURCE SUPER_OPTIONS`; lines not of that shape are skipped.
pub fn entries(table: &[u8]) -> Vec<Entry> {
    table
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let fields: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
            let id = std::str::from_utf8(fields.first()?).ok()?.parse::<u64>().ok()?;
            let dash = fields.iter().position(|f| *f == b"-")?;
            if dash < 6 {
                return None;
            }
            let (major, minor) = std::str::from_utf8(fields.get(2)?).ok()?.split_once(':')?;
            Some(Entry {
                id,
                dev: (major.parse().ok()?, minor.parse().ok()?),
                mountpoint: unescape(fields[4]),
                options: fields[5].to_vec(),
                fs_type: fields.get(dash + 1)?.to_vec(),
            })
        })
        .collect()
}

/// Ids of the mounts currently on `mountpoint` (an absolute, canonical path).
pub fn mount_ids_on(mountpoint: &Path) -> io::Result<Vec<u64>> {
    use std::os::unix::ffi::OsStrExt;
    let table = std::fs::read(MOUNTINFO_PATH)?;
    Ok(mount_ids_at(&table, mountpoint.as_os_str().as_bytes()))
}

/// Ids of the mounts in a mountinfo table whose mount point is `mountpoint`
/// (unescaped: the kernel escapes space, tab, newline and backslash as three-digit
/// octal, `\040`).
pub fn mount_ids_at(table: &[u8], mountpoint: &[u8]) -> Vec<u64> {
    entries(table)
        .into_iter()
        .filter(|e| e.mountpoint == mountpoint)
        .map(|e| e.id)
        .collect()
}

/// Undoes the kernel's octal escapes (`\ooo`) in a mountinfo path.
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut rest = field;
    while let Some((&first, tail)) = rest.split_first() {
        let octal = match tail {
            [a, b, c, ..] if first == b'\\' && [a, b, c].iter().all(|d| (b'0'..=b'7').contains(d)) => {
                let value = (u32::from(a - b'0') << 6) | (u32::from(b - b'0') << 3) | u32::from(c - b'0');
                u8::try_from(value).ok()
            }
            _ => None,
        };
        match octal {
            Some(byte) => {
                out.push(byte);
                rest = &tail[3..];
            }
            None => {
                out.push(first);
                rest = tail;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &[u8] = b"22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/root rw\n\
        36 22 0:50 / /mnt/my\\040disk rw,nosuid - fuse.f2fs uf2fs ro\n\
        37 36 0:51 / /mnt/my\\040disk rw - fuse.f2fs uf2fs ro\n\
        bad line\n\n";

    #[test]
    fn parses_entries() {
        let all = entries(TABLE);
        assert_eq!(all.len(), 3);
        assert_eq!(all[1].id, 36);
        assert_eq!(all[1].dev, (0, 50));
        assert_eq!(all[1].mountpoint, b"/mnt/my disk");
        assert_eq!(all[1].fs_type, b"fuse.f2fs");
        assert!(all[1].has_option(b"nosuid") && !all[1].has_option(b"nosu"));
        assert!(all[0].has_option(b"relatime"));
    }

    #[test]
    fn finds_mounts_by_point() {
        assert_eq!(mount_ids_at(TABLE, b"/mnt/my disk"), [36, 37]);
        assert_eq!(mount_ids_at(TABLE, b"/"), [22]);
        assert!(mount_ids_at(TABLE, b"/mnt").is_empty());
        assert!(mount_ids_at(b"", b"/").is_empty());
    }

    #[test]
    fn unescapes_octal() {
        assert_eq!(unescape(b"a\\040b\\011c\\134d"), b"a b\tc\\d");
        assert_eq!(unescape(b"tail\\04"), b"tail\\04");
        assert_eq!(unescape(b"\\777x"), b"\\777x");
        assert_eq!(unescape(b"\\"), b"\\");
    }

    #[test]
    fn reads_this_process_table() {
        assert!(!mount_ids_on(Path::new("/")).unwrap().is_empty());
    }
}
