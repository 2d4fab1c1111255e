//! Images written by Linux F2FS itself, read back with `uf2fs ls -lRa`, `cat` and
//! `extract` and compared with what the kernel saw.
//!
//! The fixtures in `tests/fixtures/kernel` were made by `scripts/kernel/make-fixtures.sh`:
//! `uf2fs mkfs` made a 64 MiB image, Debian's kernel in QEMU mounted it read-write, ran
//! `scripts/kernel/workloads/fixture.sh` (inline and multi-level directories, inline and
//! block files, an 8 MiB file, a sparse file with data past 8 GiB in the double-indirect
//! range, symlinks stored inline and in a block, hard links, xattrs inline and in an xattr
//! node, a fifo, owners, special mode bits) and unmounted it. `NAME.manifest` is what the
//! kernel reported before unmounting: one TAB-separated line per entry,
//! `path type mode nlink uid gid size mtime sha256 target xattrs chunks` ("-" = not
//! applicable; `chunks` are `offset:length:sha256` digests of ranges of files too big to
//! hash whole). No QEMU is needed here: the images are committed, gzip'd.

mod common;

use common::{scratch, uf2fs};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use uf2fs_testkit::lsfmt::{mode_string, parse_long_line, utc_minute};
use uf2fs_testkit::run::{arg, path_arg};
use uf2fs_testkit::tree::is_root;

const FIXTURES: [&str; 6] = [
    "default",
    "extra-attr",
    "casefold",
    "compress",
    "blk16",
    "blk16-packed-ssa",
];

macro_rules! per_fixture {
    ($($module:ident => $name:literal),*) => {$(
        mod $module {
            #[test]
            fn info_reads_the_kernel_checkpoint() {
                super::info($name);
            }
            #[test]
            fn ls_matches_the_kernel() {
                super::ls($name);
            }
            #[test]
            fn cat_matches_the_kernel() {
                super::cat($name);
            }
            #[test]
            fn extract_matches_the_kernel() {
                super::extract($name);
            }
        }
    )*};
}

per_fixture!(default => "default", extra_attr => "extra-attr", compress => "compress", blk16 => "blk16",
    blk16_packed_ssa => "blk16-packed-ssa");

/// The 16 KiB-block fixture (`tests/fixtures/blk16`, made by
/// `scripts/make-blk16-fixture.py` with an f2fs-tools build that has `mkfs.f2fs -b
/// 16384`; not written by Linux): read back as the kernel fixtures are (above, against
/// what sload.f2fs stored), and what only such an image has.
mod blk16_geometry {
    use super::*;

    #[test]
    fn files_reach_the_indirect_node_plain_and_compressed() {
        let fx = fixture("blk16");
        let fs = uf2fs_core::Fs::open(&fx.img, &[]).unwrap();
        assert_eq!(fs.superblock().block_size(), 16384);
        let plain = fs.resolve(b"/big/indirect.bin", true).unwrap();
        let st = fs.stat(plain).unwrap();
        assert_eq!(st.blksize, 16384);
        // 3936 addresses in the inode, 4090 in each direct node: block 12116 on is in
        // the first indirect node's first direct node.
        assert!(st.size > 12116 * 16384, "{}", st.size);
        let extents = fs.extents(plain).unwrap();
        let blocks: u64 = extents.iter().map(|e| e.2).sum();
        assert_eq!(blocks, st.size.div_ceil(16384), "every block of the file is mapped");
        // st_blocks: 512-byte sectors of the data blocks (32 per 16 KiB block) and of
        // the node blocks (the inode is not counted).
        assert!(st.blocks >= blocks * 32, "{} sectors for {blocks} blocks", st.blocks);
        let z = fs.resolve(b"/compress/indirect.z", true).unwrap();
        let c = fs.compression(z).unwrap().expect("a compressed file");
        assert_eq!((c.algorithm, c.cluster_blocks), ("lz4", 4));
        // 3936 addresses in the inode and 4088 (whole clusters) per direct node.
        assert!(fs.stat(z).unwrap().size > (3936 + 2 * 4088) * 16384);
        assert!(c.compressed_clusters > 3000, "{c:?}");
    }

    /// A read-write open of a copy writes 16 KiB blocks that `uf2fs cat` reads back,
    /// and leaves the fixture's own files as they were (crates/core/tests/blk16_rw.rs
    /// covers overwrites, truncates, GC and recovery).
    #[test]
    fn read_write_opens_write_16k_blocks() {
        let fx = fixture("blk16");
        let tmp = scratch("blk16-rw");
        let img = tmp.path().join("copy.img");
        fs::copy(&fx.img, &img).unwrap();
        let data: Vec<u8> = (0..3_000_017u32).map(|i| (i * 7 + (i >> 14)) as u8).collect();
        {
            let fs = uf2fs_core::Fs::open_rw(&img, &[]).unwrap();
            let dir = fs.mkdir(fs.root(), b"written", 0o755, 0, 0).unwrap().ino;
            let ino = fs.create(dir, b"file", 0o644, 0, 0).unwrap().ino;
            fs.write(ino, 0, &data).unwrap();
            fs.unmount().unwrap();
        }
        let bin = uf2fs();
        let got = bin.run([arg(b"cat"), path_arg(&img), arg(b"/written/file")]);
        assert!(got.assert_ok() == &data[..], "written file read back");
        let big = bin.run([arg(b"cat"), path_arg(&img), arg(b"/big/indirect.bin")]);
        let was = bin.run([arg(b"cat"), path_arg(&fx.img), arg(b"/big/indirect.bin")]);
        assert!(big.assert_ok() == was.assert_ok(), "a fixture file changed");
    }

    /// The FUSE mount of a copy, read-write: create, write, overwrite, truncate,
    /// rename and unlink through the kernel's page cache (4 KiB pages over 16 KiB
    /// blocks), a clean unmount, then an fsync'd file and SIGKILL (no unmount
    /// checkpoint): the next mount's roll-forward brings the fsync'd bytes back.
    #[test]
    fn the_mount_writes_16k_volumes() {
        use std::io::Write;
        if !common::mount::fuse_available(&[]) {
            return;
        }
        let fx = fixture("blk16");
        let tmp = scratch("blk16-mount");
        let img = tmp.path().join("copy.img");
        fs::copy(&fx.img, &img).unwrap();
        let mnt = tmp.path().join("mnt");
        fs::create_dir(&mnt).unwrap();
        let log = tmp.path().join("mount.log");
        let data: Vec<u8> = (0..2_500_003u32).map(|i| (i * 13 + (i >> 12)) as u8).collect();
        let mut want = data.clone();
        {
            let mut m = common::mount::Mounted::start(&img, &mnt, &log, &[]);
            fs::create_dir(mnt.join("d")).unwrap();
            fs::write(mnt.join("d/f"), &data).unwrap();
            let mut f = fs::OpenOptions::new().write(true).open(mnt.join("d/f")).unwrap();
            f.seek(SeekFrom::Start(16_380)).unwrap();
            f.write_all(b"across a block boundary").unwrap();
            want[16_380..16_403].copy_from_slice(b"across a block boundary");
            f.set_len(1_000_001).unwrap();
            want.truncate(1_000_001);
            drop(f);
            fs::write(mnt.join("gone"), b"x".repeat(70_000)).unwrap();
            fs::remove_file(mnt.join("gone")).unwrap();
            fs::rename(mnt.join("d/f"), mnt.join("d/g")).unwrap();
            assert!(fs::read(mnt.join("d/g")).unwrap() == want, "read back on the mount");
            let (ok, text) = m.unmount();
            assert!(ok, "unmount: {text}");
        }
        let bin = uf2fs();
        let got = bin.run([arg(b"cat"), path_arg(&img), arg(b"/d/g")]);
        assert!(got.assert_ok() == &want[..], "read back after unmount");
        {
            let mut m = common::mount::Mounted::start(&img, &mnt, &log, &[]);
            let mut f = fs::File::create(mnt.join("synced")).unwrap();
            f.write_all(&data[..300_000]).unwrap();
            f.sync_all().unwrap();
            m.kill();
        }
        {
            let mut m = common::mount::Mounted::start(&img, &mnt, &log, &[]);
            assert!(
                fs::read(mnt.join("synced")).unwrap() == data[..300_000],
                "fsync'd file after SIGKILL"
            );
            assert!(fs::read(mnt.join("d/g")).unwrap() == want, "earlier file after SIGKILL");
            let (ok, text) = m.unmount();
            assert!(ok, "unmount: {text}");
        }
    }

    /// Android sparse images of the 16 KiB volume (img2simg with 4 and 16 KiB chunks)
    /// read in place as the raw image does. Skipped, saying why, without img2simg
    /// unless UF2FS_REQUIRE_LIBSPARSE is set.
    #[test]
    fn sparse_images_of_it_read_as_the_raw_image() {
        use std::process::Command;
        let have = Command::new("img2simg")
            .output()
            .is_ok_and(|o| o.status.code().is_some());
        if !have {
            assert!(
                std::env::var_os("UF2FS_REQUIRE_LIBSPARSE").is_none(),
                "UF2FS_REQUIRE_LIBSPARSE is set but img2simg is not installed"
            );
            eprintln!("skipping: img2simg is not installed (Debian package android-sdk-libsparse-utils)");
            return;
        }
        let fx = fixture("blk16");
        let tmp = scratch("blk16-sparse-");
        let bin = uf2fs();
        let raw_ls = bin.run([arg(b"ls"), arg(b"-lR"), path_arg(&fx.img)]);
        let raw_big = bin.run([arg(b"cat"), path_arg(&fx.img), arg(b"/big/indirect.bin")]);
        for chunk in ["4096", "16384"] {
            let simg = tmp.path().join(format!("blk16-{chunk}.simg"));
            let out = Command::new("img2simg")
                .arg(&fx.img)
                .arg(&simg)
                .arg(chunk)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "img2simg: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let ls = bin.run([arg(b"ls"), arg(b"-lR"), path_arg(&simg)]);
            assert!(
                ls.assert_ok() == raw_ls.assert_ok(),
                "ls -lR of the {chunk}-byte-chunk sparse image"
            );
            let big = bin.run([arg(b"cat"), path_arg(&simg), arg(b"/big/indirect.bin")]);
            assert!(
                big.assert_ok() == raw_big.assert_ok(),
                "cat of the {chunk}-byte-chunk sparse image"
            );
        }
    }

    /// Runs the reading commands on a damaged copy `img`; each must end within the
    /// limit without a panic or signal, and a failure print one `uf2fs: ` line.
    fn read_everything(img: &Path, out: &Path, what: &str, problems: &mut Vec<String>) {
        use std::ffi::OsStr;
        use std::time::Duration;
        use uf2fs_testkit::run::run_with_timeout;
        let _ = fs::remove_dir_all(out);
        let (img, out) = (img.as_os_str(), out.as_os_str());
        let runs: [Vec<&OsStr>; 6] = [
            vec!["info".as_ref(), img],
            vec!["ls".as_ref(), "-l".as_ref(), "-R".as_ref(), img],
            vec!["cat".as_ref(), img, "/small/size-655360".as_ref()],
            vec!["cat".as_ref(), img, "/deep/a/b/c/d/leaf".as_ref()],
            vec!["cat".as_ref(), img, "/compress/text.z".as_ref()],
            vec!["extract".as_ref(), img, "/xattrs".as_ref(), out],
        ];
        for args in runs {
            let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_uf2fs"));
            cmd.args(&args);
            let o = run_with_timeout(&mut cmd, Duration::from_secs(10));
            if let Some(p) = o.robustness_problem() {
                problems.push(format!("{what}: {p}"));
            }
        }
    }

    /// Truncated and bit-flipped copies of the 16 KiB image end cleanly: never a
    /// panic, hang or runaway allocation. Flips aim at the superblocks, the
    /// checkpoint, NAT and SIT blocks and the inode blocks of the files read.
    #[test]
    fn damaged_copies_fail_cleanly() {
        use uf2fs_testkit::corrupt::{sparse_copy, Flipper};
        let fx = fixture("blk16");
        let bs = 16384u64;
        let fs = uf2fs_core::Fs::open(&fx.img, &[]).unwrap();
        let sb = fs.superblock().clone();
        let mut targets: Vec<u64> = vec![
            0,
            1,
            sb.cp_blkaddr as u64,
            sb.cp_blkaddr as u64 + 1,
            sb.nat_blkaddr as u64,
            sb.nat_blkaddr as u64 + 512,
            sb.sit_blkaddr as u64,
        ];
        for p in [
            "/",
            "/small",
            "/bigdir",
            "/deep/a/b/c/d/leaf",
            "/compress/text.z",
            "/xattrs/long",
            "/big/indirect.bin",
        ] {
            let ino = fs.resolve(p.as_bytes(), false).unwrap();
            targets.push(fs.node_blkaddr(ino).unwrap());
        }
        drop(fs);
        let tmp = scratch("blk16-bad-");
        let img = tmp.path().join("damaged.img");
        let out = tmp.path().join("out");
        sparse_copy(&fx.img, &img).unwrap();
        let mut problems = Vec::new();
        let len = fs::metadata(&img).unwrap().len();
        let cuts = [
            0,
            1124,
            bs,
            2 * bs,
            sb.cp_blkaddr as u64 * bs + 2048,
            sb.nat_blkaddr as u64 * bs,
            sb.main_blkaddr as u64 * bs,
            len / 2,
        ];
        for cut in cuts {
            fs::OpenOptions::new()
                .write(true)
                .open(&img)
                .unwrap()
                .set_len(cut)
                .unwrap();
            read_everything(&img, &out, &format!("truncated to {cut} bytes"), &mut problems);
            sparse_copy(&fx.img, &img).unwrap();
        }
        let trials: u64 = std::env::var("UF2FS_FLIP_TRIALS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(60);
        let mut rng = uf2fs_testkit::Rng::new(0x16_0000);
        let mut flip = Flipper::open(&img).unwrap();
        for trial in 0..trials {
            let block = *rng.pick(&targets);
            let n = rng.range(1, 5);
            for _ in 0..n {
                flip.flip(block * bs + rng.below(bs), rng.below(8) as u8).unwrap();
            }
            let what = format!("trial {trial}: {n} bits of block {block:#x}");
            read_everything(&img, &out, &what, &mut problems);
            flip.undo().unwrap();
        }
        assert!(problems.is_empty(), "damaged 16 KiB images:\n{}", problems.join("\n"));
    }
}

/// The compressed fixture (`scripts/kernel/make-fixtures.sh compress`): one directory
/// per compression setting Linux wrote with. Besides reading back as the others do
/// (above), each directory's files must be compressed files with that setting, and
/// hold both compressed and plain clusters: so every decoder really ran.
mod compressed_clusters {
    #[test]
    fn every_setting_was_written_compressed_and_is_decoded() {
        super::compress_settings();
    }
}

fn compress_settings() {
    let fx = fixture("compress");
    let fs = uf2fs_core::Fs::open(&fx.img, &[]).unwrap();
    let root = fs.root();
    // Directory name: algorithm[-level]-cLOG[-sum], as workloads/compress.sh names it.
    let want = [
        ("lzo-c2", "lzo", 4, false),
        ("lzo-rle-c3-sum", "lzo-rle", 8, true),
        ("lz4-c4-sum", "lz4", 16, true),
        ("lz4-9-c2", "lz4hc", 4, false),
        ("zstd-1-c6-sum", "zstd", 64, true),
        ("zstd-15-c8", "zstd", 256, false),
    ];
    let dirs: Vec<Vec<u8>> = fs.read_dir(root).unwrap().into_iter().map(|e| e.name).collect();
    for (dir, algorithm, cluster, checksums) in want {
        assert!(
            dirs.iter().any(|d| d == dir.as_bytes()),
            "no directory {dir} in the fixture"
        );
        let d = fs.lookup(root, dir.as_bytes()).unwrap();
        let (mut compressed, mut plain, mut files) = (0, 0, 0);
        for e in fs.read_dir(d).unwrap() {
            let c = fs
                .compression(e.ino)
                .unwrap()
                .unwrap_or_else(|| panic!("{dir}/{} is not a compressed file", String::from_utf8_lossy(&e.name)));
            assert_eq!(
                (c.algorithm, c.cluster_blocks, c.checksums),
                (algorithm, cluster, checksums),
                "{dir}"
            );
            compressed += c.compressed_clusters;
            plain += c.plain_clusters;
            files += 1;
        }
        assert_eq!(files, 9, "{dir}");
        // The text compresses; the random data cannot.
        assert!(
            compressed >= 4 && plain >= 1,
            "{dir}: {compressed} compressed and {plain} plain clusters"
        );
    }
}

/// The casefold fixture (`mkfs.f2fs -O casefold -C utf8`, filled by
/// `scripts/kernel/workloads/casefold.sh`): read back as the others are, and every
/// lookup Linux made there (`casefold.probes`) gives what it gave Linux.
mod casefold {
    #[test]
    fn info_reads_the_kernel_checkpoint() {
        super::info("casefold");
    }
    #[test]
    fn ls_matches_the_kernel() {
        super::ls("casefold");
    }
    #[test]
    fn extract_matches_the_kernel() {
        super::extract("casefold");
    }
    #[test]
    fn cat_finds_what_linux_found_by_other_cases() {
        super::casefold_probes();
    }
}

/// printf's octal escapes (`\303\237`) to bytes.
fn unescape_octal(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() + 1 && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            out.push(u8::from_str_radix(&s[i + 1..i + 4], 8).unwrap());
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

fn casefold_probes() {
    let fx = fixture("casefold");
    let raw = fs::read_to_string(fixture_dir().join("casefold.probes")).unwrap();
    let bin = uf2fs();
    let (mut found, mut missing, mut problems) = (0, 0, Vec::new());
    for line in raw.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let (what, path) = line
            .strip_prefix("probe ")
            .and_then(|l| l.split_once(' '))
            .unwrap_or_else(|| panic!("bad probe line {line:?}"));
        let mut p = b"/".to_vec();
        p.extend(unescape_octal(path));
        let out = bin.run([arg(b"cat"), path_arg(&fx.img), arg(&p)]);
        let ok = out.status.is_some_and(|s| s.success());
        match what {
            "found" => found += 1,
            "missing" => missing += 1,
            _ => panic!("bad probe line {line:?}"),
        }
        if ok != (what == "found") {
            problems.push(format!(
                "{path}: Linux: {what}, uf2fs cat: {}",
                if ok { "found" } else { "missing" }
            ));
        }
    }
    assert!(found >= 25 && missing >= 5, "{found} found, {missing} missing probes");
    assert!(
        problems.is_empty(),
        "lookups that differ from Linux's:\n{}",
        problems.join("\n")
    );
}

/// One manifest line.
#[derive(Debug, Clone)]
struct Entry {
    /// Absolute path inside the image.
    path: Vec<u8>,
    /// f d l c b p s
    kind: u8,
    /// Permission bits (with set-ID and sticky).
    perm: u32,
    nlink: u64,
    uid: u32,
    gid: u32,
    size: u64,
    mtime: i64,
    sha256: Option<String>,
    target: Option<Vec<u8>>,
    /// name -> value
    xattrs: BTreeMap<Vec<u8>, Vec<u8>>,
    /// (offset, length, sha256)
    chunks: Vec<(u64, u64, String)>,
}

impl Entry {
    fn display(&self) -> String {
        String::from_utf8_lossy(&self.path).into_owned()
    }

    /// The full mode (file type bits and permissions).
    fn mode(&self) -> u32 {
        let kind = match self.kind {
            b'f' => 0o100000,
            b'd' => 0o040000,
            b'l' => 0o120000,
            b'c' => 0o020000,
            b'b' => 0o060000,
            b'p' => 0o010000,
            _ => 0o140000,
        };
        kind | self.perm
    }
}

fn field<'a>(fields: &[&'a [u8]], i: usize) -> Option<&'a [u8]> {
    fields.get(i).copied().filter(|f| *f != b"-")
}

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).expect("manifest field is not UTF-8")
}

fn number<T: std::str::FromStr>(fields: &[&[u8]], i: usize, line: &str) -> T {
    text(fields[i])
        .parse()
        .unwrap_or_else(|_| panic!("bad field {i} in manifest line {line}"))
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len() % 2 == 0, "odd hex string {s}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

fn parse_manifest(raw: &[u8]) -> Vec<Entry> {
    let mut out = Vec::new();
    for line in raw.split(|&c| c == b'\n') {
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        let shown = String::from_utf8_lossy(line).into_owned();
        let f: Vec<&[u8]> = line.split(|&c| c == b'\t').collect();
        assert_eq!(f.len(), 12, "manifest line has {} fields: {shown}", f.len());
        let mut xattrs = BTreeMap::new();
        if let Some(list) = field(&f, 10) {
            // name=0xHEX (getfattr -e hex), comma-joined; no value means empty
            for item in text(list).split(',') {
                let (name, value) = item.split_once('=').unwrap_or((item, "0x"));
                let value = value.strip_prefix("0x").expect("hex xattr value");
                xattrs.insert(name.as_bytes().to_vec(), unhex(value));
            }
        }
        let mut chunks = Vec::new();
        if let Some(list) = field(&f, 11) {
            for item in text(list).split(',') {
                let p: Vec<&str> = item.split(':').collect();
                assert_eq!(p.len(), 3, "bad chunk {item} in {shown}");
                chunks.push((p[0].parse().unwrap(), p[1].parse().unwrap(), p[2].to_string()));
            }
        }
        out.push(Entry {
            path: f[0].to_vec(),
            kind: f[1][0],
            perm: u32::from_str_radix(text(f[2]), 8).expect("octal mode"),
            nlink: number(&f, 3, &shown),
            uid: number(&f, 4, &shown),
            gid: number(&f, 5, &shown),
            size: number(&f, 6, &shown),
            mtime: number(&f, 7, &shown),
            sha256: field(&f, 8).map(|s| text(s).to_string()),
            target: field(&f, 9).map(<[u8]>::to_vec),
            xattrs,
            chunks,
        });
    }
    out
}

/// A fixture decompressed to a scratch file (or, zstd'd, to the shared cache), with its
/// manifest.
struct Fixture {
    _dir: Option<tempfile::TempDir>,
    img: PathBuf,
    entries: Vec<Entry>,
}

impl Fixture {
    fn by_path(&self) -> BTreeMap<&[u8], &Entry> {
        self.entries.iter().map(|e| (e.path.as_slice(), e)).collect()
    }
}

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kernel")
}

/// Where fixture `name` lives: `tests/fixtures/kernel`, or its own directory for
/// images not made by Linux.
fn fixture_dir_of(name: &str) -> PathBuf {
    match name {
        "blk16" | "blk16-packed-ssa" => Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name),
        _ => fixture_dir(),
    }
}

/// A zstd'd fixture decompressed once per content into the target's tmp directory,
/// sparse (its zero runs are holes), and reused by later runs: the 16 KiB fixture is a
/// 512 MiB volume, too big to leave a copy behind per test binary run.
fn cached_zst(name: &str, zst: &Path) -> PathBuf {
    use std::io::Write;
    let bytes = fs::read(zst).unwrap_or_else(|e| panic!("{}: {e}", zst.display()));
    let key = uf2fs_testkit::rng::fnv1a(0xcbf2_9ce4_8422_2325, &bytes);
    let dir = common::work_dir().join("fixture-images");
    fs::create_dir_all(&dir).expect("fixture image cache");
    let img = dir.join(format!("{name}-{key:016x}.img"));
    if img.is_file() {
        return img;
    }
    let tmp = dir.join(format!("{name}-{key:016x}.tmp{}", std::process::id()));
    let mut out = fs::File::create(&tmp).expect("fixture image");
    let mut dec = zstd::stream::read::Decoder::new(&bytes[..]).expect("zstd fixture");
    // 4 KiB at a time: holes wherever a page is zeros.
    let mut buf = vec![0u8; 4096];
    let mut len = 0u64;
    loop {
        let mut n = 0;
        while n < buf.len() {
            match dec.read(&mut buf[n..]).expect("unzstd fixture") {
                0 => break,
                k => n += k,
            }
        }
        if n == 0 {
            break;
        }
        if buf[..n].iter().all(|&b| b == 0) {
            out.seek(SeekFrom::Current(n as i64)).unwrap();
        } else {
            out.write_all(&buf[..n]).unwrap();
        }
        len += n as u64;
    }
    out.set_len(len).unwrap();
    drop(out);
    // Another test binary may have finished the same image first: either is right.
    fs::rename(&tmp, &img).expect("publish fixture image");
    img
}

fn load(name: &str) -> Fixture {
    let dir_of = fixture_dir_of(name);
    let zst = dir_of.join(format!("{name}.img.zst"));
    let (dir, img) = if zst.is_file() {
        (None, cached_zst(name, &zst))
    } else {
        let dir = scratch("kernel-image-");
        let img = dir.path().join(format!("{name}.img"));
        let mut out = fs::File::create(&img).expect("scratch image");
        let gz = dir_of.join(format!("{name}.img.gz"));
        let input = fs::File::open(&gz).unwrap_or_else(|e| panic!("{}: {e}", gz.display()));
        std::io::copy(&mut flate2::read::GzDecoder::new(input), &mut out).expect("gunzip fixture");
        (Some(dir), img)
    };
    let raw = fs::read(dir_of.join(format!("{name}.manifest"))).expect("manifest");
    let entries = parse_manifest(&raw);
    assert!(
        entries.len() > 50,
        "{name}.manifest lists only {} entries",
        entries.len()
    );
    Fixture {
        _dir: dir,
        img,
        entries,
    }
}

static LOADED: [OnceLock<Fixture>; FIXTURES.len()] = [const { OnceLock::new() }; FIXTURES.len()];

fn fixture(name: &str) -> &'static Fixture {
    let i = FIXTURES.iter().position(|f| *f == name).expect("known fixture");
    LOADED[i].get_or_init(|| load(name))
}

fn info(name: &str) {
    let fx = fixture(name);
    let out = uf2fs().run([arg(b"info"), path_arg(&fx.img)]);
    let text = String::from_utf8_lossy(out.assert_ok()).into_owned();
    // The kernel unmounted cleanly: an umount checkpoint with its usual flags.
    let flags = text
        .lines()
        .find(|l| l.starts_with("checkpoint flags:"))
        .unwrap_or_else(|| panic!("no checkpoint flags in:\n{text}"));
    assert!(flags.contains("umount"), "{flags}");
    if name.starts_with("blk16") {
        assert!(text.contains("block size:         16384"), "{text}");
        let features = text.lines().find(|l| l.starts_with("features:")).unwrap();
        for f in ["extra_attr", "compression", "casefold"] {
            assert!(features.contains(f), "{features}");
        }
        assert_eq!(
            features.contains("packed_ssa"),
            name == "blk16-packed-ssa",
            "{features}"
        );
    }
    if name == "extra-attr" {
        let features = text.lines().find(|l| l.starts_with("features:")).unwrap();
        for f in ["extra_attr", "inode_checksum", "flexible_inline_xattr", "inode_crtime"] {
            assert!(features.contains(f), "{features}");
        }
    }
    let inodes = text
        .lines()
        .find_map(|l| l.strip_prefix("valid inodes:"))
        .map(|v| v.trim().parse::<usize>().unwrap())
        .unwrap();
    // Hard links share inodes: fewer inodes than entries, but every non-link entry has one.
    let distinct = fx.entries.iter().filter(|e| e.kind == b'd' || e.nlink == 1).count();
    assert!(
        inodes >= distinct && inodes <= fx.entries.len() + 1,
        "{inodes} inodes for {distinct}..{} entries",
        fx.entries.len()
    );
}

fn ls(name: &str) {
    let fx = fixture(name);
    let want = fx.by_path();
    let out = uf2fs().run([arg(b"ls"), arg(b"-lRa"), path_arg(&fx.img)]);
    let listing = out.assert_ok().to_vec();
    let mut seen = BTreeSet::new();
    let mut problems = Vec::new();
    let mut dir: Vec<u8> = Vec::new();
    for line in listing.split(|&c| c == b'\n') {
        if line.is_empty() {
            continue;
        }
        if line[0] == b'/' && line.ends_with(b":") {
            dir = line[..line.len() - 1].to_vec();
            continue;
        }
        let parsed = parse_long_line(line, |n| {
            let mut p = if dir == b"/" { Vec::new() } else { dir.clone() };
            p.push(b'/');
            p.extend_from_slice(n);
            want.get(p.as_slice()).is_some_and(|e| e.kind == b'l')
        })
        .unwrap_or_else(|| panic!("unparsable ls line {}", String::from_utf8_lossy(line)));
        if parsed.name == b".." {
            continue;
        }
        let path = if parsed.name == b"." {
            dir.clone()
        } else {
            let mut p = if dir == b"/" { Vec::new() } else { dir.clone() };
            p.push(b'/');
            p.extend_from_slice(&parsed.name);
            p
        };
        let shown = String::from_utf8_lossy(&path).into_owned();
        let Some(e) = want.get(path.as_slice()) else {
            problems.push(format!("{shown}: listed, but the kernel did not see it"));
            continue;
        };
        seen.insert(path.clone());
        let checks = [
            ("mode", parsed.mode.clone(), mode_string(e.mode())),
            ("links", parsed.nlink.clone(), e.nlink.to_string()),
            ("uid", parsed.uid.clone(), e.uid.to_string()),
            ("gid", parsed.gid.clone(), e.gid.to_string()),
            ("size", parsed.size.clone(), e.size.to_string()),
            ("mtime", parsed.mtime.clone(), utc_minute(e.mtime)),
        ];
        for (what, got, expected) in checks {
            if got != expected {
                problems.push(format!("{shown}: {what} is {got}, the kernel says {expected}"));
            }
        }
        if parsed.target != e.target {
            problems.push(format!("{shown}: symlink target differs"));
        }
    }
    for e in &fx.entries {
        if !seen.contains(&e.path) {
            problems.push(format!("{}: not listed", e.display()));
        }
    }
    assert!(problems.is_empty(), "uf2fs ls -lRa on {name}:\n{}", problems.join("\n"));
}

fn cat(name: &str) {
    let fx = fixture(name);
    let bin = uf2fs();
    let mut problems = Vec::new();
    let mut checked = 0;
    for e in fx.entries.iter().filter(|e| e.kind == b'f') {
        let Some(want) = &e.sha256 else { continue };
        let out = bin.run([arg(b"cat"), path_arg(&fx.img), arg(&e.path)]);
        let data = out.assert_ok();
        if data.len() as u64 != e.size {
            problems.push(format!(
                "{}: {} bytes, the kernel says {}",
                e.display(),
                data.len(),
                e.size
            ));
        } else if sha256_hex(data) != *want {
            problems.push(format!("{}: contents differ from the kernel's", e.display()));
        }
        checked += 1;
    }
    if name == "compress" {
        // Nine files per compression setting, six settings.
        assert_eq!(checked, 54, "files hashed");
    } else {
        // Symlinks are followed: a relative and an absolute link to /small/hello.txt.
        let hello = bin.run([arg(b"cat"), path_arg(&fx.img), arg(b"/small/hello.txt")]);
        for link in [&b"/links/rel"[..], b"/links/abs"] {
            let out = bin.run([arg(b"cat"), path_arg(&fx.img), arg(link)]);
            if out.assert_ok() != hello.assert_ok() {
                problems.push(format!("{}: not the file it points to", String::from_utf8_lossy(link)));
            }
        }
        assert!(checked > 300, "only {checked} files hashed");
    }
    assert!(problems.is_empty(), "uf2fs cat on {name}:\n{}", problems.join("\n"));
}

/// Whether `dir`'s file system keeps user.* xattrs (extract cannot copy them otherwise).
fn host_keeps_user_xattrs(dir: &Path) -> bool {
    let probe = dir.join("xattr-probe");
    fs::write(&probe, b"").unwrap();
    let ok = xattr::set(&probe, "user.uf2fs-probe", b"1").is_ok();
    fs::remove_file(&probe).unwrap();
    ok
}

fn extract(name: &str) {
    let fx = fixture(name);
    let tmp = scratch("kernel-extract-");
    let dest = tmp.path().join("out");
    uf2fs()
        .run([arg(b"extract"), path_arg(&fx.img), path_arg(&dest)])
        .assert_ok();
    let owners = is_root();
    let xattrs = host_keeps_user_xattrs(tmp.path());
    if !xattrs {
        eprintln!("note: this file system does not keep user.* xattrs; extract's xattrs are not compared");
    }
    let host = |p: &[u8]| -> PathBuf {
        let mut h = dest.as_os_str().as_bytes().to_vec();
        if p != b"/" {
            h.extend_from_slice(p);
        }
        PathBuf::from(std::ffi::OsStr::from_bytes(&h))
    };
    let mut problems = Vec::new();
    let mut chunks_checked = 0;
    for e in &fx.entries {
        let shown = e.display();
        let path = host(&e.path);
        let meta = match fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(err) => {
                problems.push(format!("{shown}: not extracted ({err})"));
                continue;
            }
        };
        if meta.mode() & 0o170000 != e.mode() & 0o170000 {
            problems.push(format!(
                "{shown}: type {:o}, the kernel says {}",
                meta.mode(),
                e.kind as char
            ));
            continue;
        }
        if e.kind != b'l' && meta.permissions().mode() & 0o7777 != e.perm {
            problems.push(format!(
                "{shown}: mode {:04o}, the kernel says {:04o}",
                meta.mode() & 0o7777,
                e.perm
            ));
        }
        if meta.mtime() != e.mtime {
            problems.push(format!("{shown}: mtime {}, the kernel says {}", meta.mtime(), e.mtime));
        }
        if owners && (meta.uid() != e.uid || meta.gid() != e.gid) {
            problems.push(format!(
                "{shown}: owner {}:{}, the kernel says {}:{}",
                meta.uid(),
                meta.gid(),
                e.uid,
                e.gid
            ));
        }
        if e.kind != b'd' && meta.nlink() != e.nlink {
            problems.push(format!("{shown}: {} links, the kernel says {}", meta.nlink(), e.nlink));
        }
        match e.kind {
            b'f' => {
                if meta.len() != e.size {
                    problems.push(format!("{shown}: {} bytes, the kernel says {}", meta.len(), e.size));
                    continue;
                }
                if let Some(want) = &e.sha256 {
                    if sha256_hex(&fs::read(&path).unwrap()) != *want {
                        problems.push(format!("{shown}: contents differ from the kernel's"));
                    }
                }
                let mut file = fs::File::open(&path).unwrap();
                for (off, len, want) in &e.chunks {
                    let mut buf = vec![0u8; *len as usize];
                    file.seek(SeekFrom::Start(*off)).unwrap();
                    file.read_exact(&mut buf).unwrap();
                    if sha256_hex(&buf) != *want {
                        problems.push(format!("{shown}: bytes {off}..+{len} differ from the kernel's"));
                    }
                    chunks_checked += 1;
                }
            }
            b'l' => {
                let target = fs::read_link(&path).unwrap();
                if Some(target.as_os_str().as_bytes()) != e.target.as_deref() {
                    problems.push(format!("{shown}: symlink target differs"));
                }
            }
            _ => {}
        }
        if xattrs && e.kind != b'l' {
            let mut got = BTreeMap::new();
            for n in xattr::list(&path).unwrap() {
                let v = xattr::get(&path, &n).unwrap().unwrap_or_default();
                got.insert(n.as_bytes().to_vec(), v);
            }
            if got != e.xattrs {
                problems.push(format!("{shown}: xattrs {got:?}, the kernel says {:?}", e.xattrs));
            }
        }
    }
    // Nothing extra was extracted.
    let mut count = 0;
    let mut stack = vec![dest.clone()];
    while let Some(d) = stack.pop() {
        count += 1;
        for entry in fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                count += 1;
            }
        }
    }
    if count != fx.entries.len() {
        problems.push(format!("{count} paths extracted, the kernel saw {}", fx.entries.len()));
    }
    // The casefold and compress fixtures have no file too big to hash whole.
    assert!(
        name == "casefold" || name == "compress" || chunks_checked >= 8,
        "only {chunks_checked} chunks checked"
    );
    assert!(problems.is_empty(), "uf2fs extract on {name}:\n{}", problems.join("\n"));
}

#[test]
fn manifests_cover_what_the_fixtures_are_for() {
    for name in ["default", "extra-attr"] {
        let raw = fs::read(fixture_dir().join(format!("{name}.manifest"))).unwrap();
        let entries = parse_manifest(&raw);
        let get = |p: &str| {
            entries
                .iter()
                .find(|e| e.path == p.as_bytes())
                .unwrap_or_else(|| panic!("{name}: no {p}"))
        };
        // Past the double-indirect boundary (block 2075607 with 4 KiB blocks).
        let huge = get("/sparse/huge");
        assert!(
            huge.size > 2_075_607 * 4096 && huge.chunks.len() >= 8,
            "{name}: {huge:?}"
        );
        // A directory beyond inline dentries, a 3900-byte symlink, an xattr node's worth.
        assert!(entries.iter().filter(|e| e.path.starts_with(b"/bigdir/")).count() >= 900);
        assert_eq!(get("/links/long").target.as_ref().map(Vec::len), Some(3900));
        assert_eq!(get("/bigdir/target").nlink, 700);
        assert!(
            get("/xattrs/many").xattrs.len() == 12,
            "{name}: no xattrs (setfattr missing in the guest?)"
        );
        assert_eq!(get("/special-fifo").kind, b'p');
    }
}

#[test]
fn sha256_known_answers() {
    assert_eq!(
        sha256_hex(b""),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(
        sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(
        sha256_hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
    );
    assert_eq!(
        sha256_hex(&vec![b'a'; 1_000_000]),
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
    );
}

/// SHA-256 (FIPS 180-4) as lowercase hex; the manifests were made with sha256sum.
fn sha256_hex(data: &[u8]) -> String {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
        0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
        0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
        0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
        0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
        0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
        0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
    ];
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in msg.chunks_exact(64) {
        let mut w = [0u32; 64];
        for (i, word) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16].wrapping_add(s0).wrapping_add(w[i - 7]).wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for (k, wi) in K.iter().zip(w.iter()) {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh.wrapping_add(s1).wrapping_add(ch).wrapping_add(*k).wrapping_add(*wi);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *x = x.wrapping_add(y);
        }
    }
    h.iter().map(|x| format!("{x:08x}")).collect()
}

/// A read-write open of the compressed fixture (a copy): a compressed file's data is
/// overwritten, extended, truncated and fallocated (issue 28), compressed files are
/// renamed, linked, chmod'ed and removed, a new file is written in a directory of
/// compressed files, and fsck.f2fs finds the result clean; reopened, the edited file
/// reads as edited and every other compressed file as the kernel wrote it.
#[test]
fn compressed_files_on_a_read_write_open() {
    use uf2fs_core::{Fs, SetAttr};
    let fx = fixture("compress");
    let tmp = scratch("kernel-compress-rw-");
    let img = tmp.path().join("rw.img");
    let cp = std::process::Command::new("cp")
        .arg("--sparse=always")
        .arg(&fx.img)
        .arg(&img)
        .status()
        .unwrap();
    assert!(cp.success());
    let want: BTreeMap<&[u8], &Entry> = fx.by_path();
    let sha = |fs: &Fs, path: &[u8]| {
        let ino = fs.resolve(path, true).unwrap();
        let size = fs.stat(ino).unwrap().size as usize;
        let mut buf = vec![0u8; size];
        assert_eq!(fs.read(ino, 0, &mut buf).unwrap(), size);
        sha256_hex(&buf)
    };
    let want_sha = |path: &[u8]| want[path].sha256.clone().unwrap();
    let edited = {
        let fs = Fs::open_rw(&img, &[]).unwrap();
        let root = fs.root();
        let text = fs.resolve(b"/lz4-c4-sum/text.txt", true).unwrap();
        // Data changes to a file Linux compressed work as on Linux (issue 28): an
        // overwrite inside a compressed cluster, a write far past the end, a truncate
        // into the first cluster, and an allocating fallocate that grows it again.
        let size = fs.stat(text).unwrap().size as usize;
        let mut before = vec![0u8; size];
        assert_eq!(fs.read(text, 0, &mut before).unwrap(), size);
        assert!(size >= 10);
        fs.write(text, 0, b"x").unwrap();
        fs.write(text, 1 << 20, b"x").unwrap();
        fs.truncate(text, 10).unwrap();
        fs.fallocate(text, 0, 4096, 0).unwrap();
        let mut edited = before[..10].to_vec();
        edited[0] = b'x';
        edited.resize(4096, 0);
        assert_eq!(sha(&fs, b"/lz4-c4-sum/text.txt"), sha256_hex(&edited));
        // Names, attributes and removal work.
        let mixed = fs.resolve(b"/zstd-15-c8/mixed.bin", true).unwrap();
        let attrs = SetAttr {
            mode: Some(0o600),
            ..Default::default()
        };
        assert_eq!(fs.setattr(mixed, &attrs).unwrap().mode & 0o7777, 0o600);
        let lzo = fs.lookup(root, b"lzo-c2").unwrap();
        fs.rename(lzo, b"text.txt", root, b"renamed.txt", 0).unwrap();
        fs.link(mixed, root, b"mixed-link").unwrap();
        let rle = fs.lookup(root, b"lzo-rle-c3-sum").unwrap();
        fs.unlink(rle, b"big.bin").unwrap();
        // Its reserved blocks released: its COMPRESS_ADDR slots no longer count.
        fs.unlink(lzo, b"released.bin").unwrap();
        let zstd = fs.lookup(root, b"zstd-1-c6-sum").unwrap();
        for e in fs.read_dir(zstd).unwrap() {
            fs.unlink(zstd, &e.name).unwrap();
        }
        fs.rmdir(root, b"zstd-1-c6-sum").unwrap();
        // A new file written in a directory of compressed files (compressed or not as
        // the directory's flags say, as Linux's set_compress_new_inode decides).
        let plain = fs.create(rle, b"plain.txt", 0o100644, 0, 0).unwrap().ino;
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(fs.write(plain, 0, &data).unwrap(), data.len());
        fs.unmount().unwrap();
        edited
    };
    if let Err(e) = uf2fs_testkit::fsck::fsck_clean(&img, tmp.path()) {
        panic!("fsck.f2fs after changes on the compressed image: {e}");
    }
    let fs = Fs::open(&img, &[]).unwrap();
    assert_eq!(sha(&fs, b"/renamed.txt"), want_sha(b"/lzo-c2/text.txt"));
    assert_eq!(sha(&fs, b"/mixed-link"), want_sha(b"/zstd-15-c8/mixed.bin"));
    assert!(fs.resolve(b"/lzo-rle-c3-sum/big.bin", true).is_err());
    assert!(fs.resolve(b"/zstd-1-c6-sum", true).is_err());
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(sha(&fs, b"/lzo-rle-c3-sum/plain.txt"), sha256_hex(&data));
    assert_eq!(sha(&fs, b"/lz4-c4-sum/text.txt"), sha256_hex(&edited));
    for (path, e) in &want {
        let untouched = e.kind == b'f'
            && !path.starts_with(b"/zstd-1-c6-sum")
            && *path != b"/lzo-c2/text.txt"
            && *path != b"/lz4-c4-sum/text.txt"
            && *path != b"/lzo-rle-c3-sum/big.bin"
            && *path != b"/lzo-c2/released.bin";
        if untouched {
            assert_eq!(sha(&fs, path), want_sha(path), "{}", String::from_utf8_lossy(path));
        }
    }
}

/// The development mkfs.f2fs's `-b 16384 -O ro` image (`tests/fixtures/blk16-ro-overlap`):
/// its checkpoint area starts in block 0, under the superblock. Every command refuses it
/// with one line naming that cause, whether reading or mounting.
mod blk16_ro_overlap {
    use super::*;

    #[test]
    fn refused_naming_the_checkpoint_over_the_superblock() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/blk16-ro-overlap");
        let img = cached_zst("blk16-ro-overlap", &dir.join("blk16-ro-overlap.img.zst"));
        let err = match uf2fs_core::Fs::open(&img, &[]) {
            Ok(_) => panic!("{} opened", img.display()),
            Err(e) => format!("{e:#}"),
        };
        assert!(
            err.contains("starts at block 0") && err.contains("inside the superblocks' blocks 0 and 1"),
            "{err}"
        );
        let tmp = scratch("blk16-ro-overlap-");
        let out_dir = tmp.path().join("out");
        let img_arg: std::ffi::OsString = img.clone().into();
        let runs: [Vec<std::ffi::OsString>; 4] = [
            vec!["info".into(), img_arg.clone()],
            vec!["ls".into(), "-l".into(), img_arg.clone(), "/".into()],
            vec!["cat".into(), img_arg.clone(), "/x".into()],
            vec!["extract".into(), img_arg.clone(), "/".into(), out_dir.into()],
        ];
        for argv in runs {
            let out = uf2fs().run(&argv);
            out.assert_clean_failure();
            let msg = String::from_utf8_lossy(&out.stderr);
            assert!(msg.contains("inside the superblocks' blocks 0 and 1"), "{msg}");
        }
    }
}
