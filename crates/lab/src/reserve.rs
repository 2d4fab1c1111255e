//! A configurable GC reserve, as `mkfs.f2fs -Z N` makes it (f2fs-tools' "configurable
//! reserved sections" for zoned devices, which the seed's format line uses: `-m -Z 8
//! -o 3.89`). uf2fs's mkfs lays volumes out as mkfs.f2fs 1.15, whose reserve is
//! `2 * (100 / ovp + 1) + 6` sections — 59 at 3.89%, which leaves less user space than
//! the seed's 31187 MiB file needs. With `-Z N` the reserve is `N` sections (at least
//! 8) and the overprovisioned segments are `(main - reserve) * ovp / 100` plus the
//! reserve.
//!
//! The three counts live only in the checkpoint (`rsvd_segment_count`,
//! `overprov_segment_count`, `user_block_count`), so a fresh volume's checkpoint
//! blocks are rewritten with them (checksums recomputed), and so are the NAT bits that
//! name the checkpoint's checksum in their header.

use uf2fs_core::MkfsReport;
use uf2fs_format::checkpoint::{checkpoint_crc, nat_bits_blocks, Checkpoint, NatBits, CP_NAT_BITS_FLAG};
use uf2fs_format::consts::{BLOCKS_PER_SEG, BLOCK_SIZE};

/// Fewest reserved sections `mkfs.f2fs -Z` accepts (six logs, a GC buffer, one for
/// nodes).
pub const MIN_RESERVED_SECTIONS: u32 = 8;

/// The reserve and overprovisioning of a volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reserve {
    /// `rsvd_segment_count`.
    pub reserved_segments: u32,
    /// `overprov_segment_count` (reserve included).
    pub overprov_segments: u32,
    /// `user_block_count`.
    pub user_blocks: u64,
}

impl Reserve {
    /// What a fresh volume's checkpoint says.
    pub fn of(cp: &Checkpoint) -> Reserve {
        Reserve {
            reserved_segments: cp.rsvd_segment_count,
            overprov_segments: cp.overprov_segment_count,
            user_blocks: cp.user_block_count,
        }
    }

    /// What `mkfs.f2fs -Z sections -o pct` gives a main area of `main_segments`
    /// segments in sections of `segs_per_sec`.
    pub fn configured(main_segments: u32, segs_per_sec: u32, sections: u32, pct: f64) -> Result<Reserve, String> {
        if sections < MIN_RESERVED_SECTIONS {
            return Err(format!(
                "{sections} reserved sections: at least {MIN_RESERVED_SECTIONS} are needed (mkfs.f2fs -Z raises \
                 smaller values to {MIN_RESERVED_SECTIONS}), or 0 for mkfs.f2fs 1.15's automatic reserve"
            ));
        }
        let reserved = sections as u64 * segs_per_sec as u64;
        if reserved >= main_segments as u64 {
            return Err(format!(
                "{sections} reserved sections do not fit a main area of {} sections",
                main_segments / segs_per_sec.max(1)
            ));
        }
        let reserved = reserved as u32;
        // Truncated as the C assignment truncates.
        let overprov = ((main_segments - reserved) as f64 * pct / 100.0) as u32;
        if overprov < 2 * segs_per_sec {
            return Err(format!(
                "overprovisioning {pct}% of {} segments is {overprov} segments, less than the two sections \
                 mkfs.f2fs -Z requires",
                main_segments - reserved
            ));
        }
        let overprov = overprov + reserved;
        if overprov >= main_segments {
            return Err("overprovisioning takes the whole main area".into());
        }
        Ok(Reserve {
            reserved_segments: reserved,
            overprov_segments: overprov,
            user_blocks: (main_segments - overprov) as u64 * BLOCKS_PER_SEG as u64,
        })
    }
}

/// Splits writes of several blocks into one write per block.
pub fn split_blocks(writes: Vec<(u64, Vec<u8>)>) -> Vec<(u64, Vec<u8>)> {
    let mut out = Vec::with_capacity(writes.len());
    for (addr, data) in writes {
        if data.len() == BLOCK_SIZE {
            out.push((addr, data));
        } else {
            for (i, b) in data.chunks(BLOCK_SIZE).enumerate() {
                out.push((addr + i as u64, b.to_vec()));
            }
        }
    }
    out
}

/// Rewrites the checkpoint packs among a fresh volume's `writes` (one block each, see
/// [`split_blocks`]) and `report` so that they carry `reserve`.
pub fn apply(report: &mut MkfsReport, writes: &mut [(u64, Vec<u8>)], reserve: Reserve) -> Result<(), String> {
    let sb = &report.superblock;
    let cp_start = sb.cp_blkaddr as u64;
    let pack_blocks = BLOCKS_PER_SEG as u64;
    let cp_end = cp_start + sb.segment_count_ckpt as u64 * pack_blocks;
    let nat_bits = nat_bits_blocks(sb.segment_count_nat, sb.geometry()) as u64;
    // (pack start, version, old checksum, new checksum) of each pack patched.
    let mut patched: Vec<(u64, u64, u32, u32)> = Vec::new();
    for (addr, block) in writes.iter_mut() {
        if !(cp_start..cp_end).contains(addr) || block.len() != BLOCK_SIZE {
            continue;
        }
        let Ok(old) = Checkpoint::decode(block) else {
            continue;
        };
        let mut want = old.clone();
        want.rsvd_segment_count = reserve.reserved_segments;
        want.overprov_segment_count = reserve.overprov_segments;
        want.user_block_count = reserve.user_blocks;
        let ofs = old.checksum_offset as usize;
        let old_crc = u32::from_le_bytes(block[ofs..ofs + 4].try_into().expect("4 bytes"));
        block[8..16].copy_from_slice(&reserve.user_blocks.to_le_bytes());
        block[24..28].copy_from_slice(&reserve.reserved_segments.to_le_bytes());
        block[28..32].copy_from_slice(&reserve.overprov_segments.to_le_bytes());
        block[ofs..ofs + 4].fill(0);
        let crc = checkpoint_crc(block, ofs);
        block[ofs..ofs + 4].copy_from_slice(&crc.to_le_bytes());
        // The format crate reads back exactly the checkpoint meant: nothing else moved.
        let new = Checkpoint::decode(block).map_err(|e| format!("rewritten checkpoint at block {addr}: {e}"))?;
        if new != want {
            return Err(format!(
                "rewritten checkpoint at block {addr} does not read back as written"
            ));
        }
        let pack = cp_start + (*addr - cp_start) / pack_blocks * pack_blocks;
        if old.has_flag(CP_NAT_BITS_FLAG) && !patched.iter().any(|p| p.0 == pack) {
            patched.push((pack, old.checkpoint_ver, old_crc, crc));
        }
        if report.checkpoint.checkpoint_ver == old.checkpoint_ver && report.checkpoint == old {
            report.checkpoint = new;
        }
    }
    if patched.is_empty() && !writes.iter().any(|(a, _)| (cp_start..cp_end).contains(a)) {
        return Err("no checkpoint block among the volume's blocks".into());
    }
    for (pack, ver, old_crc, crc) in patched {
        let at = pack + pack_blocks - nat_bits;
        let Some((_, block)) = writes.iter_mut().find(|(a, _)| *a == at) else {
            // mkfs writes NAT bits after the valid pack only; the other pack's
            // checkpoint (version 0) is never used.
            if ver == report.checkpoint.checkpoint_ver {
                return Err(format!(
                    "the NAT bits of the checkpoint pack at block {pack} are missing"
                ));
            }
            continue;
        };
        let header = u64::from_le_bytes(block[..8].try_into().expect("8 bytes"));
        if header != NatBits::header(ver, old_crc) {
            return Err(format!(
                "the NAT bits at block {at} do not belong to the checkpoint they follow"
            ));
        }
        block[..8].copy_from_slice(&NatBits::header(ver, crc).to_le_bytes());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use uf2fs_core::mkfs::{mkfs_blocks, MkfsOptions};

    #[test]
    fn seed_reserve_leaves_room_for_the_seed_file() {
        // The seed's volume: 16276 main segments in sections of 4, -Z 8 -o 3.89.
        let r = Reserve::configured(16276, 4, 8, 3.89).unwrap();
        assert_eq!(r.reserved_segments, 32);
        assert_eq!(r.overprov_segments, 631 + 32);
        assert!(r.user_blocks >= 31187 * 256, "{}", r.user_blocks);
    }

    #[test]
    fn bad_reserves_are_refused() {
        assert!(Reserve::configured(16276, 4, 7, 3.89)
            .unwrap_err()
            .contains("at least 8"));
        assert!(Reserve::configured(40, 4, 10, 3.89).unwrap_err().contains("do not fit"));
        assert!(Reserve::configured(400, 4, 8, 0.5)
            .unwrap_err()
            .contains("two sections"));
    }

    #[test]
    fn patched_volume_reads_back_with_the_new_reserve() {
        let opts = MkfsOptions {
            segs_per_sec: 2,
            overprovision_pct: Some(5.0),
            root_owner: Some((0, 0)),
            timestamp_secs: Some(0),
            ..Default::default()
        };
        let (mut report, writes) = mkfs_blocks(&opts, 512 << 20).unwrap();
        let mut writes = split_blocks(writes);
        let main = report.superblock.segment_count_main;
        let r = Reserve::configured(main, 2, 8, 5.0).unwrap();
        assert_ne!(Reserve::of(&report.checkpoint), r);
        apply(&mut report, &mut writes, r).unwrap();
        assert_eq!(Reserve::of(&report.checkpoint), r);
        let mut image = vec![0u8; 512 << 20];
        for (a, b) in &writes {
            image[*a as usize * BLOCK_SIZE..][..BLOCK_SIZE].copy_from_slice(b);
        }
        let dev = uf2fs_core::device::MemDevice::new(image);
        let fs = uf2fs_core::Fs::open_device(Box::new(dev), "patched").unwrap();
        assert_eq!(Reserve::of(fs.checkpoint()), r);
        assert_eq!(fs.statfs().unwrap().blocks, r.user_blocks);
    }
}
