//! Extended attributes end to end through the kernel: `uf2fs mkfs`, `uf2fs mount -f`
//! (read-write), the xattr syscalls on files, directories and symlinks (values inline
//! and spilling into the xattr node, replace/create flags, removal, a POSIX ACL, the
//! errors Linux gives), `fusermount3 -u`, `fsck.f2fs -f` clean, a read-only remount
//! reading everything back, a second read-write mount changing more.
//!
//! Needs /dev/fuse and fusermount3. Without /dev/fuse the test prints why and passes,
//! unless UF2FS_REQUIRE_FUSE is set (CI sets it), in which case it fails.

mod common;

use common::fsck;
use common::mount::{fresh_volume, fuse_available, Mounted, Volume};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

/// Expected attributes: relative path -> (name -> value), and the order they list in.
type Model = BTreeMap<&'static str, Vec<(String, Vec<u8>)>>;

/// `lsetxattr(2)`; the errno on failure. (No flags: the crates the tests use have no
/// safe call that passes them; the core and adapter tests cover XATTR_CREATE/REPLACE.)
fn set(path: &Path, name: &str, value: &[u8]) -> Result<(), i32> {
    xattr::set(path, name, value).map_err(|e| e.raw_os_error().unwrap())
}

fn remove(path: &Path, name: &str) -> Result<(), i32> {
    xattr::remove(path, name).map_err(|e| e.raw_os_error().unwrap())
}

/// Sets `name` on both the mount and the model (a changed attribute lists last).
fn set_ok(mnt: &Path, model: &mut Model, rel: &'static str, name: &str, value: &[u8]) {
    set(&mnt.join(rel), name, value).unwrap_or_else(|e| panic!("setxattr {rel} {name}: errno {e}"));
    let list = model.entry(rel).or_default();
    list.retain(|(n, _)| n != name);
    list.push((name.to_string(), value.to_vec()));
}

fn remove_ok(mnt: &Path, model: &mut Model, rel: &'static str, name: &str) {
    remove(&mnt.join(rel), name).unwrap_or_else(|e| panic!("removexattr {rel} {name}: errno {e}"));
    model.get_mut(rel).unwrap().retain(|(n, _)| n != name);
}

/// The mount lists exactly the model's attributes, in order, with their values.
fn check(mnt: &Path, model: &Model, when: &str) {
    for (rel, want) in model {
        let p = mnt.join(rel);
        let names: Vec<String> = xattr::list(&p)
            .unwrap()
            .map(|n| n.to_string_lossy().into_owned())
            .collect();
        let want_names: Vec<&String> = want.iter().map(|(n, _)| n).collect();
        assert_eq!(names.iter().collect::<Vec<_>>(), want_names, "{when}: names of {rel}");
        for (name, value) in want {
            assert_eq!(
                xattr::get(&p, name).unwrap().as_ref(),
                Some(value),
                "{when}: {rel} {name}"
            );
        }
    }
}

fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// An access ACL in the Linux xattr format: user::rw- user:1234:r-- group::r-- mask::r--
/// other::---.
fn access_acl() -> Vec<u8> {
    let mut v = 2u32.to_le_bytes().to_vec();
    for (tag, perm, id) in [
        (1u16, 6u16, u32::MAX),
        (2, 4, 1234),
        (4, 4, u32::MAX),
        (0x10, 4, u32::MAX),
        (0x20, 0, u32::MAX),
    ] {
        v.extend_from_slice(&tag.to_le_bytes());
        v.extend_from_slice(&perm.to_le_bytes());
        v.extend_from_slice(&id.to_le_bytes());
    }
    v
}

#[test]
fn xattrs_through_the_mount_pass_fsck_and_read_back() {
    if !fuse_available(&[("fsck.f2fs", "f2fs-tools")]) {
        return;
    }
    let root = nix::unistd::geteuid().is_root();
    let Volume { tmp, img, mnt } = fresh_volume("mount-xattr-", "64M");
    let mut model = Model::new();

    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount1.log"), &[]);
    fs::write(mnt.join("f"), b"data").unwrap();
    fs::create_dir(mnt.join("d")).unwrap();
    std::os::unix::fs::symlink("f", mnt.join("l")).unwrap();
    let f = mnt.join("f");
    set_ok(&mnt, &mut model, "f", "user.small", b"hello");
    set_ok(&mnt, &mut model, "f", "user.empty", b"");
    // Past the inode's inline xattr area: into the xattr node.
    set_ok(&mnt, &mut model, "f", "user.big", &pattern(1, 3000));
    set_ok(&mnt, &mut model, "f", "user.small", b"replaced, so listed last");
    set_ok(&mnt, &mut model, "d", "user.dir", &pattern(2, 150));
    set_ok(&mnt, &mut model, "d", "security.label", b"s0");
    // The errors Linux gives.
    assert_eq!(remove(&f, "user.absent"), Err(libc::ENODATA));
    assert_eq!(set(&f, "user.huge", &pattern(3, 5000)), Err(libc::E2BIG));
    assert_eq!(set(&f, "os2.name", b"x"), Err(libc::EOPNOTSUPP));
    // The VFS keeps user.* off symlinks.
    assert_eq!(set(&mnt.join("l"), "user.x", b"x"), Err(libc::EPERM));
    if root {
        set_ok(&mnt, &mut model, "l", "trusted.link", b"on the link itself");
        set_ok(&mnt, &mut model, "f", "system.posix_acl_access", &access_acl());
    }
    // The attr tools, as a user would run them.
    let out = Command::new("setfattr")
        .args(["-n", "user.tool", "-v", "0x00ff10"])
        .arg(mnt.join("d"))
        .output()
        .expect("run setfattr (package attr)");
    assert!(
        out.status.success(),
        "setfattr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    model
        .get_mut("d")
        .unwrap()
        .push(("user.tool".into(), vec![0, 0xff, 0x10]));
    let out = Command::new("getfattr")
        .args(["--only-values", "-n", "user.tool"])
        .arg(mnt.join("d"))
        .output()
        .expect("run getfattr");
    assert_eq!(
        out.stdout,
        [0, 0xff, 0x10],
        "getfattr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    check(&mnt, &model, "first mount");
    let (ok, log) = m.unmount();
    assert!(ok, "uf2fs mount -f did not exit 0 after fusermount3 -u; log: {log}");
    fsck::clean(&img, tmp.path());

    // Read-only: everything is there; writes are refused.
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount2.log"), &["-o", "ro"]);
    check(&mnt, &model, "read-only remount");
    assert_eq!(set(&f, "user.small", b"x"), Err(libc::EROFS));
    assert_eq!(remove(&f, "user.small"), Err(libc::EROFS));
    if root {
        // The access ACL set the group bits to its mask.
        assert_eq!(fs::metadata(&f).unwrap().mode() & 0o777, 0o640);
    }
    let (ok, log) = m.unmount();
    assert!(ok, "read-only mount did not exit 0; log: {log}");

    // Read-write again: remove the big value (back inline), change more.
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount3.log"), &[]);
    remove_ok(&mnt, &mut model, "f", "user.big");
    set_ok(&mnt, &mut model, "d", "user.dir", &pattern(4, 2500));
    remove_ok(&mnt, &mut model, "d", "security.label");
    if root {
        remove_ok(&mnt, &mut model, "f", "system.posix_acl_access");
    }
    check(&mnt, &model, "third mount");
    let (ok, log) = m.unmount();
    assert!(ok, "third mount did not exit 0; log: {log}");
    fsck::clean(&img, tmp.path());
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount4.log"), &["-o", "ro"]);
    check(&mnt, &model, "last remount");
    m.unmount();
}

/// An ACL in the Linux xattr format from (tag, perm, id) triples.
fn acl(entries: &[(u16, u16, u32)]) -> Vec<u8> {
    let mut v = 2u32.to_le_bytes().to_vec();
    for &(tag, perm, id) in entries {
        v.extend_from_slice(&tag.to_le_bytes());
        v.extend_from_slice(&perm.to_le_bytes());
        v.extend_from_slice(&id.to_le_bytes());
    }
    v
}

/// Whether `cat FILE` succeeds as uid:gid 1000:1000 without supplementary groups.
fn readable_by_1000(file: &Path) -> bool {
    Command::new("setpriv")
        .args(["--reuid=1000", "--regid=1000", "--clear-groups", "cat"])
        .arg(file)
        .output()
        .expect("run setpriv (package util-linux)")
        .status
        .success()
}

/// POSIX ACLs as Linux F2FS has them, through the kernel (FUSE_POSIX_ACL): what is made
/// under a default ACL takes it (the mode limited by the ACL, the umask ignored), and
/// the kernel grants access by a named entry the mode bits do not show.
#[test]
fn posix_acls_are_inherited_and_enforced() {
    if !fuse_available(&[("fsck.f2fs", "f2fs-tools")]) || !nix::unistd::geteuid().is_root() {
        return;
    }
    let Volume { tmp, img, mnt } = fresh_volume("mount-acl-", "64M");
    // Let uid 1000 reach the mount point.
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount.log"), &["-o", "allow_other"]);
    fs::set_permissions(&mnt, fs::Permissions::from_mode(0o755)).unwrap();
    let d = mnt.join("d");
    fs::create_dir(&d).unwrap();
    fs::set_permissions(&d, fs::Permissions::from_mode(0o755)).unwrap();
    // The case: u::r-x,g::r--,o::--- makes open(0666) give r--r-----, whatever
    // the umask.
    set(
        &d,
        "system.posix_acl_default",
        &acl(&[(1, 5, u32::MAX), (4, 4, u32::MAX), (0x20, 0, u32::MAX)]),
    )
    .unwrap();
    // (The umask is the process's: this binary's other test checks no mode it sets.)
    let umask = |bits| nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(bits));
    umask(0o077);
    fs::write(d.join("f"), b"x").unwrap();
    fs::create_dir(d.join("sub")).unwrap();
    umask(0o022);
    let mode = |p: &Path| fs::metadata(p).unwrap().mode() & 0o7777;
    assert_eq!(mode(&d.join("f")), 0o440);
    assert_eq!(mode(&d.join("sub")), 0o540);
    assert!(xattr::get(d.join("sub"), "system.posix_acl_default").unwrap().is_some());
    // Without a default ACL the umask applies.
    fs::write(mnt.join("g"), b"x").unwrap();
    assert_eq!(mode(&mnt.join("g")), 0o644);

    // The kernel checks the ACL: owner-only bits, but user 1000 named with r--.
    let secret = mnt.join("secret");
    fs::write(&secret, b"for 1000").unwrap();
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o600)).unwrap();
    assert!(!readable_by_1000(&secret));
    let named = acl(&[
        (1, 6, u32::MAX),
        (2, 4, 1000),
        (4, 0, u32::MAX),
        (0x10, 4, u32::MAX),
        (0x20, 0, u32::MAX),
    ]);
    set(&secret, "system.posix_acl_access", &named).unwrap();
    assert_eq!(mode(&secret), 0o640);
    assert!(readable_by_1000(&secret));
    // chmod changes the mask: 1000 loses access again.
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o600)).unwrap();
    assert!(!readable_by_1000(&secret));

    let (ok, log) = m.unmount();
    assert!(ok, "uf2fs mount -f did not exit 0; log: {log}");
    fsck::clean(&img, tmp.path());
}
