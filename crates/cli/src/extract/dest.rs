//! Preparing destination paths: never follow or silently replace what is already there.

use crate::names::escape_os;
use anyhow::{bail, Context};
use std::fs::{self, DirBuilder};
use std::io::ErrorKind;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

/// Makes `path` free for a new non-directory: nothing there is fine; an existing
/// non-directory is removed only with `force`; a directory is never replaced.
pub fn clear_slot(path: &Path, force: bool) -> anyhow::Result<()> {
    match fs::symlink_metadata(path) {
        Err(err) if err.kind() == ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err).with_context(|| format!("checking {}", escape_os(path))),
        Ok(meta) if meta.is_dir() => {
            bail!("cannot overwrite directory {} with a non-directory", escape_os(path))
        }
        Ok(_) if force => fs::remove_file(path).with_context(|| format!("removing {}", escape_os(path))),
        Ok(_) => bail!("{} already exists (use --force to overwrite)", escape_os(path)),
    }
}

/// Makes sure `path` is a real directory (not a symlink to one): an existing directory
/// is reused, a missing one is created, a non-directory is replaced only with `force`.
pub fn ensure_dir(path: &Path, force: bool) -> anyhow::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => return make_writable(path, &meta),
        Err(err) if err.kind() == ErrorKind::NotFound => {}
        Err(err) => return Err(err).with_context(|| format!("checking {}", escape_os(path))),
        Ok(_) if force => fs::remove_file(path).with_context(|| format!("removing {}", escape_os(path)))?,
        Ok(_) => bail!(
            "{} already exists and is not a directory (use --force to replace it)",
            escape_os(path)
        ),
    }
    // Owner-only until the directory's own mode is applied after its contents.
    DirBuilder::new()
        .mode(0o700)
        .create(path)
        .with_context(|| format!("creating directory {}", escape_os(path)))
}

/// An existing directory (say, from an earlier extraction of a read-only tree) may lack
/// owner write or search permission; grant them so its contents can be written. The
/// image's mode replaces this once the directory is finished.
fn make_writable(path: &Path, meta: &fs::Metadata) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode();
    if mode & 0o300 == 0o300 {
        return Ok(());
    }
    fs::set_permissions(path, fs::Permissions::from_mode((mode | 0o700) & 0o7777))
        .with_context(|| format!("making {} writable", escape_os(path)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("uf2fs-cli-dest-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn slots_are_not_overwritten_without_force() {
        let dir = scratch("slots");
        let file = dir.join("f");
        fs::write(&file, b"x").unwrap();
        assert!(clear_slot(&file, false).unwrap_err().to_string().contains("--force"));
        clear_slot(&file, true).unwrap();
        assert!(!file.exists());
        assert!(clear_slot(&dir, true).is_err());
        clear_slot(&dir.join("missing"), false).unwrap();
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn symlinks_are_never_entered_as_directories() {
        let dir = scratch("dirs");
        let outside = dir.join("outside");
        fs::create_dir(&outside).unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        assert!(ensure_dir(&link, false).is_err());
        ensure_dir(&link, true).unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().is_dir());
        ensure_dir(&link, false).unwrap();
        fs::set_permissions(&link, fs::Permissions::from_mode(0o500)).unwrap();
        ensure_dir(&link, false).unwrap();
        assert_eq!(fs::metadata(&link).unwrap().permissions().mode() & 0o777, 0o700);
        fs::remove_dir_all(&dir).unwrap();
    }
}
