//! The layout of the `ro` feature, as mkfs.f2fs 1.16 makes it (`-O ro`): a volume that
//! is only ever mounted read-only, so nothing is kept for the cleaner.
//!
//! Against the normal layout ([`super::compute`]):
//! - segment 0 starts right after the two superblock blocks (block 2), not at a zone
//!   boundary;
//! - there is no SSA (no cleaner ever looks blocks up), beyond what aligns the
//!   metadata to a zone;
//! - no segment is reserved for GC and the overprovision ratio is 0; the checkpoint
//!   still counts two sections as overprovisioned (the two open logs' segments);
//! - two logs are written (hot data, from the start of the main area, and hot node, in
//!   the last section); the other four are recorded at segment 0 and never written, and
//!   the SIT journal lists only the two.

use super::{max_volume_bytes, meta_areas, segment_bytes, Layout, LayoutInput, CKPT_SEGMENTS, MIN_SEGMENTS};
use crate::Result;
use uf2fs_format::Geometry;

/// Bytes before segment 0: the two superblock blocks.
fn ro_segment0_bytes(geo: Geometry) -> u64 {
    2 * geo.block_size() as u64
}
/// Logs an `ro` volume writes: hot data and hot node.
pub const RO_ACTIVE_LOGS: u32 = 2;

/// The `ro` layout of `input` (its overprovision ratio is ignored: `ro` has none), or
/// why the volume is too small for one.
pub fn compute_ro(input: &LayoutInput) -> Result<Layout> {
    let mut checked = *input;
    checked.overprovision_pct = None;
    super::check_options(&checked)?;
    if input.bytes > max_volume_bytes(input.geometry) {
        return super::compute(input);
    }
    try_ro_layout(&checked).map_err(|why| {
        let min = match min_bytes_ro(input.segs_per_sec, input.secs_per_zone, input.geometry) {
            Some(m) => format!("at least {} ({m} bytes) is needed", super::human_bytes(m)),
            None => "no size works with these options".to_string(),
        };
        crate::Error::Invalid(format!(
            "{} is too small for an ro F2FS with {} segment(s) per section: {why}; {min}",
            super::human_bytes(input.bytes),
            input.segs_per_sec
        ))
    })
}

fn try_ro_layout(input: &LayoutInput) -> std::result::Result<Layout, &'static str> {
    let sectors = input.bytes / input.sector_size as u64;
    let dev_bytes = sectors * input.sector_size as u64;
    let segs_per_zone = input.segs_per_sec * input.secs_per_zone;
    let geo = input.geometry;
    let total_segments = dev_bytes
        .checked_sub(ro_segment0_bytes(geo))
        .ok_or("no room for the superblocks")?
        / segment_bytes(geo);
    if total_segments < MIN_SEGMENTS {
        return Err("fewer than 9 segments");
    }
    let segment_count = (total_segments / segs_per_zone as u64 * segs_per_zone as u64) as u32;
    let mut meta = meta_areas(geo, segment_count, segs_per_zone);
    // No summary blocks: the SSA only pads the metadata to a whole zone.
    let before_ssa = CKPT_SEGMENTS + meta.sit + meta.nat;
    meta.ssa = (segs_per_zone - before_ssa % segs_per_zone) % segs_per_zone;
    let meta_zones = (before_ssa + meta.ssa) / segs_per_zone;
    let total_zones = (segment_count / segs_per_zone).saturating_sub(meta_zones);
    if total_zones <= RO_ACTIVE_LOGS {
        return Err("fewer zones in the main area than the two logs of ro need");
    }
    let section_count = total_zones * input.secs_per_zone;
    let segment_count_main = section_count * input.segs_per_sec;
    // Hot node in the last section of the last zone; every other log at segment 0.
    let last_zone = (total_zones - 1) * segs_per_zone;
    let hot_node = last_zone + (input.secs_per_zone - 1) * input.segs_per_sec;
    let overprov_segments = 2 * input.segs_per_sec;
    if segment_count_main <= overprov_segments {
        return Err("overprovisioning takes the whole main area");
    }
    Ok(Layout {
        geometry: geo,
        log_sectorsize: input.sector_size.trailing_zeros(),
        block_count: dev_bytes / geo.block_size() as u64,
        segs_per_sec: input.segs_per_sec,
        secs_per_zone: input.secs_per_zone,
        segment0_blkaddr: 2,
        segment_count,
        segment_count_sit: meta.sit,
        segment_count_nat: meta.nat,
        segment_count_ssa: meta.ssa,
        segment_count_main,
        section_count,
        cp_payload: meta.cp_payload,
        overprovision_pct: 0.0,
        reserved_segments: 0,
        overprov_segments,
        cur_node_segno: [hot_node, 0, 0],
        cur_data_segno: [0, 0, 0],
        ro: true,
    })
}

/// Smallest `ro` volume of `geo`'s blocks (a whole number of segments past segment 0)
/// with these sections and zones.
pub fn min_bytes_ro(segs_per_sec: u32, secs_per_zone: u32, geo: Geometry) -> Option<u64> {
    let zone_segs = segs_per_sec as u64 * secs_per_zone as u64;
    if zone_segs == 0 || zone_segs * segment_bytes(geo) > max_volume_bytes(geo) {
        return None;
    }
    (MIN_SEGMENTS..MIN_SEGMENTS + 512 + 8 * zone_segs)
        .map(|segs| ro_segment0_bytes(geo) + segs * segment_bytes(geo))
        .find(|&bytes| {
            let input = LayoutInput {
                bytes,
                sector_size: 512,
                segs_per_sec,
                secs_per_zone,
                overprovision_pct: None,
                geometry: geo,
            };
            try_ro_layout(&input).is_ok()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ro(bytes: u64, segs_per_sec: u32) -> Layout {
        compute_ro(&LayoutInput {
            bytes,
            sector_size: 512,
            segs_per_sec,
            secs_per_zone: 1,
            overprovision_pct: None,
            geometry: Geometry::DEFAULT,
        })
        .unwrap()
    }

    /// Figures read from images mkfs.f2fs 1.16 `-O ro` made of the same sizes
    /// (`uf2fs info` of each; docs/packer.md has the commands).
    #[test]
    fn matches_mkfs_f2fs_1_16_ro_figures() {
        let l = ro(64 << 20, 1);
        assert_eq!((l.segment0_blkaddr, l.segment_count, l.segment_count_main), (2, 31, 25));
        assert_eq!(
            (l.segment_count_sit, l.segment_count_nat, l.segment_count_ssa),
            (2, 2, 0)
        );
        assert_eq!((l.reserved_segments, l.overprov_segments), (0, 2));
        assert_eq!((l.cur_node_segno, l.cur_data_segno), ([24, 0, 0], [0, 0, 0]));
        assert_eq!(l.main_blkaddr(), 2 + 6 * 512);
        assert_eq!(l.free_segment_count(), 23);
        assert_eq!(l.user_block_count(), 23 * 512);
    }

    #[test]
    fn the_smallest_ro_volume_is_smaller_than_the_smallest_normal_one() {
        let ro_min = min_bytes_ro(1, 1, Geometry::DEFAULT).unwrap();
        let normal_min = super::super::min_bytes(1, 1, None).unwrap();
        assert!(ro_min < normal_min, "{ro_min} {normal_min}");
        let input = |bytes| LayoutInput {
            bytes,
            sector_size: 512,
            segs_per_sec: 1,
            secs_per_zone: 1,
            overprovision_pct: None,
            geometry: Geometry::DEFAULT,
        };
        assert!(compute_ro(&input(ro_min)).is_ok());
        assert!(compute_ro(&input(ro_min - 4096)).is_err());
    }
}
