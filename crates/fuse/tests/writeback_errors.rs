//! Write errors under FUSE's writeback cache reach the writer, through a real mount.
//!
//! With the writeback cache the kernel takes write(2) into its own page cache and
//! sends the WRITE requests later; an error the daemon returns for one of them is
//! kept on the file's mapping and must come back at `fsync(2)` or at `close(2)` (the
//! kernel's FLUSH writes the file's dirty pages back and checks the mapping), never be
//! lost. Each case mounts a volume with [`uf2fs_fuse::mount`] in this process, in
//! memory:
//! - a full volume: more is written than it holds, every write(2) succeeds (the cache
//!   took it), then `fsync` gives `ENOSPC`; a second file written past the free space
//!   and closed without fsync gives `ENOSPC` at close;
//! - a device that fails every data write from the first one on ([`FaultDevice`],
//!   sticky): `fsync` gives `EIO`, and a file written afterwards gives `EIO` at close
//!   (the stopped volume refuses the kernel's WRITEs).
//!
//! The same steps with nothing failing succeed, so the errors come from the faults.
//! And F2FS's atomic writes, whose staged pages the cache would send after the commit
//! or abort, are refused under it only.
//! Needs `/dev/fuse` and `fusermount3` (skipped without them unless
//! `UF2FS_REQUIRE_FUSE` is set).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use uf2fs_core::device::{BlockDevice, Fault, FaultDevice, FaultFilter, FaultPlan, MemDevice, WriteKind};
use uf2fs_core::mkfs::{mkfs_blocks, MkfsOptions};
use uf2fs_core::{Fs, OpenOptions as CoreOpen};
use uf2fs_fuse::MountOptions;

const ENOSPC: i32 = 28;
const EIO: i32 = 5;
const VOLUME: u64 = 256 << 20;

/// Whether FUSE can be used here; `false` (after saying why) only when it may be skipped.
fn fuse_available() -> bool {
    let required = std::env::var_os("UF2FS_REQUIRE_FUSE").is_some();
    let fusermount = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("fusermount3").is_file()))
        .unwrap_or(false);
    let missing = if !Path::new("/dev/fuse").exists() {
        Some("/dev/fuse does not exist")
    } else if !fusermount {
        Some("fusermount3 is not installed (Debian package fuse3)")
    } else {
        None
    };
    match missing {
        None => true,
        Some(why) if required => panic!("UF2FS_REQUIRE_FUSE is set but {why}"),
        Some(why) => {
            eprintln!("skipping FUSE test: {why} (set UF2FS_REQUIRE_FUSE=1 to make this a failure)");
            false
        }
    }
}

/// A fresh volume of [`VOLUME`] bytes in memory.
fn fresh_device() -> MemDevice {
    let (_, writes) = mkfs_blocks(&MkfsOptions::default(), VOLUME).unwrap();
    let mut image = vec![0u8; VOLUME as usize];
    for (addr, data) in writes {
        let at = addr as usize * 4096;
        image[at..at + data.len()].copy_from_slice(&data);
    }
    MemDevice::new(image)
}

/// A mount served by this process, unmounted when dropped.
struct Mounted {
    dir: tempfile::TempDir,
    served: Option<JoinHandle<io::Result<()>>>,
}

impl Mounted {
    fn start(dev: Box<dyn BlockDevice>, writeback_cache: bool) -> Mounted {
        let dir = tempfile::Builder::new().prefix("uf2fs-wberr-").tempdir().unwrap();
        let fs = Fs::open_device_with(dev, "mem", CoreOpen { read_write: true }).unwrap();
        let opts = MountOptions {
            writeback_cache,
            checkpoint_interval: None,
            ..Default::default()
        };
        let mnt = dir.path().to_path_buf();
        let served = std::thread::spawn(move || uf2fs_fuse::mount(fs, &mnt, &opts));
        let m = Mounted {
            dir,
            served: Some(served),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !m.is_mounted() {
            let failed = m.served.as_ref().is_some_and(|s| s.is_finished());
            assert!(!failed && Instant::now() < deadline, "the mount did not come up");
            std::thread::sleep(Duration::from_millis(20));
        }
        m
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn is_mounted(&self) -> bool {
        let want = std::fs::canonicalize(self.dir.path()).unwrap();
        std::fs::read_to_string("/proc/self/mountinfo")
            .unwrap()
            .lines()
            .any(|l| l.split(' ').nth(4) == Some(want.to_str().unwrap()))
    }

    /// Unmounts and waits for the session to end; the session's own result (the
    /// unmount checkpoint fails on a device that went bad).
    fn stop(&mut self) -> Option<io::Result<()>> {
        let served = self.served.take()?;
        if self.is_mounted() {
            let _ = Command::new("fusermount3").arg("-u").arg(self.dir.path()).status();
        }
        Some(served.join().expect("the session thread panicked"))
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if self.served.is_some() && self.is_mounted() {
            let _ = Command::new("fusermount3").arg("-uz").arg(self.dir.path()).status();
        }
    }
}

/// Writes `bytes` in 1 MiB write(2)s; every one must succeed.
fn write_all(file: &mut File, bytes: u64) {
    let chunk = vec![0x5au8; 1 << 20];
    for i in 0..bytes >> 20 {
        file.write_all(&chunk)
            .unwrap_or_else(|e| panic!("write(2) {i} failed under the writeback cache: {e}"));
    }
}

/// close(2) of `file`, with its result (std's drop ignores it).
fn close(file: File) -> io::Result<()> {
    nix::unistd::close(file).map_err(io::Error::from)
}

fn errno(result: io::Result<()>) -> Option<i32> {
    result.err().map(|e| e.raw_os_error().unwrap_or(-1))
}

fn create(m: &Mounted, name: &str) -> File {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(m.path(name))
        .unwrap()
}

#[test]
fn a_full_volume_gives_enospc_at_fsync_and_at_close() {
    if !fuse_available() {
        return;
    }
    // Nothing failing: the same steps within the free space succeed.
    let mut m = Mounted::start(Box::new(fresh_device()), true);
    let mut f = create(&m, "fits");
    write_all(&mut f, 8 << 20);
    f.sync_all().unwrap();
    close(f).unwrap();
    let mut g = create(&m, "fits-too");
    write_all(&mut g, 8 << 20);
    close(g).unwrap();
    m.stop().unwrap().unwrap();

    let mut m = Mounted::start(Box::new(fresh_device()), true);
    // Twice what the whole volume holds: only the page cache can have taken it.
    let mut f = create(&m, "too-big");
    write_all(&mut f, 2 * VOLUME);
    assert_eq!(
        errno(f.sync_all()),
        Some(ENOSPC),
        "fsync of a file the volume cannot hold"
    );
    drop(f);
    std::fs::remove_file(m.path("too-big")).unwrap();
    // Closed without fsync: close reports it.
    let mut g = create(&m, "too-big-closed");
    write_all(&mut g, 2 * VOLUME);
    assert_eq!(errno(close(g)), Some(ENOSPC), "close of a file the volume cannot hold");
    std::fs::remove_file(m.path("too-big-closed")).unwrap();
    // The volume goes on after the errors.
    std::fs::write(m.path("after"), b"still here").unwrap();
    assert_eq!(std::fs::read(m.path("after")).unwrap(), b"still here");
    m.stop().unwrap().unwrap();
}

#[test]
fn a_failing_device_gives_eio_at_fsync_and_at_close() {
    if !fuse_available() {
        return;
    }
    let data_writes = FaultFilter {
        area: None,
        kind: Some(WriteKind::UserData),
    };
    // Nothing failing (a plan that only counts): fsync and close succeed.
    let plan = FaultPlan::count_only(data_writes);
    let dev = FaultDevice::new(Box::new(fresh_device()), plan.clone()).unwrap();
    let mut m = Mounted::start(Box::new(dev), true);
    let mut f = create(&m, "a");
    write_all(&mut f, 4 << 20);
    f.sync_all().unwrap();
    close(f).unwrap();
    let mut g = create(&m, "b");
    write_all(&mut g, 4 << 20);
    close(g).unwrap();
    m.stop().unwrap().unwrap();
    assert!(plan.counts().write_calls > 0, "the data reached the device");

    // The first data write fails, and every write after it. Both files are made
    // first: the stopped volume takes no new name.
    let plan = FaultPlan::new(data_writes, Fault::WriteCall(0)).sticky();
    let dev = FaultDevice::new(Box::new(fresh_device()), plan.clone()).unwrap();
    let mut m = Mounted::start(Box::new(dev), true);
    let mut f = create(&m, "a");
    let mut g = create(&m, "b");
    write_all(&mut f, 4 << 20);
    assert_eq!(errno(f.sync_all()), Some(EIO), "fsync over a failing device");
    assert!(plan.fired().is_some(), "the fault fired");
    drop(f);
    // Written after the volume stopped: the cache takes it, close reports it.
    write_all(&mut g, 4 << 20);
    assert_eq!(errno(close(g)), Some(EIO), "close over a stopped volume");
    // The unmount checkpoint cannot be written: the session says so.
    assert!(m.stop().unwrap().is_err(), "the unmount reported the failed device");
}

/// `ioctl(fd, request)` with no argument on `path` (opened read-write), by python3's
/// `fcntl.ioctl` as mount_ioctl.rs does (the crates forbid `unsafe`): the errno, or
/// `None` on success. The requests are made in one process, on one descriptor.
fn ioctl_errnos(path: &Path, requests: &[u32]) -> Vec<Option<i32>> {
    let script = "import fcntl, os, sys\n\
                  fd = os.open(sys.argv[1], os.O_RDWR)\n\
                  for r in sys.argv[2:]:\n\
                  \x20   try:\n\
                  \x20       fcntl.ioctl(fd, int(r))\n\
                  \x20       print(0)\n\
                  \x20   except OSError as e:\n\
                  \x20       print(e.errno)\n";
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(path)
        .args(requests.iter().map(u32::to_string))
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "python3: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| Some(l.trim().parse::<i32>().unwrap()).filter(|&e| e != 0))
        .collect()
}

#[test]
fn atomic_writes_are_refused_under_the_writeback_cache_only() {
    if !fuse_available() {
        return;
    }
    const START_ATOMIC_WRITE: u32 = 0xf501;
    const START_ATOMIC_REPLACE: u32 = 0xf519;
    const ABORT_ATOMIC_WRITE: u32 = 0xf505;
    const EOPNOTSUPP: i32 = 95;
    // Without the cache they work: started, then aborted.
    let mut m = Mounted::start(Box::new(fresh_device()), false);
    drop(create(&m, "db"));
    assert_eq!(
        ioctl_errnos(&m.path("db"), &[START_ATOMIC_WRITE, ABORT_ATOMIC_WRITE]),
        [None, None]
    );
    m.stop().unwrap().unwrap();
    // With it, the kernel would send the staged pages after a commit or an abort.
    let mut m = Mounted::start(Box::new(fresh_device()), true);
    drop(create(&m, "db"));
    assert_eq!(
        ioctl_errnos(&m.path("db"), &[START_ATOMIC_WRITE, START_ATOMIC_REPLACE]),
        [Some(EOPNOTSUPP), Some(EOPNOTSUPP)]
    );
    m.stop().unwrap().unwrap();
}
