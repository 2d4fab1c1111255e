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
        .filter(|l| l.contains("[Fail]") || l.contains("[FIX") || l.contains("ASSERT"))
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
