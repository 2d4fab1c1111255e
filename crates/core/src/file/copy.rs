//! `copy_file_range(2)` inside the file system ([`Fs::copy_file_range`]).

use crate::{Fs, Ino, Result};

/// Bytes read and written at a time by a copy.
const COPY_CHUNK: u64 = 1 << 20;

impl Fs {
    /// Copies up to `len` bytes of regular file `src` from `offset_in` to `dst` at
    /// `offset_out`, as the kernel's fallback does through the page cache (F2FS has no
    /// copy_file_range of its own: the VFS splices): a chunk at a time, each read of
    /// the source followed by a [`Fs::write`] of what it read; stops at the source's
    /// end of file and at a short write. Returns the bytes copied; an error only when
    /// nothing was copied (a later failure ends the copy short). The caller checks the
    /// flags, that the ranges do not overlap within one file, and the target's
    /// `O_APPEND`.
    pub fn copy_file_range(&self, src: Ino, offset_in: u64, dst: Ino, offset_out: u64, len: u64) -> Result<u64> {
        let mut done = 0u64;
        let mut buf = vec![0u8; COPY_CHUNK.min(len) as usize];
        while done < len {
            let want = (len - done).min(COPY_CHUNK) as usize;
            let step = self
                .read(src, offset_in + done, &mut buf[..want])
                .and_then(|n| Ok((n, self.write(dst, offset_out + done, &buf[..n])?)));
            match step {
                Ok((0, _)) => break,
                Ok((n, written)) => {
                    done += written as u64;
                    if written < n {
                        break;
                    }
                }
                Err(err) if done == 0 => return Err(err),
                Err(_) => break,
            }
        }
        Ok(done)
    }
}
