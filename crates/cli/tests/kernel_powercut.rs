//! Images Linux F2FS left after fsync and a power cut (no unmount), against uf2fs's
//! roll-forward recovery (issue 13).
//!
//! The fixtures `tests/fixtures/kernel/powercut*.img.gz` were made by
//! `scripts/kernel/make-fixtures.sh powercut powercut-extra-attr`: `uf2fs mkfs` made a
//! 128 MiB image, Linux 6.1 in QEMU mounted it, checkpointed once, ran
//! `scripts/kernel/workloads/powercut.sh` (new files, appends, in-place overwrites, a
//! truncate then write, holes, a 10 MiB file over several direct nodes, inline files,
//! fdatasync, xattrs inline and in an xattr node, a chmod alone, a truncate to zero, a
//! fallocated file, a file fsync'd twice, 600 small files whose fsync records cross a
//! segment) and was reset without sync or unmount. Every fsync became a roll-forward record in the warm
//! node log, none a checkpoint (the kernel's `cp_reason` is in the manifest header).
//! `NAME.manifest` lists the files the workload fsync'd, in kernel-check.sh's format
//! (`path type mode nlink uid gid size mtime sha256 target xattrs chunks`, "-" = do not
//! check): what a recovery must give back. Linux itself recovered a copy of each image
//! to exactly that, and fsck.f2fs -f found the result clean, when they were made.

mod common;

use common::scratch;
use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use uf2fs_core::{FileKind, Fs};

const FIXTURES: [&str; 2] = ["powercut", "powercut-extra-attr"];

/// The checkpoint flag of an unmount checkpoint (`CP_UMOUNT_FLAG`).
const CP_UMOUNT_FLAG: u32 = 0x1;

/// One manifest line (only what the powercut manifests fill in).
#[derive(Debug)]
struct Entry {
    path: String,
    perm: u32,
    nlink: u32,
    uid: u32,
    gid: u32,
    size: u64,
    mtime: Option<i64>,
    sha256: String,
    /// name -> value
    xattrs: BTreeMap<Vec<u8>, Vec<u8>>,
}

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kernel")
}

fn unhex(s: &str) -> Vec<u8> {
    let s = s.strip_prefix("0x").expect("hex value starts with 0x");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

fn manifest(name: &str) -> Vec<Entry> {
    let path = fixture_dir().join(format!("{name}.manifest"));
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 12, "manifest line {line:?}");
        assert_eq!(f[1], "f", "the powercut manifests list regular files: {line:?}");
        let num = |i: usize| -> u64 { f[i].parse().unwrap_or_else(|_| panic!("field {i} of {line:?}")) };
        let mut xattrs = BTreeMap::new();
        if f[10] != "-" {
            for item in f[10].split(',') {
                let (n, v) = item.split_once('=').unwrap_or((item, "0x"));
                xattrs.insert(n.as_bytes().to_vec(), unhex(v));
            }
        }
        out.push(Entry {
            path: f[0].to_string(),
            perm: u32::from_str_radix(f[2], 8).expect("octal mode"),
            nlink: num(3) as u32,
            uid: num(4) as u32,
            gid: num(5) as u32,
            size: num(6),
            mtime: (f[7] != "-").then(|| num(7) as i64),
            sha256: f[8].to_string(),
            xattrs,
        });
    }
    assert!(out.len() > 600, "{name}.manifest lists only {} files", out.len());
    out
}

/// Gunzips fixture `name` into `dir` (sparsely: the 128 MiB images are mostly zeros).
fn gunzip(name: &str, dir: &Path) -> PathBuf {
    let gz = fixture_dir().join(format!("{name}.img.gz"));
    let input = fs::File::open(&gz).unwrap_or_else(|e| panic!("{}: {e}", gz.display()));
    let mut dec = flate2::read::GzDecoder::new(input);
    let img = dir.join(format!("{name}.img"));
    let mut out = fs::File::create(&img).unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let mut len = 0u64;
    loop {
        let mut filled = 0;
        while filled < buf.len() {
            let n = dec.read(&mut buf[filled..]).expect("gunzip fixture");
            if n == 0 {
                break;
            }
            filled += n;
        }
        if filled == 0 {
            break;
        }
        if buf[..filled].iter().any(|&b| b != 0) {
            out.seek(SeekFrom::Start(len)).unwrap();
            out.write_all(&buf[..filled]).unwrap();
        }
        len += filled as u64;
    }
    out.set_len(len).unwrap();
    img
}

fn sha256sum(data: &[u8]) -> String {
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run sha256sum");
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)[..64].to_string()
}

/// Every manifest entry as `fs` reads it; returns the differences.
fn differences(fs: &Fs, entries: &[Entry]) -> Vec<String> {
    let mut problems = Vec::new();
    for e in entries {
        let ino = match fs.resolve(e.path.as_bytes(), false) {
            Ok(ino) => ino,
            Err(err) => {
                problems.push(format!("{}: {err}", e.path));
                continue;
            }
        };
        let st = fs.stat(ino).unwrap();
        let mut check = |what: &str, got: String, want: String| {
            if got != want {
                problems.push(format!("{}: {what} is {got}, the kernel fsync'd {want}", e.path));
            }
        };
        check("kind", format!("{:?}", st.kind), format!("{:?}", FileKind::File));
        check("mode", format!("{:04o}", st.mode & 0o7777), format!("{:04o}", e.perm));
        check("nlink", st.nlink.to_string(), e.nlink.to_string());
        check(
            "owner",
            format!("{}:{}", st.uid, st.gid),
            format!("{}:{}", e.uid, e.gid),
        );
        check("size", st.size.to_string(), e.size.to_string());
        if let Some(m) = e.mtime {
            check("mtime", st.mtime.secs.to_string(), m.to_string());
        }
        let mut buf = vec![0u8; st.size as usize];
        match fs.read(ino, 0, &mut buf) {
            Ok(n) if n == buf.len() => check("sha256", sha256sum(&buf), e.sha256.clone()),
            Ok(n) => problems.push(format!("{}: read {n} of {} bytes", e.path, buf.len())),
            Err(err) => problems.push(format!("{}: read: {err}", e.path)),
        }
        let xattrs: BTreeMap<Vec<u8>, Vec<u8>> = fs
            .list_xattrs(ino)
            .unwrap()
            .into_iter()
            .map(|x| (x.name, x.value))
            .collect();
        if !e.xattrs.is_empty() && xattrs != e.xattrs {
            problems.push(format!("{}: xattrs {xattrs:?}, the kernel set {:?}", e.path, e.xattrs));
        }
    }
    problems
}

fn assert_no_differences(fs: &Fs, entries: &[Entry], when: &str) {
    let problems = differences(fs, entries);
    assert!(
        problems.is_empty(),
        "{when}: {} of {} fsync'd files differ:\n{}",
        problems.len(),
        entries.len(),
        problems.join("\n")
    );
}

/// The raw image: its last checkpoint, written before the fsyncs, is not an unmount
/// checkpoint; a read-only open replays the fsync records in memory (every fsync'd file
/// as the kernel fsync'd it) and leaves the image file as it was.
fn opens_read_only(name: &str) {
    let tmp = scratch("kernel-powercut-");
    let img = gunzip(name, tmp.path());
    let entries = manifest(name);
    let before = std::fs::read(&img).unwrap();
    {
        let dev = uf2fs_core::device::MemDevice::new(before.clone());
        let sbc = uf2fs_core::checkpoint::load_superblock(&dev).unwrap();
        let cps = uf2fs_core::checkpoint::load_checkpoint(&dev, &sbc.sb).unwrap();
        assert_eq!(
            cps.cp.ckpt_flags & CP_UMOUNT_FLAG,
            0,
            "{name}: the power cut left an unmount checkpoint"
        );
    }
    let fs = Fs::open(&img, &[]).unwrap();
    assert!(fs.replayed_in_memory(), "{name}: nothing replayed");
    let pc = fs.resolve(b"/pc", true).unwrap();
    assert_eq!(fs.stat(pc).unwrap().kind, FileKind::Dir);
    assert_no_differences(&fs, &entries, &format!("{name}, read-only"));
    drop(fs);
    assert!(
        std::fs::read(&img).unwrap() == before,
        "{name}: a read-only open changed the image"
    );
}

/// With recovery: the read-write open replays the fsync records; every fsync'd file is
/// as the kernel fsync'd it, before and after an unmount, and fsck.f2fs finds the
/// recovered image clean.
fn recovers(name: &str) {
    let tmp = scratch("kernel-powercut-rw-");
    let img = gunzip(name, tmp.path());
    let entries = manifest(name);
    let fs = Fs::open_rw(&img, &[]).unwrap_or_else(|e| panic!("{name}: read-write open: {e}"));
    assert_no_differences(&fs, &entries, &format!("{name}, recovered"));
    fs.unmount().unwrap();
    common::fsck::unmounted(&img, tmp.path(), &format!("{name}, recovered and unmounted"));
    let fs = Fs::open(&img, &[]).unwrap();
    assert_no_differences(&fs, &entries, &format!("{name}, reopened read-only"));
}

#[test]
fn powercut_opens_read_only() {
    opens_read_only(FIXTURES[0]);
}

#[test]
fn powercut_extra_attr_opens_read_only() {
    opens_read_only(FIXTURES[1]);
}

#[test]
fn powercut_recovers_every_fsyncd_file() {
    recovers(FIXTURES[0]);
}

#[test]
fn powercut_extra_attr_recovers_every_fsyncd_file() {
    recovers(FIXTURES[1]);
}

/// A power cut while uf2fs recovers Linux's image (at every flush of the recovering
/// open, with none or all of the writes in flight): the next open recovers again with
/// every fsync'd file, and the result is fsck-clean.
fn recovers_after_a_cut_during_recovery(name: &str) {
    use uf2fs_core::device::CrashDevice;
    let tmp = scratch("kernel-powercut-cut-");
    let img = gunzip(name, tmp.path());
    let entries = manifest(name);
    let rw = uf2fs_core::OpenOptions { read_write: true };
    let rec = CrashDevice::new(std::fs::read(&img).unwrap(), 1 << 20);
    drop(Fs::open_device_with(Box::new(rec.clone()), "recovering", rw).unwrap());
    assert!(rec.flush_count() >= 2, "{name}: {} flushes", rec.flush_count());
    for k in 0..=rec.flush_count() {
        for keep_all in [false, true] {
            let when = format!("{name}, cut at flush {k} of the recovery (in-flight writes kept: {keep_all})");
            let dev = CrashDevice::new(rec.image_after_cut(k, &|_| keep_all), 1 << 20);
            let fs = Fs::open_device_with(Box::new(dev.clone()), "again", rw).unwrap_or_else(|e| panic!("{when}: {e}"));
            assert_no_differences(&fs, &entries, &when);
            fs.unmount().unwrap();
            let cut = tmp.path().join("cut.img");
            std::fs::write(&cut, dev.image_now()).unwrap();
            common::fsck::unmounted(&cut, tmp.path(), &when);
        }
    }
}

#[test]
fn powercut_recovers_again_after_a_cut_during_recovery() {
    recovers_after_a_cut_during_recovery(FIXTURES[0]);
}

/// After recovering Linux's image, uf2fs's own checkpoints keep Linux's
/// `CP_CRC_RECOVERY_FLAG`, so its fsync stamps node footers with the checkpoint's
/// checksum too: a file fsync'd then (no checkpoint) is found by the next recovery.
#[test]
fn fsync_after_recovering_a_crc_recovery_image_is_recovered() {
    use uf2fs_core::device::CrashDevice;
    const CP_CRC_RECOVERY_FLAG: u32 = 0x40;
    let tmp = scratch("kernel-powercut-crc-");
    let img = gunzip(FIXTURES[0], tmp.path());
    let rw = uf2fs_core::OpenOptions { read_write: true };
    let dev = CrashDevice::new(std::fs::read(&img).unwrap(), 1 << 20);
    let fs = Fs::open_device_with(Box::new(dev.clone()), "recovered", rw).unwrap();
    let flags = fs.last_checkpoint().ckpt_flags;
    assert_ne!(flags & CP_CRC_RECOVERY_FLAG, 0, "the recovery checkpoint kept the flag");
    let version = fs.last_checkpoint().checkpoint_ver;
    let f = fs.create(fs.root(), b"after-recovery", 0o644, 0, 0).unwrap().ino;
    fs.write(f, 0, b"fsync'd under CP_CRC_RECOVERY_FLAG").unwrap();
    fs.fsync(f, false).unwrap();
    assert_eq!(
        fs.last_checkpoint().checkpoint_ver,
        version,
        "the fsync wrote a checkpoint"
    );
    let crashed = dev.image_now();
    drop(fs);
    let back = Fs::open_device_with(Box::new(uf2fs_core::device::MemDevice::new(crashed)), "again", rw).unwrap();
    let f = back.lookup(back.root(), b"after-recovery").unwrap();
    let mut buf = [0u8; 64];
    let n = back.read(f, 0, &mut buf).unwrap();
    assert_eq!(&buf[..n], b"fsync'd under CP_CRC_RECOVERY_FLAG");
    assert_no_differences(&back, &manifest(FIXTURES[0]), "reopened after the second crash");
}
