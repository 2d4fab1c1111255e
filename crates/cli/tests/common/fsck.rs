//! `fsck.f2fs -f` as the oracle of the images the mount tests write: on a copy (fsck.f2fs
//! writes to the image it checks), exit 0 and no `[Fail]`, `[FIX` or `ASSERT` line.

use std::fs;
use std::path::Path;
use std::process::Command;
use uf2fs_testkit::image::tool;

/// Panics unless `fsck.f2fs -f`, run on a copy of `img` made in `work` (removed
/// afterwards), exits 0 without a complaint; returns its output. Any checkpoint will do
/// (a killed mount leaves no unmount checkpoint): see [`checkpoint_state`] and
/// [`unmounted`].
pub fn clean(img: &Path, work: &Path) -> String {
    let copy = work.join("fsck.img");
    fs::copy(img, &copy).unwrap();
    let out = Command::new(tool("fsck.f2fs"))
        .arg("-f")
        .arg(&copy)
        .output()
        .expect("run fsck.f2fs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "fsck.f2fs -f exited {}: {text}", out.status);
    for bad in ["[Fail]", "[FIX", "ASSERT"] {
        assert!(!text.contains(bad), "fsck.f2fs -f reports {bad}: {text}");
    }
    fs::remove_file(copy).unwrap();
    text
}

/// The `checkpoint state` line of fsck.f2fs's output, if it has one.
pub fn checkpoint_state(text: &str) -> Option<&str> {
    text.lines().find(|l| l.contains("checkpoint state"))
}

/// Panics unless `img` is fsck-clean with an unmount checkpoint (the testkit's oracle);
/// `when` starts the message. Returns fsck.f2fs's output.
pub fn unmounted(img: &Path, work: &Path, when: &str) -> String {
    uf2fs_testkit::fsck::fsck_clean(img, work).unwrap_or_else(|e| panic!("{when}: {e}"))
}
