//! `mount -t fuse.uf2fs IMAGE MOUNTPOINT -o OPTIONS` and /etc/fstab: mount(8) runs a
//! helper named `mount.fuse.uf2fs` (found in /sbin or /usr/sbin) as
//! `mount.fuse.uf2fs IMAGE MOUNTPOINT [-sfnv] [-o OPTIONS]`. Installed as a link to the
//! `uf2fs` binary under that name (or `mount.uf2fs`), uf2fs recognises its name and
//! mounts as `uf2fs mount -o OPTIONS IMAGE MOUNTPOINT` would, in the background.
//!
//! The options mount(8) and fstab add for themselves are dropped here: `defaults`,
//! `auto`, `noauto`, `user`, `users`, `nouser`, `owner`, `group`, `nofail`, `_netdev`,
//! `x-*`, `comment=*`. `device=PATH` (repeatable) names the further devices of a
//! multi-device F2FS, in order. `-f` (fake) checks the options and mounts nothing;
//! `-n`, `-s` and `-v` are accepted and change nothing.
//!
//! mount(8) passes only the flags that differ from its defaults (`nodev`, never
//! `dev`), so a mount by root gets `dev,suid,exec` first, as root's mount of a block
//! device has them (a FUSE mount is otherwise `nodev,nosuid`); a `nodev`, `nosuid` or
//! `noexec` given wins. mount(8) adds `nosuid,nodev` itself for users' fstab mounts.
//!
//! `remount` changes the mount that is there (mount(2) with `MS_REMOUNT`): `ro` makes
//! it read-only, after a sync of the mount point (the running uf2fs writes a
//! checkpoint, as Linux F2FS does on a remount read-only), `rw` writable again, and
//! `nosuid`, `nodev`, `noexec` as given; the last of `noatime`, `relatime` (or
//! `atime`) and `strictatime` given, and `nodiratime`, set the mount's atime flags
//! (mount(8) passes the mount's current options first, then the new ones). The
//! running uf2fs process sees the new flags in the mount table and updates access
//! times by them from then on. Its other options stay.

use crate::errors::UsageError;
use crate::mount::{self, MountRequest};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The names the binary answers to as a mount helper.
pub const HELPER_NAMES: &[&str] = &["mount.fuse.uf2fs", "mount.uf2fs"];

/// Whether the program was started under a helper name.
pub fn invoked_as_helper(argv0: &Path) -> bool {
    argv0
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| HELPER_NAMES.contains(&n))
}

/// What a helper invocation asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperRequest {
    /// The mount request, as `uf2fs mount` would make it.
    pub request: MountRequest,
    /// `-f`: check everything, mount nothing.
    pub fake: bool,
}

/// Whether `option` is mount(8)'s or fstab's own, not the file system's.
fn is_mount_command_option(option: &str) -> bool {
    matches!(
        option,
        "defaults" | "auto" | "noauto" | "user" | "users" | "nouser" | "owner" | "group" | "nofail" | "_netdev"
    ) || option.starts_with("x-")
        || option.starts_with("comment=")
}

/// Parses `IMAGE MOUNTPOINT [-sfnv] [-o OPTIONS]...` (the arguments after the program
/// name).
pub fn parse(args: &[OsString]) -> Result<HelperRequest, String> {
    let mut positional: Vec<PathBuf> = Vec::new();
    let mut options = Vec::new();
    let mut devices = Vec::new();
    let mut fake = false;
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].to_string_lossy().into_owned();
        if arg == "-o" {
            let value = args
                .get(i + 1)
                .ok_or("-o needs a list of options")?
                .to_string_lossy()
                .into_owned();
            let mut kept = Vec::new();
            for option in value.split(',') {
                if let Some(path) = option.strip_prefix("device=") {
                    devices.push(PathBuf::from(path));
                } else if !is_mount_command_option(option) {
                    kept.push(option);
                }
            }
            options.push(kept.join(","));
            i += 2;
            continue;
        }
        if let Some(flags) = arg.strip_prefix('-').filter(|f| !f.is_empty()) {
            for flag in flags.chars() {
                match flag {
                    'f' => fake = true,
                    's' | 'n' | 'v' => {}
                    other => return Err(format!("unknown mount helper flag -{other}")),
                }
            }
            i += 1;
            continue;
        }
        positional.push(PathBuf::from(&args[i]));
        i += 1;
    }
    let [image, mountpoint] = <[PathBuf; 2]>::try_from(positional)
        .map_err(|_| "usage: mount.fuse.uf2fs IMAGE MOUNTPOINT [-sfnv] [-o OPTIONS]".to_string())?;
    Ok(HelperRequest {
        request: MountRequest {
            options,
            foreground: false,
            image,
            mountpoint,
            devices,
        },
        fake,
    })
}

/// Runs a helper invocation (`args` after the program name).
pub fn run(args: &[OsString]) -> anyhow::Result<()> {
    let mut helper = parse(args).map_err(UsageError)?;
    let remount = take_remount(&mut helper.request.options);
    let parsed = crate::mount_options::parse_mount_options(&helper.request.options).map_err(UsageError)?;
    if helper.fake {
        return Ok(());
    }
    if remount {
        return remount_mount(&helper.request.mountpoint, &parsed, &helper.request.options);
    }
    if nix::unistd::geteuid().is_root() {
        helper.request.options.insert(0, ROOT_DEFAULTS.to_string());
    }
    mount::run(&helper.request)
}

/// The flags a mount by root has unless mount(8) passes their opposites.
const ROOT_DEFAULTS: &str = "dev,suid,exec";

/// Takes `remount` out of the option groups; whether it was there.
fn take_remount(groups: &mut [String]) -> bool {
    let mut found = false;
    for group in groups.iter_mut() {
        let kept: Vec<&str> = group
            .split(',')
            .filter(|o| {
                let is = *o == "remount";
                found |= is;
                !is
            })
            .collect();
        *group = kept.join(",");
    }
    found
}

/// The atime flags of a remount with the option groups `groups`: the last of
/// `noatime`, `relatime`/`atime` and `strictatime`, and `nodiratime` unless a later
/// `diratime` undoes it. None when no atime option is given: the kernel then keeps the
/// mount's.
fn atime_flags(groups: &[String]) -> nix::mount::MsFlags {
    use nix::mount::MsFlags;
    let mut mode = MsFlags::empty();
    let mut dirs = MsFlags::empty();
    for option in groups.iter().flat_map(|g| g.split(',')) {
        match option {
            "noatime" => mode = MsFlags::MS_NOATIME,
            "relatime" | "atime" => mode = MsFlags::MS_RELATIME,
            "strictatime" => mode = MsFlags::MS_STRICTATIME,
            "nodiratime" => dirs = MsFlags::MS_NODIRATIME,
            "diratime" => dirs = MsFlags::empty(),
            _ => {}
        }
    }
    mode | dirs
}

/// Remounts `mountpoint` with `options`' flags (see the module notes); `groups` are
/// the options as given.
fn remount_mount(
    mountpoint: &Path,
    options: &crate::mount_options::ParsedMountOptions,
    groups: &[String],
) -> anyhow::Result<()> {
    use anyhow::Context;
    use nix::mount::{mount, MsFlags};
    let shown = crate::names::escape_os(mountpoint);
    if options.read_only {
        // fsync of the mount point: the uf2fs process writes a checkpoint.
        std::fs::File::open(mountpoint)
            .and_then(|d| d.sync_all())
            .with_context(|| format!("syncing {shown} before remounting it read-only"))?;
    }
    let mut flags = MsFlags::MS_REMOUNT | atime_flags(groups);
    for (set, flag) in [
        (options.read_only, MsFlags::MS_RDONLY),
        (options.suid == Some(false), MsFlags::MS_NOSUID),
        (options.dev == Some(false), MsFlags::MS_NODEV),
        (options.exec == Some(false), MsFlags::MS_NOEXEC),
    ] {
        if set {
            flags |= flag;
        }
    }
    mount(None::<&str>, mountpoint, None::<&str>, flags, None::<&str>).with_context(|| format!("remounting {shown}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn fstab_options_are_dropped_and_devices_kept() {
        let h = parse(&args(&[
            "/img",
            "/mnt",
            "-o",
            "rw,noauto,nofail,x-systemd.automount,allow_other,device=/img2,cp_interval=5",
            "-n",
        ]))
        .unwrap();
        assert_eq!(h.request.options, vec!["rw,allow_other,cp_interval=5".to_string()]);
        assert_eq!(h.request.devices, vec![PathBuf::from("/img2")]);
        assert_eq!(
            (h.request.image.as_path(), h.request.mountpoint.as_path(), h.fake),
            (Path::new("/img"), Path::new("/mnt"), false)
        );
        assert!(!h.request.foreground);
        assert!(parse(&args(&["/img", "/mnt", "-sfv"])).unwrap().fake);
    }

    #[test]
    fn a_remount_sets_the_last_atime_option_given() {
        use nix::mount::MsFlags;
        let flags = |list: &[&str]| atime_flags(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(flags(&["rw,relatime,strictatime,"]), MsFlags::MS_STRICTATIME);
        assert_eq!(flags(&["rw,noatime", "relatime"]), MsFlags::MS_RELATIME);
        assert_eq!(
            flags(&["rw,noatime,nodiratime"]),
            MsFlags::MS_NOATIME | MsFlags::MS_NODIRATIME
        );
        assert_eq!(flags(&["nodiratime,diratime,atime"]), MsFlags::MS_RELATIME);
        assert_eq!(flags(&["rw,nosuid"]), MsFlags::empty());
    }

    #[test]
    fn remount_is_taken_out_of_the_options() {
        let mut groups = vec!["remount,ro".to_string(), "nosuid".to_string()];
        assert!(take_remount(&mut groups));
        assert_eq!(groups, vec!["ro".to_string(), "nosuid".to_string()]);
        let mut plain = vec!["ro".to_string()];
        assert!(!take_remount(&mut plain));
    }

    #[test]
    fn bad_invocations_are_refused() {
        assert!(parse(&args(&["/img"])).is_err());
        assert!(parse(&args(&["/img", "/mnt", "/extra"])).is_err());
        assert!(parse(&args(&["/img", "/mnt", "-o"])).is_err());
        assert!(parse(&args(&["/img", "/mnt", "-x"])).is_err());
        assert!(invoked_as_helper(Path::new("/usr/sbin/mount.fuse.uf2fs")));
        assert!(invoked_as_helper(Path::new("mount.uf2fs")));
        assert!(!invoked_as_helper(Path::new("/usr/bin/uf2fs")));
    }
}
