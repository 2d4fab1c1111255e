//! F2FS's CRC32: the reflected CRC-32 (polynomial 0xEDB88320) seeded with the superblock
//! magic and with no final inversion, as the kernel's `crc32_le(F2FS_SUPER_MAGIC, ..)`.

use crate::consts::F2FS_SUPER_MAGIC;

/// Continues a raw (non-inverted) CRC-32 from `seed` over `data`.
pub fn crc32_raw(seed: u32, data: &[u8]) -> u32 {
    // crc32fast works on the inverted ("finalised") form: state = !raw.
    let mut h = crc32fast::Hasher::new_with_initial(!seed);
    h.update(data);
    !h.finalize()
}

/// The checksum F2FS stores in superblocks, checkpoints, orphan blocks and summaries.
pub fn f2fs_crc32(data: &[u8]) -> u32 {
    crc32_raw(F2FS_SUPER_MAGIC, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_crc_matches_bitwise_definition() {
        fn bitwise(mut crc: u32, data: &[u8]) -> u32 {
            for &b in data {
                crc ^= b as u32;
                for _ in 0..8 {
                    crc = if crc & 1 != 0 {
                        (crc >> 1) ^ 0xEDB8_8320
                    } else {
                        crc >> 1
                    };
                }
            }
            crc
        }
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        assert_eq!(crc32_raw(0xF2F5_2010, &data), bitwise(0xF2F5_2010, &data));
        assert_eq!(crc32_raw(0, b""), 0);
    }
}
