//! What the adapter needs to know about the process behind a request beyond the ids
//! FUSE sends: whether it is in a group, as the kernel's `in_group_or_capable` decides
//! for the set-group-ID rules, and so which set-ID bits a change of a file's data
//! drops. FUSE passes only the fsuid, fsgid and pid, so the supplementary groups are
//! read from `/proc/PID/status`.

use fuser::Request;

/// Whether the caller of `req` is in group `gid` (its fsgid, or a supplementary group)
/// or privileged (fsuid 0, which holds `CAP_FSETID` outside user namespaces). A process
/// gone before its groups are read counts as outside the group.
pub(crate) fn in_group_or_capable(req: &Request, gid: u32) -> bool {
    req.uid() == 0 || req.gid() == gid || supplementary_groups(req.pid()).contains(&gid)
}

/// Set-user-ID.
const S_ISUID: u32 = 0o4000;
/// Set-group-ID.
const S_ISGID: u32 = 0o2000;
/// Group execute.
const S_IXGRP: u32 = 0o0010;

/// The permission bits a regular file of permissions `mode` and group `gid` keeps when
/// the caller of `req` writes, truncates or allocates in it, as Linux's
/// `setattr_should_drop_suidgid` decides: a caller holding `CAP_FSETID` (`privileged`)
/// keeps both set-ID bits; anyone else drops set-user-ID, and set-group-ID when the
/// file is group-executable or the caller is outside its group. `None` when nothing
/// changes.
pub(crate) fn mode_after_modify(req: &Request, mode: u32, gid: u32, privileged: bool) -> Option<u32> {
    drop_suidgid(mode, privileged, || in_group(req, gid))
}

/// The permission bits a file of permissions `mode` and group `gid` keeps when the
/// caller of `req` changes its owner or group, as Linux's `chown_common` decides for
/// anything but a directory: set-user-ID is dropped whoever the caller is, set-group-ID
/// when the file is group-executable or the caller is neither in the file's (old)
/// group nor holds `CAP_FSETID`. `None` when nothing changes.
pub(crate) fn mode_after_chown(req: &Request, mode: u32, gid: u32) -> Option<u32> {
    drop_on_chown(mode, || in_group(req, gid) || capable(req, CAP_FSETID))
}

/// [`mode_after_modify`] for a caller that is `privileged` or not, and in the file's
/// group as `in_group` says (asked only when it matters).
fn drop_suidgid(mode: u32, privileged: bool, in_group: impl FnOnce() -> bool) -> Option<u32> {
    if privileged || mode & (S_ISUID | S_ISGID) == 0 {
        return None;
    }
    let mut kept = mode & !S_ISUID;
    if mode & S_ISGID != 0 && (mode & S_IXGRP != 0 || !in_group()) {
        kept &= !S_ISGID;
    }
    (kept != mode).then_some(kept & 0o7777)
}

/// [`mode_after_chown`] for a caller in the file's group or privileged as
/// `in_group_or_capable` says (asked only when it matters).
fn drop_on_chown(mode: u32, in_group_or_capable: impl FnOnce() -> bool) -> Option<u32> {
    let mut kept = mode & !S_ISUID;
    if mode & S_ISGID != 0 && (mode & S_IXGRP != 0 || !in_group_or_capable()) {
        kept &= !S_ISGID;
    }
    (kept != mode).then_some(kept & 0o7777)
}

/// Whether the caller of `req` is in group `gid`: its fsgid or a supplementary group.
fn in_group(req: &Request, gid: u32) -> bool {
    req.gid() == gid || supplementary_groups(req.pid()).contains(&gid)
}

/// `CAP_FSETID`: keeps the set-ID bits of a file it changes.
pub(crate) const CAP_FSETID: u32 = 4;

/// `CAP_LINUX_IMMUTABLE`: may change the immutable and append-only flags.
pub(crate) const CAP_LINUX_IMMUTABLE: u32 = 9;
/// `CAP_SYS_ADMIN`: may change the volume label, among much else.
pub(crate) const CAP_SYS_ADMIN: u32 = 21;

/// Whether the caller of `req` holds capability `cap` in its effective set (the
/// `CapEff:` line of `/proc/PID/status`). A process gone before it is read counts as
/// holding it only when its fsuid is 0.
pub(crate) fn capable(req: &Request, cap: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{}/status", req.pid())) {
        Ok(status) => parse_cap_eff(&status).is_some_and(|caps| caps & (1u64 << cap) != 0),
        Err(_) => req.uid() == 0,
    }
}

/// The effective capability set of a `/proc/PID/status` text.
fn parse_cap_eff(status: &str) -> Option<u64> {
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

/// The supplementary groups of process `pid` (empty when they cannot be read).
fn supplementary_groups(pid: u32) -> Vec<u32> {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return Vec::new();
    };
    parse_groups(&status)
}

/// The ids of the `Groups:` line of a `/proc/PID/status` text.
fn parse_groups(status: &str) -> Vec<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Groups:"))
        .map(|g| g.split_whitespace().filter_map(|id| id.parse().ok()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_id_bits_dropped_as_linux_drops_them() {
        let member = || true;
        let outsider = || false;
        // generic/683's cases: 6666 and 6766 lose both bits for a user outside the group.
        assert_eq!(drop_suidgid(0o6666, false, outsider), Some(0o666));
        assert_eq!(drop_suidgid(0o6766, false, outsider), Some(0o766));
        // In the group, set-group-ID without group execute is kept (a locking mark).
        assert_eq!(drop_suidgid(0o6666, false, member), Some(0o2666));
        assert_eq!(drop_suidgid(0o6676, false, member), Some(0o676));
        assert_eq!(drop_suidgid(0o2666, false, member), None);
        // Privileged callers keep both; files without set-ID bits are left alone.
        assert_eq!(drop_suidgid(0o6777, true, outsider), None);
        assert_eq!(drop_suidgid(0o777, false, || panic!("not asked")), None);
    }

    #[test]
    fn set_id_bits_dropped_on_chown_as_linux_drops_them() {
        let member = || true;
        let outsider = || false;
        // Set-user-ID goes whoever changes the owner, root included.
        assert_eq!(drop_on_chown(0o4755, || panic!("not asked")), Some(0o755));
        // Set-group-ID goes with group execute ...
        assert_eq!(drop_on_chown(0o6755, member), Some(0o755));
        assert_eq!(drop_on_chown(0o2750, member), Some(0o750));
        // ... and without it stays (a locking mark) unless the caller is outside the group.
        assert_eq!(drop_on_chown(0o2740, member), None);
        assert_eq!(drop_on_chown(0o2740, outsider), Some(0o740));
        assert_eq!(drop_on_chown(0o644, || panic!("not asked")), None);
    }

    #[test]
    fn capabilities_are_parsed() {
        let status = "Name:\tsh\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        assert_eq!(parse_cap_eff(status), Some(0x1ff_ffff_ffff));
        assert_eq!(
            parse_cap_eff("CapEff:\t0000000000000200\n"),
            Some(1 << CAP_LINUX_IMMUTABLE)
        );
        assert_eq!(parse_cap_eff("Name:\tsh\n"), None);
    }

    #[test]
    fn groups_line_is_parsed() {
        let status = "Name:\tsh\nUid:\t100\t100\t100\t100\nGroups:\t4 24 1000 \nNSpid:\t7\n";
        assert_eq!(parse_groups(status), vec![4, 24, 1000]);
        assert_eq!(parse_groups("Groups:\t\n"), Vec::<u32>::new());
        assert_eq!(parse_groups("Name:\tsh\n"), Vec::<u32>::new());
        // This process is in its own groups.
        let own = supplementary_groups(std::process::id());
        let text = std::fs::read_to_string("/proc/self/status").unwrap();
        assert_eq!(own, parse_groups(&text));
    }
}
