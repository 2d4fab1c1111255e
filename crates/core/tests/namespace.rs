//! Namespace operations judged by fsck.f2fs and the read path.

use std::path::{Path, PathBuf};
use std::process::Command;
use uf2fs_core::mkfs::{mkfs, parse_features, MkfsOptions};
use uf2fs_core::{FileKind, Fs};

const MIB: u64 = 1 << 20;

fn output(cmd: &mut Command) -> (bool, String) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e} (is f2fs-tools installed?)"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn fsck_clean(img: &Path, what: &str) -> String {
    let copy = img.with_extension("fsck");
    std::fs::copy(img, &copy).unwrap();
    let (ok, text) = output(Command::new("fsck.f2fs").arg("-f").arg(&copy));
    let _ = std::fs::remove_file(&copy);
    let bad: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("[Fail]") || l.contains("[FIX") || l.contains("ASSERT"))
        .collect();
    assert!(ok && bad.is_empty(), "fsck.f2fs -f after {what}:\n{text}");
    text
}

fn uf2fs_image(dir: &Path, size: u64, features: &str) -> PathBuf {
    let img = dir.join("base.img");
    let _ = std::fs::remove_file(&img);
    let opts = MkfsOptions {
        size_bytes: Some(size),
        features: parse_features(features).unwrap(),
        ..MkfsOptions::default()
    };
    mkfs(&img, &opts).unwrap();
    img
}

#[test]
fn smoke() {
    let tmp = tempfile::tempdir().unwrap();
    let img = uf2fs_image(tmp.path(), 256 * MIB, "");
    let fs = Fs::open_rw(&img, &[]).unwrap();
    let root = fs.root();
    let a = fs.create(root, b"a", 0o644, 0, 0).unwrap();
    assert_eq!(a.kind, FileKind::File);
    let d = fs.mkdir(root, b"d", 0o755, 0, 0).unwrap();
    for i in 0..300 {
        fs.create(d.ino, format!("file-{i}").as_bytes(), 0o600, 1, 2).unwrap();
    }
    fs.symlink(root, b"s", b"a", 0, 0).unwrap();
    fs.symlink(root, b"long", &[b'x'; 4000], 0, 0).unwrap();
    assert_eq!(fs.read_link(fs.lookup(root, b"long").unwrap()).unwrap().len(), 4000);
    fs.unmount().unwrap();
    let text = fsck_clean(&img, "smoke");
    println!("{text}");
    let fs = Fs::open(&img, &[]).unwrap();
    assert_eq!(fs.read_dir(d.ino).unwrap().len(), 300);
}
