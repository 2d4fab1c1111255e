//! Raise the mount's readahead window so sequential reads arrive as large READ requests.
//!
//! At FUSE_INIT the kernel offers a readahead of only 128 KiB and the file system may not
//! ask for more, so a `cat` reaches us as 128 KiB READs even though one READ may carry up
//! to `max_pages` (1 MiB by default). Each FUSE mount has its own backing device info,
//! named after the mount's device number, whose `read_ahead_kb` root may raise after the
//! mount: about four times the sequential throughput in measurements. Best effort: without
//! the privilege, or if the mount cannot be found, nothing changes.

use std::path::Path;

/// Readahead window asked for: one maximal READ (`max_pages_limit` is 256 pages by default).
pub(crate) const READ_AHEAD_KB: u32 = 1024;

/// Set `read_ahead_kb` of the FUSE mount at `mountpoint` (absolute, symlinks resolved).
/// Must not touch the mount itself: its requests are not being served yet.
pub(crate) fn raise(mountpoint: &Path) {
    let Ok(mountinfo) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return;
    };
    let Some(device) = mount_device(&mountinfo, mountpoint) else {
        return;
    };
    let knob = format!("/sys/class/bdi/{device}/read_ahead_kb");
    // Ignored on failure: a smaller window only costs speed.
    let _ = std::fs::write(knob, READ_AHEAD_KB.to_string());
}

/// The "major:minor" of the newest mount at `mountpoint` in a `/proc/self/mountinfo` text.
fn mount_device(mountinfo: &str, mountpoint: &Path) -> Option<String> {
    let wanted = mountpoint.as_os_str().as_encoded_bytes();
    mountinfo
        .lines()
        .filter_map(|line| {
            // Fields: mount id, parent id, major:minor, root, mount point, ...
            let mut fields = line.split(' ');
            let device = fields.nth(2)?;
            let point = fields.nth(1)?;
            (unescape(point) == wanted).then(|| device.to_owned())
        })
        .next_back()
}

/// Undo mountinfo's octal escapes (`\040` for a space, `\134` for a backslash, ...).
fn unescape(field: &str) -> Vec<u8> {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (bytes[i], octal) {
            (b'\\', Some(d)) => {
                let value = d.iter().fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0'));
                out.push(value as u8);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 259:1 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p1 rw
42 22 0:39 / /tmp/mnt ro,nosuid,nodev,noatime shared:2 - fuse.f2fs uf2fs ro,user_id=0
43 22 0:40 / /tmp/with\\040space ro - fuse.f2fs uf2fs ro
44 42 0:41 / /tmp/mnt ro - fuse.f2fs img ro
";

    #[test]
    fn finds_the_newest_mount_at_a_path() {
        assert_eq!(mount_device(MOUNTINFO, Path::new("/tmp/mnt")).as_deref(), Some("0:41"));
        assert_eq!(mount_device(MOUNTINFO, Path::new("/")).as_deref(), Some("259:1"));
    }

    #[test]
    fn escaped_paths_match() {
        let found = mount_device(MOUNTINFO, Path::new("/tmp/with space"));
        assert_eq!(found.as_deref(), Some("0:40"));
    }

    #[test]
    fn unknown_paths_and_garbage_are_none() {
        assert_eq!(mount_device(MOUNTINFO, Path::new("/tmp/other")), None);
        assert_eq!(mount_device("garbage\n\n1 2", Path::new("/tmp/mnt")), None);
    }

    #[test]
    fn unescape_handles_octal_and_plain_backslashes() {
        assert_eq!(unescape(r"a\040b\134c\011"), b"a b\\c\t");
        assert_eq!(unescape(r"trailing\04"), b"trailing\\04");
        assert_eq!(unescape(r"\9xy"), b"\\9xy");
    }
}
