//! Read-write mounts end to end through the kernel: `uf2fs mkfs`, `uf2fs mount -f` (rw),
//! files small and large, directories, symlinks, hard links, renames, unlinks,
//! truncation and appends through the mount, `fusermount3 -u`, then the image must pass
//! `fsck.f2fs -f` with an unmount checkpoint and `uf2fs ls -lR` / `uf2fs cat` must show
//! exactly what was written; a second read-write mount changes more and is checked again.
//! Files unlinked while open keep working until closed, then their space comes back; a
//! mount killed while one is open leaves an image that lists it as an orphan, is
//! fsck-clean, and reopens read-write with the orphan freed.
//!
//! Needs /dev/fuse and fusermount3. Without /dev/fuse the test prints why and passes,
//! unless UF2FS_REQUIRE_FUSE is set (CI sets it), in which case it fails.

mod common;

use common::fsck;
use common::mount::{fresh_volume, fuse_available, is_mounted, Mounted, Volume};
use common::{scratch, uf2fs};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use uf2fs_testkit::lsfmt::parse_long_line;
use uf2fs_testkit::rng::Rng;

/// What a path must be.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Dir,
    File(Vec<u8>),
    Symlink(Vec<u8>),
}

/// The expected tree: relative path (no leading '/') -> node.
type Model = BTreeMap<String, Node>;

fn random_bytes(rng: &mut Rng, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    out.truncate(len);
    out
}

fn write_file(mnt: &Path, model: &mut Model, rel: &str, data: Vec<u8>) {
    fs::write(mnt.join(rel), &data).unwrap_or_else(|e| panic!("writing {rel}: {e}"));
    model.insert(rel.to_owned(), Node::File(data));
}

fn append(mnt: &Path, model: &mut Model, rel: &str, more: &[u8]) {
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(mnt.join(rel))
        .unwrap_or_else(|e| panic!("opening {rel} to append: {e}"));
    f.write_all(more).unwrap_or_else(|e| panic!("appending to {rel}: {e}"));
    f.sync_all().unwrap_or_else(|e| panic!("fsync of {rel}: {e}"));
    match model.get_mut(rel) {
        Some(Node::File(data)) => data.extend_from_slice(more),
        other => panic!("append to {rel}: model has {other:?}"),
    }
}

fn truncate(mnt: &Path, model: &mut Model, rel: &str, len: usize) {
    let f = fs::OpenOptions::new().write(true).open(mnt.join(rel)).unwrap();
    f.set_len(len as u64)
        .unwrap_or_else(|e| panic!("truncating {rel}: {e}"));
    match model.get_mut(rel) {
        Some(Node::File(data)) => data.resize(len, 0),
        other => panic!("truncate {rel}: model has {other:?}"),
    }
}

/// Moves `from` (and everything under it) to `to` in the model.
fn model_rename(model: &mut Model, from: &str, to: &str) {
    let prefix = format!("{from}/");
    let moved: Vec<String> = model
        .keys()
        .filter(|k| *k == from || k.starts_with(&prefix))
        .cloned()
        .collect();
    for old in moved {
        let node = model.remove(&old).unwrap();
        let new = format!("{to}{}", &old[from.len()..]);
        model.insert(new, node);
    }
}

/// Checks the mounted tree against the model: names, kinds, contents, link targets.
fn check_mounted(mnt: &Path, model: &Model) {
    let mut seen = Model::new();
    let mut stack = vec![String::new()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(mnt.join(&dir)).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().into_string().unwrap();
            let rel = if dir.is_empty() { name } else { format!("{dir}/{name}") };
            let path = entry.path();
            let meta = fs::symlink_metadata(&path).unwrap();
            let node = if meta.file_type().is_symlink() {
                Node::Symlink(fs::read_link(&path).unwrap().into_os_string().into_encoded_bytes())
            } else if meta.is_dir() {
                stack.push(rel.clone());
                Node::Dir
            } else {
                Node::File(fs::read(&path).unwrap())
            };
            seen.insert(rel, node);
        }
    }
    assert_eq!(names(&seen), names(model), "names under the mount");
    for (rel, node) in model {
        assert!(
            seen[rel] == *node,
            "{rel} under the mount differs from what was written"
        );
    }
}

fn names(model: &Model) -> Vec<&String> {
    model.keys().collect()
}

/// Checks the unmounted image with `uf2fs ls -lR` and `uf2fs cat`.
fn check_image(img: &Path, model: &Model) {
    let ls = uf2fs().run([OsString::from("ls"), "-lR".into(), img.into()]);
    let out = ls.assert_ok().to_vec();
    let mut listed: BTreeMap<String, (char, u64, Option<Vec<u8>>)> = BTreeMap::new();
    let mut dir = String::new();
    for line in out.split(|&c| c == b'\n') {
        if line.is_empty() || line.starts_with(b"total ") {
            continue;
        }
        if line.ends_with(b":") && line.starts_with(b"/") {
            dir = String::from_utf8(line[1..line.len() - 1].to_vec()).unwrap();
            continue;
        }
        let is_symlink = |name: &[u8]| {
            let rel = join(&dir, &String::from_utf8_lossy(name));
            matches!(model.get(&rel), Some(Node::Symlink(_)))
        };
        let parsed = parse_long_line(line, is_symlink)
            .unwrap_or_else(|| panic!("unparsable ls line {:?}", String::from_utf8_lossy(line)));
        let rel = join(&dir, &String::from_utf8_lossy(&parsed.name));
        let kind = parsed.mode.chars().next().unwrap();
        listed.insert(rel, (kind, parsed.size.parse().unwrap_or(0), parsed.target));
    }
    let want: Vec<&String> = names(model);
    assert_eq!(listed.keys().collect::<Vec<_>>(), want, "names in uf2fs ls -lR");
    for (rel, node) in model {
        let (kind, size, target) = &listed[rel];
        match node {
            Node::Dir => assert_eq!(*kind, 'd', "{rel} is a directory"),
            Node::Symlink(t) => {
                assert_eq!(*kind, 'l', "{rel} is a symlink");
                assert_eq!(target.as_deref(), Some(t.as_slice()), "target of {rel}");
            }
            Node::File(data) => {
                assert_eq!(*kind, '-', "{rel} is a regular file");
                assert_eq!(*size, data.len() as u64, "size of {rel}");
                let cat = uf2fs().run([OsString::from("cat"), img.into(), format!("/{rel}").into()]);
                assert!(
                    cat.assert_ok() == data.as_slice(),
                    "uf2fs cat /{rel} differs from what was written"
                );
            }
        }
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// Free 4 KiB blocks of the file system mounted at `mnt` (statfs).
fn free_blocks(mnt: &Path) -> u64 {
    let s = nix::sys::statvfs::statvfs(mnt).unwrap();
    s.blocks_free() as u64 * s.fragment_size() as u64 / 4096
}

/// Waits until `mnt` has at least `want` free blocks (a close's RELEASE reaches the
/// file system after close(2) returns); returns the last count seen.
fn wait_for_free(mnt: &Path, want: u64) -> u64 {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let free = free_blocks(mnt);
        if free >= want || std::time::Instant::now() > deadline {
            return free;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A file open while its last name goes stays usable until closed (its name gone at
/// once, nlink 0), then its space comes back.
fn open_file_survives_unlink(mnt: &Path) {
    use std::io::{Read, Seek, SeekFrom};
    let p = mnt.join("open_unlinked");
    let mut f = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&p)
        .unwrap();
    f.write_all(b"still here").unwrap();
    fs::remove_file(&p).unwrap();
    assert_eq!(f.metadata().unwrap().nlink(), 0, "links of an unlinked open file");
    let listed = fs::read_dir(mnt).unwrap().count();
    f.write_all(b", after unlink").unwrap();
    f.seek(SeekFrom::Start(0)).unwrap();
    let mut back = String::new();
    f.read_to_string(&mut back).unwrap();
    assert_eq!(back, "still here, after unlink");
    drop(f);
    assert_eq!(fs::read_dir(mnt).unwrap().count(), listed, "names after the last close");
    // 8 MiB held by an unlinked open file come back at its last close, not before.
    let hog = mnt.join("space_hog");
    fs::write(&hog, vec![0x5a; 8 << 20]).unwrap();
    let f = fs::File::open(&hog).unwrap();
    f.sync_all().unwrap();
    let held = free_blocks(mnt);
    fs::remove_file(&hog).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(free_blocks(mnt) < held + 1024, "space came back while the file is open");
    drop(f);
    let free = wait_for_free(mnt, held + 2048);
    assert!(
        free >= held + 2048,
        "{held} free blocks with the file open, {free} after closing it"
    );
    // The same for a rename over an open file's last name.
    fs::write(mnt.join("replaced"), b"old contents").unwrap();
    fs::write(mnt.join("replacement"), b"new").unwrap();
    let mut old = fs::File::open(mnt.join("replaced")).unwrap();
    fs::rename(mnt.join("replacement"), mnt.join("replaced")).unwrap();
    let mut back = String::new();
    old.read_to_string(&mut back).unwrap();
    assert_eq!(back, "old contents", "an open file renamed over");
    assert_eq!(fs::read(mnt.join("replaced")).unwrap(), b"new");
    assert_eq!(old.metadata().unwrap().nlink(), 0, "links of a file renamed over");
    drop(old);
    assert_eq!(fs::read_dir(mnt).unwrap().count(), listed + 1, "names after the rename");
    fs::remove_file(mnt.join("replaced")).unwrap();
}

#[test]
fn read_write_mount_changes_pass_fsck_and_read_back() {
    changes_pass_fsck_and_read_back(&[]);
}

/// The same with FUSE's writeback cache: the kernel keeps the written pages and sends
/// them later, keeping sizes and times itself meanwhile.
#[test]
fn read_write_mount_with_the_writeback_cache_passes_fsck_and_reads_back() {
    changes_pass_fsck_and_read_back(&["-o", "writeback_cache"]);
}

fn changes_pass_fsck_and_read_back(opts: &[&str]) {
    if !fuse_available(&[("fsck.f2fs", "f2fs-tools")]) {
        return;
    }
    let Volume { tmp, img, mnt } = fresh_volume("mount-rw-", "256M");
    let mut rng = Rng::new(0x4057_0001);
    let mut model = Model::new();

    // First mount: build a tree.
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount1.log"), opts);
    write_file(&mnt, &mut model, "hello.txt", b"hello\n".to_vec());
    write_file(&mnt, &mut model, "empty", Vec::new());
    write_file(
        &mnt,
        &mut model,
        "big.bin",
        random_bytes(&mut rng, 3 * 1024 * 1024 + 123),
    );
    fs::create_dir(mnt.join("dir")).unwrap();
    model.insert("dir".into(), Node::Dir);
    fs::create_dir(mnt.join("dir/sub")).unwrap();
    model.insert("dir/sub".into(), Node::Dir);
    write_file(&mnt, &mut model, "dir/sub/deep.txt", b"deep\n".to_vec());
    write_file(&mnt, &mut model, "dir/mid.bin", random_bytes(&mut rng, 5 * 1024 * 1024));
    std::os::unix::fs::symlink("hello.txt", mnt.join("link")).unwrap();
    model.insert("link".into(), Node::Symlink(b"hello.txt".to_vec()));
    std::os::unix::fs::symlink("../big.bin", mnt.join("dir/up")).unwrap();
    model.insert("dir/up".into(), Node::Symlink(b"../big.bin".to_vec()));
    fs::hard_link(mnt.join("hello.txt"), mnt.join("dir/hard")).unwrap();
    model.insert("dir/hard".into(), Node::File(b"hello\n".to_vec()));
    assert_eq!(fs::metadata(mnt.join("hello.txt")).unwrap().nlink(), 2);
    fs::rename(mnt.join("dir/mid.bin"), mnt.join("moved.bin")).unwrap();
    model_rename(&mut model, "dir/mid.bin", "moved.bin");
    write_file(&mnt, &mut model, "doomed", random_bytes(&mut rng, 70_000));
    fs::remove_file(mnt.join("doomed")).unwrap();
    model.remove("doomed");
    write_file(&mnt, &mut model, "shrink.bin", random_bytes(&mut rng, 1024 * 1024));
    truncate(&mnt, &mut model, "shrink.bin", 10_000);
    truncate(&mnt, &mut model, "empty", 5000);
    append(&mnt, &mut model, "moved.bin", b"tail of the moved file");
    // The hard link shares the data: append through one name, both change.
    append(&mnt, &mut model, "hello.txt", b"world\n");
    model.insert("dir/hard".into(), Node::File(b"hello\nworld\n".to_vec()));
    open_file_survives_unlink(&mnt);
    check_mounted(&mnt, &model);
    let (ok, log) = m.unmount();
    assert!(ok, "uf2fs mount -f did not exit 0 after fusermount3 -u; log: {log}");
    assert!(!is_mounted(&mnt));
    fsck::unmounted(&img, tmp.path(), "after the first mount");
    check_image(&img, &model);

    // Second mount: everything is there; change more.
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount2.log"), opts);
    check_mounted(&mnt, &model);
    fs::remove_file(mnt.join("big.bin")).unwrap();
    model.remove("big.bin");
    fs::rename(mnt.join("dir"), mnt.join("renamed_dir")).unwrap();
    model_rename(&mut model, "dir", "renamed_dir");
    fs::remove_file(mnt.join("renamed_dir/sub/deep.txt")).unwrap();
    model.remove("renamed_dir/sub/deep.txt");
    fs::remove_dir(mnt.join("renamed_dir/sub")).unwrap();
    model.remove("renamed_dir/sub");
    fs::create_dir(mnt.join("new_dir")).unwrap();
    model.insert("new_dir".into(), Node::Dir);
    for i in 0..50 {
        let data = random_bytes(&mut rng, i * 97);
        write_file(&mnt, &mut model, &format!("new_dir/file{i:02}"), data);
    }
    append(&mnt, &mut model, "shrink.bin", &random_bytes(&mut rng, 200_000));
    truncate(&mnt, &mut model, "moved.bin", 4096 * 3 + 1);
    check_mounted(&mnt, &model);
    let (ok, log) = m.unmount();
    assert!(ok, "second mount did not exit 0 after fusermount3 -u; log: {log}");
    fsck::unmounted(&img, tmp.path(), "after the second mount");
    check_image(&img, &model);
}

#[test]
fn read_write_mount_refuses_unknown_options_by_name() {
    let tmp = scratch("mount-rw-opts-");
    let mnt = tmp.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let out = uf2fs().with_timeout(Duration::from_secs(20)).run([
        OsString::from("mount"),
        "-o".into(),
        "rw,discard".into(),
        "-f".into(),
        tmp.path().join("missing.img").into(),
        mnt.clone().into(),
    ]);
    if is_mounted(&mnt) {
        let _ = Command::new("fusermount3").arg("-uz").arg(&mnt).status();
    }
    assert!(!out.success());
    assert!(out.err().contains("discard"), "{}", out.describe());
}

/// A mount killed (SIGKILL, no unmount checkpoint) while a file is unlinked but open:
/// its last checkpoint (made by an fsync) lists the file as an orphan and is fsck-clean;
/// the read-only reader shows no name for it; a read-write mount frees it (its space
/// is back) and unmounts cleanly.
#[test]
fn a_killed_mount_with_an_unlinked_open_file_reopens_clean() {
    if !fuse_available(&[("fsck.f2fs", "f2fs-tools")]) {
        return;
    }
    let Volume { tmp, img, mnt } = fresh_volume("mount-rw-kill-", "128M");
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount1.log"), &[]);
    let kept = b"kept across the crash".to_vec();
    fs::write(mnt.join("kept"), &kept).unwrap();
    let mut f = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(mnt.join("orphan"))
        .unwrap();
    f.write_all(&vec![0xa5; 6 << 20]).unwrap();
    fs::remove_file(mnt.join("orphan")).unwrap();
    // The fsync checkpoint holds the data of "kept" and lists the orphan.
    f.sync_all().unwrap();
    let held = free_blocks(&mnt);
    let log = m.kill();
    drop(f);
    assert!(!is_mounted(&mnt), "the killed mount is gone; log: {log}");
    let text = fsck::clean(&img, tmp.path());
    assert!(text.contains("orphan_inodes"), "the checkpoint lists no orphan: {text}");
    let ls = uf2fs().run([OsString::from("ls"), img.clone().into(), "/".into()]);
    let listed = String::from_utf8_lossy(ls.assert_ok()).into_owned();
    assert_eq!(listed.split_whitespace().collect::<Vec<_>>(), ["kept"], "{listed}");
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount2.log"), &[]);
    assert_eq!(fs::read(mnt.join("kept")).unwrap(), kept);
    let free = free_blocks(&mnt);
    assert!(
        free >= held + 1536,
        "{held} free blocks with the orphan, {free} after reopening read-write"
    );
    let (ok, log) = m.unmount();
    assert!(ok, "the second mount did not exit 0; log: {log}");
    fsck::unmounted(&img, tmp.path(), "after reopening read-write");
    let model = Model::from([("kept".to_string(), Node::File(kept))]);
    check_image(&img, &model);
}

/// Times before 1970 (fstests generic/258, `touch -t 196001010101`): F2FS stores them
/// signed, as Linux does; they must come back through the mount, after a remount, and
/// in `uf2fs ls -l`, and the image must stay fsck-clean.
#[test]
fn times_before_1970_survive() {
    if !fuse_available(&[("fsck.f2fs", "f2fs-tools")]) {
        return;
    }
    let Volume { tmp, img, mnt } = fresh_volume("mount-1960-", "64M");
    // 1960-01-01 00:01 UTC, and half a second before the epoch.
    let old = std::time::UNIX_EPOCH - Duration::from_secs(315_619_140);
    let just_before = std::time::UNIX_EPOCH - Duration::from_millis(500);
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount1.log"), &[]);
    for (name, t) in [("old", old), ("just-before", just_before)] {
        let f = fs::File::create(mnt.join(name)).unwrap();
        f.set_modified(t).unwrap();
        drop(f);
        assert_eq!(fs::metadata(mnt.join(name)).unwrap().modified().unwrap(), t, "{name}");
    }
    let (ok, log) = m.unmount();
    assert!(ok, "{log}");
    fsck::clean(&img, tmp.path());
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount2.log"), &["-o", "ro"]);
    assert_eq!(fs::metadata(mnt.join("old")).unwrap().modified().unwrap(), old);
    assert_eq!(
        fs::metadata(mnt.join("just-before")).unwrap().modified().unwrap(),
        just_before
    );
    let (ok, log) = m.unmount();
    assert!(ok, "{log}");
    let out = uf2fs().run(["ls".as_ref(), "-l".as_ref(), img.as_os_str(), "/".as_ref()]);
    let text = String::from_utf8_lossy(out.assert_ok());
    assert!(text.contains("1960-01-01 00:01"), "{text}");
    assert!(text.contains("1969-12-31 23:59"), "{text}");
}

/// mount(8)'s helper: the binary linked as `mount.fuse.uf2fs` takes
/// `IMAGE MOUNTPOINT -o OPTIONS` with fstab's own options among them, mounts in the
/// background (as root: with dev and suid) and returns; what is written there is on the image after the unmount.
#[test]
fn the_mount_helper_mounts_as_mount_8_calls_it() {
    if !fuse_available(&[("fsck.f2fs", "f2fs-tools")]) {
        return;
    }
    let Volume { tmp, img, mnt } = fresh_volume("mount-helper-", "64M");
    let helper = tmp.path().join("mount.fuse.uf2fs");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_uf2fs"), &helper).unwrap();
    let status = Command::new(&helper)
        .arg(&img)
        .arg(&mnt)
        .args(["-n", "-o", "rw,noauto,nofail,x-systemd.automount,cp_interval=5"])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(is_mounted(&mnt), "the helper returned before the mount appeared");
    // Root's mount of a block device has dev and suid (mount(8) passes neither), and
    // relatime: so has the helper's.
    let info = fs::read_to_string("/proc/self/mountinfo").unwrap();
    let want = mnt.to_string_lossy();
    let line = info
        .lines()
        .find(|l| l.split(' ').nth(4) == Some(want.as_ref()))
        .unwrap();
    let flags: Vec<&str> = line.split(' ').nth(5).unwrap().split(',').collect();
    assert!(flags.contains(&"relatime"), "{line}");
    if nix::unistd::geteuid().is_root() {
        assert!(!flags.contains(&"nodev") && !flags.contains(&"nosuid"), "{line}");
    }
    fs::write(mnt.join("via-helper"), b"mounted by mount(8)'s helper\n").unwrap();
    let fake = Command::new(&helper)
        .arg(&img)
        .arg(&mnt)
        .args(["-f", "-o", "bogus"])
        .output()
        .unwrap();
    assert!(!fake.status.success(), "a fake mount still checks the options");
    let status = Command::new("fusermount3").arg("-u").arg(&mnt).status().unwrap();
    assert!(status.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while is_mounted(&mnt) || fs::OpenOptions::new().write(true).open(&img).is_err() {
        assert!(std::time::Instant::now() < deadline, "still mounted");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The background process writes its unmount checkpoint after the session ends.
    let text = loop {
        let out = uf2fs().run(["cat".as_ref(), img.as_os_str(), "/via-helper".as_ref()]);
        if out.success() {
            break String::from_utf8_lossy(out.assert_ok()).into_owned();
        }
        assert!(std::time::Instant::now() < deadline, "{}", out.describe());
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(text, "mounted by mount(8)'s helper\n");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while fsck::checkpoint_state(&fsck::clean(&img, tmp.path())).is_none_or(|s| !s.contains("unmount")) {
        assert!(std::time::Instant::now() < deadline, "no unmount checkpoint");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// fstests generic/683 and 684: an unprivileged fallocate, hole punch, write or
/// truncate of a set-user-ID file clears the bit, and the set-group-ID bit when the
/// file is group-executable or the caller is outside its group, as Linux F2FS does
/// (the VFS's `setattr_should_drop_suidgid`); root keeps them. The mount does this
/// itself (it negotiates FUSE_HANDLE_KILLPRIV_V2) and has the kernel drop the
/// attributes it cached.
#[test]
fn unprivileged_fallocate_clears_setuid_and_setgid() {
    if !fuse_available(&[("setpriv", "util-linux"), ("fallocate", "util-linux")]) {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipping: switching to another user needs root");
        return;
    }
    let Volume { tmp, img, mnt } = fresh_volume("mount-killpriv-", "64M");
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount.log"), &["-o", "allow_other"]);
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&mnt, fs::Permissions::from_mode(0o777)).unwrap();
    let mode_of = |name: &str| fs::metadata(mnt.join(name)).unwrap().permissions().mode() & 0o7777;
    // (name, mode before, after, the caller's group (the file's is 0), command)
    let falloc = &["fallocate", "-l", "8192"][..];
    let cases = [
        ("suid", 0o4777, 0o0777, 65534, falloc),
        ("sgid-x", 0o2777, 0o0777, 65534, falloc),
        // Outside the group: dropped even without group execute (generic/683 test 1).
        ("sgid-nox", 0o2767, 0o0767, 65534, falloc),
        ("both-nox", 0o6666, 0o0666, 65534, falloc),
        // In the group: kept without group execute (a mandatory-locking mark).
        ("sgid-nox-member", 0o2767, 0o2767, 0, falloc),
        ("sgid-x-member", 0o2777, 0o0777, 0, falloc),
        (
            "both-punch",
            0o6777,
            0o0777,
            65534,
            &["fallocate", "-p", "-o", "0", "-l", "4096"][..],
        ),
        ("write", 0o6666, 0o0666, 65534, &["sh", "-c", "echo more >> \"$0\""][..]),
        ("truncate", 0o6666, 0o0666, 65534, &["truncate", "-s", "100"][..]),
    ];
    for (name, before, after, gid, command) in cases {
        let p = mnt.join(name);
        fs::write(&p, vec![1u8; 16384]).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(before)).unwrap();
        assert_eq!(mode_of(name), before);
        let status = Command::new("setpriv")
            .args(["--reuid=65534", &format!("--regid={gid}"), "--clear-groups"])
            .args(command)
            .arg(&p)
            .status()
            .unwrap();
        assert!(status.success(), "{name}: {command:?} as nobody failed");
        assert_eq!(mode_of(name), after, "{name}: mode {:o}", mode_of(name));
    }
    // Root keeps the bits.
    let p = mnt.join("root");
    fs::write(&p, vec![1u8; 8192]).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o6777)).unwrap();
    assert!(Command::new("fallocate")
        .args(["-l", "16384"])
        .arg(&p)
        .status()
        .unwrap()
        .success());
    assert_eq!(mode_of("root"), 0o6777);
    let (ok, log) = m.unmount();
    assert!(ok, "{log}");
    fsck::clean(&img, tmp.path());
}

/// A `security.capability` value (`struct vfs_cap_data`, revision 2, effective):
/// `cap_net_bind_service` permitted.
const CAPABILITY: [u8; 20] = [1, 0, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];

/// A case of [`the_mount_drops_set_id_bits_and_capabilities_as_linux_does`]: the
/// file's name, its mode before, whether it has capabilities, who runs the command
/// (a `setpriv` prefix), the command (the file's path is its last argument), and the
/// mode it must have after.
type KillCase<'a> = (&'a str, u32, bool, &'a [&'a str], &'a [&'a str], u32);

/// FUSE_HANDLE_KILLPRIV_V2 leaves dropping privileges to the mount, and it drops them
/// exactly when Linux does for a local file system: on write and truncate (an
/// `O_TRUNC` open too) the set-ID bits go when the caller lacks `CAP_FSETID` (root with
/// it dropped included; set-group-ID without group execute stays for a caller in the
/// group), and `security.capability` goes whoever the caller is; on chown set-user-ID
/// and the capabilities go even for root, set-group-ID only with group execute. The
/// modes and attributes are checked through the mount, then after a remount (the
/// image has them), and the image is fsck-clean.
#[test]
fn the_mount_drops_set_id_bits_and_capabilities_as_linux_does() {
    if !fuse_available(&[("setpriv", "util-linux"), ("truncate", "coreutils")]) {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipping: switching to another user needs root");
        return;
    }
    let Volume { tmp, img, mnt } = fresh_volume("mount-killpriv2-", "64M");
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount.log"), &["-o", "allow_other"]);
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&mnt, fs::Permissions::from_mode(0o777)).unwrap();
    // Who runs the command: nobody outside the file's group (0), nobody in it, root
    // without CAP_FSETID (also dropped from the bounding set, or exec gives it back),
    // and root.
    let nobody = &["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"][..];
    let member = &["setpriv", "--reuid=65534", "--regid=0", "--clear-groups"][..];
    let no_fsetid = &["setpriv", "--inh-caps=-fsetid", "--bounding-set=-fsetid"][..];
    let root: &[&str] = &[];
    let append = &["sh", "-c", "echo more >> \"$0\""][..];
    let write_direct = &[
        "sh",
        "-c",
        "dd if=/dev/zero of=\"$0\" bs=4096 count=1 oflag=direct conv=notrunc status=none",
    ][..];
    let o_trunc = &["sh", "-c", ": > \"$0\""][..];
    let shrink = &["truncate", "-s", "100"][..];
    let chown = &["chown", "65534:65534"][..];
    // (name, mode before, with capabilities, who, command, mode after); every file is
    // root's, group 0.
    let cases: &[KillCase] = &[
        ("w-nobody", 0o6777, true, nobody, append, 0o0777),
        ("w-member-nox", 0o6767, false, member, append, 0o2767),
        ("w-member-x", 0o6777, false, member, append, 0o0777),
        ("w-nofsetid", 0o6777, true, no_fsetid, append, 0o0777),
        ("w-nofsetid-nox", 0o6766, false, no_fsetid, append, 0o2766),
        ("w-root", 0o6777, true, root, append, 0o6777),
        ("dio-nobody", 0o6777, true, nobody, write_direct, 0o0777),
        ("dio-root", 0o6777, true, root, write_direct, 0o6777),
        ("otrunc-nobody", 0o6777, true, nobody, o_trunc, 0o0777),
        ("trunc-nofsetid", 0o6777, true, no_fsetid, shrink, 0o0777),
        ("trunc-root", 0o6777, true, root, shrink, 0o6777),
        ("chown-root", 0o6755, true, root, chown, 0o0755),
        ("chown-root-nox", 0o6745, true, root, chown, 0o2745),
    ];
    let mode_of = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    let caps_of = |p: &Path| xattr::get(p, "security.capability").unwrap();
    for &(name, before, caps, who, command, _) in cases {
        let p = mnt.join(name);
        fs::write(&p, vec![1u8; 16384]).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(before)).unwrap();
        if caps {
            xattr::set(&p, "security.capability", &CAPABILITY).unwrap();
        }
        assert_eq!(mode_of(&p), before, "{name}");
        let argv: Vec<&str> = who.iter().chain(command).copied().collect();
        let status = Command::new(argv[0]).args(&argv[1..]).arg(&p).status().unwrap();
        assert!(status.success(), "{name}: {argv:?} failed");
    }
    let check = |when: &str| {
        for &(name, _, caps, _, _, after) in cases {
            let p = mnt.join(name);
            assert_eq!(mode_of(&p), after, "{name} {when}: mode {:o}", mode_of(&p));
            if caps {
                assert_eq!(caps_of(&p), None, "{name} {when}: capabilities kept");
            }
        }
    };
    check("through the mount");
    // Nothing else loses them: a read, a chmod, a rename.
    let p = mnt.join("kept");
    fs::write(&p, b"x").unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o6755)).unwrap();
    xattr::set(&p, "security.capability", &CAPABILITY).unwrap();
    let status = Command::new("setpriv")
        .args(&nobody[1..])
        .args(["cat"])
        .arg(&p)
        .status()
        .unwrap();
    assert!(status.success());
    fs::rename(&p, mnt.join("kept2")).unwrap();
    let p = mnt.join("kept2");
    assert_eq!(mode_of(&p), 0o6755);
    assert_eq!(caps_of(&p).as_deref(), Some(&CAPABILITY[..]));
    let (ok, log) = m.unmount();
    assert!(ok, "{log}");
    fsck::clean(&img, tmp.path());
    let mut again = Mounted::start(&img, &mnt, &tmp.path().join("mount2.log"), &[]);
    check("after a remount");
    assert_eq!(caps_of(&p).as_deref(), Some(&CAPABILITY[..]));
    let (ok, log) = again.unmount();
    assert!(ok, "{log}");
}

/// Two read-write mounts of one image would both write it: the second waits for the
/// image's lock (a remount right after `umount` gets it once the first process has
/// written its last checkpoint) and gives up with one line when it stays taken.
#[test]
fn an_image_mounted_read_write_is_not_mounted_twice() {
    if !fuse_available(&[]) {
        return;
    }
    let Volume { tmp, img, mnt } = fresh_volume("mount-twice-", "64M");
    let other = tmp.path().join("other");
    fs::create_dir(&other).unwrap();
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount.log"), &[]);
    let out = uf2fs().run(["mount".as_ref(), img.as_os_str(), other.as_os_str()]);
    assert!(!out.success(), "a second read-write mount went through");
    let err = out.err();
    assert!(err.contains("in use by another uf2fs process"), "{err}");
    assert!(!is_mounted(&other));
    let (ok, log) = m.unmount();
    assert!(ok, "{log}");
    // Free again: a remount right after the unmount works.
    let mut again = Mounted::start(&img, &other, &tmp.path().join("mount2.log"), &[]);
    let (ok, log) = again.unmount();
    assert!(ok, "{log}");
}

/// `mount -o remount,ro` and back (fstests generic/294, 306, 452): mount(8) runs the
/// helper with `remount`; the mount turns read-only after a checkpoint of what was
/// written, refuses changes, and takes them again after `remount,rw`.
#[test]
fn the_mount_helper_remounts_read_only_and_back() {
    if !fuse_available(&[("fsck.f2fs", "f2fs-tools")]) {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipping: remounting needs root");
        return;
    }
    let Volume { tmp, img, mnt } = fresh_volume("mount-remount-", "64M");
    let helper = tmp.path().join("mount.fuse.uf2fs");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_uf2fs"), &helper).unwrap();
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount.log"), &["-o", "cp_interval=0"]);
    fs::write(mnt.join("before"), b"written before the remount\n").unwrap();
    let remount = |opts: &str| {
        let status = Command::new(&helper)
            .arg(&img)
            .arg(&mnt)
            .args(["-o", opts])
            .status()
            .unwrap();
        assert!(status.success(), "remount {opts}");
    };
    remount("remount,ro");
    // The sync before it wrote a checkpoint: the file is on the image already.
    let out = uf2fs().run(["cat".as_ref(), img.as_os_str(), "/before".as_ref()]);
    assert_eq!(out.assert_ok(), b"written before the remount\n");
    let err = fs::write(mnt.join("during"), b"x").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EROFS), "{err}");
    remount("remount,rw");
    fs::write(mnt.join("after"), b"written after\n").unwrap();
    let (ok, log) = m.unmount();
    assert!(ok, "{log}");
    fsck::clean(&img, tmp.path());
    let out = uf2fs().run(["cat".as_ref(), img.as_os_str(), "/after".as_ref()]);
    assert_eq!(out.assert_ok(), b"written after\n");
}

/// `SEEK_DATA` and `SEEK_HOLE` through the kernel answer from the node tree, as Linux
/// F2FS does (a FUSE file system that does not answer them makes the whole file data).
#[test]
fn seek_data_and_hole_find_the_holes() {
    if !fuse_available(&[]) {
        return;
    }
    use nix::unistd::{lseek, Whence};
    let Volume { tmp, img, mnt } = fresh_volume("mount-seek-", "64M");
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount.log"), &[]);
    let p = mnt.join("sparse");
    let f = fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .read(true)
        .open(&p)
        .unwrap();
    nix::sys::uio::pwrite(&f, &[7u8; 4096], 1 << 20).unwrap();
    f.set_len(4 << 20).unwrap();
    let fd = &f;
    assert_eq!(lseek(fd, 0, Whence::SeekData), Ok(1 << 20));
    assert_eq!(lseek(fd, 0, Whence::SeekHole), Ok(0));
    assert_eq!(lseek(fd, 1 << 20, Whence::SeekHole), Ok((1 << 20) + 4096));
    assert_eq!(
        lseek(fd, (1 << 20) + 4096, Whence::SeekData),
        Err(nix::errno::Errno::ENXIO)
    );
    assert_eq!(lseek(fd, 4 << 20, Whence::SeekHole), Err(nix::errno::Errno::ENXIO));
    drop(f);
    let (ok, log) = m.unmount();
    assert!(ok, "{log}");
    fsck::clean(&img, tmp.path());
}

/// A fallocate that runs out of space keeps the blocks it reserved and the size
/// covering them, as Linux F2FS does (`expand_inode_data`), and the size the mount
/// shows is that one, not the one the kernel cached before the failed request.
#[test]
fn a_failed_fallocate_shows_the_size_it_left() {
    if !fuse_available(&[("fallocate", "util-linux")]) {
        return;
    }
    let Volume { tmp, img, mnt } = fresh_volume("mount-falloc-enospc-", "256M");
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount.log"), &[]);
    let p = mnt.join("big");
    fs::write(&p, b"").unwrap();
    assert_eq!(fs::metadata(&p).unwrap().len(), 0);
    // More than is free: the first chunks (32 MiB each) fit, a later one does not.
    let free = nix::sys::statvfs::statvfs(&mnt).unwrap();
    let want = free.blocks_available() * free.fragment_size() + (64 << 20);
    let out = Command::new("fallocate")
        .args(["-l", &want.to_string()])
        .arg(&p)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{want} bytes with fewer free");
    let shown = fs::metadata(&p).unwrap().len();
    assert!(shown > 0, "the size the failed fallocate left is shown");
    let (ok, log) = m.unmount();
    assert!(ok, "{log}");
    fsck::clean(&img, tmp.path());
    let out = uf2fs().run(["ls".as_ref(), "-l".as_ref(), img.as_os_str(), "/big".as_ref()]);
    let listed = String::from_utf8_lossy(out.assert_ok());
    assert!(listed.contains(&format!(" {shown} ")), "{listed}");
}
