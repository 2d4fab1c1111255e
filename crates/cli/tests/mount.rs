//! End to end through the kernel: `uf2fs mount -o ro -f IMAGE MNT`, then the mounted tree
//! is compared with the source tree like an extracted one (plus ctime, the root's own
//! attributes and xattrs, which only a mount shows as the image has them), and writes
//! must fail with EROFS. Always unmounted, even when an assertion fails.
//!
//! Needs /dev/fuse and fusermount3. Without /dev/fuse the tests print why and pass,
//! unless UF2FS_REQUIRE_FUSE is set (CI sets it), in which case they fail.

mod common;

use common::mount::{fuse_available, is_mounted, Mounted};
use common::{assert_no_problems, full, scratch, small, Fixture};
use std::fs;
use std::process::Command;
use std::time::Duration;
use uf2fs_testkit::compare::{compare_tree, CompareOptions};

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

fn mount_and_compare(variant: &str) {
    if !fuse_available(&[]) {
        return;
    }
    let fx = full(variant);
    check_mounted(fx, variant);
}

fn check_mounted(fx: &Fixture, what: &str) {
    let tmp = scratch("mount-");
    let mnt = tmp.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let mut m = Mounted::start(fx.img(), &mnt, &tmp.path().join("mount.log"), &["-o", "ro"]);
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
    if !fuse_available(&[]) {
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
