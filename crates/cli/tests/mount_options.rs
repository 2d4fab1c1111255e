//! `uf2fs mount -o` end to end: F2FS options reach the core, periodic checkpoints make
//! changes durable without an unmount, `sync MOUNTPOINT` makes them durable at once, and
//! bad options are refused with one line naming them.
//!
//! The durability tests kill the serving process with SIGKILL (no unmount checkpoint),
//! clear the dead mount with `fusermount3 -uz`, then read the image back with
//! `uf2fs cat` and run `fsck.f2fs -f` on a copy.
//!
//! Needs /dev/fuse and fusermount3. Without /dev/fuse the FUSE tests print why and pass,
//! unless UF2FS_REQUIRE_FUSE is set (CI sets it), in which case they fail.

mod common;

use common::fsck;
use common::mount::{fuse_available, is_mounted, Volume};
use common::uf2fs;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `uf2fs mount -f` that is SIGKILLed (never unmounted cleanly) when dropped.
struct Served {
    child: Child,
    mnt: PathBuf,
    log: PathBuf,
}

impl Served {
    fn start(img: &Path, mnt: &Path, log: &Path, options: &str) -> Served {
        let log_file = fs::File::create(log).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_uf2fs"))
            .args(["mount", "-o", options, "-f"])
            .arg(img)
            .arg(mnt)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().unwrap())
            .stderr(log_file)
            .spawn()
            .expect("start uf2fs mount");
        let mut served = Served {
            child,
            mnt: mnt.to_path_buf(),
            log: log.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !is_mounted(mnt) {
            if let Ok(Some(status)) = served.child.try_wait() {
                panic!(
                    "uf2fs mount exited with {status} before mounting: {}",
                    served.log_text()
                );
            }
            assert!(Instant::now() < deadline, "no mount after 20 s: {}", served.log_text());
            std::thread::sleep(Duration::from_millis(20));
        }
        served
    }

    fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGKILL, reap, clear the dead mount; returns the log.
    fn kill(mut self) -> String {
        self.kill_now();
        self.log_text()
    }

    fn kill_now(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if is_mounted(&self.mnt) {
            let _ = Command::new("fusermount3").arg("-uz").arg(&self.mnt).status();
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.kill_now();
    }
}

/// A scratch directory with a 64 MiB image made by `uf2fs mkfs -q` and a mount point.
fn volume(prefix: &str) -> Volume {
    let volume = Volume::empty(prefix);
    volume.mkfs("64M", &["-q"]);
    volume
}

/// The file's contents as `uf2fs cat` reads them from the image, or the error line.
fn cat(img: &Path, path: &str) -> Result<Vec<u8>, String> {
    let out = uf2fs().run(["cat".as_ref(), img.as_os_str(), path.as_ref()]);
    if out.success() {
        Ok(out.stdout)
    } else {
        Err(out.err())
    }
}

fn payload(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(13) ^ seed).collect()
}

/// Writes through the mount without fsync; returns what was written by path.
fn write_some(mnt: &Path) -> Vec<(&'static str, Vec<u8>)> {
    let files = vec![
        ("/small.txt", b"written before the kill\n".to_vec()),
        ("/dir/big.bin", payload(3 << 20, 7)),
        ("/dir/clip.mp4", payload(100_000, 9)),
    ];
    fs::create_dir(mnt.join("dir")).unwrap();
    for (path, data) in &files {
        let mut f = fs::File::create(mnt.join(&path[1..])).unwrap();
        f.write_all(data).unwrap();
        // Closed without fsync: only a checkpoint written by the mount itself keeps it.
    }
    files
}

#[test]
fn periodic_checkpoint_makes_writes_durable_without_unmount() {
    if !fuse_available(&[("fsck.f2fs", "f2fs-tools")]) {
        return;
    }
    let Volume { tmp, img, mnt } = volume("mount-opts-periodic");
    let served = Served::start(
        &img,
        &mnt,
        &tmp.path().join("mount.log"),
        "active_logs=2,cp_interval=1,background_gc=off",
    );
    let files = write_some(&mnt);
    // One interval and the thread's tick, with room for a slow machine.
    std::thread::sleep(Duration::from_millis(2500));
    let log = served.kill();
    assert!(!log.contains("failed"), "mount log: {log}");
    for (path, data) in &files {
        let back = cat(&img, path).unwrap_or_else(|e| panic!("{path} after SIGKILL: {e} (mount log: {log})"));
        assert!(
            back == *data,
            "{path}: {} bytes back, {} written",
            back.len(),
            data.len()
        );
    }
    let text = fsck::clean(&img, tmp.path());
    let state = fsck::checkpoint_state(&text).unwrap_or_default();
    assert!(!state.contains("unmount"), "no unmount checkpoint was written: {state}");
}

#[test]
fn cp_interval_0_writes_nothing_before_unmount() {
    if !fuse_available(&[("fsck.f2fs", "f2fs-tools")]) {
        return;
    }
    let Volume { tmp, img, mnt } = volume("mount-opts-nocp");
    let served = Served::start(&img, &mnt, &tmp.path().join("mount.log"), "cp_interval=0");
    write_some(&mnt);
    std::thread::sleep(Duration::from_millis(1500));
    served.kill();
    let err = cat(&img, "/small.txt").expect_err("a file written without any checkpoint");
    assert!(err.contains("small.txt"), "{err}");
    fsck::clean(&img, tmp.path());
}

#[test]
fn sync_of_the_mountpoint_makes_everything_durable() {
    if !fuse_available(&[("fsck.f2fs", "f2fs-tools"), ("sync", "coreutils")]) {
        return;
    }
    let Volume { tmp, img, mnt } = volume("mount-opts-sync");
    let served = Served::start(&img, &mnt, &tmp.path().join("mount.log"), "cp_interval=0,active_logs=4");
    let files = write_some(&mnt);
    // `sync DIR` fsyncs the directory: FUSE_FSYNCDIR, a checkpoint of everything.
    let status = Command::new("sync").arg(&mnt).status().unwrap();
    assert!(status.success());
    let log = served.kill();
    for (path, data) in &files {
        let back = cat(&img, path).unwrap_or_else(|e| panic!("{path} after sync and SIGKILL: {e} ({log})"));
        assert!(
            back == *data,
            "{path}: {} bytes back, {} written",
            back.len(),
            data.len()
        );
    }
    fsck::clean(&img, tmp.path());
}

#[test]
fn bad_options_are_refused_with_their_name() {
    let Volume { tmp: _tmp, img, mnt } = volume("mount-opts-bad");
    for (option, says) in [
        (
            "active_logs=3",
            "mount option 'active_logs=3': active_logs must be 2, 4 or 6",
        ),
        (
            "background_gc=maybe",
            "mount option 'background_gc=maybe': background_gc must be on, off or sync",
        ),
        (
            "mode=fragment:block",
            "mount option 'mode=fragment:block' is not supported",
        ),
        (
            "cp_interval=soon",
            "mount option 'cp_interval=soon': cp_interval must be a number of seconds",
        ),
        ("sync", "mount option 'sync' is not supported"),
        ("discard", "unknown mount option 'discard'"),
    ] {
        let out = uf2fs().run([
            "mount".as_ref(),
            "-o".as_ref(),
            format!("rw,{option}").as_ref(),
            img.as_os_str(),
            mnt.as_os_str(),
        ]);
        assert!(!out.success(), "{option} accepted: {}", out.describe());
        let err = out.err();
        assert_eq!(err.lines().count(), 1, "{option}: {err}");
        assert!(err.starts_with("uf2fs: ") && err.contains(says), "{option}: {err}");
        assert!(!is_mounted(&mnt));
    }
}

#[test]
fn mount_help_lists_the_options() {
    let out = uf2fs().run(["mount", "--help"]);
    assert!(out.success(), "{}", out.describe());
    let help = out.out();
    for option in [
        "active_logs=2|4|6",
        "background_gc=on|off|sync",
        "mode=adaptive|lfs",
        "cp_interval=SECS",
        "checkpoint_merge",
        "nodev",
        "noatime",
        "allow_other",
    ] {
        assert!(help.contains(option), "--help lacks {option}:\n{help}");
    }
}
