//! Writing to stdout: buffered for listings, unbuffered big writes for file data.

use std::fs::File;
use std::io::{self, BufWriter, StdoutLock, Write};
use std::os::fd::AsFd;

/// Buffer size for listing output.
const LISTING_BUFFER_BYTES: usize = 64 * 1024;

/// A buffered writer on the locked stdout, for line-oriented output.
pub fn buffered_stdout() -> BufWriter<StdoutLock<'static>> {
    BufWriter::with_capacity(LISTING_BUFFER_BYTES, io::stdout().lock())
}

/// Exclusive raw access to stdout for bulk data.
///
/// Holds the stdout lock (so nothing else interleaves) and writes through a duplicate of
/// the descriptor: each `write` goes straight to the kernel instead of through std's line
/// buffer, which would scan every chunk for newlines.
pub struct RawStdout {
    _lock: StdoutLock<'static>,
    file: File,
}

impl RawStdout {
    /// Locks stdout, flushes anything buffered, and duplicates its descriptor.
    pub fn new() -> io::Result<RawStdout> {
        let mut lock = io::stdout().lock();
        lock.flush()?;
        let file = File::from(lock.as_fd().try_clone_to_owned()?);
        Ok(RawStdout { _lock: lock, file })
    }
}

impl Write for RawStdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
