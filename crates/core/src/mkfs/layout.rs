//! Geometry of a new volume, by the rules mkfs.f2fs 1.15 follows so that our images
//! and its images of the same size and options have the same layout.
//!
//! In short: segment 0 starts at the first zone boundary after the two superblock
//! blocks; the checkpoint area has 2 segments; the SIT holds one entry per segment, the
//! NAT one entry per block after the CP and SIT areas (capped so that both version
//! bitmaps fit the checkpoint block, with payload blocks for a huge SIT bitmap), each in
//! two copies; the SSA one summary block per remaining segment; the SSA grows so the
//! metadata ends on a zone boundary, and the main area is the whole zones after it.
//! Reserved and overprovisioned segments come from the overprovision ratio, which is
//! searched for the largest user space when not given.

mod ro;

pub use ro::{compute_ro, min_bytes_ro, RO_ACTIVE_LOGS};

use crate::{Error, Result};
use uf2fs_format::consts::BLOCKS_PER_SEG;
use uf2fs_format::Geometry;
/// Segments of the checkpoint area (two packs, one segment each).
const CKPT_SEGMENTS: u32 = 2;
/// Active logs: hot/warm/cold for data and for nodes.
pub const NR_CURSEG_TYPE: u32 = 6;
/// Fewest segments mkfs.f2fs accepts (superblock, CP, SIT, NAT, SSA, main).
const MIN_SEGMENTS: u64 = 9;
/// Largest volume of 4 KiB blocks: block addresses are 32 bits (16 TiB).
pub const MAX_VOLUME_BYTES: u64 = 16 << 40;
/// Most segments a volume has (`F2FS_MAX_SEGMENT`), whatever its block size.
const MAX_SEGMENTS: u64 = 8 << 20;
/// Byte offset of the version bitmaps in the checkpoint block.
const CP_BITMAP_OFFSET: u32 = 192;
/// Smallest NAT version bitmap the checkpoint block keeps room for.
const MIN_NAT_BITMAP_SIZE: u32 = 64;

/// Bytes in a segment of `geo`'s blocks.
fn segment_bytes(geo: Geometry) -> u64 {
    geo.block_size() as u64 * BLOCKS_PER_SEG as u64
}

/// Largest volume of `geo`'s blocks (32-bit block addresses: 16 TiB of 4 KiB blocks,
/// 64 TiB of 16 KiB ones).
pub fn max_volume_bytes(geo: Geometry) -> u64 {
    MAX_SEGMENTS * segment_bytes(geo)
}

/// Bytes of the checkpoint block available to the version bitmaps (from the bitmap
/// offset to the checksum at the end of the block).
fn max_bitmap_size_in_ckpt(geo: Geometry) -> u32 {
    geo.cp_checksum_offset() as u32 - CP_BITMAP_OFFSET
}

/// What the geometry depends on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayoutInput {
    /// Bytes of the volume (the device, or the size asked for).
    pub bytes: u64,
    /// Logical sector size of the device (512 for image files).
    pub sector_size: u32,
    /// Segments per section (the GC unit).
    pub segs_per_sec: u32,
    /// Sections per zone (the allocation unit of the active logs).
    pub secs_per_zone: u32,
    /// Overprovision ratio in percent; `None` searches for the best one.
    pub overprovision_pct: Option<f64>,
    /// Block size: 4 KiB, or Android's 16 KiB (`mkfs.f2fs -b 16384`).
    pub geometry: Geometry,
}

/// The computed geometry, in the units of the superblock and checkpoint fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Block size and what follows from it.
    pub geometry: Geometry,
    /// log2 of the sector size.
    pub log_sectorsize: u32,
    /// Blocks of the volume.
    pub block_count: u64,
    /// Segments per section.
    pub segs_per_sec: u32,
    /// Sections per zone.
    pub secs_per_zone: u32,
    /// First block of segment 0 (the checkpoint area).
    pub segment0_blkaddr: u32,
    /// Segments from segment 0 on, whole zones only.
    pub segment_count: u32,
    /// SIT segments (both copies).
    pub segment_count_sit: u32,
    /// NAT segments (both copies).
    pub segment_count_nat: u32,
    /// SSA segments.
    pub segment_count_ssa: u32,
    /// Main-area segments.
    pub segment_count_main: u32,
    /// Main-area sections.
    pub section_count: u32,
    /// Checkpoint payload blocks (for a SIT bitmap too large for the checkpoint block).
    pub cp_payload: u32,
    /// The overprovision ratio used, in percent.
    pub overprovision_pct: f64,
    /// Segments reserved for GC.
    pub reserved_segments: u32,
    /// Overprovisioned segments (the reserved ones included).
    pub overprov_segments: u32,
    /// First segment of each active log, in checkpoint order:
    /// hot, warm, cold node, then hot, warm, cold data.
    pub cur_node_segno: [u32; 3],
    /// See `cur_node_segno`.
    pub cur_data_segno: [u32; 3],
    /// The `ro` feature's layout ([`compute_ro`]): two logs written, no SSA.
    pub ro: bool,
}

impl Layout {
    /// First block of the SIT area.
    pub fn sit_blkaddr(&self) -> u32 {
        self.segment0_blkaddr + CKPT_SEGMENTS * BLOCKS_PER_SEG
    }

    /// First block of the NAT area.
    pub fn nat_blkaddr(&self) -> u32 {
        self.sit_blkaddr() + self.segment_count_sit * BLOCKS_PER_SEG
    }

    /// First block of the SSA area.
    pub fn ssa_blkaddr(&self) -> u32 {
        self.nat_blkaddr() + self.segment_count_nat * BLOCKS_PER_SEG
    }

    /// First block of the main area.
    pub fn main_blkaddr(&self) -> u32 {
        self.ssa_blkaddr() + self.segment_count_ssa * BLOCKS_PER_SEG
    }

    /// Segments of the checkpoint area.
    pub fn segment_count_ckpt(&self) -> u32 {
        CKPT_SEGMENTS
    }

    /// Segments per zone.
    pub fn segs_per_zone(&self) -> u32 {
        self.segs_per_sec * self.secs_per_zone
    }

    /// Free main-area segments after the active logs (six, or two with `ro`) took one
    /// each.
    pub fn free_segment_count(&self) -> u32 {
        self.segment_count_main - if self.ro { RO_ACTIVE_LOGS } else { NR_CURSEG_TYPE }
    }

    /// Blocks users may fill: the main area less the overprovisioned segments.
    pub fn user_block_count(&self) -> u64 {
        (self.segment_count_main - self.overprov_segments) as u64 * BLOCKS_PER_SEG as u64
    }
}

fn too_small(input: &LayoutInput, why: &str) -> Error {
    let min = min_bytes_of(
        input.geometry,
        input.segs_per_sec,
        input.secs_per_zone,
        input.overprovision_pct,
    );
    let min_text = match min {
        Some(m) => format!("at least {} ({m} bytes) is needed", human_bytes(m)),
        None => "no size works with these options".to_string(),
    };
    Error::Invalid(format!(
        "{} is too small for F2FS with {} segment(s) per section{}: {why}; {min_text}",
        human_bytes(input.bytes),
        input.segs_per_sec,
        match input.overprovision_pct {
            Some(p) => format!(" and {p}% overprovision"),
            None => String::new(),
        },
    ))
}

/// Sizes in binary units, exact when they can be.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [(&str, u32); 4] = [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)];
    for (unit, shift) in UNITS {
        if b >= 1 << shift {
            let whole = b >> shift;
            return if whole << shift == b {
                format!("{whole} {unit}")
            } else {
                format!("{:.2} {unit}", b as f64 / (1u64 << shift) as f64)
            };
        }
    }
    format!("{b} bytes")
}

/// Checks the options that do not depend on the size.
pub fn check_options(input: &LayoutInput) -> Result<()> {
    if input.segs_per_sec == 0 || input.secs_per_zone == 0 {
        return Err(Error::Invalid(format!(
            "segments per section ({}) and sections per zone ({}) must be at least 1",
            input.segs_per_sec, input.secs_per_zone
        )));
    }
    let zone_segs = input.segs_per_sec as u64 * input.secs_per_zone as u64;
    if zone_segs > MAX_SEGMENTS {
        return Err(Error::Invalid(format!(
            "a zone of {} segments is larger than the largest F2FS volume",
            zone_segs
        )));
    }
    if let Some(p) = input.overprovision_pct {
        if !(p > 0.0 && p < 100.0) {
            return Err(Error::Invalid(format!(
                "overprovision ratio {p}% out of range (more than 0 and less than 100)"
            )));
        }
    }
    if !input.sector_size.is_power_of_two() || !(512..=4096).contains(&input.sector_size) {
        return Err(Error::Invalid(format!(
            "sector size {} not supported",
            input.sector_size
        )));
    }
    Ok(())
}

/// Computes the layout, or says why the volume cannot hold an F2FS.
pub fn compute(input: &LayoutInput) -> Result<Layout> {
    check_options(input)?;
    let max = max_volume_bytes(input.geometry);
    if input.bytes > max {
        return Err(Error::Invalid(format!(
            "{} is larger than the largest F2FS volume of {}-byte blocks ({})",
            human_bytes(input.bytes),
            input.geometry.block_size(),
            human_bytes(max)
        )));
    }
    try_layout(input).map_err(|why| too_small(input, why))
}

/// The layout, or in a few words why the volume is too small for one.
fn try_layout(input: &LayoutInput) -> std::result::Result<Layout, &'static str> {
    let sectors = input.bytes / input.sector_size as u64;
    let dev_bytes = sectors * input.sector_size as u64;
    let geo = input.geometry;
    let block_bytes = geo.block_size() as u64;
    let segs_per_zone = input.segs_per_sec * input.secs_per_zone;
    let zone_bytes = segs_per_zone as u64 * segment_bytes(geo);
    // Segment 0 starts at the first zone boundary past the two superblock blocks.
    let segment0_bytes = (2 * block_bytes).div_ceil(zone_bytes) * zone_bytes;
    let total_segments = dev_bytes
        .checked_sub(segment0_bytes)
        .ok_or("no room for the first zone")?
        / segment_bytes(geo);
    if total_segments < MIN_SEGMENTS {
        return Err("fewer than 9 segments");
    }
    let segment_count = (total_segments / segs_per_zone as u64 * segs_per_zone as u64) as u32;
    let meta = meta_areas(geo, segment_count, segs_per_zone);
    let meta_zones = (CKPT_SEGMENTS + meta.sit + meta.nat + meta.ssa) / segs_per_zone;
    let total_zones = (segment_count / segs_per_zone).saturating_sub(meta_zones);
    if total_zones <= NR_CURSEG_TYPE {
        return Err("fewer zones in the main area than the six active logs need");
    }
    let section_count = total_zones * input.secs_per_zone;
    let mut layout = Layout {
        geometry: geo,
        log_sectorsize: input.sector_size.trailing_zeros(),
        block_count: dev_bytes / block_bytes,
        segs_per_sec: input.segs_per_sec,
        secs_per_zone: input.secs_per_zone,
        segment0_blkaddr: (segment0_bytes / block_bytes) as u32,
        segment_count,
        segment_count_sit: meta.sit,
        segment_count_nat: meta.nat,
        segment_count_ssa: meta.ssa,
        segment_count_main: section_count * input.segs_per_sec,
        section_count,
        cp_payload: meta.cp_payload,
        overprovision_pct: 0.0,
        reserved_segments: 0,
        overprov_segments: 0,
        cur_node_segno: [0; 3],
        cur_data_segno: [0; 3],
        ro: false,
    };
    set_overprovision(&mut layout, input.overprovision_pct)?;
    layout.place_active_logs(total_zones);
    Ok(layout)
}

/// Sizes of the SIT, NAT and SSA areas and the checkpoint payload.
struct MetaAreas {
    sit: u32,
    nat: u32,
    ssa: u32,
    cp_payload: u32,
}

fn meta_areas(geo: Geometry, segment_count: u32, segs_per_zone: u32) -> MetaAreas {
    let bps = BLOCKS_PER_SEG;
    let sit_blocks = segment_count.div_ceil(geo.sit_entries_per_block() as u32);
    let sit = 2 * sit_blocks.div_ceil(bps);
    // One NAT entry per block after the checkpoint and SIT areas.
    let after_sit = (segment_count - CKPT_SEGMENTS - sit) as u64 * bps as u64;
    let nat_blocks = after_sit.div_ceil(geo.nat_entries_per_block() as u64);
    let mut nat = nat_blocks.div_ceil(bps as u64) as u32;
    // Both version bitmaps must fit the checkpoint block; a SIT bitmap too large for it
    // moves to payload blocks and leaves the block to the NAT bitmap.
    let sit_bitmap = (sit / 2) * bps / 8;
    let max_sit_bitmap = sit_bitmap.min(max_sit_bitmap_size(geo));
    let in_ckpt = max_bitmap_size_in_ckpt(geo);
    // SIT bitmap bytes that still leave the NAT bitmap its minimum.
    let (max_nat_bitmap, cp_payload) = if max_sit_bitmap > in_ckpt - MIN_NAT_BITMAP_SIZE {
        (in_ckpt, max_sit_bitmap.div_ceil(geo.block_size() as u32))
    } else {
        (in_ckpt - max_sit_bitmap, 0)
    };
    nat = nat.min(max_nat_bitmap * 8 / bps);
    let nat = 2 * nat;
    // One summary block per remaining segment, plus one as mkfs.f2fs 1.15 has it for
    // 4 KiB blocks; the development tree that makes 16 KiB volumes dropped the extra one.
    // With packed_ssa, one SSA block per four segments.
    let after_nat = segment_count - CKPT_SEGMENTS - sit - nat;
    let ssa_blocks = if geo.is_packed_ssa() {
        geo.ssa_blocks_for(after_nat)
    } else {
        after_nat + u32::from(geo.is_default())
    };
    let mut ssa = ssa_blocks.div_ceil(bps);
    let meta = CKPT_SEGMENTS + sit + nat + ssa;
    if meta % segs_per_zone != 0 {
        ssa += segs_per_zone - meta % segs_per_zone;
    }
    MetaAreas {
        sit,
        nat,
        ssa,
        cp_payload,
    }
}

/// SIT bitmap bytes of the largest volume.
fn max_sit_bitmap_size(geo: Geometry) -> u32 {
    (MAX_SEGMENTS as u32)
        .div_ceil(geo.sit_entries_per_block() as u32)
        .div_ceil(BLOCKS_PER_SEG)
        * BLOCKS_PER_SEG
        / 8
}

/// Segments reserved for GC at overprovision ratio `pct`, as a float (the caller
/// truncates, as mkfs.f2fs does).
fn reserved_for(pct: f64, segs_per_sec: u32) -> f64 {
    (2.0 * (100.0 / pct + 1.0) + NR_CURSEG_TYPE as f64) * segs_per_sec as f64
}

/// The ratio that leaves users the most space: tried in steps of 5% from 10% to 95% on
/// small volumes (under 256 main segments), else in steps of 0.01% up to 10%. The steps
/// accumulate in floating point exactly as mkfs.f2fs's do, so the same ratio wins.
/// Returns 0 when no ratio leaves any space.
pub fn best_overprovision(segment_count_main: u32, section_count: u32) -> f64 {
    let (mut pct, end, step) = if segment_count_main < 256 {
        (10.0, 95.0, 5.0)
    } else {
        (0.01, 10.0, 0.01)
    };
    let segs_per_sec = segment_count_main.div_ceil(section_count.max(1));
    let main = segment_count_main as f64;
    let (mut best, mut best_space) = (0.0, 0.0);
    while pct <= end {
        let reserved = reserved_for(pct, segs_per_sec);
        let ovp = (main - reserved) * pct / 100.0;
        let space = main - reserved - ovp;
        if best_space < space {
            best_space = space;
            best = pct;
        }
        pct += step;
    }
    best
}

fn set_overprovision(layout: &mut Layout, wanted_pct: Option<f64>) -> std::result::Result<(), &'static str> {
    let main = layout.segment_count_main;
    let pct = wanted_pct.unwrap_or_else(|| best_overprovision(main, layout.section_count));
    if pct <= 0.0 {
        return Err("no overprovision ratio leaves room for files");
    }
    let segs_per_sec = main.div_ceil(layout.section_count);
    // Float to integer truncates, as the C assignment does (and saturates when huge).
    let reserved = reserved_for(pct, segs_per_sec) as u32;
    if main - NR_CURSEG_TYPE < reserved {
        return Err("the GC reserve does not fit in the main area");
    }
    let overprov = ((main - reserved) as f64 * pct / 100.0) as u32 + reserved;
    if main <= overprov {
        return Err("overprovisioning takes the whole main area");
    }
    layout.overprovision_pct = pct;
    layout.reserved_segments = reserved;
    layout.overprov_segments = overprov;
    Ok(())
}

impl Layout {
    /// Places the six active logs on distinct zones: the node logs and hot data at the
    /// start of the main area, cold data from a quarter and warm data from half of it.
    fn place_active_logs(&mut self, total_zones: u32) {
        let z = self.segs_per_zone();
        let last_zone = |zones: u32| (zones - 1) * z;
        let hot_node = 0;
        let warm_node = hot_node + z;
        let cold_node = warm_node + z;
        let hot_data = cold_node + z;
        let cold_data = last_zone(total_zones >> 2).max(hot_data + z);
        let warm_data = last_zone(total_zones >> 1).max(cold_data + z);
        self.cur_node_segno = [hot_node, warm_node, cold_node];
        self.cur_data_segno = [hot_data, warm_data, cold_data];
    }
}

/// Smallest volume of 4 KiB blocks (in bytes, a whole number of segments) that takes
/// an F2FS with these options, or `None` when no size up to about 1 GiB past the
/// smallest candidate does.
pub fn min_bytes(segs_per_sec: u32, secs_per_zone: u32, overprovision_pct: Option<f64>) -> Option<u64> {
    min_bytes_of(Geometry::DEFAULT, segs_per_sec, secs_per_zone, overprovision_pct)
}

/// [`min_bytes`] for blocks of `geo`'s size.
pub fn min_bytes_of(
    geo: Geometry,
    segs_per_sec: u32,
    secs_per_zone: u32,
    overprovision_pct: Option<f64>,
) -> Option<u64> {
    let zone_segs = segs_per_sec as u64 * secs_per_zone as u64;
    if zone_segs == 0 || zone_segs > MAX_SEGMENTS {
        return None;
    }
    let zone_bytes = zone_segs * segment_bytes(geo);
    let first = (2 * geo.block_size() as u64).div_ceil(zone_bytes) * zone_bytes;
    // Grow a segment at a time from the fewest segments that could hold the six logs.
    let start = MIN_SEGMENTS.max((NR_CURSEG_TYPE as u64 + 1) * zone_segs);
    (start..start + 512 + 8 * zone_segs)
        .map(|segs| first + segs * segment_bytes(geo))
        .find(|&bytes| {
            let input = LayoutInput {
                bytes,
                sector_size: 512,
                segs_per_sec,
                secs_per_zone,
                overprovision_pct,
                geometry: geo,
            };
            try_layout(&input).is_ok()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(bytes: u64, segs_per_sec: u32) -> Layout {
        compute(&LayoutInput {
            bytes,
            sector_size: 512,
            segs_per_sec,
            secs_per_zone: 1,
            overprovision_pct: None,
            geometry: Geometry::DEFAULT,
        })
        .unwrap()
    }

    /// Figures read from images mkfs.f2fs 1.15 made of the same sizes.
    #[test]
    fn matches_mkfs_f2fs_figures() {
        let l = layout(64 << 20, 1);
        assert_eq!(
            (l.segment0_blkaddr, l.segment_count, l.segment_count_main),
            (512, 31, 24)
        );
        assert_eq!(
            (l.segment_count_sit, l.segment_count_nat, l.segment_count_ssa),
            (2, 2, 1)
        );
        assert_eq!(
            (l.reserved_segments, l.overprov_segments, l.overprovision_pct),
            (13, 16, 35.0)
        );
        assert_eq!((l.cur_node_segno, l.cur_data_segno), ([0, 1, 2], [3, 11, 5]));
        assert_eq!(l.user_block_count(), 4096);

        let l = layout(1 << 30, 1);
        assert_eq!(
            (l.segment_count, l.segment_count_main, l.main_blkaddr()),
            (511, 502, 0x1400)
        );
        assert_eq!(
            (l.segment_count_sit, l.segment_count_nat, l.segment_count_ssa),
            (2, 4, 1)
        );
        assert_eq!((l.reserved_segments, l.overprov_segments), (39, 68));
        assert_eq!(l.user_block_count(), 222_208);

        let l = layout(5 << 30, 4);
        assert_eq!(
            (l.segment0_blkaddr, l.segment_count, l.segment_count_main),
            (0x800, 2556, 2532)
        );
        assert_eq!(
            (l.section_count, l.nat_blkaddr(), l.ssa_blkaddr(), l.main_blkaddr()),
            (633, 0x1000, 0x2800, 0x3800)
        );
        assert_eq!((l.reserved_segments, l.overprov_segments), (173, 306));
        assert_eq!(l.user_block_count(), 1_139_712);
        assert!(l.cur_node_segno.iter().chain(&l.cur_data_segno).all(|s| s % 4 == 0));
    }

    /// Areas read from images the development tree of f2fs-tools (commit 8b0c58b)
    /// made with `mkfs.f2fs -b 16384` of the same sizes (its overprovision ratio and
    /// reserve follow newer rules than 1.15's, which uf2fs keeps for both block sizes).
    #[test]
    fn matches_mkfs_f2fs_16k_areas() {
        let layout16 = |bytes: u64, segs_per_sec| {
            compute(&LayoutInput {
                bytes,
                sector_size: 512,
                segs_per_sec,
                secs_per_zone: 1,
                overprovision_pct: None,
                geometry: Geometry::BLOCK_16K,
            })
            .unwrap()
        };
        let areas = |l: &Layout| {
            (
                l.segment0_blkaddr,
                l.segment_count,
                l.segment_count_main,
                l.segment_count_sit,
                l.segment_count_nat,
                l.segment_count_ssa,
                l.main_blkaddr(),
            )
        };
        assert_eq!(areas(&layout16(512 << 20, 1)), (0x200, 63, 56, 2, 2, 1, 0x1000));
        assert_eq!(areas(&layout16(5 << 30, 1)), (0x200, 639, 631, 2, 2, 2, 0x1200));
        assert_eq!(areas(&layout16(5 << 30, 4)), (0x800, 636, 628, 2, 2, 2, 0x1800));
        assert_eq!(areas(&layout16(64 << 30, 1)), (0x200, 8191, 8161, 2, 10, 16, 0x3e00));
        let l = layout16(512 << 20, 1);
        assert_eq!((l.block_count, l.cp_payload), (32768, 0));
        assert!(min_bytes_of(Geometry::BLOCK_16K, 1, 1, None).unwrap() % (8 << 20) == 0);
        assert!(crate::mkfs::block_geometry(8192).is_err());
        assert_eq!(crate::mkfs::block_geometry(16384).unwrap(), Geometry::BLOCK_16K);
    }

    #[test]
    fn too_small_names_the_minimum() {
        let min = min_bytes(1, 1, None).unwrap();
        let input = |bytes| LayoutInput {
            bytes,
            sector_size: 512,
            segs_per_sec: 1,
            secs_per_zone: 1,
            overprovision_pct: None,
            geometry: Geometry::DEFAULT,
        };
        assert!(compute(&input(min)).is_ok());
        let err = compute(&input(min - 4096)).unwrap_err().to_string();
        assert!(err.contains(&format!("{min} bytes")), "{err}");
        assert!(compute(&input(4096)).is_err());
    }

    #[test]
    fn rejects_bad_options() {
        let mut input = LayoutInput {
            bytes: 1 << 30,
            sector_size: 512,
            segs_per_sec: 0,
            secs_per_zone: 1,
            overprovision_pct: None,
            geometry: Geometry::DEFAULT,
        };
        assert!(compute(&input).is_err());
        input.segs_per_sec = 1;
        for bad in [0.0, -1.0, 100.0, f64::NAN] {
            input.overprovision_pct = Some(bad);
            assert!(compute(&input).unwrap_err().to_string().contains("overprovision"));
        }
        input.overprovision_pct = Some(5.0);
        let l = compute(&input).unwrap();
        assert_eq!(l.overprovision_pct, 5.0);
        input.bytes = MAX_VOLUME_BYTES + 1;
        assert!(compute(&input).is_err());
    }
}
