//! What the adapter asks of the kernel at FUSE_INIT: large reads, cached metadata,
//! POSIX ACLs, file handles and, when the mount asks, the writeback cache.
//! - FUSE_EXPORT_SUPPORT: the kernel looks up "." and ".." of a node id it has
//!   forgotten, to serve `open_by_handle_at` and NFS export.
//! - FUSE_POSIX_ACL: the kernel checks permissions against the ACLs (read through
//!   getxattr and cached) and leaves the rest to the file system: inheriting default
//!   ACLs, the mode an ACL implies and the ACL a chmod implies (the core does these as
//!   F2FS does). FUSE_DONT_MASK sends the umask beside the unmasked mode, since a
//!   default ACL replaces the umask.
//! - FUSE_HANDLE_KILLPRIV_V2: the file system drops set-user-ID, set-group-ID and
//!   `security.capability` on write, truncate, fallocate and chown itself (WRITE says
//!   whether the writer lacks `CAP_FSETID`), so the kernel marks the super block
//!   `SB_NOSEC` and stops asking for `security.capability` (a GETXATTR round trip)
//!   before every write(2). Without it FUSE clears `SB_NOSEC` and asks every time.
//! - FUSE_WRITEBACK_CACHE (`-o writeback_cache` only): the kernel keeps written pages
//!   and sends them later in large writes, keeping sizes and times itself.

use fuser::{InitFlags, KernelConfig};

/// Pending background requests (readahead) the kernel may queue; the default 16 starves
/// several worker threads during a sequential read.
const MAX_BACKGROUND: u16 = 64;

/// Capabilities used when the kernel offers them.
fn wanted_capabilities() -> InitFlags {
    InitFlags::FUSE_ASYNC_READ
        | InitFlags::FUSE_MAX_PAGES
        | InitFlags::FUSE_DO_READDIRPLUS
        | InitFlags::FUSE_READDIRPLUS_AUTO
        | InitFlags::FUSE_CACHE_SYMLINKS
        | InitFlags::FUSE_PARALLEL_DIROPS
        | InitFlags::FUSE_POSIX_ACL
        | InitFlags::FUSE_DONT_MASK
        | InitFlags::FUSE_EXPORT_SUPPORT
        | InitFlags::FUSE_HANDLE_KILLPRIV_V2
}

/// Configure the connection for fast sequential reads, and with `writeback_cache` for
/// the kernel's writeback cache (FUSE_WRITEBACK_CACHE, when offered).
pub(crate) fn configure(config: &mut KernelConfig, writeback_cache: bool) {
    // Readahead as large as the kernel offers: it bounds how much one sequential read
    // prefetches, and so how large the READ requests of a `cat` get.
    if let Err(max) = config.set_max_readahead(u32::MAX) {
        let _ = config.set_max_readahead(max);
    }
    // fuser derives `max_pages` (the largest READ the kernel sends, in pages) from
    // max(max_write, max_readahead): ask for the most it allows; the kernel clamps it to
    // its own limit (/proc/sys/fs/fuse/max_pages_limit, 1 MiB by default).
    if let Err(max) = config.set_max_write(u32::MAX) {
        let _ = config.set_max_write(max);
    }
    let _ = config.set_max_background(MAX_BACKGROUND);
    let mut wanted = wanted_capabilities();
    if writeback_cache {
        wanted |= InitFlags::FUSE_WRITEBACK_CACHE;
    }
    let offered = config.capabilities() & wanted;
    // Cannot fail: only capabilities the kernel offered are added.
    let _ = config.add_capabilities(offered);
}
