//! What the adapter needs to know about the process behind a request beyond the ids
//! FUSE sends: whether it is in a group, as the kernel's `in_group_or_capable` decides
//! for the set-group-ID rules. FUSE passes only the fsuid, fsgid and pid, so the
//! supplementary groups are read from `/proc/PID/status`.

use fuser::Request;

/// Whether the caller of `req` is in group `gid` (its fsgid, or a supplementary group)
/// or privileged (fsuid 0, which holds `CAP_FSETID` outside user namespaces). A process
/// gone before its groups are read counts as outside the group.
pub(crate) fn in_group_or_capable(req: &Request, gid: u32) -> bool {
    req.uid() == 0 || req.gid() == gid || supplementary_groups(req.pid()).contains(&gid)
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
