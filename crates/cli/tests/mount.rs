//! End to end through the kernel: `uf2fs mount -o ro -f IMAGE MNT`, then the mounted tree
//! is compared with the source tree like an extracted one (plus ctime, the root's own
//! attributes and xattrs, which only a mount shows as the image has them), and writes
//! must fail with EROFS. Always unmounted, even when an assertion fails.
//!
//! Needs /dev/fuse and fusermount3. Without /dev/fuse the tests print why and pass,
//! unless UF2FS_REQUIRE_FUSE is set (CI sets it), in which case they fail.

mod common;

use common::{assert_no_problems, full, scratch, small, Fixture};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use uf2fs_testkit::compare::{compare_tree, CompareOptions};
use uf2fs_testkit::run::wait_until;

macro_rules! per_variant {
    ($($variant:ident),*) => {$(
        #[test]
        fn $variant() {
            super_mount_and_compare(stringify!($variant));
        }
    )*};
}

mod full_tree {
    use super::mount_and_compare as super_mount_and_compare;
    per_variant!(default, seg4, extra_flex, extra_csum);
}

/// Whether FUSE can be used here; `false` (after saying why) only when it may be skipped.
fn fuse_available() -> bool {
    let required = std::env::var_os("UF2FS_REQUIRE_FUSE").is_some();
    let missing = if !Path::new("/dev/fuse").exists() {
        Some("/dev/fuse does not exist")
    } else if which("fusermount3").is_none() {
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

fn which(tool: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// Whether `mnt` is a mount point now (per /proc/self/mountinfo).
fn is_mounted(mnt: &Path) -> bool {
    let info = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let want = mnt.to_string_lossy();
    info.lines().any(|l| l.split(' ').nth(4) == Some(want.as_ref()))
}

/// A running `uf2fs mount -f`; dropping it unmounts and reaps the process.
struct Mounted {
    child: Option<Child>,
    mnt: PathBuf,
    log: PathBuf,
}

impl Mounted {
    /// Starts `uf2fs mount -o ro -f IMG MNT` and waits until the mount appears.
    fn start(img: &Path, mnt: &Path, log: &Path) -> Mounted {
        let log_file = fs::File::create(log).expect("mount log");
        let child = Command::new(env!("CARGO_BIN_EXE_uf2fs"))
            .args(["mount", "-o", "ro", "-f"])
            .arg(img)
            .arg(mnt)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("log"))
            .stderr(log_file)
            .spawn()
            .expect("start uf2fs mount");
        let mut m = Mounted {
            child: Some(child),
            mnt: mnt.to_path_buf(),
            log: log.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !is_mounted(mnt) {
            if let Some(status) = m.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                m.child = None;
                panic!("uf2fs mount exited with {status} before mounting: {}", m.log_text());
            }
            assert!(
                Instant::now() < deadline,
                "no mount at {} after 20 s: {}",
                mnt.display(),
                m.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        m
    }

    fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Unmounts with fusermount3 -u and waits for `uf2fs mount -f` to exit; returns
    /// whether it exited 0, with its log.
    fn unmount(&mut self) -> (bool, String) {
        if is_mounted(&self.mnt) {
            let _ = Command::new("fusermount3").arg("-u").arg(&self.mnt).status();
        }
        let mut ok = false;
        if let Some(mut child) = self.child.take() {
            match wait_until(&mut child, Instant::now() + Duration::from_secs(10)) {
                Some(status) => ok = status.success(),
                None => eprintln!("uf2fs mount did not exit within 10 s of fusermount3 -u; killed"),
            }
        }
        if is_mounted(&self.mnt) {
            // Last resort, so a failed test never leaves a mount behind.
            let _ = Command::new("fusermount3").arg("-uz").arg(&self.mnt).status();
        }
        (ok, self.log_text())
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        self.unmount();
    }
}

fn mount_and_compare(variant: &str) {
    if !fuse_available() {
        return;
    }
    let fx = full(variant);
    check_mounted(fx, variant);
}

fn check_mounted(fx: &Fixture, what: &str) {
    let tmp = scratch("mount-");
    let mnt = tmp.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let mut m = Mounted::start(fx.img(), &mnt, &tmp.path().join("mount.log"));
    let opts = CompareOptions {
        owners: true,
        root: true,
        atime: true,
        ctime: true,
        xattrs: fx.variant().sload.selinux_labels,
        contents: true,
    };
    assert_no_problems(&format!("mounted {what}"), &compare_tree(&mnt, &fx.expected, opts));
    // Read-only: writes fail with EROFS.
    let err = fs::write(mnt.join("new_file"), b"x").expect_err("creating a file on a read-only mount");
    assert_eq!(err.raw_os_error(), Some(30), "creating a file: {err}");
    if let Some(file) = fx
        .expected
        .keys()
        .find(|p| p.as_slice() == b"one_byte" || p.as_slice() == b"hello.txt")
    {
        let p = uf2fs_testkit::tree::host_path(&mnt, file);
        let err = fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .expect_err("opening a file for writing");
        assert_eq!(err.raw_os_error(), Some(30), "opening for writing: {err}");
    }
    let (ok, log) = m.unmount();
    assert!(ok, "uf2fs mount -f did not exit 0 after fusermount3 -u; log: {log}");
    assert!(!is_mounted(&mnt));
}

#[test]
fn small_tree_mounts_and_unmounts_cleanly() {
    if !fuse_available() {
        return;
    }
    check_mounted(small("default"), "small tree");
}

#[test]
fn mount_refuses_a_missing_image_with_one_line() {
    let tmp = scratch("mount-bad-");
    let mnt = tmp.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let out = common::uf2fs().with_timeout(Duration::from_secs(20)).run([
        std::ffi::OsString::from("mount"),
        "-o".into(),
        "ro".into(),
        "-f".into(),
        tmp.path().join("missing.img").into(),
        mnt.clone().into(),
    ]);
    if is_mounted(&mnt) {
        let _ = Command::new("fusermount3").arg("-uz").arg(&mnt).status();
    }
    out.assert_clean_failure();
}
