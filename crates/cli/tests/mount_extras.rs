//! What Linux F2FS does beyond files and names, through the mount, checked with the
//! tools fstests uses:
//!
//! - inode flags: `chattr` and `lsattr` (FS_IOC_SETFLAGS/GETFLAGS) and `xfs_io
//!   chattr`/`lsattr` (FS_IOC_FSSETXATTR/FSGETXATTR); immutable and append-only files
//!   and directories refused what Linux refuses them (EPERM), the other flags kept, the
//!   flags F2FS refuses refused with its errnos, `CAP_LINUX_IMMUTABLE` required; then
//!   `fsck.f2fs -f` clean, `dump.f2fs` reading the `i_flags` written (F2FS stores the
//!   `FS_*_FL` values), and a second mount keeping and enforcing them;
//! - file handles (`open_by_handle_at`) across an unmount;
//! - the volume label (`xfs_io label`, FS_IOC_GETFSLABEL/SETFSLABEL), read back by
//!   `blkid` and `uf2fs info`, with and without superblock checksums;
//! - access times as the mount options and remounts set them, and append-only files
//!   under the writeback cache;
//! - a loop device made and mounted as fstests' TEST_DEV and SCRATCH_DEV are (skipped
//!   with a message when `losetup` cannot make one).
//!
//! Needs /dev/fuse, fusermount3, chattr/lsattr (e2fsprogs), xfs_io (xfsprogs),
//! setfattr (attr), setpriv, blkid and losetup (util-linux), python3. Without /dev/fuse the
//! tests print why and pass, unless UF2FS_REQUIRE_FUSE is set (CI sets it), in which
//! case they fail.

mod common;

use common::fsck;
use common::mount::{fresh_volume, fuse_available, Mounted, Volume};
use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::process::Command;
use uf2fs_testkit::image::tool;

const EPERM: i32 = 1;

/// Runs `argv` then `path`; its success and what it printed (stdout and stderr).
fn run(argv: &[&str], path: &Path) -> (bool, String) {
    let out = Command::new(argv[0])
        .args(&argv[1..])
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Runs `argv` on `path` and panics unless it succeeds; returns its output.
fn ok(argv: &[&str], path: &Path) -> String {
    let (success, text) = run(argv, path);
    assert!(success, "{argv:?} {}: {text}", path.display());
    text
}

/// Runs `argv` on `path` and panics unless it fails saying `why`.
fn refused(argv: &[&str], path: &Path, why: &str) {
    let (success, text) = run(argv, path);
    assert!(!success, "{argv:?} {} succeeded: {text}", path.display());
    assert!(text.contains(why), "{argv:?} {}: {text}", path.display());
}

/// The flag letters `lsattr` shows for `path` (the first column).
fn lsattr(path: &Path) -> String {
    let text = ok(&["lsattr", "-d"], path);
    text.split_whitespace().next().unwrap_or_default().to_owned()
}

/// The errno of a failed call, panicking on success.
fn errno<T: std::fmt::Debug>(r: std::io::Result<T>, what: &str) -> i32 {
    match r {
        Ok(v) => panic!("{what} succeeded: {v:?}"),
        Err(e) => e.raw_os_error().unwrap_or(0),
    }
}

/// The `i_flags` dump.f2fs reads for inode `ino` of `img` (a copy: dump.f2fs may
/// write).
fn dumped_flags(img: &Path, work: &Path, ino: u64) -> u32 {
    let copy = work.join("dump.img");
    fs::copy(img, &copy).unwrap();
    let out = Command::new(tool("dump.f2fs"))
        .args(["-i", &ino.to_string()])
        .arg(&copy)
        .output()
        .expect("run dump.f2fs");
    fs::remove_file(&copy).unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("i_flags"))
        .unwrap_or_else(|| panic!("no i_flags in dump.f2fs -i {ino}: {text}"));
    // i_flags    [0x      10 : 16]
    let decimal = line.rsplit(':').next().unwrap().trim().trim_end_matches(']').trim();
    decimal.parse().unwrap_or_else(|e| panic!("{line}: {e}"))
}

#[test]
fn inode_flags_are_kept_and_enforced_as_f2fs_does() {
    if !fuse_available(&[
        ("chattr", "e2fsprogs"),
        ("lsattr", "e2fsprogs"),
        ("xfs_io", "xfsprogs"),
        ("setfattr", "attr"),
        ("setpriv", "util-linux"),
    ]) {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipping: CAP_LINUX_IMMUTABLE and another user need root");
        return;
    }
    let Volume { tmp, img, mnt } = fresh_volume("mount-flags-", "64M");
    let log = tmp.path().join("mount.log");
    let mut m = Mounted::start(&img, &mnt, &log, &["-o", "allow_other"]);
    fs::set_permissions(&mnt, fs::Permissions::from_mode(0o777)).unwrap();
    let f = mnt.join("f");
    let d = mnt.join("d");
    fs::write(&f, b"hello").unwrap();
    fs::create_dir(&d).unwrap();
    fs::write(d.join("inner"), b"x").unwrap();

    // Immutable, set as fstests sets it (FS_IOC_FSSETXATTR) and seen both ways.
    ok(&["xfs_io", "-r", "-c", "chattr +i"], &f);
    assert!(lsattr(&f).contains('i'), "{}", lsattr(&f));
    assert!(ok(&["xfs_io", "-r", "-c", "lsattr"], &f).contains('i'));
    let open_rw = fs::OpenOptions::new().write(true).open(&f);
    assert_eq!(errno(open_rw, "open of an immutable file for writing"), EPERM);
    let open_append = fs::OpenOptions::new().append(true).open(&f);
    assert_eq!(errno(open_append, "open of an immutable file to append"), EPERM);
    assert_eq!(errno(fs::remove_file(&f), "unlink of an immutable file"), EPERM);
    assert_eq!(errno(fs::rename(&f, mnt.join("g")), "rename"), EPERM);
    assert_eq!(errno(fs::hard_link(&f, mnt.join("h")), "link"), EPERM);
    let chmod = fs::set_permissions(&f, fs::Permissions::from_mode(0o600));
    assert_eq!(errno(chmod, "chmod"), EPERM);
    refused(&["touch"], &f, "Operation not permitted");
    refused(&["setfattr", "-n", "user.x", "-v", "1"], &f, "Operation not permitted");
    // A file opened for writing before the flag was set cannot write either (F2FS's
    // write checks), nor allocate. Under FUSE's writeback cache (the default) the
    // kernel takes the write(2) into its page cache and the adapter's EPERM reaches
    // the writer at fsync (or close); without it, at write(2) as on F2FS.
    ok(&["chattr", "-i"], &f);
    let mut early = fs::OpenOptions::new().write(true).open(&f).unwrap();
    ok(&["chattr", "+i"], &f);
    let refused_at = match early.write_all(b"overwrite") {
        Err(e) => e.raw_os_error(),
        Ok(()) => early.sync_all().err().and_then(|e| e.raw_os_error()),
    };
    assert_eq!(refused_at, Some(EPERM), "write to an immutable file");
    drop(early);
    refused(&["fallocate", "-l", "8192"], &f, "Operation not permitted");
    // Nothing was written. Under the writeback cache the kernel keeps the size the
    // refused write(2) gave the file (it trusts its own size of a cached file) until
    // the inode leaves its cache, as after any failed write-back: the bytes past the
    // stored ones read as zeros. The image has only what was stored.
    let now = fs::read(&f).unwrap();
    assert_eq!(&now[..5], b"hello");
    assert!(now[5..].iter().all(|&b| b == 0), "{now:?}");
    let (unmounted, log_text) = m.unmount();
    assert!(unmounted, "{log_text}");
    drop(m);
    m = Mounted::start(&img, &mnt, &log, &["-o", "allow_other"]);
    assert_eq!(fs::read(&f).unwrap(), b"hello");
    ok(&["chattr", "-i"], &f);
    assert!(!lsattr(&f).contains('i'));

    // An immutable directory: no new names, no removals.
    ok(&["chattr", "+i"], &d);
    assert_eq!(
        errno(fs::write(d.join("new"), b"1"), "create in an immutable dir"),
        EPERM
    );
    assert_eq!(errno(fs::create_dir(d.join("sub")), "mkdir"), EPERM);
    assert_eq!(errno(fs::remove_file(d.join("inner")), "unlink"), EPERM);
    assert_eq!(errno(fs::rename(d.join("inner"), mnt.join("out")), "rename"), EPERM);
    // Its files' data stay writable.
    fs::write(d.join("inner"), b"y").unwrap();
    ok(&["chattr", "-i"], &d);

    // Append-only: appends only.
    ok(&["chattr", "+a"], &f);
    let mut a = fs::OpenOptions::new().append(true).open(&f).unwrap();
    a.write_all(b" world").unwrap();
    drop(a);
    let open_rw = fs::OpenOptions::new().write(true).open(&f);
    assert_eq!(errno(open_rw, "open of an append-only file without O_APPEND"), EPERM);
    let open_trunc = fs::OpenOptions::new().append(true).custom_flags(libc::O_TRUNC).open(&f);
    assert_eq!(errno(open_trunc, "open with O_TRUNC"), EPERM);
    refused(&["truncate", "-s", "0"], &f, "Operation not permitted");
    refused(
        &["fallocate", "-p", "-o", "0", "-l", "4096"],
        &f,
        "Operation not permitted",
    );
    assert_eq!(errno(fs::remove_file(&f), "unlink of an append-only file"), EPERM);
    refused(&["setfattr", "-n", "user.x", "-v", "1"], &f, "Operation not permitted");
    ok(&["touch"], &f); // the current time: allowed
    refused(&["touch", "-d", "2001-02-03"], &f, "Operation not permitted");
    assert_eq!(fs::read(&f).unwrap(), b"hello world");

    // An append-only directory: new names, but none removed.
    ok(&["chattr", "+a"], &d);
    fs::write(d.join("added"), b"1").unwrap();
    assert_eq!(errno(fs::remove_file(d.join("added")), "unlink"), EPERM);
    ok(&["chattr", "-a"], &d);
    fs::remove_file(d.join("added")).unwrap();

    // The other flags are kept; those the volume cannot have are refused as F2FS
    // refuses them (no casefold or compression feature here).
    ok(&["chattr", "+dAS"], &d);
    assert_eq!(&lsattr(&d)[..8], "--S---dA", "{}", lsattr(&d));
    fs::write(d.join("child"), b"1").unwrap();
    assert_eq!(&lsattr(&d.join("child"))[..8], "--S---dA", "inherited");
    refused(&["chattr", "+F"], &d, "Operation not supported");
    refused(&["chattr", "+c"], &d, "Operation not supported");
    refused(&["xfs_io", "-r", "-c", "chattr +x"], &d, "Operation not supported");

    // Only with CAP_LINUX_IMMUTABLE: nobody may set nodump on its file, not immutable.
    let g = mnt.join("g");
    fs::write(&g, b"nobody's").unwrap();
    nix::unistd::chown(&g, Some(65534.into()), Some(65534.into())).unwrap();
    let nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"];
    ok(&[&nobody[..], &["chattr", "+d"]].concat(), &g);
    refused(
        &[&nobody[..], &["chattr", "+i"]].concat(),
        &g,
        "Operation not permitted",
    );
    assert!(!lsattr(&g).contains('i'));

    ok(&["chattr", "+i"], &g);
    let inos = [f.clone(), d.clone(), g.clone()].map(|p| fs::metadata(p).unwrap().ino());
    let (unmounted, text) = m.unmount();
    assert!(unmounted, "{text}");
    fsck::unmounted(&img, tmp.path(), "after the flags");
    // FS_APPEND_FL, FS_SYNC_FL | FS_NODUMP_FL | FS_NOATIME_FL | FS_INDEX_FL,
    // FS_NODUMP_FL | FS_IMMUTABLE_FL: F2FS's i_flags values.
    assert_eq!(dumped_flags(&img, tmp.path(), inos[0]), 0x20);
    assert_eq!(dumped_flags(&img, tmp.path(), inos[1]), 0x10c8);
    assert_eq!(dumped_flags(&img, tmp.path(), inos[2]), 0x50);

    // Kept and enforced by the next mount.
    let mut m = Mounted::start(&img, &mnt, &log, &[]);
    assert!(lsattr(&g).contains('i'));
    assert_eq!(errno(fs::remove_file(&g), "unlink after a remount"), EPERM);
    ok(&["chattr", "-i"], &g);
    fs::remove_file(&g).unwrap();
    let (unmounted, text) = m.unmount();
    assert!(unmounted, "{text}");
    fsck::unmounted(&img, tmp.path(), "after the second mount");
}

/// Saves file handles (`name_to_handle_at`) of paths, or opens saved ones
/// (`open_by_handle_at`) and prints what each gives: its first bytes, `dir`, or the
/// errno's name. Python's ctypes calls libc, as the tests may not use unsafe code.
const HANDLES_PY: &str = r#"
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class Handle(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_uint), ("type", ctypes.c_int), ("f", ctypes.c_ubyte * 128)]
cmd, mnt, store = sys.argv[1:4]
if cmd == "save":
    out = []
    for path in sys.argv[4:]:
        h = Handle(bytes=128)
        mount_id = ctypes.c_int()
        if libc.name_to_handle_at(-100, path.encode(), ctypes.byref(h), ctypes.byref(mount_id), 0):
            sys.exit("name_to_handle_at %s: %s" % (path, os.strerror(ctypes.get_errno())))
        out.append(bytes(h).hex())
    open(store, "w").write("\n".join(out))
else:
    mfd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
    for line in open(store).read().split():
        h = Handle.from_buffer_copy(bytes.fromhex(line))
        fd = libc.open_by_handle_at(mfd, ctypes.byref(h), os.O_RDONLY)
        if fd < 0:
            print(errno.errorcode[ctypes.get_errno()])
        elif os.path.isdir("/proc/self/fd/%d" % fd):
            print("dir")
        else:
            print(os.read(fd, 64).decode())
"#;

/// `python3 -c HANDLES_PY ARGS...`; panics unless it succeeds; its output.
fn handles(args: &[&Path]) -> String {
    let out = Command::new("python3")
        .args(["-c", HANDLES_PY])
        .args(args)
        .output()
        .expect("run python3");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    text
}

/// fstests generic/426, 467, 477: file handles (`open_by_handle_at`, NFS export) of a
/// file and a directory open their inode once the kernel has forgotten it, here across
/// an unmount; a removed file's handle is stale (ESTALE), as on Linux F2FS.
#[test]
fn file_handles_outlive_the_kernels_cache() {
    if !fuse_available(&[("python3", "python3")]) {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipping: open_by_handle_at needs CAP_DAC_READ_SEARCH");
        return;
    }
    let Volume { tmp, img, mnt } = fresh_volume("mount-handles-", "64M");
    let log = tmp.path().join("mount.log");
    let store = tmp.path().join("handles");
    let mut m = Mounted::start(&img, &mnt, &log, &[]);
    fs::write(mnt.join("kept"), b"kept data").unwrap();
    fs::create_dir(mnt.join("dir")).unwrap();
    fs::write(mnt.join("dir/inner"), b"inner data").unwrap();
    fs::write(mnt.join("gone"), b"gone data").unwrap();
    let save = |paths: &[&str]| {
        let paths: Vec<_> = paths.iter().map(|p| mnt.join(p)).collect();
        let mut args: Vec<&Path> = vec![Path::new("save"), &mnt, &store];
        args.extend(paths.iter().map(|p| p.as_path()));
        handles(&args);
    };
    save(&["kept", "dir", "dir/inner", "gone"]);
    let opened = handles(&[Path::new("open"), &mnt, &store]);
    assert_eq!(opened, "kept data\ndir\ninner data\ngone data\n");
    fs::remove_file(mnt.join("gone")).unwrap();
    let (unmounted, text) = m.unmount();
    assert!(unmounted, "{text}");
    fsck::unmounted(&img, tmp.path(), "after saving handles");

    let mut m = Mounted::start(&img, &mnt, &log, &[]);
    let opened = handles(&[Path::new("open"), &mnt, &store]);
    assert_eq!(opened, "kept data\ndir\ninner data\nESTALE\n");
    let (unmounted, text) = m.unmount();
    assert!(unmounted, "{text}");
    fsck::unmounted(&img, tmp.path(), "after opening by handle");
}

/// `blkid`'s reading of the label of `img`.
fn blkid_label(img: &Path) -> String {
    let out = Command::new("blkid")
        .args(["-p", "-s", "LABEL", "-o", "value"])
        .arg(img)
        .output()
        .expect("run blkid");
    String::from_utf8_lossy(&out.stdout).trim_end().to_owned()
}

/// fstests generic/492's sequence: `xfs_io label` sets and reads the superblock's
/// volume name as Linux F2FS does (255 bytes at most, `EINVAL` beyond, root only),
/// both superblock copies written (with their checksum under sb_checksum), kept across
/// an unmount; `blkid` and `uf2fs info` read it from the image.
#[test]
fn volume_label_is_the_superblocks() {
    if !fuse_available(&[
        ("xfs_io", "xfsprogs"),
        ("blkid", "util-linux"),
        ("setpriv", "util-linux"),
    ]) {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipping: setting a label needs CAP_SYS_ADMIN");
        return;
    }
    for features in [&[][..], &["-O", "sb_checksum"][..]] {
        let volume = Volume::empty("mount-label-");
        volume.mkfs("64M", features);
        let Volume { tmp, img, mnt } = volume;
        let log = tmp.path().join("mount.log");
        let mut m = Mounted::start(&img, &mnt, &log, &["-o", "allow_other"]);
        assert_eq!(ok(&["xfs_io", "-c", "label"], &mnt), "label = \"\"\n");
        assert_eq!(
            ok(&["xfs_io", "-c", "label -s label.492"], &mnt),
            "label = \"label.492\"\n"
        );
        assert_eq!(ok(&["xfs_io", "-c", "label -c"], &mnt), "label = \"\"\n");
        let longest = "o".repeat(255);
        let set_longest = format!("label -s {longest}");
        assert!(ok(&["xfs_io", "-c", &set_longest], &mnt).contains(&longest));
        let too_long = format!("label -s {longest}o");
        refused(&["xfs_io", "-c", &too_long], &mnt, "Invalid argument");
        let nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"];
        let (_, text) = run(&[&nobody[..], &["xfs_io", "-r", "-c", "label -s mine"]].concat(), &mnt);
        assert!(text.contains("Operation not permitted"), "{text}");
        ok(&["xfs_io", "-c", "label -s héllo.492"], &mnt);
        let (unmounted, text) = m.unmount();
        assert!(unmounted, "{text}");
        fsck::unmounted(&img, tmp.path(), "after a label change");
        assert_eq!(blkid_label(&img), "héllo.492");
        let info = common::uf2fs().run(["info".as_ref(), img.as_os_str()]);
        info.assert_ok();
        assert!(info.out().contains("héllo.492"), "{}", info.out());
        let mut m = Mounted::start(&img, &mnt, &log, &[]);
        assert_eq!(ok(&["xfs_io", "-c", "label"], &mnt), "label = \"héllo.492\"\n");
        let (unmounted, text) = m.unmount();
        assert!(unmounted, "{text}");
    }
}

/// `renameat2(AT_FDCWD, FROM, AT_FDCWD, TO, FLAGS)` through python3's ctypes: `ok` or
/// the errno's name.
fn renameat2(from: &Path, to: &Path, flags: u32, as_nobody: bool) -> String {
    let script = "import ctypes, errno, sys\n\
        libc = ctypes.CDLL(None, use_errno=True)\n\
        r = libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), int(sys.argv[3]))\n\
        print('ok' if r == 0 else errno.errorcode[ctypes.get_errno()])";
    let mut cmd = if as_nobody {
        let mut c = Command::new("setpriv");
        // The system interpreter: a per-user shim may not be readable by nobody.
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3"]);
        c
    } else {
        Command::new("python3")
    };
    let out = cmd
        .args(["-c", script])
        .arg(from)
        .arg(to)
        .arg(flags.to_string())
        .output()
        .expect("run python3");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// fstests generic/078, 585, 626, 700: `RENAME_WHITEOUT` (overlayfs's) leaves the
/// source name naming a whiteout, a character device 0:0 with mode 0 owned by the
/// caller (the group of a set-group-ID directory), as Linux F2FS does; refused with
/// `RENAME_EXCHANGE` (EINVAL); the image stays fsck-clean.
#[test]
fn whiteout_renames_leave_whiteouts() {
    if !fuse_available(&[("python3", "python3"), ("setpriv", "util-linux")]) {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipping: switching to another user needs root");
        return;
    }
    const WHITEOUT: u32 = 4;
    const EXCHANGE: u32 = 2;
    let Volume { tmp, img, mnt } = fresh_volume("mount-whiteout-", "64M");
    let log = tmp.path().join("mount.log");
    let mut m = Mounted::start(&img, &mnt, &log, &["-o", "allow_other"]);
    let whiteout = |p: &Path| {
        let meta = fs::symlink_metadata(p).unwrap();
        (meta.mode(), meta.rdev(), meta.uid(), meta.gid(), meta.nlink())
    };
    fs::write(mnt.join("a"), b"data").unwrap();
    assert_eq!(renameat2(&mnt.join("a"), &mnt.join("b"), WHITEOUT, false), "ok");
    assert_eq!(fs::read(mnt.join("b")).unwrap(), b"data");
    assert_eq!(whiteout(&mnt.join("a")), (0o020000, 0, 0, 0, 1));
    // Over an existing target; exchange refused.
    fs::write(mnt.join("c"), b"c").unwrap();
    assert_eq!(renameat2(&mnt.join("c"), &mnt.join("b"), WHITEOUT, false), "ok");
    assert_eq!(fs::read(mnt.join("b")).unwrap(), b"c");
    let both = WHITEOUT | EXCHANGE;
    assert_eq!(renameat2(&mnt.join("b"), &mnt.join("a"), both, false), "EINVAL");
    // Made by another user in a set-group-ID directory.
    let d = mnt.join("d");
    fs::create_dir(&d).unwrap();
    fs::set_permissions(&d, fs::Permissions::from_mode(0o2777)).unwrap();
    nix::unistd::chown(&d, None, Some(4242.into())).unwrap();
    fs::write(d.join("x"), b"x").unwrap();
    nix::unistd::chown(&d.join("x"), Some(65534.into()), None).unwrap();
    assert_eq!(renameat2(&d.join("x"), &d.join("y"), WHITEOUT, true), "ok");
    assert_eq!(whiteout(&d.join("x")), (0o020000, 0, 65534, 4242, 1));
    let (unmounted, text) = m.unmount();
    assert!(unmounted, "{text}");
    fsck::unmounted(&img, tmp.path(), "after whiteout renames");
    let mut m = Mounted::start(&img, &mnt, &log, &["-o", "ro"]);
    assert_eq!(whiteout(&mnt.join("a")), (0o020000, 0, 0, 0, 1));
    assert_eq!(whiteout(&d.join("x")), (0o020000, 0, 65534, 4242, 1));
    let (unmounted, text) = m.unmount();
    assert!(unmounted, "{text}");
}

/// (atime, mtime, ctime) of `path` in nanoseconds.
fn times(path: &Path) -> (i128, i128, i128) {
    let m = fs::metadata(path).unwrap();
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    (
        ns(m.atime(), m.atime_nsec()),
        ns(m.mtime(), m.mtime_nsec()),
        ns(m.ctime(), m.ctime_nsec()),
    )
}

/// Reads `path` whole through a new descriptor.
fn read(path: &Path) {
    fs::read(path).unwrap();
}

/// fstests generic/003's sequence: `relatime` by default (a read updates the access
/// time once after a change, not again; nothing else changes), `noatime`,
/// `strictatime` (every read), `nodiratime`, `chattr +A`, and nothing on a read-only
/// mount; the times survive the unmount.
#[test]
fn access_times_follow_the_mount_options() {
    if !fuse_available(&[("chattr", "e2fsprogs")]) {
        return;
    }
    let Volume { tmp, img, mnt } = fresh_volume("mount-atime-", "64M");
    let log = tmp.path().join("mount.log");
    let pause = || std::thread::sleep(std::time::Duration::from_millis(1100));
    let f = mnt.join("f");
    let d = mnt.join("d");

    let mut m = Mounted::start(&img, &mnt, &log, &[]);
    let mounts = fs::read_to_string("/proc/mounts").unwrap();
    assert!(
        mounts
            .lines()
            .any(|l| l.contains(mnt.to_str().unwrap()) && l.contains("relatime")),
        "{mounts}"
    );
    fs::create_dir(&d).unwrap();
    fs::write(&f, b"aaa").unwrap();
    let written = times(&f);
    pause();
    read(&f);
    let first = times(&f);
    assert!(
        first.0 > written.0,
        "relatime: the first read after a write updates atime"
    );
    assert_eq!((first.1, first.2), (written.1, written.2), "only atime changes");
    pause();
    read(&f);
    assert_eq!(times(&f), first, "relatime: a second read does not");
    let listed = times(&d);
    pause();
    fs::read_dir(&d).unwrap().for_each(drop);
    let dir_first = times(&d);
    assert!(dir_first.0 > listed.0, "a listing updates the directory's atime");
    // chattr +A: never.
    fs::write(&f, b"bbb").unwrap();
    Command::new("chattr").arg("+A").arg(&f).status().unwrap();
    let flagged = times(&f);
    pause();
    read(&f);
    assert_eq!(times(&f).0, flagged.0, "FS_NOATIME_FL");
    Command::new("chattr").arg("-A").arg(&f).status().unwrap();
    let (unmounted, text) = m.unmount();
    assert!(unmounted, "{text}");
    fsck::unmounted(&img, tmp.path(), "after access time updates");

    // noatime: never; nodiratime: not directories.
    let mut m = Mounted::start(&img, &mnt, &log, &["-o", "noatime"]);
    assert_eq!(times(&f).0, flagged.0, "kept across the unmount");
    fs::write(&f, b"ccc").unwrap();
    let before = times(&f);
    pause();
    read(&f);
    assert_eq!(times(&f), before, "noatime");
    m.unmount();
    let mut m = Mounted::start(&img, &mnt, &log, &["-o", "nodiratime"]);
    fs::write(d.join("new"), b"1").unwrap();
    let before = times(&d);
    pause();
    fs::read_dir(&d).unwrap().for_each(drop);
    assert_eq!(times(&d), before, "nodiratime");
    m.unmount();

    // strictatime: every read.
    let mut m = Mounted::start(&img, &mnt, &log, &["-o", "strictatime"]);
    let before = times(&f);
    pause();
    read(&f);
    let second = times(&f);
    assert!(second.0 > before.0, "strictatime: read after read");
    pause();
    read(&f);
    assert!(times(&f).0 > second.0, "strictatime: and again");
    let last = times(&f);
    m.unmount();

    // Read-only: never.
    let mut m = Mounted::start(&img, &mnt, &log, &["-o", "ro,strictatime"]);
    pause();
    read(&f);
    assert_eq!(times(&f), last, "a read-only mount");
    m.unmount();
    fsck::unmounted(&img, tmp.path(), "after the atime mounts");
}

/// fstests generic/430-433's operations: `copy_file_range` (`xfs_io copy_range`)
/// within the mount copies the source range, up to the source's end, to the target
/// offset, growing the target or writing inside it, as the kernel's own copy through
/// the page cache would; then fsck-clean, and the same data after a remount.
#[test]
fn copy_file_range_copies_the_range() {
    if !fuse_available(&[("xfs_io", "xfsprogs")]) {
        return;
    }
    let Volume { tmp, img, mnt } = fresh_volume("mount-copy-", "256M");
    let log = tmp.path().join("mount.log");
    let mut m = Mounted::start(&img, &mnt, &log, &[]);
    let src: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 + i / 4096) as u8).collect();
    fs::write(mnt.join("src"), &src).unwrap();
    let copy = |args: &str, dst: &str| {
        ok(
            &[
                "xfs_io",
                "-f",
                "-c",
                &format!("copy_range {args} {}", mnt.join("src").display()),
            ],
            &mnt.join(dst),
        )
    };
    // Into a new file, past its end: zeros before the offset.
    copy("-s 1000 -d 5000 -l 2000000", "a");
    let mut want_a = vec![0u8; 5000];
    want_a.extend_from_slice(&src[1000..2_001_000]);
    // Past the source's end: only what is there.
    copy("-s 2999000 -l 100000", "b");
    let want_b = src[2_999_000..].to_vec();
    // Inside a larger file: its size stays.
    let mut want_c = vec![9u8; 4_000_000];
    fs::write(mnt.join("c"), &want_c).unwrap();
    copy("-s 0 -d 4096 -l 1500000", "c");
    want_c[4096..4096 + 1_500_000].copy_from_slice(&src[..1_500_000]);
    for (name, want) in [("a", &want_a), ("b", &want_b), ("c", &want_c)] {
        assert!(fs::read(mnt.join(name)).unwrap() == *want, "{name} after the copy");
    }
    let (unmounted, text) = m.unmount();
    assert!(unmounted, "{text}");
    fsck::unmounted(&img, tmp.path(), "after copy_file_range");
    let mut m = Mounted::start(&img, &mnt, &log, &["-o", "ro"]);
    for (name, want) in [("a", &want_a), ("b", &want_b), ("c", &want_c)] {
        assert!(fs::read(mnt.join(name)).unwrap() == *want, "{name} after a remount");
    }
    let (unmounted, text) = m.unmount();
    assert!(unmounted, "{text}");
}

/// The per-mount options /proc/self/mountinfo shows for the mount at `mnt`.
fn mount_flags(mnt: &Path) -> String {
    let table = fs::read_to_string("/proc/self/mountinfo").unwrap();
    let point = mnt.to_str().unwrap();
    table
        .lines()
        .rev()
        .find(|l| l.split(' ').nth(4) == Some(point))
        .and_then(|l| l.split(' ').nth(5))
        .unwrap_or_else(|| panic!("no mount at {point}: {table}"))
        .to_owned()
}

/// `mount -t fuse.uf2fs -o remount,...` as mount(8) runs it: the uf2fs binary under
/// the helper's name, with the mount's current options before the new ones.
fn remount(helper: &Path, img: &Path, mnt: &Path, options: &str) {
    let out = Command::new(helper)
        .arg(img)
        .arg(mnt)
        .arg("-o")
        .arg(options)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "remount {options}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A remount changes the access-time rule of the running mount, as on Linux: the
/// kernel tells the FUSE daemon nothing, the daemon follows its mount's flags in the
/// mount table. `noatime`, then `strictatime`, then `ro` (no update), `rw,relatime`;
/// a mount made with `strictatime` shows it in the table.
#[test]
fn remounts_change_access_times() {
    if !fuse_available(&[]) {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipping: remounting needs root");
        return;
    }
    let Volume { tmp, img, mnt } = fresh_volume("mount-remount-", "64M");
    let log = tmp.path().join("mount.log");
    let helper = tmp.path().join("mount.fuse.uf2fs");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_uf2fs"), &helper).unwrap();
    let pause = || std::thread::sleep(std::time::Duration::from_millis(1100));
    let f = mnt.join("f");

    let mut m = Mounted::start(&img, &mnt, &log, &[]);
    assert!(mount_flags(&mnt).contains("relatime"), "{}", mount_flags(&mnt));
    fs::write(&f, b"a").unwrap();
    remount(&helper, &img, &mnt, "rw,relatime,remount,noatime");
    assert!(mount_flags(&mnt).contains("noatime"), "{}", mount_flags(&mnt));
    let before = times(&f);
    pause();
    read(&f);
    assert_eq!(times(&f), before, "noatime after the remount: a read after a write");

    remount(&helper, &img, &mnt, "rw,noatime,remount,strictatime");
    let flags = mount_flags(&mnt);
    assert!(!flags.contains("atime"), "{flags}");
    pause();
    read(&f);
    let first = times(&f);
    assert!(first.0 > before.0, "strictatime after the remount");
    pause();
    read(&f);
    let second = times(&f);
    assert!(second.0 > first.0, "strictatime: read after read");

    remount(&helper, &img, &mnt, "rw,remount,ro");
    pause();
    read(&f);
    assert_eq!(times(&f), second, "remounted read-only: no update");
    remount(&helper, &img, &mnt, "ro,remount,rw,relatime");
    pause();
    read(&f);
    assert_eq!(times(&f), second, "relatime: read since the last change");
    fs::write(&f, b"b").unwrap();
    let written = times(&f);
    pause();
    read(&f);
    assert!(times(&f).0 > written.0, "relatime: the first read after a write");
    let (unmounted, text) = m.unmount();
    assert!(unmounted, "{text}");
    fsck::unmounted(&img, tmp.path(), "after the remounts");

    // Made with strictatime: the table says so (no relatime), and remount,relatime
    // brings relatime back.
    let mut m = Mounted::start(&img, &mnt, &log, &["-o", "strictatime"]);
    fs::metadata(&mnt).unwrap();
    let flags = mount_flags(&mnt);
    assert!(!flags.contains("atime"), "{flags}");
    read(&f);
    let first = times(&f);
    pause();
    read(&f);
    assert!(times(&f).0 > first.0, "strictatime");
    remount(&helper, &img, &mnt, &format!("{flags},remount,relatime"));
    let again = times(&f);
    pause();
    read(&f);
    assert_eq!(times(&f), again, "relatime after the remount");
    let (unmounted, text) = m.unmount();
    assert!(unmounted, "{text}");
    fsck::unmounted(&img, tmp.path(), "after the strictatime mount");
}

/// An append-only file under `-o writeback_cache`, where the kernel keeps the times of
/// writes and sends them later as explicit times: appends and `touch` work, the times
/// of the appends reach the image, and explicit times (`touch -m -d`, `touch -a -d`)
/// are refused (EPERM) as on Linux.
#[test]
fn append_only_files_under_the_writeback_cache() {
    if !fuse_available(&[("chattr", "e2fsprogs")]) {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipping: chattr +a needs CAP_LINUX_IMMUTABLE");
        return;
    }
    let Volume { tmp, img, mnt } = fresh_volume("mount-wb-append-", "64M");
    let log = tmp.path().join("mount.log");
    let f = mnt.join("f");
    let mut m = Mounted::start(&img, &mnt, &log, &["-o", "writeback_cache"]);
    fs::write(&f, b"a\n").unwrap();
    ok(&["chattr", "+a"], &f);
    let before = times(&f);
    std::thread::sleep(std::time::Duration::from_millis(20));
    for line in [&b"b\n"[..], b"c\n"] {
        let mut w = fs::OpenOptions::new().append(true).open(&f).unwrap();
        w.write_all(line).unwrap();
        w.sync_all().unwrap();
    }
    let appended = times(&f);
    assert!(appended.1 > before.1, "the appends' mtime");
    refused(&["touch", "-m", "-d", "2001-01-01"], &f, "Operation not permitted");
    refused(&["touch", "-a", "-d", "2001-01-01"], &f, "Operation not permitted");
    refused(&["touch", "-d", "2001-01-01"], &f, "Operation not permitted");
    assert_eq!(times(&f).1, appended.1, "refused: mtime kept");
    ok(&["touch"], &f);
    ok(&["touch", "-m"], &f);
    let touched = times(&f);
    assert!(touched.1 >= appended.1);
    let (unmounted, text) = m.unmount();
    assert!(unmounted, "{text}");
    fsck::unmounted(&img, tmp.path(), "after the appends");

    let mut m = Mounted::start(&img, &mnt, &log, &["-o", "writeback_cache"]);
    assert_eq!(fs::read(&f).unwrap(), b"a\nb\nc\n");
    assert_eq!(times(&f).1, touched.1, "the mtime reached the image");
    ok(&["chattr", "-a"], &f);
    ok(&["touch", "-m", "-d", "2001-01-01"], &f);
    assert_eq!(fs::metadata(&f).unwrap().mtime(), 978_307_200);
    let (unmounted, text) = m.unmount();
    assert!(unmounted, "{text}");
    fsck::unmounted(&img, tmp.path(), "after the flag was dropped");
}

/// A loop device over a file, detached when dropped.
struct Loop(String);

impl Loop {
    /// `losetup -f --show FILE`; `None` when it fails (no loop devices here).
    fn attach(file: &Path) -> Option<Loop> {
        let out = Command::new("losetup").args(["-f", "--show"]).arg(file).output().ok()?;
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        (out.status.success() && !dev.is_empty()).then_some(Loop(dev))
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        // The uf2fs process may hold the device a moment after the unmount.
        for _ in 0..50 {
            if Command::new("losetup")
                .arg("-d")
                .arg(&self.0)
                .status()
                .is_ok_and(|s| s.success())
            {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

/// A block device (a loop device, as fstests' TEST_DEV and SCRATCH_DEV): `uf2fs mkfs`
/// sizes the F2FS from the device (its node's `st_size` is 0), `uf2fs mount` serves it
/// read-write, and what was written is on the device: `uf2fs info` and `cat` read it
/// there, and the image file under it is fsck-clean.
#[test]
fn a_block_device_is_made_and_mounted_like_an_image() {
    if !fuse_available(&[("losetup", "util-linux")]) {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipping: loop devices need root");
        return;
    }
    let Volume { tmp, img, mnt } = Volume::empty("mount-loop-");
    fs::File::create(&img).unwrap().set_len(96 << 20).unwrap();
    let Some(dev) = Loop::attach(&img) else {
        eprintln!("skipping: losetup -f --show failed (no loop devices on this machine)");
        return;
    };
    let dev_path = Path::new(&dev.0).to_path_buf();
    let made = common::uf2fs().run(["mkfs".as_ref(), "-f".as_ref(), dev_path.as_os_str()]);
    let text = String::from_utf8_lossy(made.assert_ok()).into_owned();
    assert!(text.contains("24576 blocks"), "{text}");

    let log = tmp.path().join("mount.log");
    let mut m = Mounted::start(&dev_path, &mnt, &log, &[]);
    let data: Vec<u8> = (0..3u32 << 20).map(|i| (i % 251) as u8).collect();
    fs::write(mnt.join("f"), &data).unwrap();
    fs::File::open(mnt.join("f")).unwrap().sync_all().unwrap();
    assert_eq!(fs::read(mnt.join("f")).unwrap(), data);
    let (unmounted, text) = m.unmount();
    assert!(unmounted, "{text}");

    let info = common::uf2fs().run(["info".as_ref(), dev_path.as_os_str()]);
    let info = String::from_utf8_lossy(info.assert_ok()).into_owned();
    assert!(info.contains("24576"), "{info}");
    let cat = common::uf2fs().run(["cat".as_ref(), dev_path.as_os_str(), "/f".as_ref()]);
    assert_eq!(cat.assert_ok(), &data[..]);
    drop(dev);
    fsck::unmounted(&img, tmp.path(), "after the mount of the loop device");
}
