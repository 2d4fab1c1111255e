//! `uf2fs mkfs` end to end: the binary makes images that fsck.f2fs finds clean and the
//! other subcommands read, and refuses what it should with one error line, writing
//! nothing. Needs f2fs-tools 1.15 (fsck.f2fs, sload.f2fs).

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Output};

fn uf2fs(args: &[&str], image: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_uf2fs"))
        .args(args)
        .arg(image)
        .output()
        .expect("run uf2fs")
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Exit code, stdout, stderr.
fn run(args: &[&str], image: &Path) -> (i32, String, String) {
    let out = uf2fs(args, image);
    let (o, e) = text(&out);
    (out.status.code().unwrap_or(-1), o, e)
}

fn fsck_clean(img: &Path) {
    let out = Command::new("fsck.f2fs")
        .arg("-f")
        .arg(img)
        .output()
        .expect("cannot run fsck.f2fs (is f2fs-tools installed?)");
    let (o, e) = text(&out);
    let all = format!("{o}{e}");
    let clean = !all.contains("[Fail]") && !all.contains("[FIX") && !all.contains("ASSERT");
    assert!(out.status.success() && clean, "fsck.f2fs -f:\n{all}");
}

/// One error line on stderr, nothing on stdout.
fn assert_one_error(code: i32, out: &str, err: &str, want_code: i32, want: &str) {
    assert_eq!(code, want_code, "stderr: {err}");
    assert!(out.is_empty(), "stdout: {out}");
    assert_eq!(err.lines().count(), 1, "stderr: {err}");
    assert!(
        err.starts_with("uf2fs: ") && err.contains(want),
        "stderr: {err} (wanted '{want}')"
    );
}

#[test]
fn makes_a_sparse_image_that_fsck_and_ls_accept() {
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("new.img");
    let (code, out, err) = run(&["mkfs", "--size", "1G"], &img);
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "{err}");
    for want in [
        "size:          1 GiB",
        "segments:      511 (main area 502",
        "overprovision: 6.36%",
        "features:      (none)",
    ] {
        assert!(out.contains(want), "missing '{want}' in:\n{out}");
    }
    let meta = std::fs::metadata(&img).unwrap();
    assert_eq!(meta.len(), 1 << 30);
    assert!(
        meta.blocks() * 512 < 1 << 20,
        "not sparse: {} bytes allocated",
        meta.blocks() * 512
    );
    let (code, out, err) = run(&["ls", "-a"], &img);
    assert_eq!((code, out.as_str()), (0, ".\n..\n"), "{err}");
    let (code, out, _) = run(&["info"], &img);
    assert!(code == 0 && out.contains("features:           (none)"), "{out}");
    fsck_clean(&img);
}

#[test]
fn features_sections_label_and_sload_on_top() {
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("feat.img");
    let args = [
        "mkfs",
        "--size",
        "300M",
        "-s",
        "4",
        "-O",
        "extra_attr,inode_checksum,flexible_inline_xattr",
        "-O",
        "inode_crtime,sb_checksum,lost_found",
        "-l",
        "vol",
        "-o",
        "20",
    ];
    let (code, out, err) = run(&args, &img);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("sections of 4 segment(s)") && out.contains("overprovision: 20.00%"),
        "{out}"
    );
    assert!(
        out.contains("extra_attr, inode_checksum, flexible_inline_xattr, inode_crtime, lost_found, sb_checksum"),
        "{out}"
    );
    let (_, out, _) = run(&["info"], &img);
    assert!(out.contains("volume name:        vol"), "{out}");
    let (code, out, _) = run(&["ls"], &img);
    assert_eq!((code, out.as_str()), (0, "lost+found\n"));
    fsck_clean(&img);

    let tree = tmp.path().join("tree");
    std::fs::create_dir_all(tree.join("dir")).unwrap();
    std::fs::write(tree.join("dir/hello"), b"hello from sload\n").unwrap();
    // sload 1.15 exits 1 on flexible_inline_xattr images after fixing what it wrote;
    // the fsck below is the judge.
    let _ = Command::new("sload.f2fs")
        .arg("-f")
        .arg(&tree)
        .args(["-t", "/"])
        .arg(&img)
        .output();
    fsck_clean(&img);
    let out = Command::new(env!("CARGO_BIN_EXE_uf2fs"))
        .arg("cat")
        .arg(&img)
        .arg("/dir/hello")
        .output()
        .unwrap();
    assert_eq!(
        out.stdout,
        b"hello from sload\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn overwrites_only_with_force() {
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("old.img");
    std::fs::write(&img, b"precious").unwrap();
    let (code, out, err) = run(&["mkfs", "--size", "64M"], &img);
    assert_one_error(code, &out, &err, 2, "exists; pass --force");
    assert_eq!(std::fs::read(&img).unwrap(), b"precious");

    let (code, _, err) = run(&["mkfs", "--size", "64M", "--force", "-q"], &img);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::metadata(&img).unwrap().len(), 64 << 20);
    // Now it holds an F2FS: formatting it in place needs --force too.
    let (code, out, err) = run(&["mkfs"], &img);
    assert_one_error(code, &out, &err, 2, "holds an F2FS file system; pass --force");
    let (code, out, err) = run(&["mkfs", "-f", "-s", "1"], &img);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("size:          64 MiB"), "{out}");
    fsck_clean(&img);
}

#[test]
fn refuses_bad_options_writing_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("none.img");
    let cases: &[(&[&str], i32, &str)] = &[
        (&["mkfs", "--size", "10M"], 1, "at least 52 MiB"),
        (&["mkfs", "--size", "100M", "-s", "4"], 1, "at least 128 MiB"),
        (&["mkfs", "--size", "1G", "-s", "0"], 2, "--segs-per-sec"),
        (&["mkfs", "--size", "1G", "-o", "0"], 2, "--overprovision"),
        (&["mkfs", "--size", "1G", "-o", "150"], 2, "--overprovision"),
        (&["mkfs", "--size", "1Q"], 2, "unknown size suffix"),
        (
            &["mkfs", "--size", "1G", "-O", "compression"],
            1,
            "compression need(s) the extra_attr feature",
        ),
        (
            &["mkfs", "--size", "1G", "-O", "extra_attr,packed_ssa"],
            1,
            "the packed_ssa feature is for 16384-byte blocks",
        ),
        (
            &["mkfs", "--size", "1G", "-O", "project_quota"],
            1,
            "project_quota need(s) the extra_attr feature",
        ),
        (&["mkfs", "--size", "1G", "-C", "utf9"], 2, "unknown encoding 'utf9'"),
        (
            &["mkfs", "--size", "1G", "-O", "no_such"],
            2,
            "unknown feature 'no_such'",
        ),
        (&["mkfs", "--size", "1G", "-O", "inode_checksum"], 1, "extra_attr"),
        (&["mkfs"], 2, "does not exist; pass --size"),
        (&["mkfs", "--size", "100M", "-b", "16384"], 1, "at least 208 MiB"),
        (
            &["mkfs", "--size", "1G", "-b", "16384", "--zoned", "8M"],
            2,
            "zoned volumes of 4096-byte blocks only",
        ),
        (&["mkfs", "--size", "1G", "-b", "8192"], 2, "4096 or 16384"),
    ];
    for (args, want_code, want) in cases {
        let (code, out, err) = run(args, &img);
        assert_one_error(code, &out, &err, *want_code, want);
        assert!(!img.exists(), "{args:?} created the image");
    }
}

#[test]
fn zoned_layout_one_section_per_zone() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("z.img");
    let (code, out, err) = run(&["mkfs", "--size", "512M", "--zoned", "8M", "-q"], &img);
    assert_eq!(code, 0, "{out}{err}");
    fsck_clean(&img);
    let (code, info, err) = run(&["info"], &img);
    assert_eq!(code, 0, "{err}");
    assert!(info.contains("blkzoned"), "{info}");
    assert!(info.contains("section:            4 segment(s)"), "{info}");
    for (zone, why) in [
        ("3M", "multiple of 2 MiB"),
        ("0", "multiple of 2 MiB"),
        ("2G", "at most 1 GiB"),
    ] {
        let bad = dir.path().join("bad.img");
        let (code, out, err) = run(&["mkfs", "--size", "512M", "--zoned", zone], &bad);
        assert_one_error(code, &out, &err, 2, why);
        assert!(!bad.exists(), "--zoned {zone} wrote {}", bad.display());
    }
    let (code, out, err) = run(&["mkfs", "--size", "512M", "--zoned", "8M", "-s", "2", "-f"], &img);
    assert_eq!(code, 2, "--zoned with -s: {out}{err}");
}
