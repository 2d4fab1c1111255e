//! Running the `uf2fs` binary: arguments as raw bytes, a time limit, and checks on how
//! it ended.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How one run ended.
#[derive(Debug)]
pub struct Outcome {
    /// The command line, for messages.
    pub cmdline: String,
    /// Exit status; `None` when it was killed for running over time.
    pub status: Option<ExitStatus>,
    /// Everything written to stdout.
    pub stdout: Vec<u8>,
    /// Everything written to stderr.
    pub stderr: Vec<u8>,
    /// Wall time.
    pub elapsed: Duration,
}

impl Outcome {
    /// Exit code, if it exited (not killed by a signal or the time limit).
    pub fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    /// True when it exited 0.
    pub fn success(&self) -> bool {
        self.code() == Some(0)
    }

    /// stdout as text (lossy).
    pub fn out(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// stderr as text (lossy).
    pub fn err(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// A description for assertion messages.
    pub fn describe(&self) -> String {
        let how = match self.status {
            None => format!("timed out after {:.1?}", self.elapsed),
            Some(s) => match (s.code(), s.signal()) {
                (Some(c), _) => format!("exit {c}"),
                (None, Some(sig)) => format!("killed by signal {sig}"),
                _ => format!("{s}"),
            },
        };
        let mut err = self.err();
        if err.len() > 4000 {
            err.truncate(4000);
            err.push_str("...");
        }
        format!("`{}`: {how}, stderr: {err:?}", self.cmdline)
    }

    /// Panics unless it exited 0; returns stdout.
    pub fn assert_ok(&self) -> &[u8] {
        assert!(self.success(), "expected success: {}", self.describe());
        &self.stdout
    }

    /// Problems with how it ended, for input that may be rejected: it must end within the
    /// limit, not by a signal or a panic (exit 101), and a failure must print exactly one
    /// line starting `uf2fs: ` on stderr. `None` when it ended acceptably.
    pub fn robustness_problem(&self) -> Option<String> {
        let status = match self.status {
            None => return Some(format!("hang: {}", self.describe())),
            Some(s) => s,
        };
        match status.code() {
            None => Some(format!("killed by a signal: {}", self.describe())),
            Some(101) => Some(format!("panic: {}", self.describe())),
            Some(0) => None,
            Some(_) => self.failure_message_problem(),
        }
    }

    /// Problems with the failure message: stderr must be exactly one line that starts
    /// with `uf2fs: `.
    pub fn failure_message_problem(&self) -> Option<String> {
        let err = &self.stderr;
        let one_line = err.ends_with(b"\n") && !err[..err.len() - 1].contains(&b'\n');
        if err.starts_with(b"uf2fs: ") && one_line {
            None
        } else {
            Some(format!("stderr is not one `uf2fs: ...` line: {}", self.describe()))
        }
    }

    /// Panics unless it failed cleanly (non-zero, not a panic, one `uf2fs:` line).
    pub fn assert_clean_failure(&self) {
        assert!(
            !self.success() && self.status.is_some(),
            "expected a failure: {}",
            self.describe()
        );
        if let Some(p) = self.robustness_problem() {
            panic!("{p}");
        }
    }
}

/// The `uf2fs` binary under test.
#[derive(Debug, Clone)]
pub struct Uf2fs {
    /// Path of the binary.
    pub bin: PathBuf,
    /// Limit for each run.
    pub timeout: Duration,
}

impl Uf2fs {
    /// The binary at `bin` with a generous limit (a hang is still caught).
    pub fn new(bin: impl Into<PathBuf>) -> Uf2fs {
        Uf2fs {
            bin: bin.into(),
            timeout: Duration::from_secs(120),
        }
    }

    /// The same binary with another limit.
    pub fn with_timeout(&self, timeout: Duration) -> Uf2fs {
        Uf2fs {
            bin: self.bin.clone(),
            timeout,
        }
    }

    /// Runs `uf2fs ARGS...`.
    pub fn run<I, S>(&self, args: I) -> Outcome
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new(&self.bin);
        cmd.args(args);
        run_with_timeout(&mut cmd, self.timeout)
    }
}

/// An argument from raw bytes (image paths need not be UTF-8).
pub fn arg(bytes: &[u8]) -> OsString {
    OsStr::from_bytes(bytes).to_os_string()
}

/// An in-image absolute path for a relative tree path.
pub fn image_arg(rel: &[u8]) -> OsString {
    let mut p = b"/".to_vec();
    p.extend_from_slice(rel);
    arg(&p)
}

/// A host path as an argument.
pub fn path_arg(p: &Path) -> OsString {
    p.as_os_str().to_os_string()
}

/// Runs `cmd` with stdin closed, collecting stdout and stderr; kills it after `timeout`.
pub fn run_with_timeout(cmd: &mut Command, timeout: Duration) -> Outcome {
    let cmdline = format!("{cmd:?}").replace('"', "");
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmdline}: {e}"));
    let out_reader = reader_thread(child.stdout.take().expect("piped stdout"));
    let err_reader = reader_thread(child.stderr.take().expect("piped stderr"));
    let status = wait_until(&mut child, start + timeout);
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    Outcome {
        cmdline,
        status,
        stdout,
        stderr,
        elapsed: start.elapsed(),
    }
}

/// Most bytes kept from one stream; the rest is read and dropped, so a run that writes
/// without end cannot exhaust the test's memory before its time limit.
pub const CAPTURE_MAX: usize = 256 << 20;

fn reader_thread(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut chunk = vec![0u8; 1 << 16];
        loop {
            match r.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    let room = CAPTURE_MAX.saturating_sub(kept.len()).min(n);
                    kept.extend_from_slice(&chunk[..room]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        kept
    })
}

/// Waits for `child` until `deadline`; past it, kills it and returns `None`.
pub fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    let mut nap = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) => {}
            Err(e) => panic!("waiting for child: {e}"),
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(50));
    }
}
