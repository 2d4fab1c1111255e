//! Copying file data out of the image, keeping holes as holes.

use crate::progress::Progress;
use anyhow::bail;
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use uf2fs_core::{Fs, Ino};

/// Bytes read from the image per call.
pub const CHUNK_BYTES: usize = 1 << 20;

/// Granularity of hole detection: an all-zero block of this size is skipped, not written.
const SPARSE_BLOCK_BYTES: usize = 4096;

/// Copies all data of `ino` into `file` (positioned at 0) through `buf`; stops at the
/// first short read, which marks the end of the file. Counts the bytes in `progress`.
pub fn copy_data(fs: &Fs, ino: Ino, file: &mut File, buf: &mut [u8], progress: &Progress) -> anyhow::Result<()> {
    let mut offset: u64 = 0;
    let mut ends_in_hole = false;
    loop {
        let n = fs.read(ino, offset, buf)?;
        let Some(data) = buf.get(..n) else {
            bail!("file system returned {n} bytes for a {}-byte read", buf.len());
        };
        write_sparse(file, data)?;
        progress.add_bytes(n as u64);
        if n > 0 {
            // write_sparse seeks over a last block of zeros instead of writing it.
            let last = (n - 1) / SPARSE_BLOCK_BYTES * SPARSE_BLOCK_BYTES;
            ends_in_hole = is_zero(&data[last..]);
        }
        offset += n as u64;
        if n < buf.len() {
            break;
        }
    }
    // Seeking past zeros leaves the size short when the file ends in a hole (only
    // then: one system call less per file).
    if ends_in_hole {
        file.set_len(offset)?;
    }
    Ok(())
}

/// Writes `data` at the current position, seeking over all-zero blocks instead of
/// writing them. Runs of like blocks are merged into one write or seek.
fn write_sparse(out: &mut (impl Write + Seek), data: &[u8]) -> io::Result<()> {
    let mut run_start = 0;
    let mut run_is_zero: Option<bool> = None;
    for (index, block) in data.chunks(SPARSE_BLOCK_BYTES).enumerate() {
        let zero = is_zero(block);
        let start = index * SPARSE_BLOCK_BYTES;
        match run_is_zero {
            Some(previous) if previous != zero => {
                emit(out, &data[run_start..start], previous)?;
                run_start = start;
                run_is_zero = Some(zero);
            }
            Some(_) => {}
            None => run_is_zero = Some(zero),
        }
    }
    match run_is_zero {
        Some(zero) => emit(out, &data[run_start..], zero),
        None => Ok(()),
    }
}

/// Writes a run of data, or seeks over a run of zeros.
fn emit(out: &mut (impl Write + Seek), run: &[u8], zero: bool) -> io::Result<()> {
    if zero {
        let len = i64::try_from(run.len()).map_err(|_| io::Error::other("run too long"))?;
        out.seek(SeekFrom::Current(len)).map(|_| ())
    } else {
        out.write_all(run)
    }
}

/// True when every byte is zero (written to vectorise: no early exit).
fn is_zero(block: &[u8]) -> bool {
    block.iter().fold(0u8, |acc, &b| acc | b) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn sparse_write_reproduces_the_data() {
        let mut data = vec![0u8; 5 * SPARSE_BLOCK_BYTES + 100];
        data[SPARSE_BLOCK_BYTES + 7] = 1;
        data[3 * SPARSE_BLOCK_BYTES] = 2;
        data[5 * SPARSE_BLOCK_BYTES + 99] = 3;
        let mut out = Cursor::new(Vec::new());
        write_sparse(&mut out, &data).unwrap();
        assert_eq!(out.position() as usize, data.len());
        assert_eq!(out.into_inner(), data);
    }

    #[test]
    fn trailing_zeros_are_seeked_over() {
        let mut data = vec![0u8; 3 * SPARSE_BLOCK_BYTES];
        data[0] = 9;
        let mut out = Cursor::new(Vec::new());
        write_sparse(&mut out, &data).unwrap();
        assert_eq!(out.position() as usize, data.len());
        assert_eq!(out.get_ref().len(), SPARSE_BLOCK_BYTES);
        write_sparse(&mut out, &[]).unwrap();
    }
}
