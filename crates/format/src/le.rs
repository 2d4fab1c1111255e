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

/// Sets or clears bit `nr` of an MSB-first F2FS bitmap (see [`test_bit_msb`]). Bits past
/// the end of the bitmap are ignored.
#[inline]
pub fn set_bit_msb(bitmap: &mut [u8], nr: usize, on: bool) {
    if let Some(byte) = bitmap.get_mut(nr / 8) {
        let mask = 0x80 >> (nr % 8);
        if on {
            *byte |= mask;
        } else {
            *byte &= !mask;
        }
    }
}

/// Sets or clears bit `nr` of a little-endian bitmap (see [`test_bit_le`]), as the NAT
/// bits use them. Bits past the end of the bitmap are ignored.
#[inline]
pub fn set_bit_le(bitmap: &mut [u8], nr: usize, on: bool) {
    if let Some(byte) = bitmap.get_mut(nr / 8) {
        let mask = 1 << (nr % 8);
        if on {
            *byte |= mask;
        } else {
            *byte &= !mask;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_orders() {
        let mut b = [0u8; 2];
        set_bit_msb(&mut b, 0, true);
        set_bit_msb(&mut b, 9, true);
        assert_eq!(b, [0x80, 0x40]);
        assert!(test_bit_msb(&b, 9) && !test_bit_msb(&b, 8));
        set_bit_msb(&mut b, 0, false);
        set_bit_msb(&mut b, 100, true);
        assert_eq!(b, [0, 0x40]);
        let mut l = [0u8; 2];
        set_bit_le(&mut l, 0, true);
        set_bit_le(&mut l, 9, true);
        assert_eq!(l, [0x01, 0x02]);
        assert!(test_bit_le(&l, 9));
        set_bit_le(&mut l, 9, false);
        assert_eq!(l, [0x01, 0]);
    }
}
