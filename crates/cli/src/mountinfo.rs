//! Reading `/proc/self/mountinfo`: is a directory a mountpoint, and of which mounts?

use std::io;
use std::path::Path;

/// Where the kernel lists this process's mounts.
const MOUNTINFO_PATH: &str = "/proc/self/mountinfo";

/// Ids of the mounts currently on `mountpoint` (an absolute, canonical path).
pub fn mount_ids_on(mountpoint: &Path) -> io::Result<Vec<u64>> {
    use std::os::unix::ffi::OsStrExt;
    let table = std::fs::read(MOUNTINFO_PATH)?;
    Ok(mount_ids_at(&table, mountpoint.as_os_str().as_bytes()))
}

/// Ids of the mounts in a mountinfo table whose mount point is `mountpoint`.
///
/// Each line reads `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ...`; paths escape space,
/// tab, newline and backslash as three-digit octal (`\040`).
pub fn mount_ids_at(table: &[u8], mountpoint: &[u8]) -> Vec<u64> {
    let mut ids = Vec::new();
    for line in table.split(|&b| b == b'\n') {
        let mut fields = line.split(|&b| b == b' ');
        let id = fields
            .next()
            .and_then(|f| std::str::from_utf8(f).ok())
            .and_then(|f| f.parse::<u64>().ok());
        let point = fields.nth(3);
        if let (Some(id), Some(point)) = (id, point) {
            if unescape(point) == mountpoint {
                ids.push(id);
            }
        }
    }
    ids
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
