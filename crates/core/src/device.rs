//! Block devices: every read of the image goes through [`BlockDevice`].

use crate::{Error, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Size of a block in bytes.
pub const BLOCK: usize = uf2fs_format::consts::BLOCK_SIZE;

/// A device addressed in 4 KiB blocks.
pub trait BlockDevice: Send + Sync {
    /// Reads `buf.len() / 4096` blocks starting at `blkaddr`.
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> Result<()>;
    /// Size in blocks.
    fn block_count(&self) -> u64;
}

/// An image file or block device, read with positioned reads.
pub struct FileDevice {
    file: File,
    path: PathBuf,
    blocks: u64,
}

impl FileDevice {
    /// Opens `path` read-only.
    pub fn open(path: &Path) -> Result<FileDevice> {
        let ctx = |what: &str| format!("{what} {}", path.display());
        let file = File::open(path).map_err(|source| Error::Io {
            context: ctx("cannot open"),
            source,
        })?;
        let meta = file.metadata().map_err(|source| Error::Io {
            context: ctx("cannot stat"),
            source,
        })?;
        if meta.is_dir() {
            return Err(Error::Invalid(format!(
                "{} is a directory, not an image",
                path.display()
            )));
        }
        // Block devices report size 0 in metadata; seeking to the end gives their size.
        let bytes = if meta.len() > 0 {
            meta.len()
        } else {
            use std::io::Seek;
            let mut f = &file;
            f.seek(std::io::SeekFrom::End(0)).map_err(|source| Error::Io {
                context: ctx("cannot size"),
                source,
            })?
        };
        Ok(FileDevice {
            file,
            path: path.to_path_buf(),
            blocks: bytes / BLOCK as u64,
        })
    }
}

impl BlockDevice for FileDevice {
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> Result<()> {
        let n = buf.len().div_ceil(BLOCK) as u64;
        if blkaddr.checked_add(n).is_none_or(|end| end > self.blocks) {
            return Err(Error::corrupt(
                "block address",
                Some(blkaddr),
                format!(
                    "beyond the end of {} ({} blocks); is the image truncated?",
                    self.path.display(),
                    self.blocks
                ),
            ));
        }
        self.file
            .read_exact_at(buf, blkaddr * BLOCK as u64)
            .map_err(|source| Error::Io {
                context: format!("read of block {blkaddr:#x} from {}", self.path.display()),
                source,
            })
    }

    fn block_count(&self) -> u64 {
        self.blocks
    }
}

/// Several devices seen as one address space, as a multi-device F2FS lays them out.
pub struct ConcatDevice {
    /// (first block address, device), in address order.
    parts: Vec<(u64, Box<dyn BlockDevice>)>,
    total: u64,
}

impl ConcatDevice {
    /// Joins devices; `sizes[i]` is the number of blocks device `i` contributes.
    pub fn new(devices: Vec<Box<dyn BlockDevice>>, sizes: &[u64]) -> Result<ConcatDevice> {
        let mut parts = Vec::new();
        let mut start = 0u64;
        for (i, (dev, &size)) in devices.into_iter().zip(sizes).enumerate() {
            if dev.block_count() < size {
                return Err(Error::Invalid(format!(
                    "device {i} holds {} blocks, the superblock expects {size}",
                    dev.block_count()
                )));
            }
            parts.push((start, dev));
            start += size;
        }
        Ok(ConcatDevice { parts, total: start })
    }
}

impl BlockDevice for ConcatDevice {
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> Result<()> {
        let mut addr = blkaddr;
        let mut rest = buf;
        while !rest.is_empty() {
            let idx = self.parts.partition_point(|(start, _)| *start <= addr);
            let Some((start, dev)) = idx.checked_sub(1).and_then(|i| self.parts.get(i)) else {
                return Err(Error::corrupt("block address", Some(addr), "outside every device"));
            };
            let end = self.parts.get(idx).map_or(self.total, |p| p.0);
            if addr >= end {
                return Err(Error::corrupt("block address", Some(addr), "beyond the last device"));
            }
            let n = (((end - addr) as usize) * BLOCK).min(rest.len());
            let (now, later) = rest.split_at_mut(n);
            dev.read_blocks(addr - start, now)?;
            addr += (n / BLOCK) as u64;
            rest = later;
        }
        Ok(())
    }

    fn block_count(&self) -> u64 {
        self.total
    }
}

/// An image held in memory, for tests and fuzzing. A trailing partial block is ignored,
/// as [`FileDevice`] ignores it.
pub struct MemDevice(Vec<u8>);

impl MemDevice {
    /// Wraps the bytes of an image.
    pub fn new(bytes: Vec<u8>) -> MemDevice {
        MemDevice(bytes)
    }
}

impl BlockDevice for MemDevice {
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> Result<()> {
        let n = buf.len().div_ceil(BLOCK) as u64;
        let start = blkaddr.checked_mul(BLOCK as u64);
        if start.is_none() || blkaddr.checked_add(n).is_none_or(|end| end > self.block_count()) {
            return Err(Error::corrupt(
                "block address",
                Some(blkaddr),
                format!(
                    "beyond the end of the in-memory image ({} blocks); is the image truncated?",
                    self.block_count()
                ),
            ));
        }
        let start = start.unwrap_or(0) as usize;
        buf.copy_from_slice(&self.0[start..start + buf.len()]);
        Ok(())
    }

    fn block_count(&self) -> u64 {
        (self.0.len() / BLOCK) as u64
    }
}

/// Reads one block into a fresh buffer.
pub fn read_block(dev: &dyn BlockDevice, blkaddr: u64) -> Result<Vec<u8>> {
    let mut b = vec![0u8; BLOCK];
    dev.read_blocks(blkaddr, &mut b)?;
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Fs;

    #[test]
    fn mem_device_reads_whole_blocks_and_refuses_past_the_end() {
        let mut bytes = vec![0u8; 2 * BLOCK + 100];
        bytes[BLOCK] = 7;
        let dev = MemDevice::new(bytes);
        assert_eq!(dev.block_count(), 2);
        assert_eq!(read_block(&dev, 1).unwrap()[0], 7);
        for addr in [2, u64::MAX / 2, u64::MAX] {
            let err = read_block(&dev, addr).unwrap_err().to_string();
            assert!(err.contains("block address") && err.contains("beyond the end"), "{err}");
        }
        let mut two = vec![0u8; 2 * BLOCK];
        assert!(dev.read_blocks(1, &mut two).is_err());
    }

    #[test]
    fn open_device_names_the_bad_structure() {
        let err = Fs::open_device(Box::new(MemDevice::new(vec![0; 64 * BLOCK])), "zeros")
            .err()
            .expect("an all-zero image does not open")
            .to_string();
        assert!(err.contains("superblock") && err.contains("bad magic"), "{err}");
        let err = Fs::open_device(Box::new(MemDevice::new(vec![0; BLOCK])), "tiny")
            .err()
            .expect("a one-block image does not open")
            .to_string();
        assert!(err.contains("superblock") && err.contains("too small"), "{err}");
    }

    #[test]
    fn open_device_opens_an_image_held_in_memory() {
        // Needs mkfs.f2fs (f2fs-tools), like tests/images.rs.
        let tmp = tempfile::tempdir().unwrap();
        let img = tmp.path().join("img");
        std::fs::File::create(&img).unwrap().set_len(64 << 20).unwrap();
        let status = std::process::Command::new("mkfs.f2fs")
            .args(["-q", "-f"])
            .arg(&img)
            .status()
            .expect("cannot run mkfs.f2fs (is f2fs-tools installed?)");
        assert!(status.success());
        let fs = Fs::open_device(Box::new(MemDevice::new(std::fs::read(&img).unwrap())), "memory").unwrap();
        assert_eq!(fs.stat(fs.root()).unwrap().kind, crate::FileKind::Dir);
        assert!(fs.info().unwrap().text.contains("memory"));
    }
}
