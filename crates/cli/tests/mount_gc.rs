//! Garbage collection under load on the real FUSE mount: a 256 MiB (128 MiB for the policy variants) `uf2fs mkfs` volume
//! filled to 90% of what statfs offers (seeded files that are never touched again, then
//! four files that fio lays out), then fio's 4 KiB random overwrites without a random
//! map, three times the volume's size in all (768 MiB), with crc32c verification of the
//! last version of every block at the end (`--verify=crc32c --do_verify=1
//! --verify_fatal=1`). That cannot finish without foreground GC reclaiming sections over
//! and over. Then: the hashes of fio's files through the mount; unmount; `fsck.f2fs -f`
//! clean; the same hashes from the image offline (`uf2fs cat`); a remount where fio's
//! `--verify_only` pass finds every block it wrote intact and at its offset, the hashes
//! match again (fio's crc32c headers cannot tell an older version of a block from the
//! last one; the hashes can), and every untouched file still has its seeded contents;
//! unmount, fsck clean, offline hashes once more.
//!
//! Four runs: the default policy (greedy) with `-o background_gc=on`, where the
//! remount stays idle until the background cleaner's first wake-up (30 s) so that what
//! it moves is verified too; `-o gc_policy=default`; `-o gc_policy=prefer-data-v2`;
//! `-o gc_pacing=adaptive`, where `uf2fs status` must also count steps of the paced
//! cleaner's thread (none without it).
//!
//! Needs /dev/fuse, fusermount3, fio, sha256sum and f2fs-tools. Without one of them the
//! test prints why and passes, unless UF2FS_REQUIRE_FUSE is set (CI sets it), in which
//! case it fails.

mod common;

use common::fsck;
use common::mount::{fresh_volume, fuse_available, Mounted, Volume};
use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use uf2fs_testkit::{FileData, Rng};

/// The volume: small enough for a minute's run, big enough for many sections.
const VOLUME: u64 = 256 << 20;
/// Share of the space statfs offers that is filled before the overwrites (percent).
const FILL_PERCENT: u64 = 90;
/// fio's files (the overwritten ones).
const FIO_FILES: u64 = 4;
/// Size of the untouched files, about this share of the space statfs offers (percent).
const UNTOUCHED_PERCENT: u64 = 15;

fn statfs(mnt: &Path) -> (u64, u64) {
    let s = nix::sys::statvfs::statvfs(mnt).expect("statvfs of the mount");
    let bs = s.fragment_size();
    (s.blocks() * bs, s.blocks_free() * bs)
}

/// fio with `args`, run in `dir` (where fio keeps its verify state); returns its terse
/// line, or panics with fio's messages when it fails.
fn fio(dir: &Path, what: &str, args: &[String]) -> String {
    let out = Command::new("fio")
        .args(args)
        .arg("--output-format=terse")
        .current_dir(dir)
        .output()
        .expect("run fio");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "fio ({what}) exited {}\nargs: {args:?}\nstdout: {stdout}\nstderr: {stderr}",
        out.status
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("3;"))
        .unwrap_or_else(|| panic!("fio ({what}) printed no terse line: {stdout}{stderr}"))
        .to_string();
    let fields: Vec<&str> = line.split(';').collect();
    assert_eq!(
        fields.get(4),
        Some(&"0"),
        "fio ({what}) reports error {:?}: {stderr}",
        fields.get(4)
    );
    line
}

/// KiB read and written according to a terse (version 3) line.
fn io_kib(line: &str) -> (u64, u64) {
    let f: Vec<&str> = line.split(';').collect();
    (f[5].parse().unwrap(), f[46].parse().unwrap())
}

/// The fio job: FIO_FILES files of `file_size` bytes in `dir`, random 4 KiB writes
/// without a random map, `io_size` bytes in all, crc32c in every block.
fn job(dir: &Path, file_size: u64, io_size: u64) -> Vec<String> {
    [
        "--name=gc".to_string(),
        format!("--directory={}", dir.display()),
        format!("--nrfiles={FIO_FILES}"),
        format!("--filesize={file_size}"),
        format!("--size={}", file_size * FIO_FILES),
        format!("--io_size={io_size}"),
        "--rw=randwrite".into(),
        "--bs=4k".into(),
        "--norandommap".into(),
        "--randseed=20261122".into(),
        "--file_service_type=random".into(),
        "--ioengine=psync".into(),
        "--fallocate=none".into(),
        "--verify=crc32c".into(),
        "--verify_fatal=1".into(),
    ]
    .into()
}

fn fio_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names.len() as u64, FIO_FILES, "fio's files: {names:?}");
    names
}

/// The first word sha256sum prints for `cmd`.
fn sha256_of(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run sha256sum");
    assert!(
        out.status.success(),
        "sha256sum: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.split_whitespace().next().unwrap_or_default().to_string()
}

fn hashes_on_mount(dir: &Path, names: &[String]) -> Vec<String> {
    names
        .iter()
        .map(|n| sha256_of(Command::new("sha256sum").arg(dir.join(n))))
        .collect()
}

/// Hashes of fio's files read from the image offline: `uf2fs cat IMG PATH | sha256sum`.
fn hashes_offline(img: &Path, names: &[String]) -> Vec<String> {
    names
        .iter()
        .map(|n| {
            let mut cat = Command::new(env!("CARGO_BIN_EXE_uf2fs"))
                .arg("cat")
                .arg(img)
                .arg(format!("/fio/{n}"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("run uf2fs cat");
            let hash = sha256_of(Command::new("sha256sum").stdin(cat.stdout.take().unwrap()));
            let out = cat.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "uf2fs cat /fio/{n}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            hash
        })
        .collect()
}

fn check_untouched(mnt: &Path, files: &[(String, FileData)], when: &str) {
    for (name, data) in files {
        let f = fs::File::open(mnt.join("keep").join(name)).unwrap_or_else(|e| panic!("{when}: {name}: {e}"));
        data.check_reader(std::io::BufReader::with_capacity(1 << 20, f))
            .unwrap_or_else(|e| panic!("{when}: untouched file {name}: {e}"));
    }
}

/// The mount's status report (`uf2fs status`), when this uf2fs serves it.
fn status(mnt: &Path) -> Option<String> {
    xattr::get(mnt, "uf2fs.status")
        .ok()
        .flatten()
        .map(|v| String::from_utf8_lossy(&v).into_owned())
}

/// "N foreground, M background" from the status report.
fn gc_calls(report: &str) -> Option<(u64, u64)> {
    let line = report.lines().find(|l| l.starts_with("gc calls:"))?;
    let nums: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    Some((*nums.first()?, *nums.get(1)?))
}

/// The paced steps taken (`paced steps: N (...)`) from the status report.
fn paced_steps(report: &str) -> Option<u64> {
    let line = report.lines().find(|l| l.starts_with("paced steps:"))?;
    line.split(|c: char| !c.is_ascii_digit()).find_map(|w| w.parse().ok())
}

/// What the status report after the overwrites must show.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Foreground GC ran (when this uf2fs serves a report).
    ForegroundGc,
    /// The paced cleaner's thread took steps (the report is required).
    PacedSteps,
}

fn run(name: &str, options: &str, wait_for_background: bool, volume: u64) {
    run_expecting(name, options, wait_for_background, volume, Expect::ForegroundGc)
}

fn run_expecting(name: &str, options: &str, wait_for_background: bool, volume: u64, expect: Expect) {
    if !fuse_available(&[("fsck.f2fs", "f2fs-tools"), ("fio", "fio"), ("sha256sum", "coreutils")]) {
        return;
    }
    let started = Instant::now();
    let Volume { tmp, img, mnt } = fresh_volume(&format!("mount-gc-{name}-"), volume);
    let opts = ["-o", options];
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount1.log"), &opts);
    let (total, _) = statfs(&mnt);

    // The untouched files: seeded, 64 KiB to 1 MiB each.
    let mut rng = Rng::new(0x6c_0001 ^ name.len() as u64);
    fs::create_dir(mnt.join("keep")).unwrap();
    let mut untouched = Vec::new();
    let mut bytes = 0;
    while bytes < total * UNTOUCHED_PERCENT / 100 {
        let data = FileData::noise(rng.range(64 << 10, 1 << 20), rng.next_u64());
        let name = format!("k{:03}", untouched.len());
        let mut buf = [0u8; 4096];
        let mut f = fs::File::create(mnt.join("keep").join(&name)).unwrap();
        for i in 0.. {
            let n = data.block(i, &mut buf);
            if n == 0 {
                break;
            }
            f.write_all(&buf[..n]).unwrap();
        }
        bytes += data.len;
        untouched.push((name, data));
    }

    // fio's files fill the volume to FILL_PERCENT; then the overwrites.
    let (_, free) = statfs(&mnt);
    let fill = (total * FILL_PERCENT / 100).saturating_sub(total - free);
    let file_size = fill / FIO_FILES / 4096 * 4096;
    let dir = mnt.join("fio");
    fs::create_dir(&dir).unwrap();
    let io_size = 3 * volume;
    let mut args = job(&dir, file_size, io_size);
    args.push("--do_verify=1".into());
    let t = Instant::now();
    let line = fio(tmp.path(), "random overwrites with verification", &args);
    let fio_time = t.elapsed();
    let (read_kib, written_kib) = io_kib(&line);
    assert_eq!(written_kib * 1024, io_size, "fio wrote less than asked: {line}");
    // Nearly every block was overwritten at least once (3x its size in random writes),
    // and each one's last version is read back and checked.
    assert!(
        read_kib * 1024 > file_size * FIO_FILES * 9 / 10,
        "fio verified only {read_kib} KiB: {line}"
    );
    let (_, free) = statfs(&mnt);
    let used_percent = (total - free) * 100 / total;
    assert!(
        (FILL_PERCENT - 3..=FILL_PERCENT + 2).contains(&used_percent),
        "the volume is {used_percent}% full, not ~{FILL_PERCENT}%"
    );
    let names = fio_files(&dir);
    let hashes = hashes_on_mount(&dir, &names);
    check_untouched(&mnt, &untouched, "after the overwrites");
    let report = status(&mnt);
    match expect {
        Expect::ForegroundGc => {
            if let Some((fg, _)) = report.as_deref().and_then(gc_calls) {
                assert!(
                    fg > 0,
                    "no foreground GC for 3x the volume at {used_percent}%: {report:?}"
                );
            }
        }
        Expect::PacedSteps => {
            let report = report.as_deref().expect("uf2fs status of the mount");
            assert!(
                report.contains(&format!("gc pacing:           {}", name)),
                "the pacer is not the one asked for: {report}"
            );
            let steps = paced_steps(report).unwrap_or_else(|| panic!("no paced steps line: {report}"));
            assert!(
                steps > 0,
                "the paced cleaner took no step for 3x the volume at {used_percent}%: {report}"
            );
        }
    }
    let (ok, log) = m.unmount();
    assert!(ok, "uf2fs mount -f did not exit 0 after fusermount3 -u; log: {log}");
    fsck::unmounted(&img, tmp.path(), "after the overwrites");
    assert_eq!(hashes_offline(&img, &names), hashes, "fio's files in the image offline");

    // The remount (read-write: fio's verify_only pass opens its files for writing,
    // though it writes nothing), idle until the background cleaner's first wake-up
    // when asked.
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount2.log"), &opts);
    let mut background = None;
    if wait_for_background {
        std::thread::sleep(Duration::from_secs(33));
        background = status(&mnt).as_deref().and_then(gc_calls).map(|(_, bg)| bg);
        if let Some(bg) = background {
            assert!(bg > 0, "the background cleaner did not run in 33 idle seconds");
        }
    }
    let mut args = job(&dir, file_size, io_size);
    args.push("--verify_only".into());
    let line = fio(tmp.path(), "verify_only after the remount", &args);
    let (read_kib, _) = io_kib(&line);
    assert!(
        read_kib * 1024 > file_size * FIO_FILES * 9 / 10,
        "verify_only read {read_kib} KiB"
    );
    assert_eq!(hashes_on_mount(&dir, &names), hashes, "fio's files after the remount");
    check_untouched(&mnt, &untouched, "after the remount");
    let (ok, log) = m.unmount();
    assert!(ok, "the remount did not exit 0 after fusermount3 -u; log: {log}");
    fsck::unmounted(&img, tmp.path(), "after the remount");
    assert_eq!(hashes_offline(&img, &names), hashes, "fio's files offline, at the end");
    eprintln!(
        "mount_gc ({name}, -o {options}): {used_percent}% of {} MiB full, {} untouched files ({} MiB), \
         fio {} x {} MiB, {} MiB written in {:.1?} ({:.1} MB/s){}; total {:.1?}\n{}",
        total >> 20,
        untouched.len(),
        bytes >> 20,
        FIO_FILES,
        file_size >> 20,
        io_size >> 20,
        fio_time,
        io_size as f64 / 1e6 / fio_time.as_secs_f64(),
        background.map_or(String::new(), |bg| format!("; {bg} background GC call(s) while idle")),
        started.elapsed(),
        report.unwrap_or_else(|| "(no status report from this uf2fs)".into())
    );
}

#[test]
fn gc_greedy_with_background_cleaner_keeps_every_file() {
    run("greedy", "background_gc=on", true, VOLUME);
}

#[test]
fn gc_policy_default_keeps_every_file() {
    // Half the volume (and so half the writes) for the other policies: the same
    // checks, on a budget (CI runs every test).
    run("default", "gc_policy=default", false, VOLUME / 2);
}

/// `gc_pacing=adaptive`: the paced cleaner's thread takes steps ahead of the writers
/// (`uf2fs status` counts them), and every check above holds.
#[test]
fn gc_pacing_adaptive_takes_paced_steps_and_keeps_every_file() {
    run_expecting(
        "adaptive",
        "gc_pacing=adaptive,gc_latency_target_us=1000",
        false,
        VOLUME / 2,
        Expect::PacedSteps,
    );
}

#[test]
fn gc_policy_prefer_data_v2_keeps_every_file() {
    run("prefer-data-v2", "gc_policy=prefer-data-v2", false, VOLUME / 2);
}
