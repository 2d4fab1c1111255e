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
            matches!(r, Err(Error::ReadOnly(ref m)) if m.contains("injected")),
            "{r:?}"
        );
    }
    assert!(fs.unmount().is_err());
    assert!(dev.image_now() == durable, "the device changed after the failure");
}
