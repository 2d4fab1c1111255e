//! What a lab run is made of: the device, the format, the file and the amount written
//! — the presets and the checks on values given on the command line.

use crate::size::format_size;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use uf2fs_core::KernelGcLoop;

/// Bytes of an F2FS segment.
pub const SEGMENT_BYTES: u64 = 2 << 20;
/// Bytes of a block.
pub const BLOCK_BYTES: u64 = 4096;

/// A named set of values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// The seed's setup scaled down to run in under a minute per policy and workload.
    Small,
    /// The seed's setup at full scale.
    Seed,
}

impl Preset {
    /// Every preset name, for help texts.
    pub const NAMES: &'static str = "small, seed";

    /// The preset's values.
    pub fn setup(self) -> Setup {
        match self {
            // 228 MiB conventional + 4068 zones of 8 MiB, mkfs.f2fs -m -Z 8 -o 3.89;
            // fio --filesize=31187m --io_size=128g --bs=4k --norandommap.
            Preset::Seed => Setup {
                preset: Some(Preset::Seed),
                conv_bytes: 228 << 20,
                zone_bytes: 8 << 20,
                zones: 4068,
                overprovision_pct: 3.89,
                reserved_sections: 8,
                file_bytes: 31187 << 20,
                io_bytes: 128 << 30,
                seed: 1,
                idle: None,
                kernel: KernelGcLoop::default(),
                writer_hold: None,
            },
            // The seed's format and shape on 2 MiB zones (the smallest section, so that
            // the file's nodes fill a section while a run stays under a minute), the
            // file sized to leave GC the seed's share of free sections (see
            // docs/waf-lab.md for the choice and the measurements).
            Preset::Small => Setup {
                preset: Some(Preset::Small),
                conv_bytes: 30 << 20,
                zone_bytes: 2 << 20,
                zones: 1070,
                overprovision_pct: 3.89,
                reserved_sections: 8,
                file_bytes: 2032 << 20,
                io_bytes: 2560 << 20,
                seed: 1,
                idle: None,
                kernel: KernelGcLoop::default(),
                writer_hold: None,
            },
        }
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Preset::Small => "small",
            Preset::Seed => "seed",
        })
    }
}

impl FromStr for Preset {
    type Err = String;

    fn from_str(s: &str) -> Result<Preset, String> {
        match s {
            "small" => Ok(Preset::Small),
            "seed" => Ok(Preset::Seed),
            _ => Err(format!("unknown preset '{s}' (known: {})", Preset::NAMES)),
        }
    }
}

/// Every value of a lab run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Setup {
    /// The preset the values started from (`None`: none).
    pub preset: Option<Preset>,
    /// Conventional (randomly writable) space at the start of the device; the
    /// sequential zones start at the first section boundary at or after it.
    pub conv_bytes: u64,
    /// Bytes per zone; one section is one zone.
    pub zone_bytes: u64,
    /// Sequential zones.
    pub zones: u64,
    /// Overprovision ratio in percent (mkfs.f2fs `-o`).
    pub overprovision_pct: f64,
    /// GC-reserved sections (mkfs.f2fs `-Z`; 0: mkfs.f2fs 1.15's automatic reserve).
    pub reserved_sections: u32,
    /// Size of the file (the footprint `multifile` keeps to).
    pub file_bytes: u64,
    /// Bytes written by the overwrite phase.
    pub io_bytes: u64,
    /// Seed of every random choice.
    pub seed: u64,
    /// Pauses of the writer in which the mount's background work runs (`None`: the
    /// writer never pauses and no background work runs, the seed's setup).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<Idle>,
    /// The Linux release whose `f2fs_gc` loop greedy, cost-benefit, ATGC and the
    /// weights run ([`KernelGcLoop`]: 6.1 or 6.12); the seed patches' policies and
    /// `default` keep their own loops.
    #[serde(default, with = "kernel_gc_loop")]
    pub kernel: KernelGcLoop,
    /// The dirty pages at which the kernel writer model holds the writer
    /// ([`uf2fs_core::Fs::set_writer_hold`]; `None`: [`uf2fs_core::WRITER_HOLD_PAGES`]).
    /// Near a full volume the WAF follows the dirty level, which on Linux depends on
    /// how its flusher and writer run against each other on the host; a Linux run's
    /// dirty level (`scripts/kernel/waf-compare.sh` prints it) compares that run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer_hold: Option<usize>,
}

/// [`Setup::kernel`] in JSON: the release as a string (`"6.1"`, `"6.12"`).
mod kernel_gc_loop {
    use serde::{Deserialize, Deserializer, Serializer};
    use uf2fs_core::KernelGcLoop;

    pub fn serialize<S: Serializer>(k: &KernelGcLoop, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(k)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<KernelGcLoop, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// The front writer's pauses during the overwrite phase, in which F2FS's background
/// cleaner and periodic checkpoint run on the simulated clock (see [`crate::idle`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Idle {
    /// Bytes written between two pauses.
    pub every_bytes: u64,
    /// Length of each pause, in simulated seconds.
    pub pause_secs: f64,
}

impl Setup {
    /// Segments per section.
    pub fn segs_per_sec(&self) -> u32 {
        (self.zone_bytes / SEGMENT_BYTES) as u32
    }

    /// Blocks per zone (and per section).
    pub fn zone_blocks(&self) -> u64 {
        self.zone_bytes / BLOCK_BYTES
    }

    /// Blocks of the file.
    pub fn file_blocks(&self) -> u64 {
        self.file_bytes / BLOCK_BYTES
    }

    /// Blocks of the overwrite phase.
    pub fn io_blocks(&self) -> u64 {
        self.io_bytes / BLOCK_BYTES
    }

    /// The file's share of the sequential zones (the seed: 31187 MiB of 4068 × 8 MiB,
    /// 0.958).
    pub fn file_share_of_zones(&self) -> f64 {
        self.file_bytes as f64 / (self.zones as f64 * self.zone_bytes as f64)
    }

    /// Checks the values that do not depend on the format (which [`crate::volume`]
    /// checks).
    pub fn check(&self) -> Result<(), String> {
        if self.zone_bytes == 0 || self.zone_bytes % SEGMENT_BYTES != 0 {
            return Err(format!(
                "zone size {} is not a whole number of 2 MiB segments",
                format_size(self.zone_bytes)
            ));
        }
        if self.zone_bytes > 1 << 30 {
            return Err(format!(
                "zone size {} is larger than the lab's 1 GiB limit",
                format_size(self.zone_bytes)
            ));
        }
        if self.zones == 0 {
            return Err("at least one zone is needed".into());
        }
        if self.conv_bytes == 0 {
            return Err("the conventional space must hold the metadata: it cannot be empty".into());
        }
        let total = (self.conv_bytes.div_ceil(self.zone_bytes))
            .checked_add(self.zones)
            .and_then(|z| z.checked_mul(self.zone_bytes));
        if total.is_none_or(|t| t > 16 << 40) {
            return Err("the volume would be larger than F2FS's 16 TiB".into());
        }
        if !(self.overprovision_pct > 0.0 && self.overprovision_pct < 100.0) {
            return Err(format!(
                "overprovision ratio {}% out of range (more than 0 and less than 100)",
                self.overprovision_pct
            ));
        }
        for (what, bytes) in [("file size", self.file_bytes), ("io size", self.io_bytes)] {
            if bytes == 0 || bytes % BLOCK_BYTES != 0 {
                return Err(format!(
                    "{what} {} is not a positive whole number of 4 KiB blocks",
                    format_size(bytes)
                ));
            }
        }
        if self.file_blocks() > u32::MAX as u64 {
            return Err(format!("file size {} is too large", format_size(self.file_bytes)));
        }
        if let Some(hold) = self.writer_hold {
            let range = uf2fs_core::WRITER_HOLD_MIN_PAGES..=uf2fs_core::WRITER_HOLD_MAX_PAGES;
            if !range.contains(&hold) {
                return Err(format!(
                    "writer hold {hold} out of range ({} to {} dirty pages)",
                    range.start(),
                    range.end()
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writer_hold_out_of_range_is_refused() {
        for (hold, ok) in [(513, true), (1024, true), (512, false), (1025, false), (0, false)] {
            let s = Setup {
                writer_hold: Some(hold),
                ..Preset::Small.setup()
            };
            assert_eq!(s.check().is_ok(), ok, "{hold}: {:?}", s.check());
        }
    }

    #[test]
    fn presets_are_valid_and_named() {
        for p in [Preset::Small, Preset::Seed] {
            let s = p.setup();
            s.check().unwrap();
            assert_eq!(s.preset, Some(p));
            assert_eq!(p.to_string().parse::<Preset>(), Ok(p));
        }
        assert!("Small".parse::<Preset>().unwrap_err().contains("known: small, seed"));
    }

    #[test]
    fn seed_preset_is_the_published_setup() {
        let s = Preset::Seed.setup();
        assert_eq!(s.segs_per_sec(), 4);
        assert_eq!(s.file_blocks(), 31187 * 256);
        assert_eq!(s.io_blocks(), 128 * 262_144);
        assert!((s.file_share_of_zones() - 0.958).abs() < 0.0005);
    }

    #[test]
    fn small_preset_keeps_about_the_seed_utilisation() {
        let small = Preset::Small.setup();
        assert!(
            (small.file_share_of_zones() - 0.958).abs() < 0.01,
            "{}",
            small.file_share_of_zones()
        );
        assert_eq!(small.segs_per_sec(), 1);
    }

    #[test]
    fn bad_values_say_which() {
        let good = Preset::Small.setup();
        let cases: [(Setup, &str); 7] = [
            (
                Setup {
                    zone_bytes: 3 << 20,
                    ..good.clone()
                },
                "2 MiB segments",
            ),
            (
                Setup {
                    zone_bytes: 0,
                    ..good.clone()
                },
                "2 MiB segments",
            ),
            (
                Setup {
                    zones: 0,
                    ..good.clone()
                },
                "at least one zone",
            ),
            (
                Setup {
                    conv_bytes: 0,
                    ..good.clone()
                },
                "cannot be empty",
            ),
            (
                Setup {
                    overprovision_pct: 100.0,
                    ..good.clone()
                },
                "out of range",
            ),
            (
                Setup {
                    file_bytes: 5000,
                    ..good.clone()
                },
                "file size 5000 B",
            ),
            (
                Setup {
                    io_bytes: 0,
                    ..good.clone()
                },
                "io size",
            ),
        ];
        for (s, want) in cases {
            let e = s.check().unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }
}
