//! The volume label (`FS_IOC_GETFSLABEL`, `FS_IOC_SETFSLABEL`: `xfs_io label`), kept
//! where F2FS keeps it: the superblock's `volume_name`, 512 UTF-16LE units, written to
//! both superblock copies as F2FS's `f2fs_commit_super` writes them (the backup
//! first). The label is read from the device each time, so the superblock the file
//! system opened with stays as it was read (nothing else in it changes while mounted).

use std::sync::{Mutex, PoisonError};

use crate::checkpoint::{load_superblock, read_blocks};
use crate::{Error, Fs, Result};
use uf2fs_format::consts::F2FS_SUPER_OFFSET;
use uf2fs_format::crc::f2fs_crc32;
use uf2fs_format::superblock::{FEATURE_SB_CHKSUM, MAX_VOLUME_NAME, SB_CRC_OFFSET, SUPERBLOCK_SIZE};

/// Longest label the label ioctls pass, in bytes, its terminating NUL included
/// (`FSLABEL_MAX`).
pub const FSLABEL_MAX: usize = 256;

/// Offset of `volume_name` in the superblock.
const VOLUME_NAME_AT: usize = 124;

/// One label change at a time.
static LABEL_LOCK: Mutex<()> = Mutex::new(());

impl Fs {
    /// The volume label as `FS_IOC_GETFSLABEL` gives it on F2FS: the name's UTF-8
    /// bytes (up to its first NUL unit), at most [`FSLABEL_MAX`] of them, without a
    /// terminating NUL.
    pub fn volume_label(&self) -> Result<Vec<u8>> {
        let choice = load_superblock(self.device())?;
        let (_, at, block) = self.superblock_copy(choice.copy)?;
        let mut label = decode_name(&block[at..]).into_bytes();
        label.truncate(FSLABEL_MAX);
        Ok(label)
    }

    /// Sets the volume label from what `FS_IOC_SETFSLABEL` passes: bytes up to a NUL,
    /// which must come within [`FSLABEL_MAX`] bytes ([`Error::Invalid`] otherwise, as
    /// `strndup_user`). As F2FS, the label is the longest valid UTF-8 prefix of those
    /// bytes (its conversion stops at the first bad sequence), stored as UTF-16LE in
    /// both superblock copies, which are flushed to the device.
    pub fn set_volume_label(&self, raw: &[u8]) -> Result<()> {
        if !self.is_read_write() {
            return Err(Error::ReadOnly("the volume label of a read-only mount".into()));
        }
        let window = &raw[..raw.len().min(FSLABEL_MAX)];
        let len = window
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| Error::Invalid(format!("a label of {FSLABEL_MAX} bytes or more")))?;
        let bytes = &window[..len];
        let valid = match std::str::from_utf8(bytes) {
            Ok(s) => s,
            // The prefix before the error is valid UTF-8.
            Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(),
        };
        let _one = LABEL_LOCK.lock().unwrap_or_else(PoisonError::into_inner);
        let choice = load_superblock(self.device())?;
        let (_, at, mut block) = self.superblock_copy(choice.copy)?;
        let sb = &mut block[at..at + SUPERBLOCK_SIZE];
        encode_name(sb, valid);
        let feature = u32::from_le_bytes([sb[2180], sb[2181], sb[2182], sb[2183]]);
        if feature & FEATURE_SB_CHKSUM != 0 {
            let crc = f2fs_crc32(&sb[..SB_CRC_OFFSET]);
            sb[SB_CRC_OFFSET..SB_CRC_OFFSET + 4].copy_from_slice(&crc.to_le_bytes());
        }
        let new = sb.to_vec();
        let dev = self.device();
        // The backup copy first, then the primary, each keeping what its block holds
        // before the superblock.
        for copy in [1, 0] {
            let (blk, at, mut b) = self.superblock_copy(copy)?;
            b[at..at + SUPERBLOCK_SIZE].copy_from_slice(&new);
            dev.write_blocks(blk, &b)?;
            dev.flush()?;
        }
        Ok(())
    }

    /// Superblock copy `copy` (0 or 1) as the device holds it now: the device block
    /// holding it, the copy's offset in that block, and the block. The first copy sits
    /// at byte 1024, the second one volume block further (4 or 16 KiB).
    fn superblock_copy(&self, copy: u32) -> Result<(u64, usize, Vec<u8>)> {
        let dev = self.device();
        let unit = dev.block_size() as u64;
        let byte = F2FS_SUPER_OFFSET as u64 + u64::from(copy) * self.superblock().block_size() as u64;
        let blk = byte / unit;
        let block = read_blocks(dev, blk, 1)?;
        Ok((blk, (byte % unit) as usize, block))
    }
}

/// The volume name of superblock bytes `sb`: UTF-16LE units up to the first NUL,
/// unpaired surrogates replaced.
fn decode_name(sb: &[u8]) -> String {
    let units: Vec<u16> = sb[VOLUME_NAME_AT..VOLUME_NAME_AT + 2 * MAX_VOLUME_NAME]
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .take_while(|&u| u != 0)
        .collect();
    String::from_utf16_lossy(&units)
}

/// Writes `name` as the volume name of superblock bytes `sb`, zero-filled after it.
fn encode_name(sb: &mut [u8], name: &str) {
    let area = &mut sb[VOLUME_NAME_AT..VOLUME_NAME_AT + 2 * MAX_VOLUME_NAME];
    area.fill(0);
    for (slot, unit) in area.chunks_exact_mut(2).zip(name.encode_utf16()) {
        slot.copy_from_slice(&unit.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_as_utf16() {
        let mut sb = vec![0xffu8; SUPERBLOCK_SIZE];
        encode_name(&mut sb, "label.492 – é");
        assert_eq!(decode_name(&sb), "label.492 – é");
        assert_eq!(&sb[VOLUME_NAME_AT..VOLUME_NAME_AT + 4], &[b'l', 0, b'a', 0]);
        // Zero-filled after the name, up to the field's end only.
        assert!(sb[VOLUME_NAME_AT + 26..VOLUME_NAME_AT + 1024].iter().all(|&b| b == 0));
        assert_eq!(sb[VOLUME_NAME_AT + 1024], 0xff);
        encode_name(&mut sb, "");
        assert_eq!(decode_name(&sb), "");
    }
}
