//! Clean unmount on SIGINT, SIGTERM and SIGHUP for a foreground mount.
//!
//! The signals are blocked in every thread and taken synchronously by one thread with
//! `sigwait`, which then runs `fusermount3 -u`: no async-signal-safety concerns and no
//! unsafe code. When the kernel drops the mount, the FUSE session ends and `mount`
//! returns normally.

use crate::errors::print_warning;
use crate::names::escape_os;
use anyhow::Context;
use nix::sys::signal::{SigSet, Signal};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use uf2fs_fuse::mountinfo::mount_ids_on;

/// The termination signals, blocked in the calling thread (and so in every thread it
/// starts afterwards).
pub struct BlockedSignals(SigSet);

/// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread.
pub fn block_termination_signals() -> anyhow::Result<BlockedSignals> {
    let mut set = SigSet::empty();
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        set.add(signal);
    }
    set.thread_block().context("blocking termination signals")?;
    Ok(BlockedSignals(set))
}

/// Starts the thread that unmounts `mountpoint` when a termination signal arrives.
pub fn unmount_on_signal(blocked: BlockedSignals, mountpoint: PathBuf) -> anyhow::Result<()> {
    let BlockedSignals(set) = blocked;
    std::thread::Builder::new()
        .name("uf2fs-signals".into())
        .spawn(move || loop {
            if let Ok(signal) = set.wait() {
                on_termination_signal(signal, &mountpoint);
            }
        })
        .context("starting the signal thread")?;
    Ok(())
}

/// Unmounts; if nothing is mounted yet, exits at once; if the mount is busy, says how
/// to retry and keeps serving.
fn on_termination_signal(signal: Signal, mountpoint: &Path) {
    if unmount(mountpoint) {
        return;
    }
    let mounted = mount_ids_on(mountpoint).map(|ids| !ids.is_empty()).unwrap_or(true);
    if !mounted {
        std::process::exit(128 + signal as i32);
    }
    let shown = escape_os(mountpoint);
    print_warning(&format!(
        "could not unmount {shown} (busy?); still serving; retry or run 'fusermount3 -u {shown}'"
    ));
}

/// Asks the system to unmount a FUSE mount; true on success.
fn unmount(mountpoint: &Path) -> bool {
    let attempts: [(&str, &[&str]); 3] = [
        ("fusermount3", &["-u", "-q"]),
        ("fusermount", &["-u", "-q"]),
        ("umount", &[]),
    ];
    attempts.iter().any(|(program, args)| {
        Command::new(program)
            .args(*args)
            .arg(mountpoint)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    })
}
