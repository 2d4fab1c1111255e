//! The FUSE side of the end-to-end tests: whether a mount can be tested here, a fresh
//! volume to mount, and a running `uf2fs mount -f` that is always unmounted, even when
//! an assertion fails.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use uf2fs_testkit::run::wait_until;

/// Whether FUSE can be used here; `false` (after saying why) only when it may be skipped.
/// `tools` are further programs the test needs, with the Debian package holding each.
pub fn fuse_available(tools: &[(&str, &str)]) -> bool {
    let required = std::env::var_os("UF2FS_REQUIRE_FUSE").is_some();
    let mut missing = None;
    if !Path::new("/dev/fuse").exists() {
        missing = Some("/dev/fuse does not exist".to_string());
    }
    for (tool, package) in [("fusermount3", "fuse3")].iter().chain(tools) {
        if missing.is_none() && which(tool).is_none() {
            missing = Some(format!("{tool} is not installed (Debian package {package})"));
        }
    }
    match missing {
        None => true,
        Some(why) if required => panic!("UF2FS_REQUIRE_FUSE is set but {why}"),
        Some(why) => {
            eprintln!("skipping FUSE test: {why} (set UF2FS_REQUIRE_FUSE=1 to make this a failure)");
            false
        }
    }
}

fn which(tool: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// A scratch directory holding an image path and an empty mount point.
pub struct Volume {
    /// The scratch directory (removed when dropped); logs and fsck copies go here too.
    pub tmp: tempfile::TempDir,
    /// The image, `disk.img` in `tmp`.
    pub img: PathBuf,
    /// The mount point, `mnt` in `tmp`, created empty.
    pub mnt: PathBuf,
}

impl Volume {
    /// A scratch directory named after `prefix` with its mount point; the image is not
    /// made yet (see [`Volume::mkfs`]).
    pub fn empty(prefix: &str) -> Volume {
        let tmp = super::scratch(prefix);
        let img = tmp.path().join("disk.img");
        let mnt = tmp.path().join("mnt");
        fs::create_dir(&mnt).unwrap();
        Volume { tmp, img, mnt }
    }

    /// Makes the image with `uf2fs mkfs --size SIZE ARGS... IMG`; panics unless it
    /// succeeds.
    pub fn mkfs(&self, size: impl std::fmt::Display, args: &[&str]) {
        let size = size.to_string();
        let mut argv: Vec<&OsStr> = vec!["mkfs".as_ref(), "--size".as_ref(), size.as_ref()];
        argv.extend(args.iter().map(OsStr::new));
        argv.push(self.img.as_os_str());
        super::uf2fs().run(argv).assert_ok();
    }
}

/// A [`Volume`] whose image `uf2fs mkfs --size SIZE` made (SIZE as mkfs takes it:
/// `64M`, or bytes).
pub fn fresh_volume(prefix: &str, size: impl std::fmt::Display) -> Volume {
    let volume = Volume::empty(prefix);
    volume.mkfs(size, &[]);
    volume
}

/// Whether `mnt` is a mount point now (per /proc/self/mountinfo).
pub fn is_mounted(mnt: &Path) -> bool {
    let info = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let want = mnt.to_string_lossy();
    info.lines().any(|l| l.split(' ').nth(4) == Some(want.as_ref()))
}

/// A running `uf2fs mount -f`; dropping it unmounts and reaps the process.
pub struct Mounted {
    child: Option<Child>,
    mnt: PathBuf,
    log: PathBuf,
}

impl Mounted {
    /// Starts `uf2fs mount OPTIONS -f IMG MNT` (e.g. `&["-o", "ro"]`, or `&[]` for
    /// read-write) and waits until the mount appears.
    pub fn start(img: &Path, mnt: &Path, log: &Path, options: &[&str]) -> Mounted {
        let log_file = fs::File::create(log).expect("mount log");
        let child = Command::new(env!("CARGO_BIN_EXE_uf2fs"))
            .arg("mount")
            .args(options)
            .arg("-f")
            .arg(img)
            .arg(mnt)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("log"))
            .stderr(log_file)
            .spawn()
            .expect("start uf2fs mount");
        let mut m = Mounted {
            child: Some(child),
            mnt: mnt.to_path_buf(),
            log: log.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !is_mounted(mnt) {
            if let Some(status) = m.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                m.child = None;
                panic!("uf2fs mount exited with {status} before mounting: {}", m.log_text());
            }
            assert!(
                Instant::now() < deadline,
                "no mount at {} after 20 s: {}",
                mnt.display(),
                m.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        m
    }

    fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Unmounts with fusermount3 -u and waits for `uf2fs mount -f` to exit (a read-write
    /// mount writes its unmount checkpoint first); returns whether it exited 0, with its
    /// log.
    pub fn unmount(&mut self) -> (bool, String) {
        // fusermount3 -u can fail while the kernel still holds the mount busy for a
        // moment (EBUSY under load): try a few times, and say what it said.
        let mut said = String::new();
        for _ in 0..5 {
            if !is_mounted(&self.mnt) {
                break;
            }
            match Command::new("fusermount3").arg("-u").arg(&self.mnt).output() {
                Ok(out) if out.status.success() => break,
                Ok(out) => said = format!("{}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim()),
                Err(e) => said = e.to_string(),
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        let mut ok = false;
        if let Some(mut child) = self.child.take() {
            match wait_until(&mut child, Instant::now() + Duration::from_secs(60)) {
                Some(status) => ok = status.success(),
                None => eprintln!(
                    "uf2fs mount did not exit within 60 s of fusermount3 -u; killed (still mounted: {}; \
                     fusermount3 -u said: {})",
                    is_mounted(&self.mnt),
                    if said.is_empty() { "nothing" } else { &said }
                ),
            }
        }
        if is_mounted(&self.mnt) {
            // Last resort, so a failed test never leaves a mount behind.
            let _ = Command::new("fusermount3").arg("-uz").arg(&self.mnt).status();
        }
        (ok, self.log_text())
    }
}

impl Mounted {
    /// Kills `uf2fs mount -f` with SIGKILL (no unmount checkpoint: the image stays at
    /// its last checkpoint, as after a crash), reaps it and clears the dead mount with
    /// `fusermount3 -uz`; returns its log.
    pub fn kill(&mut self) -> String {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if is_mounted(&self.mnt) {
            let _ = Command::new("fusermount3").arg("-uz").arg(&self.mnt).status();
        }
        self.log_text()
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        self.unmount();
    }
}
