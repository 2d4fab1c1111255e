//! Parsing `mount -o` option lists: the generic options mount(8) and /etc/fstab pass,
//! and F2FS's own by the kernel's names and values.
//!
//! Every option is either honoured, accepted because it is what uf2fs always does
//! (`default_permissions`, `async`, `lazytime`), or refused with a message naming it:
//! unknown options, values the kernel refuses, and options whose meaning uf2fs cannot
//! give (`sync`, `dirsync`: it does not make every change durable at once).

use std::time::Duration;
use uf2fs_core::{ActiveLogs, AllocMode, BackgroundGc, FsyncMode, GcPacing, GcPolicy, PacingSettings, Settings};

/// The kernel's periodic checkpoint interval (sysfs `cp_interval`), uf2fs's default.
pub const DEFAULT_CP_INTERVAL_SECS: u64 = 60;

/// Mount options as given with `-o` (possibly several times, each comma-separated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedMountOptions {
    /// `ro` (cleared again by a later `rw`).
    pub read_only: bool,
    /// `allow_other`.
    pub allow_other: bool,
    /// `fsname=NAME`: the source name shown by `mount`.
    pub fsname: Option<String>,
    /// `subtype=NAME` (`fuse.NAME` in /proc/mounts, `f2fs` by default) or `nosubtype`
    /// (plain `fuse`, as fstests' `FSTYP=fuse` expects): `None` for the latter.
    pub subtype: Option<String>,
    /// `dev` (true) or `nodev` (false); `None` when neither was given.
    pub dev: Option<bool>,
    /// `suid` (true) or `nosuid` (false); `None` when neither was given.
    pub suid: Option<bool>,
    /// `exec` (true) or `noexec` (false); `None` when neither was given.
    pub exec: Option<bool>,
    /// `cp_interval=SECS`: seconds between periodic checkpoints; `None` for 0 (none).
    pub cp_interval: Option<Duration>,
    /// `active_logs=`, `background_gc=`, `mode=`, `[no]checkpoint_merge`, `fsync_mode=`.
    pub settings: Settings,
    /// `gc_policy=NAME` (uf2fs's) or `atgc` (the kernel's): how GC picks victims;
    /// `None`: the core's default (greedy, as the kernel).
    pub gc_policy: Option<GcPolicy>,
    /// `writeback_contexts=N`: writeback contexts, each with a flusher thread
    /// (default: the machine's cores, at most 8).
    pub writeback_contexts: usize,
    /// `writeback_policy=NAME`: which context writes an inode (`single`, `ino-hash`,
    /// `least-loaded`; default [`DEFAULT_WRITEBACK_POLICY`]).
    pub writeback_policy: String,
    /// `gc_pacing=off|seed|adaptive` and `gc_latency_target_us=N` (the adaptive
    /// pacer's aim, in microseconds): the paced cleaner (docs/gc-pacing.md); `off`
    /// (default) runs no paced cleaner.
    pub gc_pacing: PacingSettings,
    /// `relatime` (default, as Linux; also `atime`), `strictatime` or `noatime`: when
    /// reads and listings update access times.
    pub atime: uf2fs_fuse::AtimeMode,
    /// `diratime` (default) or `nodiratime`: whether listings update directories'.
    pub dir_atime: bool,
    /// `writeback_cache` (or `no_writeback_cache`, the default): FUSE's writeback
    /// cache, where the kernel keeps written pages and sends them in large writes
    /// later (see `uf2fs_fuse::MountOptions::writeback_cache`).
    pub writeback_cache: bool,
    /// `compress_algorithm=`, `compress_log_size=`, `compress_chksum`,
    /// `compress_mode=`, `compress_extension=`, `nocompress_extension=`: how new
    /// compressed files are written and which files are (checked as Linux checks
    /// them once every option is read).
    pub compress: uf2fs_core::CompressOptions,
}

/// The largest `gc_latency_target_us` (one second): a step longer than that is no
/// longer a small step (and steps stop growing at one segment anyway).
pub const MAX_GC_LATENCY_TARGET_US: u64 = 1_000_000;

/// The writeback policy of mounts that do not choose one.
pub const DEFAULT_WRITEBACK_POLICY: &str = "least-loaded";

/// The default number of writeback contexts: the machine's cores, at most 8.
pub fn default_writeback_contexts() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).min(8)
}

impl Default for ParsedMountOptions {
    fn default() -> ParsedMountOptions {
        ParsedMountOptions {
            read_only: false,
            allow_other: false,
            fsname: None,
            subtype: Some("f2fs".to_string()),
            dev: None,
            suid: None,
            exec: None,
            cp_interval: Some(Duration::from_secs(DEFAULT_CP_INTERVAL_SECS)),
            settings: Settings::default(),
            gc_policy: None,
            writeback_contexts: default_writeback_contexts(),
            writeback_policy: DEFAULT_WRITEBACK_POLICY.to_string(),
            gc_pacing: PacingSettings::default(),
            atime: uf2fs_fuse::AtimeMode::Relative,
            dir_atime: true,
            writeback_cache: false,
            compress: uf2fs_core::CompressOptions::default(),
        }
    }
}

/// Parses option groups such as `["ro,allow_other", "fsname=disk"]`. Later options win;
/// empty items (as in `ro,,x`) are ignored. The error is the message to show.
pub fn parse_mount_options(groups: &[String]) -> Result<ParsedMountOptions, String> {
    let mut parsed = ParsedMountOptions::default();
    for option in groups.iter().flat_map(|group| group.split(',')) {
        parse_one(&mut parsed, option)?;
    }
    parsed.compress.check().map_err(|e| format!("mount options: {e}"))?;
    Ok(parsed)
}

fn parse_one(parsed: &mut ParsedMountOptions, option: &str) -> Result<(), String> {
    let unsupported = |why: &str| Err(format!("mount option '{option}' is not supported: {why}"));
    match option {
        "" => {}
        "ro" => parsed.read_only = true,
        "rw" => parsed.read_only = false,
        "allow_other" => parsed.allow_other = true,
        "nosubtype" => parsed.subtype = None,
        // Always on: the kernel checks permissions against the modes uf2fs reports.
        "default_permissions" => {}
        "atime" | "relatime" => parsed.atime = uf2fs_fuse::AtimeMode::Relative,
        "strictatime" => parsed.atime = uf2fs_fuse::AtimeMode::Strict,
        "noatime" => parsed.atime = uf2fs_fuse::AtimeMode::Never,
        "diratime" | "nodiratime" => parsed.dir_atime = option == "diratime",
        // What uf2fs does anyway: access times reach the image with the inode at the
        // next checkpoint, as every change (F2FS mounts lazytime by default).
        "async" | "lazytime" | "nolazytime" => {}
        "sync" | "dirsync" => {
            return unsupported(
                "uf2fs does not make each change durable as it happens; \
                 use fsync, `sync MOUNTPOINT` or cp_interval=SECS",
            )
        }
        "dev" | "nodev" => parsed.dev = Some(option == "dev"),
        "suid" | "nosuid" => parsed.suid = Some(option == "suid"),
        "exec" | "noexec" => parsed.exec = Some(option == "exec"),
        "checkpoint_merge" | "nocheckpoint_merge" => parsed.settings.checkpoint_merge = option == "checkpoint_merge",
        // The kernel's age-threshold GC switch.
        "atgc" => parsed.gc_policy = Some(GcPolicy::Atgc),
        "writeback_cache" | "no_writeback_cache" => parsed.writeback_cache = option == "writeback_cache",
        "compress_chksum" => {
            parsed
                .compress
                .set_option(option, None)
                .map_err(|e| format!("mount option '{option}': {e}"))?;
        }
        _ => parse_valued(parsed, option)?,
    }
    Ok(())
}

/// `NAME=VALUE` options.
fn parse_valued(parsed: &mut ParsedMountOptions, option: &str) -> Result<(), String> {
    let Some((name, value)) = option.split_once('=') else {
        return Err(format!("unknown mount option '{option}'"));
    };
    let bad_value = |allowed: &str| Err(format!("mount option '{option}': {name} must be {allowed}"));
    match name {
        "fsname" if value.is_empty() => return Err("mount option 'fsname=' needs a name".to_string()),
        "fsname" => parsed.fsname = Some(value.to_string()),
        "subtype" if value.is_empty() || !value.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b)) => {
            return bad_value("letters, digits, '_', '-' or '.'")
        }
        "subtype" => parsed.subtype = Some(value.to_string()),
        "background_gc" => match BackgroundGc::from_name(value) {
            Some(gc) => parsed.settings.background_gc = gc,
            None => return bad_value("on, off or sync"),
        },
        "mode" => match AllocMode::from_name(value) {
            Some(mode) => parsed.settings.mode = mode,
            None if value.starts_with("fragment:") => {
                return Err(format!(
                    "mount option '{option}' is not supported: uf2fs has no fragmentation test modes"
                ))
            }
            None => return bad_value("adaptive or lfs"),
        },
        "fsync_mode" => match FsyncMode::from_name(value) {
            Some(mode) => parsed.settings.fsync_mode = mode,
            None => return bad_value("posix, strict or nobarrier"),
        },
        "active_logs" => match value.parse().ok().and_then(ActiveLogs::from_count) {
            Some(logs) => parsed.settings.active_logs = logs,
            None => return bad_value("2, 4 or 6"),
        },
        "gc_policy" => match value.parse::<GcPolicy>() {
            Ok(policy) => parsed.gc_policy = Some(policy),
            Err(_) => return bad_value(&format!("one of {}", GcPolicy::NAMES)),
        },
        "writeback_contexts" => match value.parse::<usize>() {
            Ok(n) if (1..=uf2fs_core::writeback::MAX_WRITEBACK_CONTEXTS).contains(&n) => parsed.writeback_contexts = n,
            _ => {
                return bad_value(&format!(
                    "a number from 1 to {}",
                    uf2fs_core::writeback::MAX_WRITEBACK_CONTEXTS
                ))
            }
        },
        "writeback_policy" if uf2fs_core::writeback::POLICY_NAMES.contains(&value) => {
            parsed.writeback_policy = value.to_string()
        }
        "writeback_policy" => return bad_value(&format!("one of {}", uf2fs_core::writeback::POLICY_NAMES.join(", "))),
        "gc_pacing" => match value.parse::<GcPacing>() {
            Ok(pacing) => parsed.gc_pacing.pacing = pacing,
            Err(_) => return bad_value("off, seed or adaptive"),
        },
        "gc_latency_target_us" => match value.parse::<u64>() {
            Ok(us) if (1..=MAX_GC_LATENCY_TARGET_US).contains(&us) => {
                parsed.gc_pacing.latency_target = Duration::from_micros(us)
            }
            _ => {
                return bad_value(&format!(
                    "a number of microseconds from 1 to {MAX_GC_LATENCY_TARGET_US}"
                ))
            }
        },
        "cp_interval" => match value.parse::<u32>() {
            Ok(0) => parsed.cp_interval = None,
            Ok(secs) => parsed.cp_interval = Some(Duration::from_secs(secs.into())),
            Err(_) => return bad_value("a number of seconds (0 turns periodic checkpoints off)"),
        },
        _ => match parsed.compress.set_option(name, Some(value)) {
            Ok(true) => {}
            Ok(false) => return Err(format!("unknown mount option '{option}'")),
            Err(e) => return Err(format!("mount option '{option}': {e}")),
        },
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(groups: &[&str]) -> Result<ParsedMountOptions, String> {
        parse_mount_options(&groups.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn compression_options() {
        let p = parse(&[
            "compress_algorithm=zstd:3,compress_log_size=4,compress_chksum",
            "compress_mode=user,compress_extension=txt,compress_extension=log,nocompress_extension=jpg",
        ])
        .unwrap()
        .compress;
        assert_eq!(p.codec.name(), "zstd:3");
        assert_eq!((p.codec.log_cluster_size(), p.codec.checksum()), (4, true));
        assert_eq!(p.mode, uf2fs_core::CompressMode::User);
        assert_eq!((p.extensions.len(), p.noextensions.len()), (2, 1));
        for bad in [
            "compress_algorithm=gzip",
            "compress_algorithm=lz4:2",
            "compress_log_size=9",
            "compress_mode=auto",
            "compress_extension=abcdefgh",
            "nocompress_extension=*",
            "compress_extension=txt,nocompress_extension=TXT",
        ] {
            assert!(parse(&[bad]).is_err(), "{bad}");
        }
    }

    #[test]
    fn gc_policies() {
        assert_eq!(parse(&[]).unwrap().gc_policy, None);
        assert_eq!(parse(&["atgc"]).unwrap().gc_policy, Some(GcPolicy::Atgc));
        assert_eq!(
            parse(&["gc_policy=weighted:1:512"]).unwrap().gc_policy,
            Some(GcPolicy::Weighted { data: 1, node: 512 })
        );
        assert_eq!(
            parse(&["gc_policy=prefer-data-v2"]).unwrap().gc_policy,
            Some(GcPolicy::PreferDataV2)
        );
        let e = parse(&["gc_policy=fastest"]).unwrap_err();
        assert!(e.contains("gc_policy must be one of greedy"), "{e}");
    }

    #[test]
    fn gc_pacing() {
        let d = parse(&[]).unwrap().gc_pacing;
        assert_eq!(d, PacingSettings::default());
        assert_eq!(d.pacing, GcPacing::Off);
        for (name, pacing) in [
            ("off", GcPacing::Off),
            ("seed", GcPacing::Seed),
            ("adaptive", GcPacing::Adaptive),
        ] {
            let p = parse(&[&format!("gc_pacing={name}")]).unwrap().gc_pacing;
            assert_eq!(p, PacingSettings { pacing, ..d });
        }
        let p = parse(&["gc_latency_target_us=250,gc_pacing=adaptive"])
            .unwrap()
            .gc_pacing;
        assert_eq!(p.pacing, GcPacing::Adaptive);
        assert_eq!(p.latency_target, Duration::from_micros(250));
        assert_eq!(
            parse(&["gc_latency_target_us=1000000"])
                .unwrap()
                .gc_pacing
                .latency_target,
            Duration::from_secs(1)
        );
        for option in ["gc_pacing=on", "gc_pacing=", "gc_pacing=Adaptive"] {
            let e = parse(&[option]).unwrap_err();
            assert_eq!(
                e,
                format!("mount option '{option}': gc_pacing must be off, seed or adaptive")
            );
        }
        for option in [
            "gc_latency_target_us=0",
            "gc_latency_target_us=1000001",
            "gc_latency_target_us=-5",
            "gc_latency_target_us=1ms",
            "gc_latency_target_us=",
        ] {
            let e = parse(&[option]).unwrap_err();
            assert_eq!(
                e,
                format!(
                    "mount option '{option}': gc_latency_target_us must be a number of microseconds from 1 to 1000000"
                )
            );
        }
    }

    #[test]
    fn known_options() {
        let defaults = parse(&[]).unwrap();
        assert_eq!(defaults, ParsedMountOptions::default());
        assert_eq!(defaults.cp_interval, Some(Duration::from_secs(60)));
        assert_eq!(defaults.settings, Settings::default());
        let all = parse(&["ro,allow_other", "fsname=my disk"]).unwrap();
        assert_eq!(
            all,
            ParsedMountOptions {
                read_only: true,
                allow_other: true,
                fsname: Some("my disk".into()),
                ..ParsedMountOptions::default()
            }
        );
        assert!(!parse(&["ro,rw"]).unwrap().read_only);
        assert!(parse(&["rw,,ro,"]).unwrap().read_only);
        assert_eq!(parse(&["fsname=a=b"]).unwrap().fsname.as_deref(), Some("a=b"));
        assert_eq!(defaults.subtype.as_deref(), Some("f2fs"));
        assert_eq!(parse(&["subtype=uf2fs"]).unwrap().subtype.as_deref(), Some("uf2fs"));
        assert_eq!(parse(&["subtype=x,nosubtype"]).unwrap().subtype, None);
        assert!(parse(&["subtype="]).is_err());
        assert!(parse(&["subtype=a,b"]).is_err(), "',' ends an option: 'b' is unknown");
        assert!(parse(&["subtype=a b"]).is_err());
    }

    #[test]
    fn f2fs_options_set_the_core_settings() {
        let p = parse(&[
            "active_logs=2,background_gc=off",
            "mode=lfs,nocheckpoint_merge,cp_interval=5,fsync_mode=strict",
        ])
        .unwrap();
        assert_eq!(
            p.settings,
            Settings {
                active_logs: ActiveLogs::Two,
                background_gc: BackgroundGc::Off,
                mode: AllocMode::Lfs,
                checkpoint_merge: false,
                fsync_mode: FsyncMode::Strict,
            }
        );
        assert!(parse(&["fsync_mode=sync"]).is_err());
        assert_eq!(p.cp_interval, Some(Duration::from_secs(5)));
        assert_eq!(
            parse(&["active_logs=4"]).unwrap().settings.active_logs,
            ActiveLogs::Four
        );
        assert_eq!(parse(&["active_logs=6"]).unwrap().settings.active_logs, ActiveLogs::Six);
        assert_eq!(
            parse(&["background_gc=sync"]).unwrap().settings.background_gc,
            BackgroundGc::Sync
        );
        assert_eq!(
            parse(&["background_gc=on"]).unwrap().settings.background_gc,
            BackgroundGc::On
        );
        assert_eq!(parse(&["mode=adaptive"]).unwrap().settings.mode, AllocMode::Adaptive);
        assert!(
            parse(&["nocheckpoint_merge,checkpoint_merge"])
                .unwrap()
                .settings
                .checkpoint_merge
        );
        assert_eq!(parse(&["cp_interval=0"]).unwrap().cp_interval, None);
        assert_eq!(
            parse(&["cp_interval=4294967295"]).unwrap().cp_interval,
            Some(Duration::from_secs(u32::MAX.into()))
        );
        // Later options win.
        assert_eq!(
            parse(&["active_logs=2", "active_logs=4"]).unwrap().settings.active_logs,
            ActiveLogs::Four
        );
    }

    #[test]
    fn writeback_cache_is_off_unless_asked() {
        assert!(!parse(&[]).unwrap().writeback_cache);
        assert!(parse(&["writeback_cache"]).unwrap().writeback_cache);
        assert!(!parse(&["writeback_cache,no_writeback_cache"]).unwrap().writeback_cache);
    }

    #[test]
    fn generic_options() {
        let p = parse(&["nodev,nosuid,noexec"]).unwrap();
        assert_eq!((p.dev, p.suid, p.exec), (Some(false), Some(false), Some(false)));
        let p = parse(&["nodev,dev,suid,exec"]).unwrap();
        assert_eq!((p.dev, p.suid, p.exec), (Some(true), Some(true), Some(true)));
        let p = parse(&["default_permissions,async,lazytime"]).unwrap();
        assert_eq!(p, ParsedMountOptions::default());
    }

    #[test]
    fn values_the_kernel_refuses_are_refused() {
        for (option, says) in [
            ("active_logs=3", "active_logs must be 2, 4 or 6"),
            ("active_logs=8", "active_logs must be 2, 4 or 6"),
            ("active_logs=", "active_logs must be 2, 4 or 6"),
            ("active_logs=two", "active_logs must be 2, 4 or 6"),
            ("background_gc=yes", "background_gc must be on, off or sync"),
            ("background_gc=ON", "background_gc must be on, off or sync"),
            ("background_gc=", "background_gc must be on, off or sync"),
            ("mode=ssr", "mode must be adaptive or lfs"),
            ("cp_interval=-1", "cp_interval must be a number of seconds"),
            ("cp_interval=1.5", "cp_interval must be a number of seconds"),
            ("cp_interval=4294967296", "cp_interval must be a number of seconds"),
        ] {
            let err = parse(&[option]).unwrap_err();
            assert!(err.starts_with(&format!("mount option '{option}': ")), "{err}");
            assert!(err.contains(says), "{option}: {err}");
        }
        let err = parse(&["mode=fragment:segment"]).unwrap_err();
        assert_eq!(
            err,
            "mount option 'mode=fragment:segment' is not supported: uf2fs has no fragmentation test modes"
        );
    }

    #[test]
    fn atime_options_choose_the_rule() {
        use uf2fs_fuse::AtimeMode;
        let default = parse(&["rw"]).unwrap();
        assert_eq!((default.atime, default.dir_atime), (AtimeMode::Relative, true));
        for (option, mode) in [
            ("strictatime", AtimeMode::Strict),
            ("noatime", AtimeMode::Never),
            ("relatime", AtimeMode::Relative),
            ("atime", AtimeMode::Relative),
            ("noatime,relatime", AtimeMode::Relative),
            ("lazytime,strictatime,nolazytime", AtimeMode::Strict),
        ] {
            assert_eq!(parse(&[option]).unwrap().atime, mode, "{option}");
        }
        assert!(!parse(&["nodiratime"]).unwrap().dir_atime);
        assert!(parse(&["nodiratime,diratime"]).unwrap().dir_atime);
    }

    #[test]
    fn unsupported_options_are_named_with_the_reason() {
        for option in ["sync", "dirsync"] {
            let err = parse(&[option]).unwrap_err();
            assert!(
                err.starts_with(&format!("mount option '{option}' is not supported: ")),
                "{err}"
            );
            assert!(err.contains("cp_interval"), "{err}");
        }
    }

    #[test]
    fn unknown_options_are_named() {
        assert_eq!(parse(&["ro,noexe"]).unwrap_err(), "unknown mount option 'noexe'");
        assert_eq!(parse(&["RO"]).unwrap_err(), "unknown mount option 'RO'");
        assert_eq!(parse(&["fsname"]).unwrap_err(), "unknown mount option 'fsname'");
        assert_eq!(
            parse(&["background_gc"]).unwrap_err(),
            "unknown mount option 'background_gc'"
        );
        assert_eq!(parse(&["discard"]).unwrap_err(), "unknown mount option 'discard'");
        assert_eq!(
            parse(&["checkpoint=disable"]).unwrap_err(),
            "unknown mount option 'checkpoint=disable'"
        );
        assert!(parse(&["fsname="]).is_err());
    }
}
