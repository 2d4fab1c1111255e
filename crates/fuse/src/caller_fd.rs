//! A descriptor of the process behind a request, as `/proc` shows it: what
//! `F2FS_IOC_MOVE_RANGE` needs of its `dst_fd` (the number means nothing in the
//! daemon) and of the descriptor the caller issued the ioctl on (FUSE sends the
//! inode, not the descriptor).
//!
//! Everything comes from text files: `/proc/PID/fdinfo/FD` (open flags, mount id, and
//! from Linux 5.14 the inode number) and `/proc/PID/mountinfo` (the mount's device).
//! Nothing is opened or stat'ed through the mount itself, which could wait for this
//! very daemon to answer.

use std::path::Path;

use fuser::Errno;

use crate::mountinfo;

/// What `/proc` says of one open descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FdInfo {
    /// The open flags (`O_ACCMODE` bits, `O_APPEND`, ...).
    pub(crate) flags: u32,
    /// The device of the file's file system (major, minor).
    pub(crate) dev: (u32, u32),
    /// The file's inode number as `stat` shows it (on a FUSE mount, the node id).
    pub(crate) ino: u64,
}

impl FdInfo {
    /// Opened for writing (`FMODE_WRITE`).
    pub(crate) fn writes(&self) -> bool {
        self.flags & libc::O_ACCMODE as u32 != libc::O_RDONLY as u32
    }

    /// Opened for reading and writing (`FMODE_READ | FMODE_WRITE`).
    pub(crate) fn reads_and_writes(&self) -> bool {
        self.flags & libc::O_ACCMODE as u32 == libc::O_RDWR as u32
    }
}

/// The fields of a `/proc/PID/fdinfo/FD` text: flags, mount id, inode number (absent
/// before Linux 5.14).
fn parse_fdinfo(text: &str) -> Option<(u32, u64, Option<u64>)> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(':')))
            .map(str::trim)
    };
    let flags = u32::from_str_radix(field("flags")?, 8).ok()?;
    let mnt_id = field("mnt_id")?.parse().ok()?;
    let ino = field("ino").and_then(|v| v.parse().ok());
    Some((flags, mnt_id, ino))
}

/// Descriptor `fd` of process `pid`: `EBADF` when it is not open (or the process is
/// gone).
pub(crate) fn fd_info(pid: u32, fd: u32) -> Result<FdInfo, Errno> {
    let table = std::fs::read(proc_dir(pid).join("mountinfo")).map_err(|_| Errno::EBADF)?;
    fd_info_in(pid, fd, &mountinfo::entries(&table))
}

/// `/proc/PID`.
fn proc_dir(pid: u32) -> std::path::PathBuf {
    Path::new("/proc").join(pid.to_string())
}

/// [`fd_info`] with the process's mounts read already.
fn fd_info_in(pid: u32, fd: u32, mounts: &[mountinfo::Entry]) -> Result<FdInfo, Errno> {
    let proc = proc_dir(pid);
    let text = std::fs::read_to_string(proc.join("fdinfo").join(fd.to_string())).map_err(|_| Errno::EBADF)?;
    let (flags, mnt_id, ino) = parse_fdinfo(&text).ok_or(Errno::EBADF)?;
    let dev = mounts
        .iter()
        .find(|e| e.id == mnt_id)
        .map(|e| e.dev)
        .ok_or(Errno::EBADF)?;
    let ino = match ino {
        Some(ino) => ino,
        // Before Linux 5.14: the link's target, stat'ed (the kernel usually answers
        // from its cached attributes).
        None => {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(proc.join("fd").join(fd.to_string()))
                .map_err(|_| Errno::EBADF)?
                .ino()
        }
    };
    Ok(FdInfo { flags, dev, ino })
}

/// The descriptors of process `pid` open on inode `ino` of device `dev`.
pub(crate) fn fds_on(pid: u32, dev: (u32, u32), ino: u64) -> Vec<FdInfo> {
    let proc = proc_dir(pid);
    let (Ok(dir), Ok(table)) = (
        std::fs::read_dir(proc.join("fdinfo")),
        std::fs::read(proc.join("mountinfo")),
    ) else {
        return Vec::new();
    };
    let mounts = mountinfo::entries(&table);
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|fd| fd_info_in(pid, fd, &mounts).ok())
        .filter(|f| f.dev == dev && f.ino == ino)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fdinfo_is_parsed() {
        let text = "pos:\t0\nflags:\t0100002\nmnt_id:\t24\nino:\t3\n";
        assert_eq!(parse_fdinfo(text), Some((0o100002, 24, Some(3))));
        assert_eq!(parse_fdinfo("pos:\t0\nflags:\t02\nmnt_id:\t9\n"), Some((2, 9, None)));
        assert_eq!(parse_fdinfo("pos:\t0\n"), None);
    }

    #[test]
    fn this_process_descriptors_are_read() {
        use std::os::unix::fs::MetadataExt;
        use std::os::unix::io::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let meta = file.metadata().unwrap();
        let info = fd_info(std::process::id(), file.as_raw_fd() as u32).unwrap();
        assert_eq!(info.ino, meta.ino());
        assert_eq!(libc::makedev(info.dev.0, info.dev.1), meta.dev());
        assert!(info.writes() && info.reads_and_writes());
        let found = fds_on(std::process::id(), info.dev, info.ino);
        assert!(found.contains(&info));
        assert_eq!(fd_info(std::process::id(), 1 << 30), Err(Errno::EBADF));
    }
}
