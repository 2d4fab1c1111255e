//! `fsck.f2fs -f` as the oracle of images a test wrote: run on a sparse copy (fsck.f2fs
//! writes to the image it checks), it must exit 0 without a `[Fail]`, `[FIX` or `ASSERT`
//! line, and find the checkpoint an unmount leaves.

use crate::image::tool;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

/// Checks `img` with `fsck.f2fs -f` on a copy made in `work` (removed afterwards);
/// `Ok` holds fsck's output, `Err` says what is wrong with the image, with that output.
pub fn fsck_clean(img: &Path, work: &Path) -> Result<String, String> {
    let copy = work.join(format!("fsck-copy-{}.img", std::process::id()));
    let cp = Command::new("cp")
        .arg("--sparse=always")
        .arg(img)
        .arg(&copy)
        .status()
        .map_err(|e| format!("cp: {e}"))?;
    if !cp.success() {
        return Err(format!("copying {} for fsck failed: {cp}", img.display()));
    }
    let out = Command::new(tool("fsck.f2fs"))
        .arg("-f")
        .arg(&copy)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running fsck.f2fs: {e} (Debian package f2fs-tools)"));
    let _ = fs::remove_file(&copy);
    let out = out?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        return Err(format!("fsck.f2fs -f exited {}:\n{text}", out.status));
    }
    for bad in ["[Fail]", "[FIX", "ASSERT"] {
        if text.contains(bad) {
            return Err(format!("fsck.f2fs -f reports {bad}:\n{text}"));
        }
    }
    match text.lines().find(|l| l.contains("checkpoint state")) {
        Some(state) if state.contains("unmount") => Ok(text),
        Some(state) => Err(format!("not an unmount checkpoint ({state}):\n{text}")),
        None => Err(format!("no checkpoint state in fsck.f2fs's output:\n{text}")),
    }
}
