//! `uf2fs status MOUNTPOINT`: the write and garbage-collection figures of a running
//! uf2fs mount, read from its root directory: the `key: value` report
//! ([`uf2fs_fuse::STATUS_XATTR`]) as it is, or with `--json` the mount's
//! [`uf2fs_core::Status`] serialised by the mount ([`uf2fs_fuse::STATUS_JSON_XATTR`];
//! field names in docs/json.md), pretty-printed.

use crate::names::escape_os;
use std::io::Write;
use std::path::Path;

/// Prints the status of the uf2fs mount at `mountpoint`.
pub fn run(mountpoint: &Path, as_json: bool) -> anyhow::Result<()> {
    let shown = escape_os(mountpoint);
    let meta = std::fs::metadata(mountpoint).map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
    if !meta.is_dir() {
        anyhow::bail!("{shown} is not a directory (give the mountpoint of a uf2fs mount)");
    }
    let not_ours = || anyhow::anyhow!("{shown} is not the root of a uf2fs mount");
    let name = if as_json {
        uf2fs_fuse::STATUS_JSON_XATTR
    } else {
        uf2fs_fuse::STATUS_XATTR
    };
    let report = match xattr::get(mountpoint, name) {
        Ok(Some(r)) => r,
        Ok(None) => return Err(not_ours()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTSUP) | Some(libc::ENODATA)) => return Err(not_ours()),
        Err(e) => anyhow::bail!("{shown}: reading its status: {e}"),
    };
    if as_json {
        // Parsed (fields in the structure's order) and printed as every --json is.
        let doc: serde_json::Value = serde_json::from_slice(&report)
            .map_err(|e| anyhow::anyhow!("{shown}: the mount's status is not JSON: {e}"))?;
        return crate::json::print(&doc);
    }
    let mut out = std::io::stdout().lock();
    out.write_all(&report)?;
    out.flush()?;
    Ok(())
}
