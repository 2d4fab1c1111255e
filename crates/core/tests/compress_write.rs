//! The compressed-cluster writer judged from outside: files written cluster by
//! cluster with every algorithm and several cluster sizes, with checksums and with
//! released blocks, must read back through uf2fs's reader, report what they saved,
//! and leave an image `fsck.f2fs -f` finds clean (f2fs-tools must be installed).

#[path = "common/data.rs"]
mod data;
#[path = "common/oracle.rs"]
mod oracle;

use std::path::Path;
use uf2fs_core::compress::{ClusterCodec, ClusterWrite};
use uf2fs_core::mkfs::{mkfs, parse_features, MkfsOptions};
use uf2fs_core::Fs;

const MIB: u64 = 1 << 20;

fn volume(path: &Path) {
    volume_of_blocks(path, 4096);
}

/// A 512 MiB volume with compression, of `block_size`-byte blocks.
fn volume_of_blocks(path: &Path, block_size: u32) {
    let opts = MkfsOptions {
        size_bytes: Some(512 * MIB),
        block_size,
        features: parse_features("extra_attr,compression").unwrap(),
        ..MkfsOptions::default()
    };
    mkfs(path, &opts).unwrap();
}

/// Writes `data` to a new compressed file `name` cluster by cluster; blocks listed in
/// `holes` are left as holes. Returns the clusters stored compressed.
fn write_file(fs: &Fs, name: &str, codec: &ClusterCodec, released: bool, data: &[u8], holes: &[usize]) -> u64 {
    let ino = fs.create(fs.root(), name.as_bytes(), 0o100644, 0, 0).unwrap().ino;
    fs.set_compression(ino, codec, released).unwrap();
    let cb = codec.cluster_bytes();
    let mut compressed = 0;
    for (k, chunk) in data.chunks(cb).enumerate() {
        let blocks = chunk.len().div_ceil(4096);
        let h: Vec<bool> = (0..blocks)
            .map(|b| holes.contains(&(k * codec.cluster_blocks() + b)))
            .collect();
        if let ClusterWrite::Compressed { .. } = fs.write_cluster(ino, k as u64, chunk, &h).unwrap() {
            compressed += 1;
        }
    }
    compressed
}

#[test]
fn compressed_files_read_back_and_fsck_finds_them_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("c.img");
    volume(&img);
    let fs = Fs::open_rw(&img, &[]).unwrap();
    let mut expect: Vec<(String, Vec<u8>, u64, bool)> = Vec::new();
    let algos = ["lz4", "lz4hc:9", "lzo", "lzo-rle", "zstd", "zstd:10"];
    for (n, algo) in algos.iter().enumerate() {
        for log in [2u8, 4, 8] {
            for (checksum, released) in [(false, false), (true, false), (false, true)] {
                let codec = ClusterCodec::parse(algo, log, checksum).unwrap();
                let cb = codec.cluster_bytes();
                // Two compressible clusters, one of noise, one with a hole, and a
                // short tail.
                let mut data = data::text(2 * cb, n as u32 + log as u32);
                data.extend(data::noise(cb, log as u64));
                data.extend(data::text(cb, 99));
                data.extend(data::text(cb / 2 + 100, 7));
                let hole = 3 * codec.cluster_blocks() + 1;
                let name = format!("{}-{log}-{checksum}-{released}", algo.replace(':', "_"));
                let compressed = write_file(&fs, &name, &codec, released, &data, &[hole]);
                assert_eq!(compressed, 2, "{name}: the text clusters only");
                data[hole * 4096..(hole + 1) * 4096].fill(0);
                expect.push((name, data, compressed, released));
            }
        }
    }
    fs.unmount().unwrap();
    oracle::fsck_clean_fixing(&img, "writing compressed files");
    let fs = Fs::open(&img, &[]).unwrap();
    for (name, data, compressed, released) in &expect {
        let ino = fs.lookup(fs.root(), name.as_bytes()).unwrap();
        let mut back = vec![0u8; data.len() + 10];
        let n = fs.read(ino, 0, &mut back).unwrap();
        assert_eq!(n, data.len(), "{name}");
        assert!(back[..n] == data[..], "{name} reads back");
        let c = fs.compression(ino).unwrap().unwrap();
        assert_eq!(c.compressed_clusters, *compressed, "{name}");
        if *released {
            assert_eq!(c.saved_blocks, 0, "{name}: a released file records no saved blocks");
        } else {
            assert!(c.saved_blocks >= *compressed, "{name}: {c:?}");
        }
    }
}

#[test]
fn a_cluster_rewritten_in_place_drops_what_it_held() {
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("r.img");
    volume(&img);
    let fs = Fs::open_rw(&img, &[]).unwrap();
    let codec = ClusterCodec::parse("lz4", 2, true).unwrap();
    let ino = fs.create(fs.root(), b"f", 0o100644, 0, 0).unwrap().ino;
    fs.set_compression(ino, &codec, false).unwrap();
    let a = data::text(4 * 4096, 1);
    let b = data::noise(4 * 4096, 2);
    assert!(matches!(
        fs.write_cluster(ino, 0, &a, &[]).unwrap(),
        ClusterWrite::Compressed { .. }
    ));
    assert!(matches!(
        fs.write_cluster(ino, 0, &b, &[]).unwrap(),
        ClusterWrite::Plain { blocks: 4 }
    ));
    assert!(matches!(
        fs.write_cluster(ino, 1, &b, &[]).unwrap(),
        ClusterWrite::Plain { blocks: 4 }
    ));
    assert!(matches!(
        fs.write_cluster(ino, 1, &a, &[]).unwrap(),
        ClusterWrite::Compressed { .. }
    ));
    // A file with data cannot change its compression.
    assert!(fs.set_compression(ino, &codec, true).is_err());
    fs.unmount().unwrap();
    oracle::fsck_clean_fixing(&img, "rewriting clusters");
    let fs = Fs::open(&img, &[]).unwrap();
    let mut back = vec![0u8; 8 * 4096];
    assert_eq!(fs.read(ino, 0, &mut back).unwrap(), 8 * 4096);
    assert!(back[..4 * 4096] == b[..] && back[4 * 4096..] == a[..]);
    let c = fs.compression(ino).unwrap().unwrap();
    assert_eq!((c.compressed_clusters, c.plain_clusters), (1, 1));
}

/// The layouts Linux 6.1 misread on an `ro` volume (measured in QEMU: holes read as the
/// next blocks' data, or `access invalid blkaddr` and EIO), found by
/// `Fs::linux_ro_misread`; hole-free files and a whole direct node of holes are not.
#[test]
fn layouts_linux_misreads_on_ro_volumes_are_found() {
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("ro.img");
    let opts = MkfsOptions {
        size_bytes: Some(64 * MIB),
        features: parse_features("extra_attr,compression,ro").unwrap(),
        ..MkfsOptions::default()
    };
    mkfs(&img, &opts).unwrap();
    let fs = Fs::open_to_build(&img).unwrap();
    let codec = ClusterCodec::parse("lz4", 2, false).unwrap();
    // Incompressible data: every cluster is stored plain.
    let data = data::noise(12 * 4096 + 100, 5);
    // (name, holes, the first block Linux misreads)
    let cases: [(&str, &[usize], Option<u64>); 6] = [
        ("whole", &[], None),
        // Block 4 written, 5..7 holes, the file going on: Linux read 5..7 as 8..10.
        ("hole-after-first", &[5, 6, 7], Some(5)),
        // A cluster of holes between data: its extent starts at block 0.
        ("hole-cluster", &[4, 5, 6, 7], Some(4)),
        // Two holes first: the same.
        ("two-holes-first", &[4, 5], Some(4)),
        // One hole first: no extent; read from the node by 6.1, from the middle by
        // kernels without the aligned-extent fix.
        ("one-hole-first", &[4], Some(5)),
        // Holes in the last, short cluster after its first block: past the end.
        ("hole-in-the-tail", &[], None),
    ];
    for (name, holes, want) in cases {
        let d = if name == "hole-in-the-tail" {
            &data[..8 * 4096 + 10]
        } else {
            &data[..]
        };
        write_file(&fs, name, &codec, false, d, holes);
        let ino = fs.lookup(fs.root(), name.as_bytes()).unwrap();
        let got = fs.linux_ro_misread(ino).unwrap();
        assert_eq!(got.as_ref().map(|m| m.block), want, "{name}: {got:?}");
    }
    // A whole direct node of holes has no node: read as zeros. Every address of the
    // inode written, then the third direct node's up to the end of the file (the first
    // two direct nodes missing).
    let ino = fs.create(fs.root(), b"far", 0o100644, 0, 0).unwrap().ino;
    fs.set_compression(ino, &codec, false).unwrap();
    let shape = fs.tree_shape(ino).unwrap();
    let third = shape.in_inode + 2 * shape.per_dnode;
    assert_eq!(shape.node_span(third + 8), (third, third + shape.per_dnode));
    for cluster in (0..shape.in_inode / 4).chain(third / 4..third / 4 + 3) {
        fs.write_cluster(ino, cluster, &data[..4 * 4096], &[]).unwrap();
    }
    assert_eq!(fs.linux_ro_misread(ino).unwrap(), None, "holes where no node is");
    // A cluster of holes among the inode's addresses (which always exist) is misread.
    fs.write_cluster(ino, 1, &[0u8; 4 * 4096], &[true; 4]).unwrap();
    assert_eq!(fs.linux_ro_misread(ino).unwrap().map(|m| m.block), Some(4));
    fs.unmount().unwrap();
}

/// An `ro` volume with many inodes checkpointed, so that the node log has moved into
/// the segment after the data log's (mkfs puts them side by side): the data log must
/// then jump over it when its segment fills. Returns the opened volume and the empty
/// file `pad` made last.
fn ro_volume_with_node_log_ahead(img: &Path) -> (Fs, uf2fs_core::Ino) {
    let opts = MkfsOptions {
        size_bytes: Some(64 * MIB),
        features: parse_features("extra_attr,compression,ro").unwrap(),
        ..MkfsOptions::default()
    };
    mkfs(img, &opts).unwrap();
    let fs = Fs::open_to_build(img).unwrap();
    let dir = fs.mkdir(fs.root(), b"d", 0o40755, 0, 0).unwrap().ino;
    for k in 0..700 {
        fs.create(dir, format!("{k:04}").as_bytes(), 0o100644, 0, 0).unwrap();
    }
    fs.write_checkpoint().unwrap();
    let pad = fs.create(fs.root(), b"pad", 0o100644, 0, 0).unwrap().ino;
    (fs, pad)
}

/// A plain cluster of a compressed file on an `ro` volume gets consecutive blocks even
/// where the data log's segment fills in its middle and the next segment is another
/// log's: Linux caches one extent per cluster there (see `Fs::linux_ro_misread`). The
/// packer failed so on the 22,000-file Android-like tree; fails when the writer lets
/// the cluster straddle the jump.
#[test]
fn plain_clusters_on_ro_volumes_do_not_straddle_a_jump_of_the_data_log() {
    let tmp = tempfile::tempdir().unwrap();
    // Where the data log jumps: a plain file of noise crossing its segment's end.
    let probe = tmp.path().join("probe.img");
    let (fs, ino) = ro_volume_with_node_log_ahead(&probe);
    let blocks = 700usize;
    let noise = data::noise(blocks * 4096, 11);
    assert_eq!(fs.write(ino, 0, &noise).unwrap(), noise.len());
    fs.write_checkpoint().unwrap();
    let runs = fs.extents(ino).unwrap();
    assert!(
        runs.len() >= 2 && runs[1].1 > runs[0].1 + runs[0].2,
        "the data log should jump over the node log's segment: {runs:?}"
    );
    let jump = runs[1].0;
    fs.unmount().unwrap();
    // The same volume, with a pad before a compressed file of noise so that the jump
    // falls two blocks into one of its clusters of four.
    let img = tmp.path().join("ro.img");
    let (fs, pad) = ro_volume_with_node_log_ahead(&img);
    let p = (jump + 2) % 4;
    let pad_bytes = vec![7u8; p as usize * 4096];
    assert_eq!(fs.write(pad, 0, &pad_bytes).unwrap(), pad_bytes.len());
    fs.write_checkpoint().unwrap();
    let codec = ClusterCodec::parse("lz4", 2, false).unwrap();
    assert_eq!(write_file(&fs, "c", &codec, false, &noise, &[]), 0, "noise stays plain");
    let ino = fs.lookup(fs.root(), b"c").unwrap();
    assert_eq!(fs.linux_ro_misread(ino).unwrap(), None);
    fs.unmount().unwrap();
    oracle::fsck_clean_fixing(&img, "a compressed file across the data log's jump on an ro volume");
    let fs = Fs::open(&img, &[]).unwrap();
    let mut back = vec![0u8; noise.len()];
    assert_eq!(fs.read(ino, 0, &mut back).unwrap(), noise.len());
    assert!(back == noise, "the file reads back");
}

/// On a volume of 16 KiB blocks the writer takes clusters of 16 KiB blocks (what the
/// packer hands it, encoded with the volume's block size): they read back, and a
/// cluster encoded in 4 KiB blocks is refused, not stored as a misshapen cluster.
/// The development fsck.f2fs judges the image when it is installed.
#[test]
fn clusters_of_16k_blocks_and_a_cluster_encoded_in_other_blocks() {
    use uf2fs_core::compress::{encode_cluster, ClusterData};
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("c16.img");
    volume_of_blocks(&img, 16384);
    let fs = Fs::open_rw(&img, &[]).unwrap();
    let codec = ClusterCodec::parse("zstd", 2, true).unwrap();
    let ino = fs.create(fs.root(), b"f", 0o100644, 0, 0).unwrap().ino;
    fs.set_compression(ino, &codec, false).unwrap();
    let bs = 16384;
    let mut data = data::text(4 * bs, 3);
    data.extend(data::noise(4 * bs, 4));
    data.extend(data::text(bs + 10, 5));
    for (k, chunk) in data.chunks(4 * bs).enumerate() {
        let how = fs.write_cluster(ino, k as u64, chunk, &[]).unwrap();
        match k {
            0 => assert!(matches!(how, ClusterWrite::Compressed { .. }), "{how:?}"),
            _ => assert!(matches!(how, ClusterWrite::Plain { .. }), "{how:?}"),
        }
    }
    let small = encode_cluster(&codec, &data::text(4 * 4096, 6))
        .unwrap()
        .expect("compresses");
    let err = fs
        .write_cluster_data(ino, 3, ClusterData::Compressed(&small), 4 * 4 * bs as u64)
        .unwrap_err();
    assert!(
        format!("{err}").contains("encoded in 4096-byte blocks, for a volume of 16384-byte blocks"),
        "{err}"
    );
    fs.unmount().unwrap();
    let fs = Fs::open(&img, &[]).unwrap();
    let mut back = vec![0u8; data.len() + 10];
    assert_eq!(fs.read(ino, 0, &mut back).unwrap(), data.len());
    assert!(back[..data.len()] == data[..]);
    let c = fs.compression(ino).unwrap().unwrap();
    assert_eq!((c.cluster_blocks, c.compressed_clusters), (4, 1), "{c:?}");
    drop(fs);
    if let Some(fsck) = oracle::dev_fsck() {
        oracle::dev_fsck_clean(&fsck, &img, "compressed clusters of 16 KiB blocks");
    }
}
