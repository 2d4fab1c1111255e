//! F2FS's own ioctls on the mount, issued by f2fs-tools' `f2fs_io` and by python's
//! `fcntl.ioctl` where `f2fs_io` (Debian's 1.15) has no command for them: atomic
//! writes committed and aborted, a commit surviving a killed mount, the volume-wide
//! commands refused to callers without `CAP_SYS_ADMIN`, the errnos of docs/ioctls.md;
//! then `fsck.f2fs -f` clean.
//!
//! Needs /dev/fuse, fusermount3, f2fs_io (f2fs-tools), setpriv (util-linux), python3;
//! root for the second user. Without them the tests print why and pass, unless
//! UF2FS_REQUIRE_FUSE is set.

mod common;

use common::fsck;
use common::mount::{fresh_volume, fuse_available, Mounted, Volume};
use common::tool::ok;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Issues ioctl `cmd` on `path` with an argument of `arg` (hex bytes) through python3,
/// as user `as_user` (`None`: this one); prints `OK <hex of the argument after>` or
/// `ERR <errno>`.
fn ioctl(path: &Path, cmd: u32, arg: &str, as_user: Option<&str>) -> String {
    let script = format!(
        "import fcntl,os,sys\n\
         fd=os.open(sys.argv[1], os.O_RDONLY)\n\
         a=bytearray(bytes.fromhex('{arg}'))\n\
         try:\n  fcntl.ioctl(fd, {cmd}, a, True) if a else fcntl.ioctl(fd, {cmd}, 0)\n  print('OK', a.hex())\n\
         except OSError as e:\n  print('ERR', e.errno)\n"
    );
    let mut argv: Vec<&str> = Vec::new();
    let user;
    if let Some(u) = as_user {
        user = format!("--reuid={u}");
        argv.extend(["setpriv", &user, "--regid=65534", "--clear-groups"]);
    }
    let p = path.to_str().unwrap();
    // The system python: a per-user shim (pyenv) may not be open to the second user.
    argv.extend(["/usr/bin/python3", "-c", &script, p]);
    ok(&argv).trim().to_owned()
}

#[test]
fn f2fs_ioctls_work_as_linux_answers_them() {
    if !fuse_available(&[
        ("f2fs_io", "f2fs-tools"),
        ("setpriv", "util-linux"),
        ("python3", "python3"),
    ]) {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipping: the CAP_SYS_ADMIN checks need root and a second user");
        return;
    }
    let Volume { tmp, img, mnt } = fresh_volume("mount-ioctl-", "128M");
    let log = tmp.path().join("mount.log");
    let mut m = Mounted::start(&img, &mnt, &log, &["-o", "allow_other"]);
    fs::set_permissions(&mnt, fs::Permissions::from_mode(0o777)).unwrap();

    // Atomic write and commit: the file holds what a plain write of the same pattern
    // writes.
    let a = mnt.join("atomic");
    let plain = mnt.join("plain");
    fs::write(&a, vec![b'x'; 3 * 4096 + 100]).unwrap();
    let a_s = a.to_str().unwrap();
    let p_s = plain.to_str().unwrap();
    ok(&["f2fs_io", "write", "1", "0", "8", "inc_num", "atomic_commit", a_s]);
    ok(&["f2fs_io", "write", "1", "0", "8", "inc_num", "buffered", p_s]);
    assert_eq!(fs::read(&a).unwrap(), fs::read(&plain).unwrap());
    assert_eq!(fs::metadata(&a).unwrap().len(), 8 * 4096);

    // Aborted: nothing changes, size included.
    let before = fs::read(&a).unwrap();
    ok(&["f2fs_io", "write", "1", "4", "12", "zero", "atomic_abort", a_s]);
    assert_eq!(fs::read(&a).unwrap(), before);
    assert_eq!(fs::metadata(&a).unwrap().len(), 8 * 4096);

    // Features: the superblock's, with F2FS_FEATURE_ATOMIC_WRITE.
    let got = ioctl(&a, 0x8004_f50c, "00000000", None);
    let bits = u32::from_le_bytes(
        hex(got.strip_prefix("OK ").unwrap_or_else(|| panic!("GET_FEATURES: {got}")))
            .try_into()
            .unwrap(),
    );
    assert_eq!(bits & 0x4, 0x4, "{got}");

    // Volume-wide commands: CAP_SYS_ADMIN only.
    assert_eq!(ioctl(&mnt, 0x0000_f507, "", Some("65534")), "ERR 1");
    assert_eq!(ioctl(&mnt, 0x0000_f507, "", None), "OK");
    assert_eq!(ioctl(&mnt, 0x4004_f506, "01000000", Some("65534")), "ERR 1");
    assert_eq!(ioctl(&mnt, 0x4004_f506, "01000000", None), "OK 01000000");
    // One device: FLUSH_DEVICE is EINVAL, as Linux. Growing by RESIZE_FS is EINVAL.
    assert_eq!(ioctl(&mnt, 0x4008_f50a, "0000000001000000", None), "ERR 22");
    assert_eq!(ioctl(&mnt, 0x4008_f510, &"ff".repeat(8), None), "ERR 22");
    // RESIZE_FS below: another user gets EPERM, a size that is not whole sections
    // EINVAL, the same size success, a shrink EOPNOTSUPP (docs/ioctls.md, "Resizing").
    let sb = uf2fs_core::Fs::open(&img, &[]).unwrap().superblock().clone();
    let (blocks, section) = (
        sb.block_count,
        u64::from(sb.blocks_per_seg()) * u64::from(sb.segs_per_sec),
    );
    let le = |n: u64| n.to_le_bytes().iter().map(|b| format!("{b:02x}")).collect::<String>();
    assert_eq!(ioctl(&mnt, 0x4008_f510, &le(blocks - section), Some("65534")), "ERR 1");
    assert_eq!(ioctl(&mnt, 0x4008_f510, &le(blocks - 1), None), "ERR 22");
    assert_eq!(
        ioctl(&mnt, 0x4008_f510, &le(blocks), None),
        format!("OK {}", le(blocks))
    );
    assert_eq!(ioctl(&mnt, 0x4008_f510, &le(blocks - section), None), "ERR 95");
    move_range_moves_as_linux(&mnt, tmp.path());

    // Atomic writes are the owner's: another user gets EACCES.
    fs::set_permissions(&a, fs::Permissions::from_mode(0o666)).unwrap();
    assert_eq!(ioctl(&a, 0x0000_f501, "", Some("65534")), "ERR 13");

    // Defragment, as f2fs_io asks for it: the data stays.
    let data = fs::read(&a).unwrap();
    ok(&["f2fs_io", "defrag_file", "0", "32768", a_s]);
    assert_eq!(fs::read(&a).unwrap(), data);

    // A commit is durable at once: a killed mount keeps it.
    let c = mnt.join("committed");
    fs::write(&c, b"old").unwrap();
    ok(&[
        "f2fs_io",
        "write",
        "1",
        "0",
        "3",
        "inc_num",
        "atomic_commit",
        c.to_str().unwrap(),
    ]);
    let want = fs::read(&c).unwrap();
    assert_eq!(want.len(), 3 * 4096);
    m.kill();
    fsck::clean(&img, tmp.path());
    let mut m = Mounted::start(&img, &mnt, &log, &["-o", "allow_other"]);
    assert_eq!(fs::read(mnt.join("committed")).unwrap(), want);
    assert_eq!(fs::read(mnt.join("atomic")).unwrap(), data);
    // Pins (`f2fs_io pinfile`): set and read back; fallocate gives the pinned file
    // zeroed blocks; a foreground GC leaves them; another user gets EACCES, a
    // defragment EINVAL; unpinned by `SET_PIN_FILE` 0 (f2fs_io has no command).
    let pf = mnt.join("pinned");
    fs::write(&pf, b"").unwrap();
    let pf_s = pf.to_str().unwrap();
    assert!(ok(&["f2fs_io", "pinfile", "get", pf_s]).contains("un-pinned"));
    ok(&["f2fs_io", "pinfile", "set", pf_s]);
    assert!(ok(&["f2fs_io", "pinfile", "get", pf_s]).contains("pinned with 0"));
    assert!(ok(&["f2fs_io", "getflags", pf_s]).contains("nocow(pinned)"));
    ok(&["f2fs_io", "fallocate", "0", "0", "1048576", pf_s]);
    assert_eq!(fs::read(&pf).unwrap(), vec![0u8; 1 << 20]);
    ok(&["f2fs_io", "write", "1", "0", "4", "inc_num", "buffered", pf_s]);
    let pinned_data = fs::read(&pf).unwrap();
    assert_eq!(ioctl(&mnt, 0x4004_f506, "01000000", None), "OK 01000000");
    assert_eq!(fs::read(&pf).unwrap(), pinned_data);
    assert_eq!(ioctl(&pf, 0x4004_f50d, "01000000", Some("65534")), "ERR 13");
    let range = format!("{}{}", "00".repeat(8), hex_le(1 << 20));
    assert_eq!(ioctl(&pf, 0xc010_f508, &range, None), "ERR 22");
    assert_eq!(ioctl(&pf, 0x0000_f501, "", None), "ERR 22");
    assert_eq!(ioctl(&pf, 0x4004_f50d, "00000000", None), "OK 00000000");
    assert!(ok(&["f2fs_io", "pinfile", "get", pf_s]).contains("un-pinned"));

    let (unmounted, text) = m.unmount();
    assert!(unmounted, "{text}");
    fsck::clean(&img, tmp.path());
}

/// `F2FS_IOC_MOVE_RANGE` through python3: `src` opened with `src_flags`, the target
/// `dst` (`None`: descriptor 1000, not open) with `dst_flags` (python's `os` names);
/// prints `OK <hex of the argument after>` or `ERR <errno>`.
fn move_range(src: &Path, src_flags: &str, dst: Option<(&Path, &str)>, pos_in: u64, pos_out: u64, len: u64) -> String {
    let open_dst = match dst {
        Some((d, flags)) => format!("os.open({:?}, {flags}, 0o644)", d.to_str().unwrap()),
        None => "1000".to_owned(),
    };
    let script = format!(
        "import fcntl,os,struct\n\
         fd=os.open({:?}, {src_flags})\n\
         a=bytearray(struct.pack('=I4xQQQ', {open_dst}, {pos_in}, {pos_out}, {len}))\n\
         try:\n  fcntl.ioctl(fd, 0xc020f509, a, True)\n  print('OK', a[8:].hex())\n\
         except OSError as e:\n  print('ERR', e.errno)\n",
        src.to_str().unwrap()
    );
    ok(&["/usr/bin/python3", "-c", &script]).trim().to_owned()
}

/// `MOVE_RANGE` on the mount at `mnt` (`scratch`: a directory off the mount): the
/// source's blocks become the target's, the source's range a hole, the target grown to
/// the bytes moved; Linux's errnos for the descriptors and ranges it refuses.
fn move_range_moves_as_linux(mnt: &Path, scratch: &Path) {
    const B: usize = 4096;
    let (src, dst) = (mnt.join("move-src"), mnt.join("move-dst"));
    let data: Vec<u8> = (0..10 * B + 100).map(|i| (i % 251) as u8 ^ (i / B) as u8).collect();
    fs::write(&src, &data).unwrap();
    fs::write(&dst, vec![b'y'; 3 * B]).unwrap();
    // From block 1 to the end of file (len 0), to block 2 of the target.
    let got = move_range(&src, "os.O_RDWR", Some((&dst, "os.O_RDWR")), B as u64, 2 * B as u64, 0);
    let echoed = format!("{}{}{}", hex_le(B as u64), hex_le(2 * B as u64), hex_le(0));
    assert_eq!(got, format!("OK {echoed}"), "the argument comes back as it went");
    let d = fs::read(&dst).unwrap();
    assert_eq!(d.len(), 2 * B + 9 * B + 100, "the target covers the bytes moved");
    assert_eq!(&d[..2 * B], &vec![b'y'; 2 * B][..]);
    assert_eq!(&d[2 * B..], &data[B..]);
    let s = fs::read(&src).unwrap();
    assert_eq!(s.len(), data.len(), "the source keeps its size");
    assert_eq!(&s[..B], &data[..B]);
    assert!(s[B..].iter().all(|&b| b == 0), "the source's range is a hole");
    // Within one file, backwards, a whole block.
    assert!(move_range(&dst, "os.O_RDWR", Some((&dst, "os.O_RDWR")), 2 * B as u64, 0, B as u64).starts_with("OK"));
    assert_eq!(&fs::read(&dst).unwrap()[..B], &data[B..2 * B]);
    // Refusals, as Linux's: the target read-only or not open (EBADF), the source not
    // open for writing (EBADF), a target on another file system (EXDEV), overlapping
    // ranges of one file and unaligned ones (EINVAL), a directory (EINVAL).
    let elsewhere = scratch.join("not-on-the-mount");
    assert_eq!(
        move_range(&src, "os.O_RDWR", Some((&dst, "os.O_RDONLY")), 0, 0, B as u64),
        "ERR 9"
    );
    assert_eq!(move_range(&src, "os.O_RDWR", None, 0, 0, B as u64), "ERR 9");
    assert_eq!(
        move_range(&src, "os.O_RDONLY", Some((&dst, "os.O_RDWR")), 0, 0, B as u64),
        "ERR 9"
    );
    assert_eq!(
        move_range(
            &src,
            "os.O_RDWR",
            Some((&elsewhere, "os.O_RDWR|os.O_CREAT")),
            0,
            0,
            B as u64
        ),
        "ERR 18"
    );
    assert_eq!(
        move_range(&dst, "os.O_RDWR", Some((&dst, "os.O_RDWR")), 0, B as u64, 2 * B as u64),
        "ERR 22"
    );
    assert_eq!(
        move_range(&src, "os.O_RDWR", Some((&dst, "os.O_RDWR")), 1, 0, B as u64),
        "ERR 22"
    );
    assert_eq!(
        move_range(&src, "os.O_RDWR", Some((&dst, "os.O_RDWR")), 0, 0, 100 * B as u64),
        "ERR 22"
    );
    assert_eq!(
        move_range(
            &src,
            "os.O_RDWR",
            Some((mnt, "os.O_RDONLY|os.O_DIRECTORY")),
            0,
            0,
            B as u64
        ),
        "ERR 9"
    );
}

/// `v` as 8 little-endian bytes in hex.
fn hex_le(v: u64) -> String {
    v.to_le_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// `struct f2fs_gc_range` (`u32 sync`, padding, `u64 start, len`) in hex.
fn gc_range_arg(sync: u32, start: u64, len: u64) -> String {
    format!(
        "{}00000000{}{}",
        hex_le(u64::from(sync))[..8].to_owned(),
        hex_le(start),
        hex_le(len)
    )
}

/// `F2FS_IOC_GARBAGE_COLLECT_RANGE`.
const GC_RANGE: u32 = 0x4018_f50b;

/// The data extents of `name` in the root of `img` as its last checkpoint has them:
/// `(file block, block address, blocks)`.
fn extents_on_image(img: &Path, name: &str) -> Vec<(u64, u64, u64)> {
    let fs = uf2fs_core::Fs::open(img, &[]).unwrap();
    let ino = fs.lookup(fs.root(), name.as_bytes()).unwrap();
    fs.extents(ino).unwrap()
}

/// `GARBAGE_COLLECT_RANGE` as Linux 6.1 answers it (Debian's `f2fs_io` 1.15 has no
/// `gc_range`: python's `fcntl.ioctl`): the section of a half-overwritten file's
/// first segment is collected (its blocks move out, the contents stay), with `sync`
/// and without; then the errnos where Linux's loop stops: `ENODATA` at a segment
/// without valid blocks, `EAGAIN` at an active log's section, `EINVAL` outside the
/// main area, `EPERM` for a caller without `CAP_SYS_ADMIN`. `fsck.f2fs -f` clean after.
#[test]
fn gc_range_collects_the_sections_of_the_range() {
    if !fuse_available(&[("setpriv", "util-linux"), ("python3", "python3")]) {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipping: the CAP_SYS_ADMIN checks need root and a second user");
        return;
    }
    let Volume { tmp, img, mnt } = fresh_volume("mount-gc-range-", "128M");
    let log = tmp.path().join("mount.log");
    let mut m = Mounted::start(&img, &mnt, &log, &["-o", "allow_other"]);
    let (main, max, per_seg) = {
        let sb = uf2fs_core::Fs::open(&img, &[]).unwrap().superblock().clone();
        let per_seg = u64::from(sb.blocks_per_seg());
        (
            u64::from(sb.main_blkaddr),
            u64::from(sb.segment0_blkaddr) + u64::from(sb.segment_count) * per_seg,
            per_seg,
        )
    };
    let seg_of = |addr: u64| (addr - main) / per_seg;
    // Two files of three segments' blocks each, checkpointed; then every other block
    // of their first segments overwritten, checkpointed: those segments are half valid.
    let mut files = Vec::new();
    for (i, name) in ["a", "b"].iter().enumerate() {
        let data: Vec<u8> = (0..3 * 512 * 4096u32)
            .map(|k| (k / 4096 + i as u32 * 7) as u8)
            .collect();
        fs::write(mnt.join(name), &data).unwrap();
        files.push((name.to_string(), data));
    }
    assert_eq!(ioctl(&mnt, 0x0000_f507, "", None), "OK");
    let mut victims = Vec::new();
    for (name, data) in &mut files {
        let ext = extents_on_image(&img, name);
        let first = ext[0].1;
        // The first whole segment of the file.
        let seg = seg_of(first).saturating_add(u64::from((first - main) % per_seg != 0));
        victims.push(seg);
        let f = fs::OpenOptions::new().write(true).open(mnt.join(&*name)).unwrap();
        use std::os::unix::fs::FileExt;
        for &(fblk, addr, n) in &ext {
            for k in 0..n {
                if seg_of(addr + k) == seg && (addr + k) % 2 == 0 {
                    let at = ((fblk + k) * 4096) as usize;
                    data[at..at + 4096].fill(0xa5);
                    f.write_all_at(&data[at..at + 4096], at as u64).unwrap();
                }
            }
        }
    }
    assert_eq!(ioctl(&mnt, 0x0000_f507, "", None), "OK");
    // Collected: `a`'s segment with sync, `b`'s without (len 0: one section).
    for (sync, &seg) in [1, 0].iter().zip(&victims) {
        let start = main + seg * per_seg;
        assert_eq!(
            ioctl(&mnt, GC_RANGE, &gc_range_arg(*sync, start, 0), None),
            format!("OK {}", gc_range_arg(*sync, start, 0))
        );
    }
    assert_eq!(ioctl(&mnt, 0x0000_f507, "", None), "OK");
    for ((name, data), &seg) in files.iter().zip(&victims) {
        assert!(fs::read(mnt.join(name)).unwrap() == *data, "{name} reads as written");
        let left: Vec<_> = extents_on_image(&img, name)
            .into_iter()
            .filter(|&(_, addr, n)| (addr..addr + n).any(|b| seg_of(b) == seg))
            .collect();
        assert!(
            left.is_empty(),
            "{name} has {} extents left in segment {seg}",
            left.len()
        );
    }
    // The collected segment has no valid block now: ENODATA, as Linux's victim check.
    let start = main + victims[0] * per_seg;
    assert_eq!(ioctl(&mnt, GC_RANGE, &gc_range_arg(1, start, 0), None), "ERR 61");
    // The active logs' sections (as the last checkpoint has them): EAGAIN, or ENODATA
    // for a log whose segment has no valid block yet (Linux checks that first).
    let cp = uf2fs_core::Fs::open(&img, &[]).unwrap().checkpoint().clone();
    let logs: Vec<u32> = cp.cur_node_segno[..3]
        .iter()
        .chain(&cp.cur_data_segno[..3])
        .copied()
        .collect();
    let answers: Vec<String> = logs
        .iter()
        .map(|&seg| {
            ioctl(
                &mnt,
                GC_RANGE,
                &gc_range_arg(1, main + u64::from(seg) * per_seg, 0),
                None,
            )
        })
        .collect();
    assert!(
        answers.iter().all(|a| a == "ERR 11" || a == "ERR 61"),
        "{logs:?}: {answers:?}"
    );
    assert!(answers.iter().any(|a| a == "ERR 11"), "{logs:?}: {answers:?}");
    // Outside the main area, or overflowing: EINVAL. Another user: EPERM.
    assert_eq!(ioctl(&mnt, GC_RANGE, &gc_range_arg(1, main - 1, 0), None), "ERR 22");
    assert_eq!(
        ioctl(&mnt, GC_RANGE, &gc_range_arg(1, main, max - main), None),
        "ERR 22"
    );
    assert_eq!(
        ioctl(&mnt, GC_RANGE, &gc_range_arg(1, main + 1, u64::MAX), None),
        "ERR 22"
    );
    assert_eq!(
        ioctl(&mnt, GC_RANGE, &gc_range_arg(1, start, 0), Some("65534")),
        "ERR 1"
    );

    let (unmounted, text) = m.unmount();
    assert!(unmounted, "{text}");
    fsck::clean(&img, tmp.path());
    for (name, data) in &files {
        let fs = uf2fs_core::Fs::open(&img, &[]).unwrap();
        let ino = fs.lookup(fs.root(), name.as_bytes()).unwrap();
        let mut buf = vec![0u8; data.len()];
        assert_eq!(fs.read(ino, 0, &mut buf).unwrap(), data.len());
        assert!(buf == *data, "{name} on the image after unmount");
    }
}
