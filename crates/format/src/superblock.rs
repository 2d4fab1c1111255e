//! The superblock (`struct f2fs_super_block`), stored at byte 1024 of blocks 0 and 1.

use crate::consts::*;
use crate::crc::f2fs_crc32;
use crate::le::{put_u16, put_u32, put_u64, u16_at, u32_at, u64_at};
use crate::{FormatError, Result};

const S: &str = "superblock";
/// Size of the on-disk superblock structure.
pub const SUPERBLOCK_SIZE: usize = 3072;
/// Byte offset of the `crc` field (the checksum covers the bytes before it).
pub const SB_CRC_OFFSET: usize = 3068;
/// Blocks the superblock's two copies occupy at the start of the volume (one copy at
/// byte 1024 of each); segment 0 starts at or after this block.
pub const SUPERBLOCK_BLOCKS: u32 = 2;

/// Feature bits of `f2fs_super_block.feature`, with the names mkfs.f2fs -O uses.
pub const FEATURES: &[(u32, &str)] = &[
    (0x0001, "encrypt"),
    (0x0002, "blkzoned"),
    (0x0004, "atomic_write"),
    (0x0008, "extra_attr"),
    (0x0010, "project_quota"),
    (0x0020, "inode_checksum"),
    (0x0040, "flexible_inline_xattr"),
    (0x0080, "quota"),
    (0x0100, "inode_crtime"),
    (0x0200, "lost_found"),
    (0x0400, "verity"),
    (0x0800, "sb_checksum"),
    (0x1000, "casefold"),
    (0x2000, "compression"),
    (0x4000, "ro"),
    (0x8000, "device_alias"),
    (0x10000, "packed_ssa"),
];

/// Extension slots in the superblock (`F2FS_MAX_EXTENSION`).
pub const F2FS_MAX_EXTENSION: usize = 64;
/// Bytes of one extension slot (`F2FS_EXTENSION_LEN`), NUL included.
pub const F2FS_EXTENSION_LEN: usize = 8;
/// UTF-16 units of the volume name (`MAX_VOLUME_NAME`).
pub const MAX_VOLUME_NAME: usize = 512;
/// Bytes of the version strings (`VERSION_LEN`).
pub const VERSION_LEN: usize = 256;

/// Feature bit: summary blocks of 4 KiB packed several to a block of a larger size
/// (f2fs-tools' `packed_ssa`, 16 KiB-block volumes only).
pub const FEATURE_PACKED_SSA: u32 = 0x10000;
/// Feature bit: file-based encryption.
pub const FEATURE_ENCRYPT: u32 = 0x0001;
/// Feature bit: zoned block device.
pub const FEATURE_BLKZONED: u32 = 0x0002;
/// Feature bit: extra inode attributes.
pub const FEATURE_EXTRA_ATTR: u32 = 0x0008;
/// Feature bit: project quota.
pub const FEATURE_PRJQUOTA: u32 = 0x0010;
/// Feature bit: inode checksums.
pub const FEATURE_INODE_CHKSUM: u32 = 0x0020;
/// Feature bit: per-inode inline xattr size.
pub const FEATURE_FLEXIBLE_INLINE_XATTR: u32 = 0x0040;
/// Feature bit: quota files as hidden inodes.
pub const FEATURE_QUOTA_INO: u32 = 0x0080;
/// Feature bit: inode creation time.
pub const FEATURE_INODE_CRTIME: u32 = 0x0100;
/// Feature bit: a lost+found directory made at format time.
pub const FEATURE_LOST_FOUND: u32 = 0x0200;
/// Feature bit: fs-verity.
pub const FEATURE_VERITY: u32 = 0x0400;
/// Feature bit: superblock checksum.
pub const FEATURE_SB_CHKSUM: u32 = 0x0800;
/// Feature bit: case-insensitive directories.
pub const FEATURE_CASEFOLD: u32 = 0x1000;
/// Feature bit: transparent compression.
pub const FEATURE_COMPRESSION: u32 = 0x2000;
/// Feature bit: read-only image (no free space reserved for writes).
pub const FEATURE_RO: u32 = 0x4000;

/// One device of a multi-device F2FS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    /// Path the device had when the image was made (informational).
    pub path: String,
    /// Segments on this device.
    pub total_segments: u32,
}

/// A decoded, validated superblock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Superblock {
    /// Format major version.
    pub major_ver: u16,
    /// Format minor version.
    pub minor_ver: u16,
    /// log2 of the sector size.
    pub log_sectorsize: u32,
    /// log2 of sectors per block.
    pub log_sectors_per_block: u32,
    /// log2 of the block size: 12, or 14 for 16 KiB blocks (see [`Superblock::geometry`]).
    pub log_blocksize: u32,
    /// log2 of blocks per segment (always 9).
    pub log_blocks_per_seg: u32,
    /// Segments per section (the GC unit).
    pub segs_per_sec: u32,
    /// Sections per zone.
    pub secs_per_zone: u32,
    /// Total blocks of the volume.
    pub block_count: u64,
    /// Sections in the main area.
    pub section_count: u32,
    /// Segments in all, from segment 0.
    pub segment_count: u32,
    /// Segments of the checkpoint area.
    pub segment_count_ckpt: u32,
    /// Segments of the SIT area (two copies).
    pub segment_count_sit: u32,
    /// Segments of the NAT area (two copies).
    pub segment_count_nat: u32,
    /// Segments of the SSA area.
    pub segment_count_ssa: u32,
    /// Segments of the main area.
    pub segment_count_main: u32,
    /// Block address of segment 0.
    pub segment0_blkaddr: u32,
    /// First block of the checkpoint area.
    pub cp_blkaddr: u32,
    /// First block of the SIT area.
    pub sit_blkaddr: u32,
    /// First block of the NAT area.
    pub nat_blkaddr: u32,
    /// First block of the SSA area.
    pub ssa_blkaddr: u32,
    /// First block of the main area.
    pub main_blkaddr: u32,
    /// Root directory inode number.
    pub root_ino: u32,
    /// Node inode number (internal).
    pub node_ino: u32,
    /// Meta inode number (internal).
    pub meta_ino: u32,
    /// Volume UUID.
    pub uuid: [u8; 16],
    /// Volume label.
    pub volume_name: String,
    /// Cold-file extensions (the on-disk `extension_count` of them), then the
    /// `hot_ext_count` hot ones.
    pub extensions: Vec<String>,
    /// Extra checkpoint blocks holding large SIT version bitmaps.
    pub cp_payload: u32,
    /// Version string of the tool or kernel that last wrote the superblock.
    pub version: String,
    /// Version string of the tool that made the image.
    pub init_version: String,
    /// Feature bits.
    pub feature: u32,
    /// Devices of a multi-device volume (empty for a single device).
    pub devices: Vec<Device>,
    /// Quota inode numbers (user, group, project); 0 when absent.
    pub qf_ino: [u32; 3],
    /// Number of hot extensions at the end of `extensions`.
    pub hot_ext_count: u8,
    /// File name encoding (1 = UTF-8 12.1) for casefold.
    pub s_encoding: u16,
    /// Encoding flags.
    pub s_encoding_flags: u16,
    /// Stored CRC (meaningful with the sb_checksum feature).
    pub crc: u32,
}

fn cstr(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

fn utf16_name(bytes: &[u8]) -> String {
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .take_while(|&u| u != 0)
        .collect();
    String::from_utf16_lossy(&units)
}

impl Superblock {
    /// Decodes and validates the superblock from the 3072 bytes at offset 1024 of its
    /// block.
    pub fn decode(b: &[u8]) -> Result<Superblock> {
        FormatError::need(S, b, SUPERBLOCK_SIZE)?;
        let magic = u32_at(b, 0);
        if magic != F2FS_SUPER_MAGIC {
            return Err(FormatError::BadMagic {
                structure: S,
                found: magic,
                expected: F2FS_SUPER_MAGIC,
            });
        }
        let feature = u32_at(b, 2180);
        let checksum_offset = u32_at(b, 32) as usize;
        let crc = u32_at(b, SB_CRC_OFFSET);
        if feature & FEATURE_SB_CHKSUM != 0 {
            if checksum_offset != SB_CRC_OFFSET {
                return Err(FormatError::invalid(
                    S,
                    format!("checksum offset {checksum_offset} (expected {SB_CRC_OFFSET})"),
                ));
            }
            let computed = f2fs_crc32(&b[..SB_CRC_OFFSET]);
            if computed != crc {
                return Err(FormatError::BadChecksum {
                    structure: S,
                    stored: crc,
                    computed,
                });
            }
        }
        // extension_count counts the cold extensions; the hot ones follow them.
        let ext_count = u32_at(b, 1148) as usize + b[2757] as usize;
        if ext_count > F2FS_MAX_EXTENSION {
            return Err(FormatError::invalid(
                S,
                format!("{ext_count} extensions (cold and hot) > {F2FS_MAX_EXTENSION}"),
            ));
        }
        let extensions = (0..ext_count).map(|i| cstr(&b[1152 + i * 8..1160 + i * 8])).collect();
        let mut devices = Vec::new();
        for i in 0..MAX_DEVICES {
            let d = &b[2201 + i * 68..2201 + (i + 1) * 68];
            if d[0] == 0 {
                break;
            }
            devices.push(Device {
                path: cstr(&d[..64]),
                total_segments: u32_at(d, 64),
            });
        }
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(&b[108..124]);
        let sb = Superblock {
            major_ver: u16_at(b, 4),
            minor_ver: u16_at(b, 6),
            log_sectorsize: u32_at(b, 8),
            log_sectors_per_block: u32_at(b, 12),
            log_blocksize: u32_at(b, 16),
            log_blocks_per_seg: u32_at(b, 20),
            segs_per_sec: u32_at(b, 24),
            secs_per_zone: u32_at(b, 28),
            block_count: u64_at(b, 36),
            section_count: u32_at(b, 44),
            segment_count: u32_at(b, 48),
            segment_count_ckpt: u32_at(b, 52),
            segment_count_sit: u32_at(b, 56),
            segment_count_nat: u32_at(b, 60),
            segment_count_ssa: u32_at(b, 64),
            segment_count_main: u32_at(b, 68),
            segment0_blkaddr: u32_at(b, 72),
            cp_blkaddr: u32_at(b, 76),
            sit_blkaddr: u32_at(b, 80),
            nat_blkaddr: u32_at(b, 84),
            ssa_blkaddr: u32_at(b, 88),
            main_blkaddr: u32_at(b, 92),
            root_ino: u32_at(b, 96),
            node_ino: u32_at(b, 100),
            meta_ino: u32_at(b, 104),
            uuid,
            volume_name: utf16_name(&b[124..1148]),
            extensions,
            cp_payload: u32_at(b, 1664),
            version: cstr(&b[1668..1924]),
            init_version: cstr(&b[1924..2180]),
            feature,
            devices,
            qf_ino: [u32_at(b, 2745), u32_at(b, 2749), u32_at(b, 2753)],
            hot_ext_count: b[2757],
            s_encoding: u16_at(b, 2758),
            s_encoding_flags: u16_at(b, 2760),
            crc,
        };
        sb.validate()?;
        Ok(sb)
    }

    fn validate(&self) -> Result<()> {
        let bad = |d: String| Err(FormatError::invalid(S, d));
        crate::geometry::Geometry::from_log_block_size(self.log_blocksize)?;
        if self.log_blocks_per_seg != LOG_BLOCKS_PER_SEG {
            return bad(format!(
                "2^{} blocks per segment (expected 512)",
                self.log_blocks_per_seg
            ));
        }
        if !(9..=self.log_blocksize).contains(&self.log_sectorsize)
            || self.log_sectorsize.checked_add(self.log_sectors_per_block) != Some(self.log_blocksize)
        {
            return bad(format!(
                "sector size 2^{} with 2^{} sectors per block",
                self.log_sectorsize, self.log_sectors_per_block
            ));
        }
        if self.segs_per_sec == 0 || self.secs_per_zone == 0 || self.segs_per_sec > self.segment_count_main.max(1) {
            return bad(format!(
                "segs_per_sec {} secs_per_zone {}",
                self.segs_per_sec, self.secs_per_zone
            ));
        }
        if self.segment_count > 16 * 1024 * 1024 / 2 {
            return bad(format!("segment_count {} exceeds the 16 TiB limit", self.segment_count));
        }
        if (self.segment_count as u64) > self.block_count >> LOG_BLOCKS_PER_SEG {
            return bad(format!(
                "segment_count {} exceeds block_count {}",
                self.segment_count, self.block_count
            ));
        }
        let parts = [
            self.segment_count_ckpt,
            self.segment_count_sit,
            self.segment_count_nat,
            self.segment_count_ssa,
            self.segment_count_main,
        ];
        let sum: u64 = parts.iter().map(|&p| p as u64).sum();
        if sum > self.segment_count as u64 {
            return bad(format!(
                "area segments add up to {sum} > segment_count {}",
                self.segment_count
            ));
        }
        if self.segment_count_ckpt < 2
            || self.segment_count_nat < 2
            || self.segment_count_sit < 2
            || self.segment_count_main == 0
        {
            return bad("empty checkpoint, NAT, SIT or main area".into());
        }
        // The superblock's two copies own blocks 0 and 1; an area starting there would be
        // overwritten by them (or overwrite them). f2fs-tools' development mkfs.f2fs lays
        // out `-b 16384 -O ro` with segment 0 at byte 8192, block 0: its first checkpoint
        // pack shares a block with the superblock.
        if self.segment0_blkaddr < SUPERBLOCK_BLOCKS {
            return bad(format!(
                "segment 0 (the checkpoint area) starts at block {} of {} bytes, inside the \
                 superblocks' blocks 0 and 1: the checkpoint and the superblock overwrite each \
                 other (the image was laid out wrongly when it was made)",
                self.segment0_blkaddr,
                1u64 << self.log_blocksize
            ));
        }
        // Areas follow each other: CP, SIT, NAT, SSA, main.
        let expect = [
            ("cp_blkaddr", self.cp_blkaddr, self.segment0_blkaddr as u64),
            (
                "sit_blkaddr",
                self.sit_blkaddr,
                self.cp_blkaddr as u64 + ((self.segment_count_ckpt as u64) << 9),
            ),
            (
                "nat_blkaddr",
                self.nat_blkaddr,
                self.sit_blkaddr as u64 + ((self.segment_count_sit as u64) << 9),
            ),
            (
                "ssa_blkaddr",
                self.ssa_blkaddr,
                self.nat_blkaddr as u64 + ((self.segment_count_nat as u64) << 9),
            ),
            (
                "main_blkaddr",
                self.main_blkaddr,
                self.ssa_blkaddr as u64 + ((self.segment_count_ssa as u64) << 9),
            ),
        ];
        for (name, got, want) in expect {
            if got as u64 != want {
                return bad(format!("{name} {got:#x}, expected {want:#x} from the area sizes"));
            }
        }
        if (self.section_count as u64) * (self.segs_per_sec as u64) > self.segment_count_main as u64
            || self.section_count == 0
        {
            return bad(format!(
                "section_count {} with {} main segments",
                self.section_count, self.segment_count_main
            ));
        }
        if self.cp_payload as u64 >= (BLOCKS_PER_SEG as u64) - 8 {
            return bad(format!("cp_payload {} too large", self.cp_payload));
        }
        if self.root_ino < 3 || self.node_ino == self.root_ino || self.meta_ino == self.root_ino {
            return bad(format!(
                "root_ino {} node_ino {} meta_ino {}",
                self.root_ino, self.node_ino, self.meta_ino
            ));
        }
        if self.hot_ext_count as usize > self.extensions.len() {
            return bad(format!(
                "hot_ext_count {} > extension_count {}",
                self.hot_ext_count,
                self.extensions.len()
            ));
        }
        Ok(())
    }

    /// Blocks per segment.
    pub fn blocks_per_seg(&self) -> u32 {
        1 << self.log_blocks_per_seg
    }

    /// Blocks per section.
    pub fn blocks_per_sec(&self) -> u32 {
        self.segs_per_sec << self.log_blocks_per_seg
    }

    /// Last block address of the main area, exclusive.
    pub fn main_end_blkaddr(&self) -> u64 {
        self.main_blkaddr as u64 + ((self.segment_count_main as u64) << self.log_blocks_per_seg)
    }

    /// Whether feature bit `bit` is set.
    pub fn has(&self, bit: u32) -> bool {
        self.feature & bit != 0
    }

    /// Names of the feature bits set (unknown bits as `unknown(0x...)`).
    pub fn feature_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        let mut known = 0u32;
        for &(bit, name) in FEATURES {
            known |= bit;
            if self.feature & bit != 0 {
                names.push(name.to_string());
            }
        }
        let unknown = self.feature & !known;
        if unknown != 0 {
            names.push(format!("unknown({unknown:#x})"));
        }
        names
    }

    /// Largest node id the NAT can hold.
    pub fn max_nid(&self) -> u64 {
        // Half the NAT segments hold one copy of each NAT block.
        ((self.segment_count_nat as u64 / 2) << self.log_blocks_per_seg)
            * self.geometry().nat_entries_per_block() as u64
    }

    /// The sizes that follow from the block size and the summary layout (`packed_ssa`)
    /// (a decoded superblock's block size is always valid;
    /// [`Geometry::DEFAULT`](crate::geometry::Geometry::DEFAULT) otherwise).
    pub fn geometry(&self) -> crate::geometry::Geometry {
        crate::geometry::Geometry::from_log_block_size(self.log_blocksize)
            .unwrap_or_default()
            .with_packed_ssa(self.has(FEATURE_PACKED_SSA))
    }

    /// Bytes of a block.
    pub fn block_size(&self) -> usize {
        self.geometry().block_size()
    }
}

/// Copies `text` into a NUL-padded slot, failing when it does not fit with its NUL.
fn put_cstr(b: &mut [u8], text: &str, what: &str) -> Result<()> {
    if text.len() >= b.len() || text.as_bytes().contains(&0) {
        return Err(FormatError::invalid(
            S,
            format!("{what} {text:?} does not fit in {} bytes", b.len() - 1),
        ));
    }
    b[..text.len()].copy_from_slice(text.as_bytes());
    Ok(())
}

impl Superblock {
    /// Encodes into the 3072 bytes stored at offset 1024 of blocks 0 and 1. With the
    /// sb_checksum feature the checksum offset and CRC are filled in (the `crc` field is
    /// ignored); without it `crc` is stored as is. Fails when a string or list does not
    /// fit its on-disk slot.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut b = vec![0u8; SUPERBLOCK_SIZE];
        put_u32(&mut b, 0, F2FS_SUPER_MAGIC);
        put_u16(&mut b, 4, self.major_ver);
        put_u16(&mut b, 6, self.minor_ver);
        let words = [
            (8, self.log_sectorsize),
            (12, self.log_sectors_per_block),
            (16, self.log_blocksize),
            (20, self.log_blocks_per_seg),
            (24, self.segs_per_sec),
            (28, self.secs_per_zone),
            (44, self.section_count),
            (48, self.segment_count),
            (52, self.segment_count_ckpt),
            (56, self.segment_count_sit),
            (60, self.segment_count_nat),
            (64, self.segment_count_ssa),
            (68, self.segment_count_main),
            (72, self.segment0_blkaddr),
            (76, self.cp_blkaddr),
            (80, self.sit_blkaddr),
            (84, self.nat_blkaddr),
            (88, self.ssa_blkaddr),
            (92, self.main_blkaddr),
            (96, self.root_ino),
            (100, self.node_ino),
            (104, self.meta_ino),
            (1664, self.cp_payload),
            (2180, self.feature),
            (2745, self.qf_ino[0]),
            (2749, self.qf_ino[1]),
            (2753, self.qf_ino[2]),
        ];
        for (off, v) in words {
            put_u32(&mut b, off, v);
        }
        put_u64(&mut b, 36, self.block_count);
        b[108..124].copy_from_slice(&self.uuid);
        self.encode_names(&mut b)?;
        b[2757] = self.hot_ext_count;
        put_u16(&mut b, 2758, self.s_encoding);
        put_u16(&mut b, 2760, self.s_encoding_flags);
        if self.has(FEATURE_SB_CHKSUM) {
            put_u32(&mut b, 32, SB_CRC_OFFSET as u32);
            let crc = f2fs_crc32(&b[..SB_CRC_OFFSET]);
            put_u32(&mut b, SB_CRC_OFFSET, crc);
        } else {
            put_u32(&mut b, SB_CRC_OFFSET, self.crc);
        }
        Ok(b)
    }

    /// The variable-length parts: volume name, extensions, versions, devices.
    fn encode_names(&self, b: &mut [u8]) -> Result<()> {
        let name: Vec<u16> = self.volume_name.encode_utf16().collect();
        if name.len() > MAX_VOLUME_NAME || name.contains(&0) {
            return Err(FormatError::invalid(
                S,
                format!("volume name of {} UTF-16 units (at most {MAX_VOLUME_NAME})", name.len()),
            ));
        }
        for (i, unit) in name.iter().enumerate() {
            put_u16(b, 124 + 2 * i, *unit);
        }
        let n = self.extensions.len();
        if n > F2FS_MAX_EXTENSION || (self.hot_ext_count as usize) > n {
            return Err(FormatError::invalid(
                S,
                format!(
                    "{n} extensions ({} hot), at most {F2FS_MAX_EXTENSION}",
                    self.hot_ext_count
                ),
            ));
        }
        put_u32(b, 1148, (n - self.hot_ext_count as usize) as u32);
        for (i, ext) in self.extensions.iter().enumerate() {
            let at = 1152 + i * F2FS_EXTENSION_LEN;
            put_cstr(&mut b[at..at + F2FS_EXTENSION_LEN], ext, "extension")?;
        }
        put_cstr(&mut b[1668..1924], &self.version, "version")?;
        put_cstr(&mut b[1924..2180], &self.init_version, "init_version")?;
        if self.devices.len() > MAX_DEVICES {
            return Err(FormatError::invalid(S, format!("{} devices", self.devices.len())));
        }
        for (i, d) in self.devices.iter().enumerate() {
            let at = 2201 + i * 68;
            if d.path.is_empty() {
                return Err(FormatError::invalid(S, format!("device {i} has an empty path")));
            }
            put_cstr(&mut b[at..at + 64], &d.path, "device path")?;
            put_u32(b, at + 64, d.total_segments);
        }
        Ok(())
    }
}
