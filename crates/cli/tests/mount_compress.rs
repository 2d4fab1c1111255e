//! Compressed files on the mount, as Linux writes them, judged by f2fs-tools'
//! `f2fs_io` (its compression commands) and `fsck.f2fs -f`: `+c` on a directory and
//! on an empty file, files written, appended and overwritten through the mount
//! stored compressed with the mount's `compress_algorithm=`; `GET_COMPRESS_BLOCKS`,
//! `RELEASE/RESERVE_COMPRESS_BLOCKS` (a released file refuses writes with EPERM),
//! `GET/SET_COMPRESS_OPTION`, and `COMPRESS_FILE`/`DECOMPRESS_FILE` under
//! `compress_mode=user` (EOPNOTSUPP otherwise).
//!
//! Needs /dev/fuse, fusermount3 and f2fs_io (f2fs-tools). Without them the test
//! prints why and passes, unless UF2FS_REQUIRE_FUSE is set.

mod common;

use common::fsck;
use common::mount::{fuse_available, Mounted, Volume};
use common::tool::{ok, run};
use std::fs;
use std::io::Write;
use std::path::Path;

/// The number `f2fs_io get_cblocks|release_cblocks|reserve_cblocks` prints.
fn cblocks(cmd: &str, file: &Path) -> u64 {
    let text = ok(&["f2fs_io", cmd, file.to_str().unwrap()]);
    text.split_whitespace()
        .rev()
        .find_map(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("f2fs_io {cmd}: {text}"))
}

/// Data that compresses: words about F2FS, fixed by `seed`.
fn text(n: usize, seed: u32) -> Vec<u8> {
    uf2fs_testkit::data::text(&uf2fs_testkit::data::F2FS_WORDS, n, seed)
}

fn fsync(path: &Path) {
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .sync_all()
        .unwrap();
}

#[test]
fn compressed_files_and_f2fs_io_compression_commands() {
    if !fuse_available(&[("f2fs_io", "f2fs-tools")]) {
        return;
    }
    let v = Volume::empty("mount-compress-");
    v.mkfs("128M", &["-O", "extra_attr,compression"]);
    let log = v.tmp.path().join("mount.log");
    let opts = "compress_algorithm=zstd:3,compress_log_size=3,compress_chksum,compress_extension=txt";
    let mut m = Mounted::start(&v.img, &v.mnt, &log, &["-o", opts]);
    let dir = v.mnt.join("c");
    fs::create_dir(&dir).unwrap();
    ok(&["f2fs_io", "setflags", "compression", dir.to_str().unwrap()]);
    // Written in pieces, appended, overwritten in the middle of a cluster.
    let f = dir.join("data");
    let mut want = text(300 * 1024 + 77, 1);
    {
        let mut w = fs::File::create(&f).unwrap();
        for piece in want.chunks(10_000) {
            w.write_all(piece).unwrap();
        }
    }
    fsync(&f);
    let saved = cblocks("get_cblocks", &f);
    assert!(saved > 0, "nothing saved");
    let more = text(100 * 1024, 2);
    fs::OpenOptions::new()
        .append(true)
        .open(&f)
        .unwrap()
        .write_all(&more)
        .unwrap();
    want.extend_from_slice(&more);
    {
        use std::os::unix::fs::FileExt;
        let w = fs::OpenOptions::new().write(true).open(&f).unwrap();
        w.write_all_at(b"overwritten in a compressed cluster", 40_000).unwrap();
        want[40_000..40_035].copy_from_slice(b"overwritten in a compressed cluster");
    }
    fsync(&f);
    assert_eq!(fs::read(&f).unwrap(), want);
    assert!(cblocks("get_cblocks", &f) > saved);
    let coption = ok(&["f2fs_io", "get_coption", f.to_str().unwrap()]);
    assert!(
        coption.contains("algorithm:2") && coption.contains("log size:3"),
        "{coption}"
    );
    // Released: writes are EPERM; reserved again, they work.
    let released = cblocks("release_cblocks", &f);
    assert!(released > 0);
    assert_eq!(cblocks("get_cblocks", &f), 0);
    let e = fs::OpenOptions::new()
        .append(true)
        .open(&f)
        .and_then(|mut w| w.write_all(b"x").and_then(|()| w.sync_all()))
        .unwrap_err();
    assert_eq!(e.raw_os_error(), Some(1), "{e}");
    // Under FUSE's writeback cache (the default) the refusal came at fsync, and the
    // kernel keeps the size the refused write gave the file until the inode leaves its
    // cache (a remount here): nothing of it was stored.
    let (unmounted, text_) = m.unmount();
    assert!(unmounted, "{text_}");
    drop(m);
    m = Mounted::start(&v.img, &v.mnt, &log, &["-o", opts]);
    assert_eq!(fs::read(&f).unwrap(), want);
    assert_eq!(cblocks("reserve_cblocks", &f), released);
    fs::OpenOptions::new()
        .append(true)
        .open(&f)
        .unwrap()
        .write_all(b"tail")
        .unwrap();
    want.extend_from_slice(b"tail");
    // A new empty +c file takes other options; one with blocks is EFBIG.
    let g = dir.join("other");
    fs::write(&g, b"").unwrap();
    ok(&["f2fs_io", "set_coption", "1", "2", g.to_str().unwrap()]);
    let coption = ok(&["f2fs_io", "get_coption", g.to_str().unwrap()]);
    assert!(
        coption.contains("algorithm:1") && coption.contains("log size:2"),
        "{coption}"
    );
    let (done, said) = run(&["f2fs_io", "set_coption", "1", "2", f.to_str().unwrap()]);
    assert!(!done && said.contains("too large"), "{said}");
    // An extension named by compress_extension= is compressed outside +c directories.
    let t = v.mnt.join("notes.txt");
    fs::write(&t, text(64 * 1024, 3)).unwrap();
    fsync(&t);
    assert!(cblocks("get_cblocks", &t) > 0);
    // Outside compress_mode=user, COMPRESS_FILE and DECOMPRESS_FILE are EOPNOTSUPP.
    let (done, said) = run(&["f2fs_io", "decompress", f.to_str().unwrap()]);
    assert!(!done && said.contains("not supported"), "{said}");
    let (unmounted, text_) = m.unmount();
    assert!(unmounted, "{text_}");
    fsck::clean(&v.img, v.tmp.path());

    // compress_mode=user: writeback leaves clusters plain until COMPRESS_FILE.
    let mut m = Mounted::start(
        &v.img,
        &v.mnt,
        &log,
        &["-o", "compress_mode=user,compress_algorithm=lz4"],
    );
    assert_eq!(fs::read(&f).unwrap(), want);
    let u = dir.join("user");
    let data = text(200 * 1024, 4);
    fs::write(&u, &data).unwrap();
    fsync(&u);
    assert_eq!(cblocks("get_cblocks", &u), 0);
    ok(&["f2fs_io", "compress", u.to_str().unwrap()]);
    assert!(cblocks("get_cblocks", &u) > 0);
    ok(&["f2fs_io", "decompress", f.to_str().unwrap()]);
    assert_eq!(cblocks("get_cblocks", &f), 0);
    assert_eq!(fs::read(&u).unwrap(), data);
    assert_eq!(fs::read(&f).unwrap(), want);
    // fallocate as Linux 6.1: reserving works on a compressed file, punching does not.
    let p = u.to_str().unwrap();
    ok(&["fallocate", "-o", "1048576", "-l", "65536", p]);
    assert_eq!(fs::metadata(&u).unwrap().len(), 1048576 + 65536);
    let (done, said) = run(&["fallocate", "-p", "-o", "0", "-l", "4096", p]);
    assert!(!done && said.contains("unsupported"), "EOPNOTSUPP: {said}");
    // Atomic writes as Linux 6.1: a compressed file with blocks is refused (EINVAL,
    // which f2fs_io does not print; the core test checks the errno); an empty
    // one stops being compressed and takes it.
    let (done, said) = run(&["f2fs_io", "write", "1", "0", "4", "inc_num", "atomic_commit", p]);
    assert!(!done && said.contains("setting atomic file mode failed"), "{said}");
    let e = dir.join("empty");
    fs::write(&e, b"").unwrap();
    assert!(ok(&["f2fs_io", "getflags", e.to_str().unwrap()]).contains("compression"));
    ok(&[
        "f2fs_io",
        "write",
        "1",
        "0",
        "4",
        "inc_num",
        "atomic_commit",
        e.to_str().unwrap(),
    ]);
    assert_eq!(fs::metadata(&e).unwrap().len(), 4 * 4096);
    assert!(!ok(&["f2fs_io", "getflags", e.to_str().unwrap()]).contains("compression"));
    // What compression saved, volume-wide (docs/json.md): every compressed file's
    // `GET_COMPRESS_BLOCKS` adds up to the reserved blocks.
    let out = common::uf2fs().run([
        std::ffi::OsString::from("status"),
        std::ffi::OsString::from("--json"),
        v.mnt.clone().into(),
    ]);
    let doc: serde_json::Value = serde_json::from_slice(out.assert_ok()).expect("status --json is JSON");
    let c = &doc["compression"];
    let reserved: u64 = [&f, &g, &u, &t].iter().map(|x| cblocks("get_cblocks", x)).sum();
    assert_eq!(c["reserved_blocks"].as_u64(), Some(reserved), "{doc}");
    assert!(c["saved_blocks"].as_u64().unwrap() >= reserved, "{doc}");
    assert_eq!(c["files"].as_u64(), Some(4), "{doc}");
    let (unmounted, text_) = m.unmount();
    assert!(unmounted, "{text_}");
    fsck::clean(&v.img, v.tmp.path());
}
