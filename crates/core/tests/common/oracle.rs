//! f2fs-tools as the judge of the core's images, shared by the core's test suites:
//! running a tool, and `fsck.f2fs -f` that must find an image clean.

#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// Runs `cmd`; whether it succeeded, and its stdout and stderr together.
pub fn output(cmd: &mut Command) -> (bool, String) {
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

/// `fsck.f2fs -f` on a copy of `img` (fsck writes to what it checks): exit 0, and no
/// "[Fail]", "[FIX" or "ASSERT". Returns its output.
pub fn fsck_clean(img: &Path, what: &str) -> String {
    let copy = img.with_extension("fsck");
    std::fs::copy(img, &copy).unwrap();
    let text = fsck_clean_in_place(&copy, what);
    let _ = std::fs::remove_file(&copy);
    text
}

/// [`fsck_clean`] on `img` itself (a scratch image).
pub fn fsck_clean_in_place(img: &Path, what: &str) -> String {
    let (ok, text) = output(Command::new("fsck.f2fs").arg("-f").arg(img));
    let bad: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("[Fail]") || l.contains("[FIX") || l.contains("ASSERT") || l.contains("[ERROR]"))
        .collect();
    assert!(ok && bad.is_empty(), "fsck.f2fs -f after {what}:\n{text}");
    text
}

/// `fsck.f2fs -f -y` on a copy of `img`: with fixing on, fsck also checks what it
/// otherwise fixes silently (`i_compr_blocks`), and any fix it makes is a failure.
/// Returns its output.
pub fn fsck_clean_fixing(img: &Path, what: &str) -> String {
    let copy = img.with_extension("fsck");
    std::fs::copy(img, &copy).unwrap();
    let (ok, text) = output(Command::new("fsck.f2fs").args(["-f", "-y"]).arg(&copy));
    let _ = std::fs::remove_file(&copy);
    let bad = text
        .lines()
        .any(|l| l.contains("[Fail]") || l.contains("[FIX") || l.contains("ASSERT"));
    assert!(ok && !bad, "fsck.f2fs -f -y after {what}:\n{text}");
    text
}

/// The directory of an f2fs-tools build whose fsck.f2fs reads 16 KiB-block volumes (the
/// development tree, docs/android-images.md): beside `UF2FS_MKFS_F2FS`, else
/// /tmp/blk16-tools/inst/sbin or /work/ext/f2fs-tools-inst/sbin; `None` after saying
/// why there is none.
pub fn dev_fsck() -> Option<std::path::PathBuf> {
    let mut dirs: Vec<std::path::PathBuf> = Vec::new();
    if let Some(m) = std::env::var_os("UF2FS_MKFS_F2FS") {
        dirs.extend(Path::new(&m).parent().map(Path::to_path_buf));
    }
    dirs.push("/tmp/blk16-tools/inst/sbin".into());
    dirs.push("/work/ext/f2fs-tools-inst/sbin".into());
    for d in &dirs {
        let fsck = d.join("fsck.f2fs");
        let takes_16k = std::process::Command::new(d.join("mkfs.f2fs"))
            .arg("-h")
            .output()
            .is_ok_and(|o| {
                String::from_utf8_lossy(&o.stdout).contains("-b") || String::from_utf8_lossy(&o.stderr).contains("-b ")
            });
        if fsck.is_file() && takes_16k {
            return Some(fsck);
        }
    }
    eprintln!(
        "skipping fsck of the 16 KiB volume: no f2fs-tools development build (mkfs.f2fs with -b) in {dirs:?}; \
         set UF2FS_MKFS_F2FS (docs/android-images.md)"
    );
    None
}

/// The development fsck.f2fs `-f -y` on a copy of `img` (fixing on, it also checks
/// `i_compr_blocks`): exit 0, no `[Fail]`, no `[FIX`, no `ASSERT`, no `[ERROR]` (which
/// it prints for a quota file whose size its blocks do not match, and exits 0) (its
/// "fixing SIT types" on every fresh image aside, docs/android-images.md).
pub fn dev_fsck_clean(fsck: &Path, img: &Path, what: &str) {
    let copy = img.with_extension("fsck");
    std::fs::copy(img, &copy).unwrap();
    let (ok, text) = output(std::process::Command::new(fsck).args(["-f", "-y"]).arg(&copy));
    let _ = std::fs::remove_file(&copy);
    let bad: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("[Fail]") || l.contains("[FIX") || l.contains("ASSERT"))
        .collect();
    assert!(
        ok && bad.is_empty(),
        "development fsck.f2fs -f -y after {what}:\n{text}"
    );
}
