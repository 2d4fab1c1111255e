//! What mkfs takes from the host: the kernel version string, the caller's user and
//! group, the time, and randomness for the UUID and checkpoint version.

use std::fs::File;
use std::io::Read;
use uf2fs_format::superblock::VERSION_LEN;

/// The first line of /proc/version, which mkfs.f2fs stores as the format's version.
pub fn kernel_version() -> String {
    let text = std::fs::read_to_string("/proc/version").unwrap_or_default();
    let line = text.lines().next().unwrap_or("").trim_end();
    let mut end = line.len().min(VERSION_LEN - 4);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    if end == 0 {
        return format!("uf2fs {}", env!("CARGO_PKG_VERSION"));
    }
    line[..end].to_string()
}

/// The real user and group of this process (from /proc; root when unknown).
pub fn process_owner() -> (u32, u32) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |key: &str| -> u32 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("Uid:"), field("Gid:"))
}

pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    let ok = File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok();
    if !ok {
        // No /dev/urandom: mix the clock and the process id (uniqueness, not secrecy).
        let seed =
            now_secs() ^ ((std::process::id() as u64) << 32) ^ std::time::Instant::now().elapsed().as_nanos() as u64;
        let mut x = seed | 1;
        for byte in &mut b {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *byte = x as u8;
        }
    }
    b
}

pub fn random_u32() -> u32 {
    u32::from_le_bytes(random_bytes())
}

/// A random (version 4) UUID.
pub fn random_uuid() -> [u8; 16] {
    let mut u: [u8; 16] = random_bytes();
    u[6] = (u[6] & 0x0f) | 0x40;
    u[8] = (u[8] & 0x3f) | 0x80;
    u
}
