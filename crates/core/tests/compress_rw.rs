//! Compressed files written as a read-write mount writes them: `chattr +c` on an
//! empty file, `+c` inherited from a directory, `compress_extension=` and
//! `nocompress_extension=`, and then writes, overwrites, appends, holes and
//! truncates (to a cluster boundary and into a cluster), compressed at writeback with
//! every algorithm. Every step reads back as a model of the file says (before and
//! after writeback), the image `fsck.f2fs -f -y` finds clean after each test, and GC
//! moves compressed clusters without changing a byte.

#[path = "common/data.rs"]
mod data;
#[path = "common/oracle.rs"]
mod oracle;

use std::path::Path;
use uf2fs_core::flags::{FS_COMPR_FL, SETTABLE_FLAGS};
use uf2fs_core::gc::GcKind;
use uf2fs_core::mkfs::{mkfs, parse_features, MkfsOptions};
use uf2fs_core::{CompressMode, CompressOptions, Fs};

const MIB: u64 = 1 << 20;

fn volume(path: &Path, mib: u64) {
    let opts = MkfsOptions {
        size_bytes: Some(mib * MIB),
        features: parse_features("extra_attr,compression").unwrap(),
        ..MkfsOptions::default()
    };
    mkfs(path, &opts).unwrap();
}

fn options(list: &[(&str, Option<&str>)]) -> CompressOptions {
    let mut o = CompressOptions::default();
    for (n, v) in list {
        assert!(o.set_option(n, *v).unwrap(), "{n}");
    }
    o
}

/// A file and the bytes it should hold.
struct Model<'a> {
    fs: &'a Fs,
    ino: u32,
    data: Vec<u8>,
    what: String,
}

impl Model<'_> {
    fn write(&mut self, at: usize, bytes: &[u8]) {
        assert_eq!(self.fs.write(self.ino, at as u64, bytes).unwrap(), bytes.len());
        if self.data.len() < at + bytes.len() {
            self.data.resize(at + bytes.len(), 0);
        }
        self.data[at..at + bytes.len()].copy_from_slice(bytes);
        self.check("write");
    }

    fn write_in_pieces(&mut self, at: usize, bytes: &[u8], piece: usize) {
        for (k, p) in bytes.chunks(piece).enumerate() {
            self.write(at + k * piece, p);
        }
    }

    fn truncate(&mut self, size: usize) {
        self.fs.truncate(self.ino, size as u64).unwrap();
        self.data.resize(size, 0);
        self.check("truncate");
    }

    fn check(&self, step: &str) {
        let mut back = vec![0u8; self.data.len() + 4096];
        let n = self.fs.read(self.ino, 0, &mut back).unwrap();
        assert_eq!(n, self.data.len(), "{}: size after {step}", self.what);
        if back[..n] != self.data[..] {
            let at = (0..n).find(|&i| back[i] != self.data[i]).unwrap();
            panic!("{}: byte {at} differs after {step}", self.what);
        }
    }

    fn writeback(&self) {
        self.fs.writeback().unwrap();
        self.check("writeback");
    }
}

fn compressed_file<'a>(fs: &'a Fs, name: &str) -> Model<'a> {
    let ino = fs.create(fs.root(), name.as_bytes(), 0o100644, 0, 0).unwrap().ino;
    fs.set_file_flags(ino, FS_COMPR_FL, SETTABLE_FLAGS).unwrap();
    Model {
        fs,
        ino,
        data: Vec::new(),
        what: name.to_string(),
    }
}

#[test]
fn writes_overwrites_appends_holes_and_truncates_with_every_algorithm() {
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("rw.img");
    volume(&img, 256);
    let mut saved = Vec::new();
    for (n, algo) in ["lz4", "lz4:9", "lzo", "lzo-rle", "zstd", "zstd:5"].iter().enumerate() {
        for log in ["2", "4"] {
            let fs = Fs::open_rw(&img, &[]).unwrap();
            let chk = n % 2 == 0;
            let mut list = vec![("compress_algorithm", Some(*algo)), ("compress_log_size", Some(log))];
            if chk {
                list.push(("compress_chksum", None));
            }
            fs.set_compress_options(options(&list)).unwrap();
            let name = format!("{}-{log}", algo.replace(':', "_"));
            let mut m = compressed_file(&fs, &name);
            let cb = 4096usize << log.parse::<u32>().unwrap();
            // Whole clusters in unaligned pieces, then a short tail.
            m.write_in_pieces(0, &data::text(10 * cb + 1000, n as u32 + 3), 7000);
            m.writeback();
            let c = fs.compression(m.ino).unwrap().unwrap();
            assert_eq!(c.compressed_clusters, 10, "{name}: {c:?}");
            assert!(c.saved_blocks >= 10, "{name}: {c:?}");
            // Overwrite inside a compressed cluster: it is read back and compressed again.
            m.write(2 * cb + 300, b"overwritten bytes in a compressed cluster");
            m.writeback();
            // A cluster of noise stays plain.
            m.write(4 * cb, &data::noise(cb, 9));
            m.writeback();
            let c = fs.compression(m.ino).unwrap().unwrap();
            assert_eq!(c.compressed_clusters, 9, "{name}: {c:?}");
            // Append, past a hole of one cluster and a half.
            let end = m.data.len() + cb + cb / 2;
            m.write_in_pieces(end, &data::text(3 * cb, 77), 5000);
            m.writeback();
            // Truncate into a compressed cluster, then to a cluster boundary, then grow.
            m.truncate(6 * cb + 5000);
            m.writeback();
            m.truncate(5 * cb);
            m.truncate(8 * cb + 100);
            // Into a compressed cluster and straight back out, before writeback: the
            // bytes past the cut read as zeros (the crash harness found this).
            m.write(8 * cb, &data::text(cb, 5));
            m.writeback();
            m.truncate(8 * cb + 100);
            m.truncate(9 * cb);
            m.writeback();
            m.write(7 * cb + 10, b"after the hole");
            m.writeback();
            fs.write_checkpoint().unwrap();
            saved.push((name, m.ino, m.data.clone()));
            fs.unmount().unwrap();
            oracle::fsck_clean_fixing(&img, &format!("writing {algo} with clusters of 2^{log}"));
        }
    }
    let fs = Fs::open(&img, &[]).unwrap();
    for (name, ino, data) in &saved {
        let mut back = vec![0u8; data.len() + 1];
        assert_eq!(fs.read(*ino, 0, &mut back).unwrap(), data.len(), "{name}");
        assert!(back[..data.len()] == data[..], "{name} reads back after a remount");
        let c = fs.compression(*ino).unwrap().unwrap();
        assert!(c.compressed_clusters >= 4, "{name}: {c:?}");
    }
}

#[test]
fn new_files_take_compression_from_the_directory_and_the_extension_lists() {
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("inherit.img");
    volume(&img, 128);
    let fs = Fs::open_rw(&img, &[]).unwrap();
    fs.set_compress_options(options(&[
        ("compress_algorithm", Some("zstd")),
        ("compress_extension", Some("txt")),
        ("nocompress_extension", Some("jpg")),
    ]))
    .unwrap();
    let d = fs.mkdir(fs.root(), b"d", 0o755, 0, 0).unwrap().ino;
    fs.set_file_flags(d, FS_COMPR_FL, SETTABLE_FLAGS).unwrap();
    let sub = fs.mkdir(d, b"sub", 0o755, 0, 0).unwrap().ino;
    let mut expect = Vec::new();
    for (dir, name, compressed) in [
        (d, "a.bin", true),
        (d, "b.jpg", false),
        (sub, "c", true),
        (fs.root(), "d.txt", true),
        (fs.root(), "e.bin", false),
    ] {
        let ino = fs.create(dir, name.as_bytes(), 0o100644, 0, 0).unwrap().ino;
        let data = data::text(64 * 1024 + 123, ino);
        assert_eq!(fs.write(ino, 0, &data).unwrap(), data.len());
        expect.push((name, ino, compressed, data));
    }
    fs.writeback().unwrap();
    for (name, ino, compressed, _) in &expect {
        let c = fs.compression(*ino).unwrap();
        assert_eq!(c.is_some(), *compressed, "{name}");
        if let Some(c) = c {
            assert_eq!((c.algorithm, c.compressed_clusters), ("zstd", 4), "{name}");
        }
    }
    // A file with data cannot change its compression; an extension in both lists and
    // `nocompress_extension=*` are refused as Linux refuses them.
    assert!(fs.set_file_flags(expect[4].1, FS_COMPR_FL, SETTABLE_FLAGS).is_err());
    let both = options(&[("compress_extension", Some("c")), ("nocompress_extension", Some("C"))]);
    assert!(fs.set_compress_options(both).is_err());
    // Under compress_mode=user, writeback leaves clusters plain.
    fs.set_compress_options(options(&[("compress_mode", Some("user"))]))
        .unwrap();
    assert_eq!(fs.compress_options().mode, CompressMode::User);
    let ino = fs.create(d, b"user", 0o100644, 0, 0).unwrap().ino;
    let data = data::text(64 * 1024, 5);
    fs.write(ino, 0, &data).unwrap();
    fs.writeback().unwrap();
    let c = fs.compression(ino).unwrap().unwrap();
    assert_eq!((c.compressed_clusters, c.plain_clusters), (0, 4));
    fs.unmount().unwrap();
    oracle::fsck_clean_fixing(&img, "creating compressed files");
    let fs = Fs::open(&img, &[]).unwrap();
    for (name, ino, _, data) in &expect {
        let mut back = vec![0u8; data.len()];
        assert_eq!(fs.read(*ino, 0, &mut back).unwrap(), data.len());
        assert!(back == *data, "{name}");
    }
}

#[test]
fn gc_moves_compressed_clusters_and_unlink_frees_them() {
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("gc.img");
    volume(&img, 96);
    let fs = Fs::open_rw(&img, &[]).unwrap();
    fs.set_compress_options(options(&[
        ("compress_algorithm", Some("lz4")),
        ("compress_chksum", None),
    ]))
    .unwrap();
    let d = fs.mkdir(fs.root(), b"c", 0o755, 0, 0).unwrap().ino;
    fs.set_file_flags(d, FS_COMPR_FL, SETTABLE_FLAGS).unwrap();
    let mut files = Vec::new();
    // Compressed and plain clusters interleaved, over several rounds of
    // rewrites, so that segments hold a mix of live and dead blocks.
    for round in 0..4u32 {
        for k in 0..40u32 {
            let name = format!("f{k}");
            let ino = match fs.lookup(d, name.as_bytes()) {
                Ok(i) => i,
                Err(_) => fs.create(d, name.as_bytes(), 0o100644, 0, 0).unwrap().ino,
            };
            let mut data = data::text(200 * 1024, k + round * 100);
            data.extend(data::noise(30 * 1024, k as u64));
            fs.write(ino, 0, &data).unwrap();
            if round == 3 {
                files.push((ino, data));
            }
        }
        fs.write_checkpoint().unwrap();
    }
    for k in (0..40).step_by(3) {
        fs.unlink(d, format!("f{k}").as_bytes()).unwrap();
    }
    fs.write_checkpoint().unwrap();
    let moved = fs.gc(GcKind::Foreground).unwrap() + fs.gc(GcKind::Background).unwrap();
    assert!(moved > 0, "GC emptied no section");
    fs.write_checkpoint().unwrap();
    for (k, (ino, data)) in files.iter().enumerate() {
        if k % 3 == 0 {
            continue;
        }
        let mut back = vec![0u8; data.len()];
        assert_eq!(fs.read(*ino, 0, &mut back).unwrap(), data.len());
        assert!(back == *data, "file {k} after GC");
    }
    fs.unmount().unwrap();
    oracle::fsck_clean_fixing(&img, "GC of compressed clusters");
}
