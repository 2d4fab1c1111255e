//! Little-endian field access at fixed offsets.
//!
//! Callers check the buffer length once (with [`crate::FormatError::need`]) before reading
//! fields at constant offsets; these helpers then never go out of bounds. The only byte
//! order in the format is little-endian and this module is the one place that says so.

/// Reads a `u16` at `off`.
#[inline]
pub fn u16_at(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}

/// Reads a `u32` at `off`.
#[inline]
pub fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

/// Reads a `u64` at `off`.
#[inline]
pub fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}

/// Writes a `u16` at `off`.
#[inline]
pub fn put_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}

/// Writes a `u32` at `off`.
#[inline]
pub fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// Writes a `u64` at `off`.
#[inline]
pub fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// Tests bit `nr` of an F2FS bitmap where bit 0 is the most significant bit of byte 0
/// (the kernel's `f2fs_test_bit`): the NAT/SIT version bitmaps and the SIT valid maps.
#[inline]
pub fn test_bit_msb(bitmap: &[u8], nr: usize) -> bool {
    bitmap.get(nr / 8).is_some_and(|byte| byte & (0x80 >> (nr % 8)) != 0)
}

/// Tests bit `nr` of a little-endian bitmap (bit 0 is the least significant bit of byte
/// 0), as used by dentry bitmaps (`test_bit_le`).
#[inline]
pub fn test_bit_le(bitmap: &[u8], nr: usize) -> bool {
    bitmap.get(nr / 8).is_some_and(|byte| byte & (1 << (nr % 8)) != 0)
}
