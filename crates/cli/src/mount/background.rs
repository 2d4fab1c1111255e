//! Going to the background without `fork`: re-run this executable with `-f` as a child
//! in its own process group, and return once its mount appears in mountinfo.

use super::MountRequest;
use crate::errors::AlreadyReported;
use crate::names::escape_os;
use anyhow::{bail, Context};
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use uf2fs_fuse::mountinfo::mount_ids_on;

/// How long the child may take to mount.
const MOUNT_WAIT_MAX: Duration = Duration::from_secs(10);
/// How often mountinfo is checked meanwhile.
const POLL_INTERVAL: Duration = Duration::from_millis(20);
/// How long to wait for a dead child's stderr to drain.
const STDERR_DRAIN_MAX: Duration = Duration::from_secs(2);

/// Starts the foreground mount as a child and waits until it is mounted. If the child
/// exits first, its error line is relayed and its exit code returned.
pub fn start(request: &MountRequest) -> anyhow::Result<()> {
    let mountpoint = std::fs::canonicalize(&request.mountpoint)
        .with_context(|| format!("mountpoint {}", escape_os(&request.mountpoint)))?;
    let mounted_before = mount_ids_on(&mountpoint).context("reading /proc/self/mountinfo")?;
    let mut child = child_command(request, &mountpoint)?
        .spawn()
        .context("starting the background mount process")?;
    let stderr = drain_stderr(&mut child);
    let deadline = Instant::now() + MOUNT_WAIT_MAX;
    loop {
        if let Some(status) = child.try_wait().context("waiting for the mount process")? {
            return relay_failure(status, &stderr, &mountpoint);
        }
        let now_mounted = mount_ids_on(&mountpoint).context("reading /proc/self/mountinfo")?;
        if now_mounted.iter().any(|id| !mounted_before.contains(id)) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("timed out waiting for {} to be mounted", escape_os(&mountpoint));
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// `uf2fs [--device D]... mount -f [-o O]... -- IMAGE MOUNTPOINT`, with absolute paths so
/// the child can run from `/` (and not keep the caller's directory busy).
fn child_command(request: &MountRequest, mountpoint: &Path) -> anyhow::Result<Command> {
    let exe = std::env::current_exe().context("finding the uf2fs executable")?;
    let absolute = |p: &Path| -> anyhow::Result<PathBuf> {
        std::path::absolute(p).with_context(|| format!("resolving {}", escape_os(p)))
    };
    let mut command = Command::new(exe);
    for device in &request.devices {
        command.arg("--device").arg(absolute(device)?);
    }
    command.arg("mount").arg("-f");
    for group in &request.options {
        command.arg("-o").arg(group);
    }
    command.arg("--").arg(absolute(&request.image)?).arg(mountpoint);
    command
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // Own process group: Ctrl-C in the caller's terminal must not kill the mount.
    command.process_group(0);
    Ok(command)
}

/// Reads the child's stderr on a thread; the text arrives on the channel at its end.
fn drain_stderr(child: &mut Child) -> mpsc::Receiver<Vec<u8>> {
    let (sender, receiver) = mpsc::channel();
    if let Some(mut stderr) = child.stderr.take() {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = stderr.read_to_end(&mut text);
            let _ = sender.send(text);
        });
    }
    receiver
}

/// The child exited before mounting: pass its error on.
fn relay_failure(status: ExitStatus, stderr: &mpsc::Receiver<Vec<u8>>, mountpoint: &Path) -> anyhow::Result<()> {
    let text = stderr.recv_timeout(STDERR_DRAIN_MAX).unwrap_or_default();
    let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    if lines.is_empty() || status.success() {
        bail!(
            "mount process exited ({status}) before {} was mounted",
            escape_os(mountpoint)
        );
    }
    let _ = std::io::stderr().lock().write_all(&one_error_line(&lines));
    let code = status
        .code()
        .and_then(|c| u8::try_from(c).ok())
        .filter(|&c| c != 0)
        .unwrap_or(1);
    Err(AlreadyReported(code).into())
}

/// The child's stderr as the one line to show: its own `uf2fs: ` line, with anything
/// else it printed (say, fusermount3's complaint) added in parentheses.
fn one_error_line(lines: &[&[u8]]) -> Vec<u8> {
    let (ours, others): (Vec<&[u8]>, Vec<&[u8]>) = lines.iter().partition(|l| l.starts_with(b"uf2fs: "));
    let mut line = match ours.last() {
        Some(last) => last.to_vec(),
        None => b"uf2fs: mount failed".to_vec(),
    };
    if !others.is_empty() {
        line.extend_from_slice(b" (");
        line.extend_from_slice(&others.join(&b"; "[..]));
        line.push(b')');
    }
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::one_error_line;

    #[test]
    fn child_errors_become_one_line() {
        assert_eq!(one_error_line(&[b"uf2fs: bad image"]), b"uf2fs: bad image\n");
        assert_eq!(
            one_error_line(&[b"fusermount3: denied", b"uf2fs: mounting on /m: denied"]),
            b"uf2fs: mounting on /m: denied (fusermount3: denied)\n"
        );
        assert_eq!(one_error_line(&[b"odd"]), b"uf2fs: mount failed (odd)\n");
    }
}
