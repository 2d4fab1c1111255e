//! `uf2fs cat`: stream one file's data to stdout.

use crate::names::{escape_bytes, image_path};
use crate::output::RawStdout;
use anyhow::{bail, Context};
use std::ffi::OsStr;
use std::io::Write;
use uf2fs_core::{FileKind, Fs, Ino};

/// Bytes read from the image per call: large enough that per-call costs vanish.
const CHUNK_BYTES: usize = 1 << 20;

/// Writes the file at `path` (symlinks followed) to stdout.
pub fn run(fs: &Fs, path: &OsStr) -> anyhow::Result<()> {
    let path = image_path(path);
    let ino = fs.resolve(&path, true)?;
    let stat = fs.stat(ino)?;
    match stat.kind {
        FileKind::File => {}
        FileKind::Dir => bail!("is a directory: {}", escape_bytes(&path)),
        _ => bail!("not a regular file: {}", escape_bytes(&path)),
    }
    let mut out = RawStdout::new().context("stdout")?;
    copy_file(fs, ino, &mut out).with_context(|| escape_bytes(&path))
}

/// Copies the whole file through one reused buffer; stops at the first short read
/// (the end of the file).
fn copy_file(fs: &Fs, ino: Ino, out: &mut impl Write) -> anyhow::Result<()> {
    let mut buf = vec![0u8; CHUNK_BYTES];
    let mut offset: u64 = 0;
    loop {
        let n = fs.read(ino, offset, &mut buf)?;
        let Some(data) = buf.get(..n) else {
            bail!("file system returned {n} bytes for a {CHUNK_BYTES}-byte read");
        };
        out.write_all(data).context("writing to stdout")?;
        if n < buf.len() {
            return Ok(());
        }
        offset += n as u64;
    }
}
