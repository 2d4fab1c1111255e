//! Block devices: every read and write of the image goes through [`BlockDevice`].
//!
//! Writes are plain positioned writes; nothing is durable until [`BlockDevice::flush`]
//! returns. The checkpoint writer orders its writes with flushes (see
//! `checkpoint::write`), and [`CrashDevice`] replays what a power cut could leave.

mod block_table;
mod counting;
mod crash;
mod fault;
mod mem;
mod overlay;
#[cfg(test)]
pub(crate) mod probe;
mod slow;
pub mod sparse;
mod wide;
mod zero_skip;
mod zoned;
mod zoned_mem;

pub use counting::{counting, Areas, CountingDevice, WriteCounter, WriteCounts};
pub use crash::CrashDevice;
pub use fault::{Fault, FaultArea, FaultCounts, FaultDevice, FaultFilter, FaultPlan};
pub use mem::MemDevice;
pub use overlay::OverlayDevice;
pub(crate) use overlay::SharedDevice;
pub use slow::{FlushDelay, SlowFlushDevice};
pub use sparse::SparseDevice;
pub use wide::WideDevice;
pub use zoned::{ZonedDevice, Zones};
pub use zoned_mem::{ZonedMemDevice, ZonedMemOptions};

use crate::{Error, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Size of a device block in bytes: the unit every device addresses. A volume with
/// larger blocks is read through a [`WideDevice`], whose blocks are several of these
/// (see [`BlockDevice::block_size`]).
pub const BLOCK: usize = uf2fs_format::consts::BLOCK_SIZE;

/// One block held by reference, so that a cache and a memory device can hold the same
/// block without copying it. A shared block is never changed in place:
/// `Arc::make_mut` copies it first.
pub type SharedBlock = Arc<Vec<u8>>;

/// A device addressed in blocks of [`BlockDevice::block_size`] bytes (4 KiB, but for a
/// [`WideDevice`] and the devices over one).
pub trait BlockDevice: Send + Sync {
    /// Reads `buf.len() / block_size()` blocks starting at `blkaddr`.
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> Result<()>;
    /// Size in blocks.
    fn block_count(&self) -> u64;
    /// Bytes of one block: [`BLOCK`], or the volume's block size for a
    /// [`WideDevice`] (and the devices wrapping one, which pass it on).
    fn block_size(&self) -> usize {
        BLOCK
    }
    /// Writes `buf.len() / block_size()` whole blocks starting at `blkaddr`. Not durable until
    /// [`BlockDevice::flush`]. Devices opened read-only refuse (the default).
    fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> Result<()> {
        let _ = buf;
        Err(Error::ReadOnly(format!(
            "write of block {blkaddr:#x}: the device is read-only"
        )))
    }
    /// Makes every write that returned before this call durable.
    fn flush(&self) -> Result<()> {
        Ok(())
    }
    /// [`BlockDevice::write_blocks`] of main-area blocks whose contents are of `kind`
    /// (devices that count writes, or keep only some payloads, use it; the others
    /// just write).
    fn write_kind(&self, blkaddr: u64, buf: &[u8], kind: WriteKind) -> Result<()> {
        let _ = kind;
        self.write_blocks(blkaddr, buf)
    }
    /// Writes `blocks` (one block each) to the consecutive blocks from `blkaddr`, as
    /// `kind`, in one device write. The default, [`write_gathered`], gathers them in a
    /// buffer and calls [`BlockDevice::write_kind`]; devices that keep blocks apart
    /// override it to skip the gathering.
    fn write_blocks_from(&self, blkaddr: u64, blocks: &[&[u8]], kind: WriteKind) -> Result<()> {
        write_gathered(self, blkaddr, blocks, kind)
    }
    /// Reads one block as a [`SharedBlock`]. The default reads it into a new buffer;
    /// devices that keep blocks in memory hand out the one they keep.
    fn read_shared(&self, blkaddr: u64) -> Result<SharedBlock> {
        let mut b = vec![0u8; self.block_size()];
        self.read_blocks(blkaddr, &mut b)?;
        Ok(Arc::new(b))
    }
    /// [`BlockDevice::write_blocks_from`] of shared blocks (one block each). The
    /// default writes them as any blocks; devices that keep blocks in memory keep these
    /// as they are, without copying them (node blocks, which GC and checkpoints write
    /// in bulk).
    fn write_shared(&self, blkaddr: u64, blocks: &[SharedBlock], kind: WriteKind) -> Result<()> {
        let refs: Vec<&[u8]> = blocks.iter().map(|b| b.as_slice()).collect();
        self.write_blocks_from(blkaddr, &refs, kind)
    }
    /// Copies the blocks at `sources`, in order, to the consecutive blocks from `dst`,
    /// written as `kind`: one device-side copy of many source blocks to one destination
    /// range (the shape of NVMe's Simple Copy), as GC moves a victim's valid blocks.
    /// The default, [`copy_through_host`], reads the sources and writes them with
    /// [`BlockDevice::write_kind`]; devices that can copy without moving the payloads
    /// through the caller override it. Sources and destination must not overlap.
    fn copy_blocks(&self, sources: &[u64], dst: u64, kind: WriteKind) -> Result<()> {
        copy_through_host(self, sources, dst, kind)
    }
    /// Tells the device that the block at `blkaddr` will not be read again before it
    /// is written again: its owner is moving it elsewhere, or holds a newer copy that
    /// it will write elsewhere (a node block, rewritten out of place). Only a memory
    /// device made to drop such blocks does anything (the lab's, which never reads an
    /// older checkpoint back and stops at its first error); every other device keeps
    /// the block, as a power cut may still need it.
    fn forget(&self, blkaddr: u64) {
        let _ = blkaddr;
    }
    /// Tells the device that `blocks` blocks from `blkaddr` hold nothing any more (a
    /// section became free): a zoned device resets the zones wholly inside. No-op by
    /// default.
    fn discard(&self, blkaddr: u64, blocks: u64) -> Result<()> {
        let _ = (blkaddr, blocks);
        Ok(())
    }
}

/// What a main-area write holds (see [`BlockDevice::write_kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WriteKind {
    /// File or directory data written back from the page cache.
    UserData,
    /// Data blocks moved by garbage collection.
    GcData,
    /// Node blocks written by the write path and checkpoints.
    UserNode,
    /// Node blocks moved by garbage collection.
    GcNode,
}

thread_local! {
    /// Buffer of [`write_gathered`], kept between calls.
    static GATHER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// [`BlockDevice::write_blocks_from`] through [`BlockDevice::write_kind`]: one block
/// is written from where it is, several are gathered in a per-thread buffer kept
/// between calls (no allocation per write).
pub fn write_gathered<D: BlockDevice + ?Sized>(dev: &D, blkaddr: u64, blocks: &[&[u8]], kind: WriteKind) -> Result<()> {
    match blocks {
        [] => Ok(()),
        [one] => dev.write_kind(blkaddr, one, kind),
        many => GATHER.with(|g| {
            let mut own = Vec::new();
            let mut kept = g.try_borrow_mut();
            let buf = match kept.as_deref_mut() {
                Ok(b) => b,
                Err(_) => &mut own,
            };
            buf.clear();
            for b in many {
                buf.extend_from_slice(b);
            }
            dev.write_kind(blkaddr, buf, kind)
        }),
    }
}

/// Blocks per read and write of [`copy_through_host`] (1 MiB).
const COPY_CHUNK: usize = 256;

/// [`BlockDevice::copy_blocks`] by reading and writing: one read per run of adjacent
/// sources, one write per 1 MiB of destination.
pub fn copy_through_host<D: BlockDevice + ?Sized>(dev: &D, sources: &[u64], dst: u64, kind: WriteKind) -> Result<()> {
    let block = dev.block_size();
    let mut buf = vec![0u8; sources.len().min(COPY_CHUNK) * block];
    for (c, chunk) in sources.chunks(COPY_CHUNK).enumerate() {
        let mut i = 0;
        while i < chunk.len() {
            let mut n = 1;
            while i + n < chunk.len() && chunk[i + n] == chunk[i] + n as u64 {
                n += 1;
            }
            dev.read_blocks(chunk[i], &mut buf[i * block..(i + n) * block])?;
            i += n;
        }
        let at = dst + (c * COPY_CHUNK) as u64;
        dev.write_kind(at, &buf[..chunk.len() * block], kind)?;
    }
    Ok(())
}

/// Checks that `buf` holds whole blocks and that they fit a device of `blocks` blocks.
pub(crate) fn check_range(blkaddr: u64, buf_len: usize, blocks: u64, what: &dyn Fn() -> String) -> Result<()> {
    if buf_len % BLOCK != 0 {
        return Err(Error::Invalid(format!(
            "I/O of {buf_len} bytes at block {blkaddr:#x} is not a whole number of blocks"
        )));
    }
    let n = (buf_len / BLOCK) as u64;
    if blkaddr.checked_add(n).is_none_or(|end| end > blocks) {
        return Err(Error::corrupt(
            "block address",
            Some(blkaddr),
            format!(
                "beyond the end of {} ({blocks} blocks); is the image truncated?",
                what()
            ),
        ));
    }
    Ok(())
}

/// An image file or block device, read and written with positioned I/O.
pub struct FileDevice {
    file: File,
    path: PathBuf,
    blocks: u64,
    writable: bool,
}

impl FileDevice {
    /// Opens `path` read-only.
    pub fn open(path: &Path) -> Result<FileDevice> {
        FileDevice::open_with(path, false)
    }

    /// Opens `path` for reading and writing.
    pub fn open_rw(path: &Path) -> Result<FileDevice> {
        FileDevice::open_with(path, true)
    }

    fn open_with(path: &Path, writable: bool) -> Result<FileDevice> {
        let ctx = |what: &str| format!("{what} {}", path.display());
        let file = File::options()
            .read(true)
            .write(writable)
            .open(path)
            .map_err(|source| Error::Io {
                context: ctx(if writable {
                    "cannot open for writing"
                } else {
                    "cannot open"
                }),
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
            writable,
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

    fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> Result<()> {
        if !self.writable {
            return Err(Error::ReadOnly(format!(
                "write of block {blkaddr:#x}: {} is open read-only",
                self.path.display()
            )));
        }
        check_range(blkaddr, buf.len(), self.blocks, &|| self.path.display().to_string())?;
        self.file
            .write_all_at(buf, blkaddr * BLOCK as u64)
            .map_err(|source| Error::Io {
                context: format!("write of block {blkaddr:#x} to {}", self.path.display()),
                source,
            })
    }

    fn flush(&self) -> Result<()> {
        if !self.writable {
            return Ok(());
        }
        self.file.sync_data().map_err(|source| Error::Io {
            context: format!("flush of {}", self.path.display()),
            source,
        })
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

impl ConcatDevice {
    /// The device holding `addr`: (index, its first block address, end address).
    fn part_of(&self, addr: u64) -> Result<(usize, u64, u64)> {
        let idx = self.parts.partition_point(|(start, _)| *start <= addr);
        let Some(i) = idx.checked_sub(1) else {
            return Err(Error::corrupt("block address", Some(addr), "outside every device"));
        };
        let start = self.parts[i].0;
        let end = self.parts.get(idx).map_or(self.total, |p| p.0);
        if addr >= end {
            return Err(Error::corrupt("block address", Some(addr), "beyond the last device"));
        }
        Ok((i, start, end))
    }
}

impl BlockDevice for ConcatDevice {
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> Result<()> {
        let mut addr = blkaddr;
        let mut rest = buf;
        while !rest.is_empty() {
            let (i, start, end) = self.part_of(addr)?;
            let n = (((end - addr) as usize) * BLOCK).min(rest.len());
            let (now, later) = rest.split_at_mut(n);
            self.parts[i].1.read_blocks(addr - start, now)?;
            addr += (n / BLOCK) as u64;
            rest = later;
        }
        Ok(())
    }

    fn block_count(&self) -> u64 {
        self.total
    }

    fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> Result<()> {
        check_range(blkaddr, buf.len(), self.total, &|| "the devices".to_string())?;
        let mut addr = blkaddr;
        let mut rest = buf;
        while !rest.is_empty() {
            let (i, start, end) = self.part_of(addr)?;
            let n = (((end - addr) as usize) * BLOCK).min(rest.len());
            let (now, later) = rest.split_at(n);
            self.parts[i].1.write_blocks(addr - start, now)?;
            addr += (n / BLOCK) as u64;
            rest = later;
        }
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        for (_, dev) in &self.parts {
            dev.flush()?;
        }
        Ok(())
    }

    fn write_kind(&self, blkaddr: u64, buf: &[u8], kind: WriteKind) -> Result<()> {
        check_range(blkaddr, buf.len(), self.total, &|| "the devices".to_string())?;
        let mut addr = blkaddr;
        let mut rest = buf;
        while !rest.is_empty() {
            let (i, start, end) = self.part_of(addr)?;
            let n = (((end - addr) as usize) * BLOCK).min(rest.len());
            let (now, later) = rest.split_at(n);
            self.parts[i].1.write_kind(addr - start, now, kind)?;
            addr += (n / BLOCK) as u64;
            rest = later;
        }
        Ok(())
    }

    fn discard(&self, blkaddr: u64, blocks: u64) -> Result<()> {
        let mut addr = blkaddr;
        let end = blkaddr.saturating_add(blocks).min(self.total);
        while addr < end {
            let (i, start, part_end) = self.part_of(addr)?;
            let n = part_end.min(end) - addr;
            self.parts[i].1.discard(addr - start, n)?;
            addr += n;
        }
        Ok(())
    }
}

/// Reads one block into a fresh buffer.
pub fn read_block(dev: &dyn BlockDevice, blkaddr: u64) -> Result<Vec<u8>> {
    let mut b = vec![0u8; dev.block_size()];
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
    fn concat_device_routes_writes_across_devices() {
        let a = MemDevice::new(vec![0; 4 * BLOCK]);
        let b = MemDevice::new(vec![0; 4 * BLOCK]);
        // Device 0 gives 3 blocks, device 1 all 4.
        let c = ConcatDevice::new(vec![Box::new(a), Box::new(b)], &[3, 4]).unwrap();
        assert_eq!(c.block_count(), 7);
        let data: Vec<u8> = (0..3 * BLOCK).map(|i| (i / BLOCK + 1) as u8).collect();
        c.write_blocks(2, &data).unwrap();
        c.flush().unwrap();
        let mut back = vec![0u8; 3 * BLOCK];
        c.read_blocks(2, &mut back).unwrap();
        assert_eq!(back, data);
        assert_eq!(read_block(&c, 3).unwrap()[0], 2, "first block of device 1");
        assert!(c.write_blocks(6, &vec![0u8; 2 * BLOCK]).is_err());
    }

    #[test]
    fn read_only_file_device_refuses_writes() {
        let tmp = tempfile::tempdir().unwrap();
        let img = tmp.path().join("img");
        std::fs::write(&img, vec![5u8; 2 * BLOCK]).unwrap();
        let ro = FileDevice::open(&img).unwrap();
        assert!(matches!(ro.write_blocks(0, &[0u8; BLOCK]), Err(Error::ReadOnly(_))));
        let rw = FileDevice::open_rw(&img).unwrap();
        rw.write_blocks(1, &[9u8; BLOCK]).unwrap();
        rw.flush().unwrap();
        assert!(rw.write_blocks(2, &[9u8; BLOCK]).is_err(), "past the end");
        assert!(rw.write_blocks(0, &[9u8; 10]).is_err(), "partial block");
        assert_eq!(read_block(&ro, 1).unwrap(), vec![9u8; BLOCK]);
        assert_eq!(read_block(&ro, 0).unwrap(), vec![5u8; BLOCK]);
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
