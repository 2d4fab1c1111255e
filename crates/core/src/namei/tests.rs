//! Namespace internals no public call reaches: rehashed inline conversion (directories
//! with extra hash levels), node-id reuse and versions, the failed state.

use crate::device::CrashDevice;
use crate::mkfs::{mkfs, MkfsOptions};
use crate::{Error, Fs, OpenOptions};
use std::path::Path;
use std::process::Command;

const RW: OpenOptions = OpenOptions { read_write: true };

/// A fresh uf2fs volume of 128 MiB, opened read-write on a recording device.
fn fresh(dir: &Path) -> (Fs, CrashDevice) {
    let img = dir.join("img");
    let opts = MkfsOptions {
        size_bytes: Some(128 << 20),
        ..MkfsOptions::default()
    };
    mkfs(&img, &opts).unwrap();
    let dev = CrashDevice::new(std::fs::read(&img).unwrap(), 1 << 20);
    let fs = Fs::open_device_with(Box::new(dev.clone()), "mem", RW).unwrap();
    (fs, dev)
}

/// fsck.f2fs -f on `image`: exit 0, nothing to fix.
fn fsck_clean(dir: &Path, image: &[u8], what: &str) {
    let img = dir.join("fsck.img");
    std::fs::write(&img, image).unwrap();
    let out = Command::new("fsck.f2fs")
        .arg("-f")
        .arg(&img)
        .output()
        .expect("cannot run fsck.f2fs (is f2fs-tools installed?)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let bad = text
        .lines()
        .any(|l| l.contains("[Fail]") || l.contains("[FIX") || l.contains("ASSERT"));
    assert!(out.status.success() && !bad, "fsck.f2fs -f after {what}:\n{text}");
}

#[test]
fn a_directory_with_extra_hash_levels_is_converted_by_rehashing() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, dev) = fresh(tmp.path());
    let d = fs.mkdir(fs.root(), b"leveled", 0o755, 0, 0).unwrap().ino;
    {
        let rw = fs.rw().unwrap();
        let t = fs.tree(rw);
        let mut i = t.load_inode(d).unwrap();
        i.inode.dir_level = 2;
        t.store_inode(i).unwrap();
    }
    let names: Vec<String> = (0..600).map(|i| format!("entry-{i:04}")).collect();
    for n in &names {
        fs.create(d, n.as_bytes(), 0o644, 0, 0).unwrap();
    }
    for n in &names {
        assert!(fs.lookup(d, n.as_bytes()).is_ok(), "{n}");
    }
    assert_eq!(fs.lookup(d, b"..").unwrap(), fs.root());
    assert_eq!(fs.read_dir(d).unwrap().len(), names.len());
    fs.unmount().unwrap();
    fsck_clean(tmp.path(), &dev.image_now(), "a rehashed directory with dir_level 2");
    let ro = Fs::open_device(Box::new(crate::device::MemDevice::new(dev.image_now())), "ro").unwrap();
    let d2 = ro.lookup(ro.root(), b"leveled").unwrap();
    assert_eq!(ro.read_dir(d2).unwrap().len(), names.len());
}

#[test]
fn freed_node_ids_return_after_a_checkpoint_with_their_version_bumped() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, dev) = fresh(tmp.path());
    let root = fs.root();
    let mut dirs = Vec::new();
    for k in 0..4 {
        let d = fs.mkdir(root, format!("d{k}").as_bytes(), 0o755, 0, 0).unwrap().ino;
        for i in 0..250 {
            fs.create(d, format!("f{i}").as_bytes(), 0o644, 0, 0).unwrap();
        }
        dirs.push(d);
    }
    fs.write_checkpoint().unwrap();
    let version = |nid: u32| fs.nodes().nat_entry(fs.device(), nid).unwrap().version;
    let before: Vec<u8> = dirs.iter().map(|&d| version(d)).collect();
    for (k, &d) in dirs.iter().enumerate() {
        for i in 0..250 {
            fs.unlink(d, format!("f{i}").as_bytes()).unwrap();
        }
        fs.rmdir(root, format!("d{k}").as_bytes()).unwrap();
    }
    // Not before the checkpoint that records them free.
    let early = fs.mkdir(root, b"early", 0o755, 0, 0).unwrap().ino;
    assert!(!dirs.contains(&early));
    fs.write_checkpoint().unwrap();
    let mut reused = Vec::new();
    for k in 0..4 {
        let d = fs.mkdir(root, format!("again{k}").as_bytes(), 0o755, 0, 0).unwrap().ino;
        for i in 0..250 {
            fs.create(d, format!("g{i}").as_bytes(), 0o644, 0, 0).unwrap();
        }
        reused.push(d);
    }
    let back: Vec<(u32, u8, u8)> = dirs
        .iter()
        .zip(&before)
        .filter(|(d, _)| reused.contains(d))
        .map(|(&d, &v)| (d, v, version(d)))
        .collect();
    assert!(!back.is_empty(), "no freed id came back: {dirs:?} then {reused:?}");
    for (d, old, new) in back {
        assert_eq!(new, old.wrapping_add(1), "inode {d}");
    }
    fs.unmount().unwrap();
    fsck_clean(tmp.path(), &dev.image_now(), "directories on reused node ids");
}

#[test]
fn after_a_failure_halfway_nothing_more_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, dev) = fresh(tmp.path());
    fs.create(fs.root(), b"kept", 0o644, 0, 0).unwrap();
    fs.write_checkpoint().unwrap();
    let durable = dev.image_now();
    fs.create(fs.root(), b"lost", 0o644, 0, 0).unwrap();
    fs.rw().unwrap().fail(&Error::Invalid("injected".into()));
    for r in [
        fs.create(fs.root(), b"x", 0o644, 0, 0).map(|_| ()),
        fs.unlink(fs.root(), b"kept"),
        fs.write_checkpoint().map(|_| ()),
    ] {
        assert!(
            matches!(r, Err(ref e @ Error::Io { .. }) if e.errno() == 5 && e.to_string().contains("injected")),
            "{r:?}"
        );
    }
    assert!(fs.unmount().is_err());
    assert!(dev.image_now() == durable, "the device changed after the failure");
}

/// A volume made by `mkfs.f2fs -O casefold -C utf8` (64 MiB), opened read-write, with
/// directory "cf" given the casefold flag as FS_IOC_SETFLAGS gives it (on Linux too:
/// on an empty directory).
fn casefold_volume(dir: &Path, strict: bool) -> (Fs, CrashDevice, crate::Ino) {
    let img = dir.join("cf.img");
    std::fs::File::create(&img).unwrap().set_len(64 << 20).unwrap();
    let mut cmd = Command::new("mkfs.f2fs");
    cmd.args([
        "-q",
        "-f",
        "-O",
        "casefold",
        "-C",
        if strict { "utf8:strict" } else { "utf8" },
    ]);
    let out = cmd
        .arg(&img)
        .output()
        .expect("cannot run mkfs.f2fs (is f2fs-tools installed?)");
    assert!(
        out.status.success(),
        "mkfs.f2fs: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dev = CrashDevice::new(std::fs::read(&img).unwrap(), 1 << 20);
    let fs = Fs::open_device_with(Box::new(dev.clone()), "mem", RW).unwrap();
    let cf = fs.mkdir(fs.root(), b"cf", 0o755, 0, 0).unwrap().ino;
    let flags = crate::flags::FS_CASEFOLD_FL;
    fs.set_file_flags(cf, flags, crate::flags::SETTABLE_FLAGS).unwrap();
    assert_ne!(fs.file_flags(cf).unwrap() & flags, 0);
    (fs, dev, cf)
}

#[test]
fn casefolded_directories_find_add_and_refuse_names_by_folded_form() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, dev, cf) = casefold_volume(tmp.path(), false);
    let file = fs.create(cf, "Straße".as_bytes(), 0o644, 0, 0).unwrap().ino;
    for other in ["STRASSE", "strasse", "Straße", "STRAẞE"] {
        assert_eq!(fs.lookup(cf, other.as_bytes()).unwrap(), file, "{other}");
    }
    // Duplicates by folded name: every way of adding a name refuses them.
    assert!(matches!(fs.create(cf, b"STRASSE", 0o644, 0, 0), Err(Error::Exists(_))));
    assert!(matches!(fs.mkdir(cf, b"strasse", 0o755, 0, 0), Err(Error::Exists(_))));
    assert!(matches!(fs.symlink(cf, b"StrassE", b"x", 0, 0), Err(Error::Exists(_))));
    assert!(matches!(fs.link(file, cf, b"STRASSE"), Err(Error::Exists(_))));
    // A new directory inherits the flag; names keep their case.
    let sub = fs.mkdir(cf, "Ǆ-Sub".as_bytes(), 0o755, 0, 0).unwrap().ino;
    assert_eq!(fs.lookup(cf, "ǆ-sub".as_bytes()).unwrap(), sub);
    let inner = fs.create(sub, "İstanbul".as_bytes(), 0o644, 0, 0).unwrap().ino;
    assert_eq!(fs.lookup(sub, "i\u{307}STANBUL".as_bytes()).unwrap(), inner);
    assert!(fs.lookup(sub, b"istanbul").is_err());
    let names: Vec<Vec<u8>> = fs.read_dir(cf).unwrap().into_iter().map(|e| e.name).collect();
    assert!(names.contains(&"Straße".as_bytes().to_vec()) && names.contains(&"Ǆ-Sub".as_bytes().to_vec()));
    // Enough names for dentry blocks and hash levels; then each by another case.
    for i in 0..400 {
        fs.create(cf, format!("File-{i}").as_bytes(), 0o644, 0, 0).unwrap();
    }
    for i in 0..400 {
        assert!(fs.lookup(cf, format!("FILE-{i}").as_bytes()).is_ok(), "FILE-{i}");
    }
    fs.symlink(cf, b"Link", b"target", 0, 0).unwrap();
    fs.link(file, cf, b"Hard").unwrap();
    assert_eq!(fs.lookup(cf, b"HARD").unwrap(), file);
    // A name that is not UTF-8 is an opaque byte string.
    let raw = fs.create(cf, b"bad-\xff", 0o644, 0, 0).unwrap().ino;
    assert_eq!(fs.lookup(cf, b"bad-\xff").unwrap(), raw);
    assert!(fs.lookup(cf, b"BAD-\xff").is_err());
    // Renames: to another case of the same name changes nothing (as in Linux); across
    // names by folded form; unlink and rmdir by another case.
    fs.rename(cf, b"file-1", cf, b"FILE-1", 0).unwrap();
    assert!(fs.read_dir(cf).unwrap().iter().any(|e| e.name == b"File-1"));
    fs.rename(cf, b"FILE-2", cf, "Neu-Straße".as_bytes(), 0).unwrap();
    assert!(fs.lookup(cf, b"NEU-STRASSE").is_ok() && fs.lookup(cf, b"file-2").is_err());
    fs.unlink(cf, b"LINK").unwrap();
    fs.unlink(sub, b"I\xcc\x87STANBUL").unwrap();
    fs.rmdir(cf, "ǅ-SUB".as_bytes()).unwrap();
    assert!(fs.lookup(cf, b"link").is_err());
    fs.unmount().unwrap();
    // fsck.f2fs checks every dentry's hash against its own casefolding.
    fsck_clean(tmp.path(), &dev.image_now(), "names in a casefolded directory");
}

#[test]
fn a_strict_volume_refuses_names_it_cannot_fold() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, _dev, cf) = casefold_volume(tmp.path(), true);
    assert!(matches!(
        fs.create(cf, b"bad-\xff", 0o644, 0, 0),
        Err(Error::Invalid(_))
    ));
    assert!(matches!(fs.lookup(cf, b"bad-\xff"), Err(Error::Invalid(_))));
    // Outside casefolded directories any name goes.
    fs.create(fs.root(), b"bad-\xff", 0o644, 0, 0).unwrap();
}

#[test]
fn a_whiteout_rename_leaves_a_character_device_of_mode_zero() {
    use crate::{Creator, FileKind, RENAME_EXCHANGE, RENAME_NOREPLACE, RENAME_WHITEOUT};
    let tmp = tempfile::tempdir().unwrap();
    let (fs, dev) = fresh(tmp.path());
    let root = fs.root();
    let a = fs.create(root, b"a", 0o644, 0, 0).unwrap().ino;
    fs.write(a, 0, b"data").unwrap();
    let who = Creator {
        uid: 1000,
        gid: 100,
        umask: 0o022,
    };
    fs.rename_as(root, b"a", root, b"b", RENAME_WHITEOUT, who).unwrap();
    assert_eq!(fs.lookup(root, b"b").unwrap(), a);
    let w = fs.stat(fs.lookup(root, b"a").unwrap()).unwrap();
    assert_eq!(w.kind, FileKind::CharDev);
    assert_eq!((w.mode & 0o7777, w.rdev, w.nlink), (0, (0, 0), 1));
    assert_eq!((w.uid, w.gid), (1000, 100));
    // Over an existing name, and of a directory (which leaves its parent's links).
    let c = fs.create(root, b"c", 0o644, 0, 0).unwrap().ino;
    fs.rename_as(root, b"c", root, b"b", RENAME_WHITEOUT, who).unwrap();
    assert_eq!(fs.lookup(root, b"b").unwrap(), c);
    let d = fs.mkdir(root, b"d", 0o755, 0, 0).unwrap().ino;
    let sub = fs.mkdir(d, b"sub", 0o755, 0, 0).unwrap().ino;
    fs.rename_as(d, b"sub", root, b"moved", RENAME_WHITEOUT | RENAME_NOREPLACE, who)
        .unwrap();
    assert_eq!(fs.lookup(root, b"moved").unwrap(), sub);
    assert_eq!(fs.lookup(sub, b"..").unwrap(), root);
    assert_eq!(fs.stat(d).unwrap().nlink, 2);
    let ws = fs.stat(fs.lookup(d, b"sub").unwrap()).unwrap();
    assert_eq!(ws.kind, FileKind::CharDev);
    // Not with an exchange (Linux's EINVAL).
    let err = fs.rename_as(root, b"b", root, b"d", RENAME_WHITEOUT | RENAME_EXCHANGE, who);
    assert!(matches!(err, Err(Error::Invalid(_))), "{err:?}");
    fs.unmount().unwrap();
    fsck_clean(tmp.path(), &dev.image_now(), "whiteout renames");
}

/// mkfs.f2fs with `features` on a 64 MiB image, opened read-write on a recording device.
fn f2fs_volume(dir: &Path, features: &str) -> (Fs, CrashDevice) {
    let img = dir.join("features.img");
    std::fs::File::create(&img).unwrap().set_len(64 << 20).unwrap();
    let out = Command::new("mkfs.f2fs")
        .args(["-q", "-f", "-O", features])
        .arg(&img)
        .output()
        .expect("cannot run mkfs.f2fs (is f2fs-tools installed?)");
    assert!(
        out.status.success(),
        "mkfs.f2fs: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dev = CrashDevice::new(std::fs::read(&img).unwrap(), 1 << 20);
    let fs = Fs::open_device_with(Box::new(dev.clone()), "mem", RW).unwrap();
    (fs, dev)
}

#[test]
fn inode_flags_follow_f2fs_rules() {
    use crate::flags::*;
    let tmp = tempfile::tempdir().unwrap();
    let is = |r: crate::Result<crate::Stat>, errno: i32| assert_eq!(r.map(drop).map_err(|e| e.errno()), Err(errno));
    // A casefold volume without compression.
    let (fs, dev, cf) = casefold_volume(tmp.path(), false);
    let root = fs.root();
    let full = fs.mkdir(root, b"full", 0o755, 0, 0).unwrap().ino;
    let file = fs.create(full, b"f", 0o644, 0, 0).unwrap().ino;
    is(fs.set_file_flags(full, FS_CASEFOLD_FL, SETTABLE_FLAGS), 39); // ENOTEMPTY
    is(fs.set_file_flags(file, FS_CASEFOLD_FL, SETTABLE_FLAGS), 95); // not on a file
    is(fs.set_file_flags(file, FS_DIRSYNC_FL, SETTABLE_FLAGS), 95);
    is(fs.set_file_flags(file, FS_COMPR_FL, SETTABLE_FLAGS), 95); // no compression
    is(fs.set_file_flags(file, 0x8000_0000, SETTABLE_FLAGS), 95); // not F2FS's
                                                                  // Shown but not settable: ignored (chattr hands back what lsattr showed).
    let keep = FS_IMMUTABLE_FL | FS_NODUMP_FL | FS_INLINE_DATA_FL;
    let st = fs.set_file_flags(file, keep, SETTABLE_FLAGS).unwrap();
    assert_eq!(st.flags, FS_IMMUTABLE_FL | FS_NODUMP_FL);
    assert_eq!(fs.file_flags(file).unwrap(), keep, "inline data shows");
    // FS_IOC_FSSETXATTR's mask leaves the other flags.
    fs.set_file_flags(full, FS_NOATIME_FL, COMMON_FLAGS).unwrap();
    assert_eq!(
        fs.file_flags(full).unwrap() & (FS_NOATIME_FL | FS_INDEX_FL),
        FS_NOATIME_FL | FS_INDEX_FL
    );
    // Casefolding can be taken off an empty directory again.
    fs.set_file_flags(cf, 0, SETTABLE_FLAGS).unwrap();
    assert_eq!(fs.file_flags(cf).unwrap() & FS_CASEFOLD_FL, 0);
    fs.unmount().unwrap();
    fsck_clean(tmp.path(), &dev.image_now(), "flags on a casefold volume");

    // A compression volume.
    let (fs, dev) = f2fs_volume(tmp.path(), "extra_attr,compression");
    let root = fs.root();
    let dir = fs.mkdir(root, b"c", 0o755, 0, 0).unwrap().ino;
    let empty = fs.create(root, b"empty", 0o644, 0, 0).unwrap().ino;
    let data = fs.create(root, b"data", 0o644, 0, 0).unwrap().ino;
    fs.write(data, 0, b"x").unwrap();
    fs.set_file_flags(dir, FS_COMPR_FL, SETTABLE_FLAGS).unwrap();
    let compress = fs.inode(dir).unwrap().inode.compress.unwrap();
    assert_eq!((compress.algorithm, compress.log_cluster_size), (1, 2), "LZ4, 4 blocks");
    // An empty file turns compressed (its inline area becomes address slots).
    fs.set_file_flags(empty, FS_COMPR_FL, SETTABLE_FLAGS).unwrap();
    let i = fs.inode(empty).unwrap();
    assert!(i.inode.is_compressed() && !i.inode.has_inline(uf2fs_format::node::F2FS_INLINE_DATA));
    is(fs.set_file_flags(data, FS_COMPR_FL, SETTABLE_FLAGS), 22); // has data
    is(fs.set_file_flags(empty, FS_COMPR_FL | FS_NOCOMP_FL, SETTABLE_FLAGS), 22);
    fs.set_file_flags(empty, FS_NOCOMP_FL, SETTABLE_FLAGS).unwrap();
    fs.unmount().unwrap();
    fsck_clean(tmp.path(), &dev.image_now(), "flags on a compression volume");
}
