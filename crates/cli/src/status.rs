//! `uf2fs status MOUNTPOINT`: the write and garbage-collection figures of a running
//! uf2fs mount, read from the status attribute of its root directory
//! ([`uf2fs_fuse::STATUS_XATTR`]).

use crate::names::escape_os;
use std::io::Write;
use std::path::Path;

/// Prints the status report of the uf2fs mount at `mountpoint`.
pub fn run(mountpoint: &Path) -> anyhow::Result<()> {
    let shown = escape_os(mountpoint);
    let meta = std::fs::metadata(mountpoint).map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
    if !meta.is_dir() {
        anyhow::bail!("{shown} is not a directory (give the mountpoint of a uf2fs mount)");
    }
    let not_ours = || anyhow::anyhow!("{shown} is not the root of a uf2fs mount");
    let report = match xattr::get(mountpoint, uf2fs_fuse::STATUS_XATTR) {
        Ok(Some(r)) => r,
        Ok(None) => return Err(not_ours()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTSUP) | Some(libc::ENODATA)) => return Err(not_ours()),
        Err(e) => anyhow::bail!("{shown}: reading its status: {e}"),
    };
    let mut out = std::io::stdout().lock();
    out.write_all(&report)?;
    out.flush()?;
    Ok(())
}
